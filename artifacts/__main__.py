"""python -m artifacts DEST [--cache DIR] [--only NAME ...]: every recipe's files in DEST/<name>/ and
DEST/manifest.json."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import onnxtrain

from . import demo_mlp, digits, efficientnet_lite0, federated_digits, minilm, speech_embedding
from .manifest import describe_folder
from .stages import CheckFailed

ROOT = Path(__file__).resolve().parent.parent
PROJECT_LICENSE = "MIT (onnxtrain's own; made by the project from its own code and bundled data)"
# name (the site folder under artifacts/) -> recipe module; every module has build(dest[, cache]) -> entry part.
RECIPES = {"mlp": demo_mlp, "digits": digits, "efficientnet_lite0": efficientnet_lite0,
           "federated_digits": federated_digits, "minilm": minilm,
           "speech_embedding": speech_embedding}
CACHED = (efficientnet_lite0, minilm, speech_embedding)  # the recipes with cached stages, whose build takes the cache folder


def build_artifacts(dest: Path, cache: Path, only=None) -> dict:
    """Run the recipes into ``dest`` and write ``dest``/manifest.json; the manifest."""
    dest.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, recipe in RECIPES.items():
        if only and name not in only:
            continue
        folder = dest / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        start = time.perf_counter()
        try:
            part = recipe.build(folder, cache) if recipe in CACHED else recipe.build(folder)
        except CheckFailed as e:
            raise CheckFailed(f"the {name} check failed: {e}") from None
        files = part.pop("files")
        entry = {"name": name, "path": f"{name}/", "kind": part.pop("kind"), "description": part.pop("description"),
                 "license": part.pop("license", PROJECT_LICENSE),
                 "source": {"recipe": f"artifacts/{Path(recipe.__file__).name}", "made_by": part.pop("made_by"),
                            "packages": {"onnxtrain": onnxtrain.__version__, **part.pop("packages", {})},
                            **({"data": part.pop("data")} if "data" in part else {})},
                 **part, "files": describe_folder(folder, files)}
        entries.append(entry)
        print(f"[artifacts] {name}: {', '.join(files)} ({time.perf_counter() - start:.1f} s)", flush=True)
    manifest = {"format": 1, "about": "the models and artifact sets this site ships; see artifacts/README.md",
                "artifacts": entries}
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m artifacts", description=__doc__)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "artifacts")
    parser.add_argument("--only", nargs="*", choices=list(RECIPES))
    options = parser.parse_args(argv)
    try:
        build_artifacts(options.dest, options.cache, options.only)
    except CheckFailed as e:
        print(f"artifacts: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
