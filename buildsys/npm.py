"""The npm packages: the library's (onnxtrain) and the backbone's, packed offline into dist/."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from buildsys.common import CACHE, ROOT, link_or_copy, log, project_version, run

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
