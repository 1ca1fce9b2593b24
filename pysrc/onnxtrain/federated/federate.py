"""``python -m onnxtrain federate``: a Flower federation on this machine that pages, CPython and onnxruntime-training
clients join.  It starts flower-superlink, the HTTP server (the site, the pages' API under fed/ and the bridge),
the fleet bridge that is every page's Flower node (one process for all pages), and submits the run (`flwr run` of a generated Flower App); it prints each
round and each rejected update, and stops every process it started when the run ends, on Ctrl-C or SIGTERM."""
from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time

from .bridge_http import Federation, make_server
from .bridge_state import BridgeState
from .fleet_bridge import FleetBridge
from .flower_files import STRATEGIES, write_app, write_connection
from .model import FederatedModel, read_csv
from .processes import Children, child_env, log_tail, on_signals, tool

HOST = "127.0.0.1"


def add_arguments(parser) -> None:
    parser.add_argument("--artifacts", required=True, metavar="DIR",
                        help="training artifacts (training_model.onnx, eval_model.onnx, optimizer_model.onnx, "
                             "checkpoint) that every client trains")
    parser.add_argument("--site", metavar="DIR", help="serve this folder's files too (the onnxtrain site)")
    parser.add_argument("--eval", metavar="CSV", help="held-out data (a CSV of numbers) the global model is "
                                                      "evaluated on after each round")
    parser.add_argument("--rounds", type=int, default=3, metavar="N", help="default 3")
    parser.add_argument("--min-clients", type=int, default=2, metavar="K",
                        help="a round starts once K clients are connected, and trains all connected; default 2")
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="fedavg")
    parser.add_argument("--proximal-mu", type=float, default=0.1, metavar="MU", help="FedProx's mu; default 0.1")
    parser.add_argument("--server-learning-rate", type=float, default=0.01, metavar="ETA",
                        help="FedAdam's server-side rate; default 0.01")
    parser.add_argument("--local-epochs", type=int, default=5, metavar="E",
                        help="epochs each client trains per round; default 5 (a round costs Flower seconds anyway)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="B", help="default 32")
    parser.add_argument("--learning-rate", type=float, default=0.1, metavar="LR", help="clients' rate; default 0.1")
    parser.add_argument("--round-timeout", type=float, default=120.0, metavar="S",
                        help="a round aggregates what came within S seconds; default 120")
    parser.add_argument("--dp-noise", type=float, default=None, metavar="SIGMA",
                        help="server-side differential privacy (Flower's fixed clipping): noise multiplier")
    parser.add_argument("--dp-clip", type=float, default=None, metavar="C", help="... and the clipping norm")
    parser.add_argument("--port", type=int, default=8000, help="the HTTP server's port (0: any free one)")
    parser.add_argument("--superlink-port", type=int, default=9092)
    parser.add_argument("--outputs", nargs="+", default=["output"], metavar="NAME",
                        help="outputs of the exported global model (fed/global.onnx); default output")
    parser.add_argument("--classes", metavar="NAMES",
                        help="comma-separated class names: pages may then train on a folder of images")
    parser.add_argument("--page-timeout", type=float, default=10.0, metavar="S",
                        help="a page silent this long is dropped and its task fails; default 10")
    parser.add_argument("--max-pages", type=int, default=1000, metavar="N",
                        help="pages (Flower nodes of the fleet bridge) at once at most; default 1000")
    parser.add_argument("--join-rate", type=float, default=50.0, metavar="R",
                        help="pages that may join per second (more are refused with 429); default 50")
    parser.add_argument("--heartbeat-interval", type=float, default=60.0, metavar="S",
                        help="the pages' nodes' heartbeat interval (10 to 1800 s; the SuperLink takes a node for "
                             "offline after two); default 60")
    parser.add_argument("--linger", type=float, default=10.0, metavar="S",
                        help="keep serving the site, status and global model S seconds after the run ends")
    parser.add_argument("--log-dir", metavar="DIR", help="where the Flower processes' logs go (default: a new "
                                                         "temporary folder, removed at the end)")
    parser.add_argument("--record-requests", action="store_true", help=argparse.SUPPRESS)  # tests: GET fed/requests


def check_arguments(args) -> None:
    for name in ("rounds", "min_clients", "local_epochs", "batch_size", "max_pages"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    for name in ("learning_rate", "round_timeout", "page_timeout", "join_rate"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if (args.dp_noise is None) != (args.dp_clip is None):
        raise ValueError("differential privacy needs both --dp-noise and --dp-clip")
    if args.dp_clip is not None and (args.dp_clip <= 0 or args.dp_noise < 0):
        raise ValueError(f"--dp-clip must be > 0 and --dp-noise >= 0, got {args.dp_clip} and {args.dp_noise}")
    if not 10 <= args.heartbeat_interval <= 1800:
        raise ValueError(f"--heartbeat-interval must be 10 to 1800 s (Flower's limits), got {args.heartbeat_interval}")
    if args.site is not None and not os.path.isdir(args.site):
        raise ValueError(f"--site {args.site} is not a folder")


def image_info(model: FederatedModel, classes):
    """info's "image": how a folder of images becomes the first training input (None without --classes)."""
    if not classes:
        return None
    names = [c.strip() for c in classes.split(",") if c.strip()]
    first = model.train_inputs[0]
    shape = model.types[first][1]
    if not shape or len(shape) != 4 or shape[2] != shape[3] or None in shape[1:]:
        raise ValueError(f"--classes needs a model whose input {first!r} is images [batch, channels, size, size]; "
                         f"it is {shape}")
    return {"size": shape[2], "channels": shape[1], "classes": names}


def make_info(args, model: FederatedModel) -> dict:
    folder = os.path.normpath(os.path.abspath(args.artifacts))
    return {"model": f"{os.path.basename(os.path.dirname(folder))}/{os.path.basename(folder)}",
            "parameters": model.size,
            "artifacts": {"trainModel": "fed/artifacts/training_model.onnx",
                          "evalModel": "fed/artifacts/eval_model.onnx",
                          "optimizerModel": "fed/artifacts/optimizer_model.onnx",
                          "checkpointState": "fed/artifacts/checkpoint"},
            "rounds": args.rounds, "minClients": args.min_clients, "strategy": STRATEGIES[args.strategy],
            "localEpochs": args.local_epochs, "batchSize": args.batch_size, "learningRate": args.learning_rate,
            "dp": None if args.dp_clip is None else {"noiseMultiplier": args.dp_noise, "clippingNorm": args.dp_clip},
            "inputs": model.describe_inputs(), "outputs": list(args.outputs),
            "image": image_info(model, args.classes)}


def run_config(args, url: str, token: str) -> dict:
    return {"num-server-rounds": args.rounds, "min-clients": args.min_clients, "strategy": args.strategy,
            "proximal-mu": float(args.proximal_mu if args.strategy == "fedprox" else 0.0),
            "server-learning-rate": float(args.server_learning_rate), "local-epochs": args.local_epochs,
            "batch-size": args.batch_size, "learning-rate": float(args.learning_rate),
            "round-timeout": float(args.round_timeout), "dp-noise": float(args.dp_noise or 0.0),
            "dp-clip": float(args.dp_clip or 0.0), "bridge": url, "bridge-token": token}


class Stopped(Exception):
    pass


def federate(args, out=sys.stdout) -> int:
    """Run the federation; the exit code (0 when the run finished)."""
    check_arguments(args)
    model = FederatedModel(args.artifacts)
    eval_data = read_csv(args.eval, model.types) if args.eval else None
    info = make_info(args, model)
    try:  # fed/global.onnx must work at any round: the initial model's export now
        model.export(model.initial, args.outputs)
    except (ValueError, KeyError) as e:
        raise ValueError(f"--outputs {' '.join(args.outputs)}: the eval model cannot export them ({e}); its "
                         f"outputs are {model.eval_outputs}") from None
    started = time.monotonic()
    work = args.log_dir or tempfile.mkdtemp(prefix="onnxtrain-federation-")
    os.makedirs(work, exist_ok=True)
    flwr_home = os.path.join(work, "flwr-home")
    env = child_env(flwr_home)
    children = Children(work)
    token = secrets.token_hex(16)
    lock = threading.Lock()

    def say(text: str) -> None:
        with lock:
            print(f"[federation {time.monotonic() - started:6.1f}s] {text}", file=out, flush=True)

    stop = threading.Event()
    on_signals(lambda signum: stop.set())
    server = state = fleet = None
    try:
        superlink_address = f"{HOST}:{args.superlink_port}"
        superlink = children.start("superlink", [tool("flower-superlink"), "--insecure", "--host", HOST, "--port",
                                                 str(args.superlink_port), "--database", ":flwr-in-memory:",
                                                 "--disable-runtime-dependency-installation"], env)
        fleet = FleetBridge(superlink_address, heartbeat_interval=args.heartbeat_interval, log=say)
        state = BridgeState(model.size, fleet, page_timeout=args.page_timeout, max_pages=args.max_pages,
                            join_rate=args.join_rate, log=say)
        fleet.deliver = state.deliver
        try:
            server = make_server(Federation(state, model, info, eval_data, args.outputs, token,
                                            args.record_requests, fleet), args.port, args.site, HOST)
        except OSError as e:
            raise RuntimeError(f"cannot serve on {HOST}:{args.port} ({e.strerror}): choose another --port") from None
        url = f"http://{HOST}:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True, name="fed-http").start()
        seconds = children.wait_port(superlink, HOST, args.superlink_port, stopped=stop.is_set)
        if stop.is_set():
            raise Stopped()
        say(f"SuperLink up on {superlink_address} after {seconds:.1f} s")
        app = write_app(os.path.join(work, "app"), run_config(args, url, token))
        connection = write_connection(flwr_home, superlink_address)
        run = children.start("flwr-run", [tool("flwr"), "run", app, connection, "--stream"], env)
        say(f"serving {url}/ ; pages join from the site's federation panel; native clients join with:\n"
            f"    {sys.executable} -m onnxtrain join --superlink {superlink_address} --server {url}/ "
            f"--data YOUR.csv [--backend onnxruntime]\n"
            f"  {STRATEGIES[args.strategy]}, {args.rounds} rounds, a round starts with {args.min_clients} clients; "
            f"logs in {work}")
        while run.poll() is None and not stop.is_set() and state.phase not in ("done", "failed"):
            time.sleep(0.2)
        if stop.is_set():
            raise Stopped()
        if state.phase != "done":
            if state.phase != "failed":
                state.finish(False, f"flwr run ended (code {run.poll()}) before the run finished")
            say(f"the end of flwr run's log ({run.log}):\n{log_tail(run.log, 30)}")
            return 1
        say(f"done after {time.monotonic() - started:.1f} s")
        children.stop_all()
        if args.linger > 0:
            say(f"serving the site, fed/status and fed/global.onnx for {args.linger:g} s more")
            stop.wait(args.linger)
        return 0
    except Stopped:
        say("stopping (signal)")
        return 130
    finally:
        if state is not None:
            state.close()
        if fleet is not None:
            fleet.close_all()
        if server is not None:
            server.shutdown()
            server.server_close()
        children.stop_all()
        if not args.log_dir:
            shutil.rmtree(work, ignore_errors=True)
