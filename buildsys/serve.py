"""Serving a site on 127.0.0.1: static files with the headers Pyodide and cross-origin isolation need, and the
site with a Flower federation that pages join."""
from __future__ import annotations

import functools
import http.server
import os
import signal
import subprocess
import threading
from pathlib import Path

from buildsys.common import ROOT
from buildsys.site import build_site
from buildsys.venv import ensure_venv

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
