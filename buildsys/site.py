"""site/: the static site (the app, the library, the artifacts, Pyodide), fully self-contained, with the
service worker's precache manifest."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from buildsys.common import CACHE, ROOT, SITE, log, replace_file, run, sha256
from buildsys.downloads import npm_package, pypi_file
from buildsys.kernels import build_kernels
from buildsys.library import API_REFERENCE, LIBRARY, build_api_reference, build_library
from buildsys.npm import npm_pack_backbone
from buildsys.pyodide_runtime import PYC_FILES, compile_python, vendor_pyodide
from buildsys.venv import ensure_venv, venv_python
from buildsys.wheels import build_wheel

# A small charting library for the page, from npm.
UPLOT = ("uplot", "1.6.32", ["dist/uPlot.esm.js", "dist/uPlot.min.css"])
# Pure-Python wheels the site unpacks from its own origin.
SITE_WHEELS = [("flatbuffers", "25.12.19")]


SAMPLE_CSV = """
import csv, sys
from sklearn.datasets import load_wine
data = load_wine()
w = csv.writer(open(sys.argv[1], "w", newline=""))
w.writerow(list(data.feature_names) + ["cultivar"])
for row, target in zip(data.data, data.target):
    w.writerow([f"{v:g}" for v in row] + [data.target_names[target]])
"""


#: how the app's modules import the library: by its path in web/, and in the site by its folder there
APP_IMPORT = ('"./lib/onnxtrain.mjs"', f'"./{LIBRARY}/onnxtrain.mjs"')


def import_library_bundle(site: Path) -> None:
    """Point the app's modules (``site``/*.js) at the library's bundle in the site's onnxtrain/, where the sources
    import web/lib/onnxtrain.mjs (the unbundled library)."""
    source, bundle = APP_IMPORT
    for path in sorted(site.glob("*.js")):
        text = path.read_text()
        if source in text:
            path.write_text(text.replace(source, bundle))


def sample_data(dest: Path) -> None:
    """The sample CSV the page offers: scikit-learn's bundled wine data."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(venv_python()), "-c", SAMPLE_CSV, str(dest / "wine.csv")], check=True)


def build_artifacts(dest: Path) -> None:
    """Every model and artifact set the site ships, made by the recipes in artifacts/ (the demo MLP set by
    onnxtrain's generate_artifacts, the pretrained digits model, the EfficientNet-Lite0 backbone exported from
    torch and checked, the MiniLM text encoder written from its weights and checked, openWakeWord's speech
    backbone taken from its wheel and checked), and their manifest.json, in ``dest``; the slow parts are cached in
    .cache/artifacts."""
    try:
        run([ensure_venv(), "-m", "artifacts", dest, "--cache", CACHE / "artifacts"], cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"), OMP_NUM_THREADS="1"))
    except subprocess.CalledProcessError as e:
        sys.exit(f"build.py: the artifact recipes (python -m artifacts) failed with exit code {e.returncode}; "
                 "their message is above")


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
    import_library_bundle(tmp)
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


#: folders of the site whose files the service worker keeps once a page fetched them, not at install
ON_DEMAND = ("artifacts/efficientnet_lite0/", "artifacts/minilm/", "artifacts/speech_embedding/", "artifacts/smollm2/",
             f"{API_REFERENCE}/")


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
