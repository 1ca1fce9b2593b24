// Pyodide under node compiles the Python the site's start imports (pyodide_runtime.compile_python; compile_pyc.py).
import { readFileSync, writeFileSync } from "node:fs";
const [pyodide, code, imports, stdlib, stdlibOut, siteOut, ...wheels] = process.argv.slice(2);
const py = await (await import(pyodide)).loadPyodide();
py.FS.writeFile("/tmp/stdlib.zip", readFileSync(stdlib));
const inputs = wheels.map((w, i) => (py.FS.writeFile(`/tmp/${i}.whl`, readFileSync(w)), `/tmp/${i}.whl`));
const extractDir = py.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
for (const w of wheels) py.unpackArchive(new Uint8Array(readFileSync(w)), "wheel", { extractDir });
py.runPython(readFileSync(code, "utf8"));
const [std, site] = py.globals.get("started")(imports).toJs();
py.globals.get("stdlib_pyc")("/tmp/stdlib.zip", "/tmp/stdlib.pyc.zip", std);
py.globals.get("site_pycache")(py.toPy(inputs), "/tmp/site.pyc.zip", site, py.toPy(["onnxtrain", "flatbuffers"]));
writeFileSync(stdlibOut, py.FS.readFile("/tmp/stdlib.pyc.zip"));
writeFileSync(siteOut, py.FS.readFile("/tmp/site.pyc.zip"));
