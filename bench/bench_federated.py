"""Federated training on Flower's deployment engine: rounds per minute and bytes per client per round, browser pages
next to native CPython clients in the same run of the bench.

For each model (--models: the MLP and the CNN of artifacts/federated_digits/) and each number of clients
(--clients, e.g. 4 and 8), two federations run one after the other, each started by `python -m onnxtrain federate`
(--record-requests, free ports, --rounds rounds, --min-clients = the number of clients, FedAvg, each client 5
local epochs of SGD with batches of 32 and a rate of 0.5 per round, as tests/federated/test_federation.py trains, unless
given here; the server's other defaults):

- browser: that many pages of one headless Chromium (Debian's, driven by Playwright; one browser context per page),
  each a client through the library's Federation API (bench/pages/federated.js), each with its own
  data/client_<k>.csv;
- native: the same number of `python -m onnxtrain join --backend onnxtrain` processes (CPython onnxtrain), each
  with the same client_<k>.csv.

Every process runs one thread (OMP_NUM_THREADS=1; the page's engine is single-threaded).  Reported per federation:

- startup: from the federate command's launch to round 1's start (fed/status, polled every 0.25 s), with the
  moment the server answered and, for pages, the engine's start and the moment every page had joined;
- the round time: the median [min-max] of the time from one round's end to the next one's (round 1: from its
  start), seen in fed/status, and the median of the rounds' own `seconds` in fed/status's history; rounds per
  minute = 60 / that median round time;
- bytes per client per round, counted from round 1's end to the last round's end and divided by the rounds in
  between (no startup traffic in them; the median over clients): for a page, every fed/ request it made (request
  line and headers, body; response headers and body, as Chromium counts them for Playwright's request.sizes():
  the long polls, the tasks, the results; the bench's pages do not poll fed/status as the app's panel does every
  3 s), and its payload alone: the global parameters it received and the parameters it sent with its metrics
  header (the server's fed/requests record gives the body lengths the server read; the vectors are 4*N bytes for a
  model of N float32 parameters); for a native client, everything its flower-supernode exchanged with the
  SuperLink (a counting TCP relay sits between them: Flower's protobuf messages, polls and heartbeats);
- the global model's accuracy on data/test.csv after the last round (the server evaluates it each round).

The federation's site is a copy of site/ (`build.py site`) with the bench pages, in .cache/bench-federated-site/.
Run it alone (it starts up to 8 pages and their Flower nodes on this machine), e.g. under the browser tests' lock:
`flock /tmp/onnxtrain-site.lock .venv/bin/python bench/bench_federated.py`."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "pysrc")]
import build  # noqa: E402
from onnxtrain.federated.processes import free_port  # noqa: E402

PAGES = ROOT / "bench" / "pages"
BENCH_SITE = build.CACHE / "bench-federated-site"
FED_DIR = "artifacts/federated_digits"
PAGE_FILES = ["federated.html", "federated.js", "util.js"]
POLL_S = 0.25


def assemble() -> Path:
    """.cache/bench-federated-site/: site/ copied, with the bench's page under bench-pages/."""
    for _ in range(10):  # someone may be rebuilding site/ (it is replaced by a rename)
        if (build.SITE / FED_DIR / "data" / "test.csv").exists():
            break
        time.sleep(3)
    else:
        build.build_site()
    tmp = BENCH_SITE.with_name(BENCH_SITE.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(build.SITE, tmp)
    (tmp / "bench-pages").mkdir()
    for name in PAGE_FILES:
        shutil.copy2(PAGES / name, tmp / "bench-pages" / name)
    shutil.rmtree(BENCH_SITE, ignore_errors=True)
    tmp.rename(BENCH_SITE)
    return BENCH_SITE


def env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                PYTHONPATH=str(ROOT / "pysrc"), PYTHONUNBUFFERED="1")


def get(url: str, timeout: float = 5.0):
    """(status, body bytes) of a GET; (None, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (OSError, urllib.error.URLError):
        return None, b""


def stop(process: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM to a process this bench started (in its own session), then SIGKILL to its process group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # its group: children it left behind (the group's id is its pid)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


class Relay:
    """A TCP relay 127.0.0.1:port -> target that counts the bytes each way (a native client's supernode talks to
    the SuperLink through it)."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.up = self.down = 0  # bytes client -> SuperLink, SuperLink -> client
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def counts(self) -> int:
        with self.lock:
            return self.up + self.down

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pipe, args=(client, upstream, "up"), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, "down"), daemon=True).start()

    def _pipe(self, source, dest, way):
        try:
            while data := source.recv(65536):
                dest.sendall(data)
                with self.lock:
                    setattr(self, way, getattr(self, way) + len(data))
        except OSError:
            pass
        finally:
            for s in (source, dest):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            source.close()

    def close(self):
        self.closed = True
        self.listener.close()


