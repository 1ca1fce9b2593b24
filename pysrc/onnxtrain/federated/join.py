"""``python -m onnxtrain join``: one native client of a running federation.  It fetches the federation's artifacts
from the server, checks the local data against them, and runs a flower-supernode whose ClientApp trains on that
data with onnxtrain or onnxruntime-training; it stops when the run ends, on Ctrl-C or SIGTERM."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from .flower_files import write_node_config
from .local_round import BACKENDS
from .model import ARTIFACT_FILES, FederatedModel, read_csv
from .processes import Children, child_env, free_port, log_tail, on_signals, tool


def add_arguments(parser) -> None:
    parser.add_argument("--superlink", required=True, metavar="HOST:PORT", help="the federation's SuperLink")
    parser.add_argument("--server", required=True, metavar="URL", help="the federation's HTTP server (its site)")
    parser.add_argument("--data", required=True, metavar="CSV", help="this client's data: a CSV of numbers")
    parser.add_argument("--backend", choices=BACKENDS, default="onnxtrain")
    parser.add_argument("--work-dir", metavar="DIR", help="where the artifacts and the log go (default: a new "
                                                          "temporary folder, removed at the end)")


def fetch(url: str, timeout: float = 60) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{url}: HTTP {e.code} {e.read()[:200].decode(errors='replace')}") from None
    except OSError as e:
        raise RuntimeError(f"cannot reach {url}: {e}") from None


def status(server: str):
    try:
        return json.loads(fetch(server + "fed/status", 10))
    except (RuntimeError, ValueError):
        return None


def join(args, out=sys.stdout) -> int:
    if args.backend == "onnxruntime":
        try:
            import onnxruntime.training.api  # noqa: F401  (checked here rather than in every round)
        except ImportError as e:
            raise RuntimeError(f"the onnxruntime backend needs onnxruntime-training 1.19.2: {e}") from None
    server = args.server if args.server.endswith("/") else args.server + "/"
    data = os.path.abspath(args.data)
    work = args.work_dir or tempfile.mkdtemp(prefix="onnxtrain-client-")
    artifacts = os.path.join(work, "artifacts")
    os.makedirs(artifacts, exist_ok=True)
    children = Children(work)
    stop = threading.Event()
    on_signals(lambda signum: stop.set())
    try:
        info = json.loads(fetch(server + "fed/info"))
        for name in ARTIFACT_FILES:
            with open(os.path.join(artifacts, name), "wb") as f:
                f.write(fetch(server + "fed/artifacts/" + name))
        model = FederatedModel(artifacts)
        rows = read_csv(data, model.types)
        n = len(next(iter(rows.values())))
        config = write_node_config(os.path.join(work, "node.toml"), {
            "kind": "native", "backend": args.backend, "artifacts": artifacts, "data": data})
        node = children.start("supernode", [tool("flower-supernode"), "--insecure", "--superlink", args.superlink,
                                            "--port", str(free_port()), "--node-config", config],
                              child_env(os.path.join(work, "flwr-home")))
        print(f"joined the federation of {info['model']} ({info['parameters']} parameters, {info['strategy']}) "
              f"with {n} rows of {args.data} on {args.backend}; log {node.log}", file=out, flush=True)
        lost_since = None
        while not stop.is_set():
            if node.poll() is not None:
                print(f"the Flower node exited (code {node.returncode}):\n{log_tail(node.log)}", file=out)
                return 1
            current = status(server)
            lost_since = None if current is not None else (lost_since or time.monotonic())
            if lost_since is not None and time.monotonic() - lost_since > 30:
                print(f"lost the federation server at {server} for 30 s: stopping", file=out)
                return 1
            if current is not None and current["phase"] in ("done", "failed"):
                print(f"the federation's run ended: {current['phase']}", file=out, flush=True)
                return 0 if current["phase"] == "done" else 1
            stop.wait(2)
        return 130
    finally:
        children.stop_all()
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
