import { run } from "../shared/app.js";

run();