class Watch(threading.Thread):
    """Polls fed/status: when each round started and ended (time.time()), the relays' byte counts at round 1's
    start and at the run's end, the last status, and fed/requests (the server's record) as the last round ends."""

    def __init__(self, url: str, rounds: int, relays=()):
        super().__init__(daemon=True)
        self.url, self.rounds, self.relays = url, rounds, list(relays)
        self.begin, self.end = {}, {}
        self.server_up = self.all_joined = None
        self.expect_clients = None
        self.status, self.requests = None, None
        self.relay_bytes = {}  # round -> [bytes per relay] when its end was seen
        self.finished = threading.Event()
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            code, body = get(self.url + "fed/status", 3)
            now = time.time()
            if code == 200:
                self._seen(json.loads(body), now)
            if self.finished.is_set():
                return
            self.halt.wait(POLL_S)

    def _seen(self, status: dict, now: float):
        self.status = status
        self.server_up = self.server_up or now
        if self.expect_clients and status.get("clients", 0) >= self.expect_clients and not self.all_joined:
            self.all_joined = now
        if status["phase"] == "running" and status["round"] >= 1:
            if status["round"] not in self.begin:
                self.begin[status["round"]] = now
        for entry in status["history"]:
            if entry["round"] not in self.end:
                self.end[entry["round"]] = now
                self.relay_bytes[entry["round"]] = [r.counts() for r in self.relays]
        if len(status["history"]) >= self.rounds and self.requests is None:
            code, body = get(self.url + "fed/requests", 10)
            if code == 200:
                self.requests = json.loads(body)
        if status["phase"] in ("done", "failed"):
            if self.requests is None:
                code, body = get(self.url + "fed/requests", 10)
                self.requests = json.loads(body) if code == 200 else None
            self.finished.set()


