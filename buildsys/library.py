"""The JavaScript library (web/lib/) as the site ships it in site/onnxtrain/: the engine and the library
bundled by esbuild, its classic-script build, the files its engine loads, and its API reference (TypeDoc)."""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from buildsys.common import ROOT, link_or_copy, project_version, replace_file, run, sha256
from buildsys.downloads import node_tools, npm_package
from buildsys.npm import npm_pack_library
from buildsys.pyodide_runtime import PYODIDE_PACKAGES, PYODIDE_VERSION

LIBRARY = "onnxtrain"  # the JavaScript library's folder in the site (sources in web/lib/)
API_REFERENCE = "onnxtrain-api"  # the library's API reference in the site, made by TypeDoc from onnxtrain.d.ts


def build_api_reference(dest: Path) -> None:
    """``dest``/index.html and the rest: TypeDoc's HTML of web/lib/onnxtrain.d.ts (its doc comments), under strict
    TypeScript 5.9; no source links, no generator line, nothing loaded from another origin."""
    tools = node_tools()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "tsconfig.json"
        config.write_text(json.dumps({"compilerOptions": {
            "strict": True, "noEmit": True, "target": "es2022", "lib": ["es2022", "dom"], "module": "esnext",
            "moduleResolution": "bundler"}, "files": [str(ROOT / "web" / "lib" / "onnxtrain.d.ts")]}))
        run(["node", str(tools / "typedoc" / "bin" / "typedoc"), "--tsconfig", str(config),
             "--entryPoints", str(ROOT / "web" / "lib" / "onnxtrain.d.ts"), "--out", str(dest),
             "--name", f"onnxtrain {project_version()} API", "--readme", "none", "--disableSources",
             "--hideGenerator", "--githubPages", "false", "--cleanOutputDir", "--logLevel", "Warn"], cwd=ROOT)
    if not (dest / "index.html").is_file():
        sys.exit(f"build.py: TypeDoc wrote no {dest / 'index.html'}")


#: the engine's modules: build_library bundles web/lib/engine.mjs and these into one file, engine.mjs
ENGINE_MODULES = ("engine.mjs", "start.mjs", "webgpu.mjs", "threads.mjs", "fast_steps.mjs", "engine_hooks.mjs")
#: the kernel pool's worker (web/lib/threads_worker.mjs), a file of its own that the engine starts by its URL
THREADS_WORKER = "threads_worker.mjs"
#: the library's entry (web/lib/onnxtrain.mjs) and its modules (web/lib/src/), bundled into onnxtrain.mjs and .js
ENTRY, MODULES = "onnxtrain.mjs", "src"
#: the module of web/lib/src/ that holds the files' table, written by bundle_library for each bundle
FILES_MODULE = "files.mjs"
#: the classic script's entry: globalThis.onnxtrain, and globalThis.ort only where no onnxruntime-web defined it,
#: so that a page written for onnxruntime-web's script tag runs with only its src changed
CLASSIC_ENTRY = f"""import * as onnxtrain from "./{ENTRY}";
globalThis.onnxtrain = {{ ...onnxtrain }};
globalThis.ort ??= globalThis.onnxtrain;
"""
#: the test site's entry: the library and its internal _engineCall, for the test hooks (requests by name)
TEST_ENTRY = f"""export * from "./{ENTRY}";
export {{ _engineCall }} from "./{MODULES}/engine_client.mjs";
"""


def esbuild(entry: Path, out: Path, *options: str) -> None:
    """``entry`` and what it imports bundled by esbuild (tools/package.json's) into ``out``, for browsers; run in
    ``entry``'s folder, so that the bundle's comments name its modules by their paths there."""
    run([node_tools() / ".bin" / "esbuild", entry.name, "--bundle", "--platform=browser", "--target=es2022",
         "--log-level=warning", *options, f"--outfile={out}"], cwd=entry.parent)


