// esbuild bundles main.js into dist/ but leaves the files that onnxtrain loads at run time (its engine, Pyodide,
// the wheels) where they are: copy the package's folder to dist/onnxtrain/, which main.js names in
// env.wasm.wasmPaths.
import { cpSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import * as esbuild from "esbuild";

await esbuild.build({ entryPoints: ["main.js"], bundle: true, format: "esm", minify: true, outdir: "dist" });
const onnxtrain = dirname(createRequire(import.meta.url).resolve("onnxtrain/package.json"));
cpSync(onnxtrain, "dist/onnxtrain", { recursive: true });
cpSync("index.html", "dist/index.html");