def federate(site: Path, model: str, clients: int, args, logs: Path, tag: str):
    """The federate command for ``model`` on free ports: (process, site URL, SuperLink port)."""
    port, superlink = free_port(), free_port()
    command = [sys.executable, "-m", "onnxtrain", "federate", "--artifacts", str(site / FED_DIR / model),
               "--site", str(site), "--eval", str(site / FED_DIR / "data" / "test.csv"), "--rounds", str(args.rounds),
               "--min-clients", str(clients), "--port", str(port), "--superlink-port", str(superlink),
               "--record-requests", "--log-dir", str(logs / f"{tag}-flower")]
    for option in ("local_epochs", "batch_size", "learning_rate", "round_timeout"):
        value = getattr(args, option)
        if value is not None:
            command += ["--" + option.replace("_", "-"), str(value)]
    log = open(logs / f"{tag}-federate.log", "wb")
    process = subprocess.Popen(command, cwd=ROOT, env=env(), stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    return process, f"http://127.0.0.1:{port}/", superlink


def wait_info(url: str, process: subprocess.Popen, timeout: float = 120.0) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the federate command exited ({process.returncode}) before it served fed/info")
        code, body = get(url + "fed/info", 2)
        if code == 200:
            return json.loads(body)
        time.sleep(0.2)
    raise RuntimeError(f"no fed/info from {url} within {timeout:.0f} s")


def wait_run(watch: Watch, process: subprocess.Popen, timeout: float, alive=lambda: None) -> None:
    """Until fed/status says the run ended; RuntimeError when it failed, the server exited or it took too long.
    ``alive()`` raises if a client broke off."""
    deadline = time.time() + timeout
    while not watch.finished.wait(1.0):
        alive()
        if process.poll() is not None and not watch.finished.wait(3 * POLL_S):
            raise RuntimeError(f"the federate command exited ({process.returncode}) before the run's end")
        if time.time() > deadline:
            raise RuntimeError(f"the run did not end within {timeout:.0f} s (last status: {watch.status})")
    if watch.status["phase"] != "done":
        raise RuntimeError(f"the run failed: {watch.status.get('error')}")


def fed_kind(url: str) -> str:
    path = url.split("/fed/", 1)[1].split("?")[0]
    return "artifacts" if path.startswith("artifacts/") else path


def browser_run(playwright, site: Path, model: str, clients: int, args, logs: Path) -> dict:
    from browser.conftest import CHROMIUM_ARGS
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    tag = f"{model}-{clients}-browser"
    t0 = time.time()
    process, url, _ = federate(site, model, clients, args, logs, tag)
    watch = Watch(url, args.rounds)
    watch.expect_clients = clients
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    finished = [[] for _ in range(clients)]  # per page: its finished fed/ requests
    pages = []
    try:
        info = wait_info(url, process)
        watch.start()
        for k in range(clients):
            page = browser.new_context().new_page()
            page.on("requestfinished", lambda r, k=k: finished[k].append(r) if "/fed/" in r.url else None)
            page.goto(url + "bench-pages/federated.html")
            page.wait_for_function("() => window.bench && window.bench.ready")
            page.evaluate("(o) => window.bench.begin(o)",
                          {"fedUrl": "../fed/", "dataUrl": f"../{FED_DIR}/data/client_{k}.csv"})
            pages.append(page)

        def alive():
            for k, page in enumerate(pages):
                if page.evaluate("window.bench.phase") == "failed":
                    raise RuntimeError(f"page {k}: {page.evaluate('window.bench.error')}")

        wait_run(watch, process, args.timeout, alive)
        for page in pages:  # each page sees the run's end (410, then fed/status: done) while the server lingers
            try:
                page.wait_for_function("() => window.bench.phase !== 'joined'", timeout=15_000)
            except PlaywrightTimeout:
                pass
        results = [page.evaluate("window.bench.out") for page in pages]
        ended = [page.evaluate("window.bench.phase") for page in pages]
        wire = [page_bytes(finished[k], watch, info) for k in range(clients)]
    finally:
        for page in pages:
            page.context.close()
        browser.close()
        watch.halt.set()
        stop(process)
    out = summary(watch, info, t0, clients, "browser")
    out["payload_per_round"] = payload_per_round(watch.requests, info, args.rounds)
    out["wire_per_round"] = median_or_none([w["per_round"] for w in wire])
    out["wire_startup"] = statistics.median(w["startup"] for w in wire)
    out["wire_by_kind"] = [w["by_kind"] for w in wire]
    out["engine_s"] = [r["engineMs"] / 1000 for r in results]
    out["session_s"] = [r["sessionMs"] / 1000 for r in results]
    out["all_joined"] = (watch.all_joined or t0) - t0
    local = [(e["sent"] - e["training"]) / 1000 for r in results for e in r["rounds"] if "sent" in e]
    out["page_round_s"] = local
    out["rounds_sent"] = [sum("sent" in e for e in r["rounds"]) for r in results]
    out["page_phase_after_run"] = ended  # "done": the page's join() ended with the run
    return out


def native_run(site: Path, model: str, clients: int, args, logs: Path) -> dict:
    tag = f"{model}-{clients}-native"
    t0 = time.time()
    process, url, superlink = federate(site, model, clients, args, logs, tag)
    relays = [Relay(superlink) for _ in range(clients)]
    watch = Watch(url, args.rounds, relays)
    joins = []
    try:
        info = wait_info(url, process)
        watch.start()
        for k, relay in enumerate(relays):
            log = open(logs / f"{tag}-join{k}.log", "wb")
            command = [sys.executable, "-m", "onnxtrain", "join", "--superlink", f"127.0.0.1:{relay.port}",
                       "--server", url, "--data", str(site / FED_DIR / "data" / f"client_{k}.csv"),
                       "--backend", "onnxtrain", "--work-dir", str(logs / f"{tag}-join{k}")]
            joins.append(subprocess.Popen(command, cwd=ROOT, env=env(), stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))

        def alive():
            for k, join in enumerate(joins):
                if join.poll():  # a join ends by itself (0) once it sees the run's end
                    raise RuntimeError(f"native client {k} exited ({join.returncode}); see {logs}/{tag}-join{k}.log")

        wait_run(watch, process, args.timeout, alive)
    finally:
        watch.halt.set()
        for join in joins:
            stop(join, 15)
        stop(process)
        for relay in relays:
            relay.close()
    out = summary(watch, info, t0, clients, "native")
    steady = steady_rounds(watch)
    if steady:
        first, last = steady
        out["wire_per_round"] = statistics.median(
            b - a for a, b in zip(watch.relay_bytes[first], watch.relay_bytes[last])) / (last - first)
    return out


def steady_rounds(watch: Watch):
    """(first, last) round whose ends bound the rounds the bytes per round are counted over (rounds 2..R: from
    round 1's end to the last round's, so that no startup traffic is in them); None with fewer than 2 rounds."""
    ends = sorted(watch.end)
    return (ends[0], ends[-1]) if len(ends) >= 2 else None


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def page_bytes(requests: list, watch: Watch, info: dict) -> dict:
    """A page's fed/ traffic as Chromium counts it (request line, headers and body; response headers and body):
    per round over rounds 2..R (the requests that finished between round 1's end and the last round's), the
    startup (info, artifacts, join) and the whole run by kind of request."""
    steady = steady_rounds(watch)
    window = (watch.end[steady[0]] * 1000, watch.end[steady[1]] * 1000) if steady else None
    out = {"startup": 0, "steady": 0, "by_kind": {}}
    for request in requests:
        sizes, timing = request.sizes(), request.timing
        size = sum(sizes[key] for key in ("requestBodySize", "requestHeadersSize", "responseBodySize",
                                          "responseHeadersSize"))
        kind = fed_kind(request.url)
        out["by_kind"][kind] = out["by_kind"].get(kind, 0) + size
        if kind in ("info", "artifacts", "join"):
            out["startup"] += size
        if window and window[0] < timing["startTime"] + timing["responseEnd"] <= window[1]:
            out["steady"] += size
    out["per_round"] = out["steady"] / (steady[1] - steady[0]) if steady else None
    return out


def payload_per_round(requests, info: dict, rounds: int):
    """Per page (client id) and round: the parameter bytes it received and sent (the server's record: the body
    lengths of its POST fed/result, and 4*N for each task it answered); the median over pages."""
    if not requests:
        return None
    sent = {}
    for r in requests:
        if r["method"] == "POST" and r["path"].startswith("/fed/result"):
            client = r["path"].split("client=", 1)[1].split("&")[0]
            sent.setdefault(client, []).append(r["bodyLength"] + len(r["headers"].get("X-Metrics", "")))
    if not sent:
        return None
    # a page receives the global vector (4*N bytes) for each task it answers
    return statistics.median(sum(s) / len(s) + 4 * info["parameters"] for s in sent.values())


def first_round(watch: Watch) -> float:
    """When round 1 started (as fed/status showed it; its end if no poll saw it running)."""
    return watch.begin.get(1) or min([*watch.begin.values(), *watch.end.values()])


def summary(watch: Watch, info: dict, t0: float, clients: int, kind: str) -> dict:
    rounds = sorted(watch.end)
    times = [watch.end[r] - (watch.end[r - 1] if r - 1 in watch.end else watch.begin.get(r, watch.end[r]))
             for r in rounds]
    if not times:
        raise RuntimeError("no round ended")
    history = watch.status["history"]
    last = history[-1].get("global") or {}
    return {"kind": kind, "clients": clients, "model": info.get("model"), "parameters": info["parameters"],
            "localEpochs": info.get("localEpochs"), "batchSize": info.get("batchSize"),
            "learningRate": info.get("learningRate"), "strategy": info.get("strategy"),
            "server_up": (watch.server_up or t0) - t0, "startup": first_round(watch) - t0,
            "round_s": times, "history_s": [h["seconds"] for h in history],
            "rounds_per_minute": 60 / statistics.median(times),
            "results": [h["results"] for h in history], "failures": [h["failures"] for h in history],
            "accuracy": last.get("accuracy"), "loss": last.get("loss"),
            "initial_accuracy": (watch.status.get("initial") or {}).get("accuracy")}


def cell(values, digits=1) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def kb(value) -> str:
    return "n/a" if value is None else f"{value / 1000:.1f}"


def report(runs: list, args) -> None:
    print(f"\nFederated digits on Flower 1.42's deployment engine, {args.rounds} rounds per federation, one thread "
          f"per process (round times: median [min-max] over the rounds)\n")
    print("| model (N parameters) | clients | client | startup s | round s | rounds/min | history s | "
          "kB/client/round: parameters | on the wire | final accuracy |")
    print("|---" * 10 + "|")
    for r in runs:
        if "error" in r:
            print(f"| {r['key'][0]} | {r['key'][1]} | {r['key'][2]} | failed: {r['error'][:150]} |||||||")
            continue
        accuracy = "n/a" if r["accuracy"] is None else f"{r['accuracy']:.4f}"
        print(f"| {r['model']} ({r['parameters']}, 4N = {4 * r['parameters']} B) | {r['clients']} | {r['kind']} | "
              f"{r['startup']:.0f} | {cell(r['round_s'])} | {r['rounds_per_minute']:.2f} | "
              f"{statistics.median(r['history_s']):.1f} | {kb(r.get('payload_per_round'))} | "
              f"{kb(r.get('wire_per_round'))} | {accuracy} |")
    print()
    by = {r["key"]: r for r in runs if "error" not in r}
    for model in args.models:
        for clients in args.clients:
            b, n = by.get((model, clients, "browser")), by.get((model, clients, "native"))
            if b and n:
                print(f"{model}, {clients} clients: browser / native rounds per minute = "
                      f"{b['rounds_per_minute'] / n['rounds_per_minute']:.2f}; pages' engine start "
                      f"{cell(b['engine_s'], 1)} s, all pages joined {b['all_joined']:.0f} s after launch; a page's "
                      f"own part of a round (parameters in, evaluate, train, evaluate, parameters out) "
                      f"{cell(b['page_round_s'], 2)} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each federation")
    parser.add_argument("--clients", type=int, nargs="+", default=[4, 8], help="clients per federation (<= 8)")
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], help="mlp and/or cnn (others are skipped)")
    parser.add_argument("--kinds", nargs="+", choices=["browser", "native"], default=["browser", "native"])
    parser.add_argument("--local-epochs", type=int, default=5, help="the clients' epochs per round (default 5)")
    parser.add_argument("--batch-size", type=int, default=32, help="the clients' batch size (default 32)")
    parser.add_argument("--learning-rate", type=float, default=0.5, help="the clients' rate (default 0.5)")
    parser.add_argument("--round-timeout", type=float, help="the federate command's (default: the server's)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a federation may take in all")
    parser.add_argument("--quick", action="store_true", help="3 rounds, the MLP, 4 clients")
    parser.add_argument("--json", type=Path, default=build.CACHE / "bench-federated.json",
                        help="where to write every federation's results (default: %(default)s)")
    args, _ = parser.parse_known_args()  # build.py bench hands every bench script the same arguments
    if args.quick:
        args.rounds, args.models, args.clients = 3, ["mlp"], [4]
    args.models = [m for m in args.models if m in ("mlp", "cnn")]  # other benches' models are not federated here
    if not all(1 <= k <= 8 for k in args.clients):
        parser.error("--clients: between 1 and 8 (the digits are split into 8 client files)")
    from playwright.sync_api import sync_playwright
    t0 = time.perf_counter()
    site = assemble()
    logs = Path(tempfile.mkdtemp(prefix="bench-federated-"))
    print(f"Federated bench: {args.rounds} rounds; models {' '.join(args.models)}; clients "
          f"{' '.join(map(str, args.clients))}; logs in {logs}", flush=True)
    runs = []
    with sync_playwright() as p:
        for model in args.models:
            for clients in args.clients:
                for kind in args.kinds:
                    key = (model, clients, kind)
                    t = time.perf_counter()
                    try:
                        if kind == "browser":
                            run = browser_run(p, site, model, clients, args, logs)
                        else:
                            run = native_run(site, model, clients, args, logs)
                    except Exception as e:  # noqa: BLE001 - one failed federation is reported, the next goes on
                        run = {"error": f"{type(e).__name__}: {e}"}
                    run["key"] = key
                    runs.append(run)
                    brief = {k: v for k, v in run.items() if k in ("startup", "round_s", "rounds_per_minute",
                                                                   "payload_per_round", "wire_per_round", "accuracy",
                                                                   "error")}
                    print(f"{model}, {clients} {kind} clients ({time.perf_counter() - t:.0f} s): {brief}", flush=True)
                    args.json.parent.mkdir(parents=True, exist_ok=True)  # after each federation: kept if stopped
                    args.json.write_text(json.dumps({"rounds": args.rounds, "runs": runs}, indent=1))
    report(runs, args)
    print(f"\n(results in {args.json}; bench took {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
