"""The page's own little site: a temporary folder with the JavaScript library, the runner page, the artifacts and
the data, served on 127.0.0.1 by a threaded static server on a free port."""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import tarfile
import threading
from importlib import resources
from pathlib import Path

from .errors import SetupError
from .inputs import TENSOR_TYPES, Artifacts, Data

LIBRARY_ENV = "ONNXTRAIN_LIBRARY"
DEFAULT_LIBRARY = Path("node_modules") / "onnxtrain"
ENTRY = "onnxtrain.mjs"
PAGE_FILES = ("runner.html", "runner.mjs")
INSTALL_HINT = ("pass --library: the onnxtrain JavaScript library's folder (the one with onnxtrain.mjs) or its "
                "npm package onnxtrain-<version>.tgz, or set $ONNXTRAIN_LIBRARY, or `npm install` it into "
                "./node_modules/onnxtrain")


def _library_in(folder: Path) -> Path | None:
    """``folder`` or its onnxtrain/ or package/ subfolder, whichever holds onnxtrain.mjs."""
    for candidate in (folder, folder / "onnxtrain", folder / "package"):
        if (candidate / ENTRY).is_file():
            return candidate
    return None


def _extract(tar: tarfile.TarFile, into: Path) -> None:
    """Files and folders only, each inside ``into`` (tarfile's "data" filter, or the same checks before it)."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
        return
    for member in tar.getmembers():
        parts = Path(member.name).parts
        if not (member.isfile() or member.isdir()) or member.name.startswith(("/", "\\")) or ".." in parts:
            raise tarfile.TarError(f"it holds {member.name!r}, which is not a plain file inside the package")
    tar.extractall(into)


def _unpack(tgz: Path, into: Path) -> Path:
    try:
        with tarfile.open(tgz) as tar:
            _extract(tar, into)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SetupError(f"cannot unpack the library package {tgz}: {e}") from None
    found = _library_in(into)
    if found is None:
        raise SetupError(f"the library package {tgz} has no {ENTRY} (in package/ or at its top)")
    return found


def find_library(library, scratch: Path) -> tuple:
    """(the folder holding onnxtrain.mjs, the library as the user named it): ``library`` (a folder or a .tgz,
    unpacked under ``scratch``), else $ONNXTRAIN_LIBRARY, else ./node_modules/onnxtrain."""
    if library is None:
        library = os.environ.get(LIBRARY_ENV) or None
        origin = f"${LIBRARY_ENV}" if library else None
    else:
        origin = "--library"
    if library is None:
        if not DEFAULT_LIBRARY.is_dir():
            raise SetupError(f"no onnxtrain JavaScript library: {INSTALL_HINT}")
        library, origin = DEFAULT_LIBRARY, f"./{DEFAULT_LIBRARY.as_posix()}"
    path = Path(library)
    if path.is_file() and path.name.endswith((".tgz", ".tar.gz")):
        return _unpack(path, scratch / "package"), str(path)
    if not path.exists():
        raise SetupError(f"the library {path} ({origin}) does not exist: {INSTALL_HINT}")
    found = _library_in(path) if path.is_dir() else None
    if found is None:
        raise SetupError(f"the library {path} ({origin}) has no {ENTRY}: {INSTALL_HINT}")
    return found, str(found)


def _link(source: Path, dest: Path) -> None:
    """A symbolic link where the platform allows one, else a copy."""
    try:
        os.symlink(source.resolve(), dest, target_is_directory=source.is_dir())
    except OSError:
        if source.is_dir():
            shutil.copytree(source, dest)
        else:
            shutil.copy2(source, dest)


def stage(root: Path, library: Path, artifacts: Artifacts, data: Data, compare_at: list, learning_rate,
          timeout: float) -> dict:
    """Fill ``root`` (the library as onnxtrain/, the page, artifacts/, data/); the manifest the page runs."""
    _link(library, root / "onnxtrain")
    for name in PAGE_FILES:
        (root / name).write_bytes(resources.files(__package__).joinpath(name).read_bytes())
    (root / "artifacts").mkdir()
    urls = {}
    for name, path in artifacts.files().items():
        _link(path, root / "artifacts" / name)
        urls[name] = f"artifacts/{name}"
    (root / "data").mkdir()
    inputs = []
    for i, (name, array) in enumerate(zip(data.names, data.arrays)):
        (root / "data" / f"{i}.bin").write_bytes(array.tobytes())
        inputs.append({"name": name, "type": TENSOR_TYPES[array.dtype.name], "url": f"data/{i}.bin",
                       "shape": list(array.shape)})
    return {"library": "./onnxtrain/onnxtrain.mjs",
            "artifacts": {"checkpointState": urls["checkpoint"], "trainModel": urls["training_model.onnx"],
                          "evalModel": urls.get("eval_model.onnx"), "optimizerModel": urls["optimizer_model.onnx"]},
            "inputs": inputs, "batches": [list(b) for b in data.batches], "compareAt": sorted(compare_at),
            "learningRate": learning_rate, "timeoutMs": int(timeout * 1000)}


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
                      ".json": "application/json", ".whl": "application/zip", ".zip": "application/zip",
                      "": "application/octet-stream"}

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format, *args):
        pass


class Server:
    """``root`` served on 127.0.0.1 (a free port) from a daemon thread, until close()."""

    def __init__(self, root: Path):
        handler = functools.partial(_Handler, directory=str(root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