def bundle_engine(hooks: Path, out: Path) -> None:
    """``out``: web/lib/engine.mjs with what it imports (start.mjs, webgpu.mjs, threads.mjs and its worker's protocol,
    ``hooks`` as engine_hooks.mjs and Pyodide's pyodide.mjs) bundled by esbuild into one module that imports
    nothing, so that a bundler can copy it as one file.  Node's modules that pyodide.mjs imports when it runs under
    node stay dynamic imports."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in (*ENGINE_MODULES, THREADS_WORKER):
            shutil.copy2(ROOT / "web" / "lib" / name, work / name)
        shutil.copy2(hooks, work / "engine_hooks.mjs")
        (work / "pyodide").mkdir()
        shutil.copy2(npm_package("pyodide", PYODIDE_VERSION) / "pyodide.mjs", work / "pyodide" / "pyodide.mjs")
        esbuild(work / "engine.mjs", work / "out.mjs", "--format=esm", "--external:node:*", "--external:ws")
        out.unlink(missing_ok=True)
        shutil.copy2(work / "out.mjs", out)


def files_module(lib: Path, base: str) -> str:
    """FILES_MODULE for a bundle: each file the engine loads (engine.mjs, its pool's worker, pyodide/, wheels/,
    kernels/) by its path in the library's folder, as [a literal `new URL("./path", base)`, bytes, sha256].  The
    literal form is what Vite and webpack detect, to copy the file into their output and give its URL there."""
    paths = ["engine.mjs", THREADS_WORKER, *sorted(p.relative_to(lib).as_posix()
                                                   for folder in ("pyodide", "wheels", "kernels")
                                                   for p in (lib / folder).rglob("*") if p.is_file())]
    rows = []
    for path in paths:
        # JavaScript is never checked (nor kept by hash): the test site's engine differs, and bundlers minify it
        size, digest = (lib / path).stat().st_size, "" if path.endswith((".js", ".mjs")) else sha256(lib / path)
        rows.append(f'  "{path}": [new URL("./{path}", {base}), {size}, "{digest}"],')
    return "export const FILES = {\n" + "\n".join(rows) + "\n};\n"


def bundle_library(lib: Path, classic: bool = True, test_hooks: bool = False) -> None:
    """``lib``/onnxtrain.mjs: web/lib/onnxtrain.mjs and its modules bundled by esbuild into one ES module whose
    files' table has ``lib``'s files; with ``classic`` also onnxtrain.js, the same as a classic script that
    defines globalThis.onnxtrain; with ``test_hooks``, onnxtrain.mjs also exports _engineCall.  (--keep-names: a
    class that refers to itself keeps its name, Tensor.name is "Tensor".)"""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy2(ROOT / "web" / "lib" / ENTRY, work / ENTRY)
        shutil.copytree(ROOT / "web" / "lib" / MODULES, work / MODULES)
        entry = work / ENTRY
        if test_hooks:
            entry = work / "test_entry.mjs"
            entry.write_text(TEST_ENTRY)
        (work / MODULES / FILES_MODULE).write_text(files_module(lib, "import.meta.url"))
        esbuild(entry, work / "out.mjs", "--format=esm", "--keep-names")
        replace_file(lib / ENTRY, (work / "out.mjs").read_bytes())
        if classic:
            (work / MODULES / FILES_MODULE).write_text("const LIBRARY_URL = document.currentScript.src;\n"
                                                       + files_module(lib, "LIBRARY_URL"))
            (work / "classic.mjs").write_text(CLASSIC_ENTRY)
            esbuild(work / "classic.mjs", work / "out.js", "--format=iife", "--keep-names")
            replace_file(lib / "onnxtrain.js", (work / "out.js").read_bytes())


def build_library(site: Path) -> None:
    """site/onnxtrain/: the library (web/lib/, copied to site/lib/ with the rest of web/), its engine bundled into
    one engine.mjs, its classic-script build onnxtrain.js, and what its engine loads: Pyodide's core and packages
    (numpy; micropip for users' own wheels), the wheels, the kernels, each listed in onnxtrain.mjs's FILES; then
    its npm package, package.json there and dist/onnxtrain-<version>.tgz."""
    lib = site / LIBRARY
    (site / "lib").rename(lib)
    lock = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())
    (lib / "pyodide").mkdir()
    for name in ["pyodide.asm.js", "pyodide.asm.wasm", "pyodide-lock.json",
                 *(lock["packages"][package]["file_name"] for package in PYODIDE_PACKAGES)]:
        link_or_copy(site / "pyodide" / name, lib / "pyodide" / name)
    for folder in ("wheels", "kernels"):
        shutil.copytree(site / folder, lib / folder, copy_function=link_or_copy)
    bundle_engine(lib / "engine_hooks.mjs", lib / "engine.mjs")
    for name in ENGINE_MODULES[1:]:
        (lib / name).unlink()
    bundle_library(lib)
    shutil.rmtree(lib / MODULES)
    # the types again under the name TypeScript looks for when a page imports onnxtrain.mjs by its path
    shutil.copy2(lib / "onnxtrain.d.ts", lib / "onnxtrain.d.mts")
    npm_pack_library(lib)
