import { env } from "onnxtrain";
import { run } from "../shared/app.js";

// build.mjs copied the onnxtrain package's folder to onnxtrain/ beside the page
env.wasm.wasmPaths = "./onnxtrain/";
run();
