// Every file the engine loads, by its path in the library's folder: [URL, bytes, sha256].  The bundles hold the
// table that build.py writes here (buildsys/library.py), one literal `new URL("./path", <the bundle's URL>)` per file,
// the form Vite and webpack detect to copy the file into their output; env.wasm.wasmPaths, where given, says
// where the files are instead.
export const FILES = {};
