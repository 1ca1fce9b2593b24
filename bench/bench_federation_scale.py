"""Many pages in one Flower federation: server memory and round time against the number of pages.

For each N in --clients (e.g. 10 100 1000), `python -m onnxtrain federate` (one SuperLink, the fleet bridge that is
every page's Flower node, FedAvg, --rounds rounds, --min-clients N) trains a ~100k-parameter MLP (64-1024-32-10,
99,722 parameters, made here with onnxtrain's generate_artifacts) while N simulated pages (tests/federated/
page_wire.py: the HTTP exchange of web/lib/src/federation.mjs, fed/status every 3 s included, from one asyncio
loop in this process) answer each round with a deterministic update.  Reported per N:

- server memory: the peak RSS (sampled every 0.5 s from /proc) of flower-superlink, flower-superexec,
  flwr-serverapp and the federate process (the HTTP server and the fleet bridge), and their sum, with the idle
  sum before the first page joined; the added memory per page;
- the round time: each round's `seconds` in fed/status's history (ServerApp's push to aggregation);
- the aggregate: the global vector the pages received in round r+1 against Flower's FedAvg of the updates they
  sent in round r (the largest difference, and the float32 reordering bound n * eps * max|w|).

The machine is shared (2 cores; the generator runs on them too).  Not a test: run it by hand, alone, e.g.
`.venv/bin/python bench/bench_federation_scale.py --clients 10 100 1000`."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "pysrc"), str(ROOT / "tests" / "federated")]

from page_wire import SimPage, aggregate_checks, run_pages  # noqa: E402

NAMES = {"flower-superlink": "superlink", "flower-superexec": "superexec", "flwr-serverapp": "serverapp"}


def artifacts(folder: Path) -> Path:
    from onnxtrain.tasks.tabular import mlp_model
    from onnxtrain.tasks.training import make_artifacts
    out = folder / "mlp100k"
    out.mkdir(exist_ok=True)
    for name, data in make_artifacts(mlp_model(64, [1024, 32], 10, 0), "CrossEntropyLoss", "SGD",
                                     extra_outputs=["output"]).items():
        (out / name).write_bytes(data)
    return out


def tree(pid: int) -> list:
    children, out = {}, []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    todo = [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def rss_by_role(root: int) -> dict:
    """MB of RSS of the federation's server processes by role (the generator, this process, is not in it)."""
    found = {}
    for pid in tree(root):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        role = "federate" if pid == root else next((r for k, r in NAMES.items() if k in cmd), None)
        if role is None:
            continue
        kb = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        found[role] = found.get(role, 0) + kb / 1024
    return found


class Sampler(threading.Thread):
    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.peak, self.stop, self.idle = root, {}, threading.Event(), None

    def run(self):
        while not self.stop.wait(0.5):
            now = rss_by_role(self.root)
            for role, mb in now.items():
                self.peak[role] = max(self.peak.get(role, 0), mb)
            self.peak["total"] = max(self.peak.get("total", 0), sum(now.values()))


def one(n: int, model: Path, rounds: int, work: Path) -> dict:
    out = work / f"federate-{n}.out"
    port_superlink = 19000 + n % 1000
    env = dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"), OMP_NUM_THREADS="1")
    with open(out, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "onnxtrain", "federate", "--artifacts", str(model),
                                 "--rounds", str(rounds), "--min-clients", str(n), "--port", "0",
                                 "--superlink-port", str(port_superlink), "--round-timeout", "600",
                                 "--page-timeout", "60", "--join-rate", "100", "--max-pages", str(n + 10),
                                 "--linger", "30", "--log-dir", str(work / f"logs-{n}")],
                                stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        while not (m := re.search(r"serving (http://127\.0\.0\.1:\d+)/", out.read_text())):
            assert proc.poll() is None, out.read_text()
            time.sleep(0.2)
        url = m.group(1)
        time.sleep(8)  # the ServerApp starts and waits for nodes
        sampler = Sampler(proc.pid)
        sampler.idle = sum(rss_by_role(proc.pid).values())
        sampler.start()
        pages = [SimPage(i) for i in range(n)]
        started = time.monotonic()
        asyncio.run(run_pages(url, pages, 3000))
        wall = time.monotonic() - started
        sampler.stop.set()
        with urllib.request.urlopen(f"{url}/fed/status", timeout=30) as r:
            status = json.loads(r.read())
    finally:
        proc.terminate()
        proc.wait(60)
    checks = aggregate_checks(pages)
    return {"clients": n, "phase": status["phase"], "wall": wall, "idle_mb": sampler.idle, "peak_mb": sampler.peak,
            "rounds": [(h["round"], h["results"], h["failures"], round(h["seconds"], 1)) for h in status["history"]],
            "aggregate": checks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fed-scale-") as tmp:
        work = Path(tmp)
        model = artifacts(work)
        for n in args.clients:
            r = one(n, model, args.rounds, work)
            peak = r["peak_mb"]
            print(f"N={n}: {r['phase']}, {r['wall']:.0f} s from first join to the end; server RSS idle "
                  f"{r['idle_mb']:.0f} MB, peak {peak.get('total', 0):.0f} MB (" +
                  ", ".join(f"{k} {v:.0f}" for k, v in sorted(peak.items()) if k != "total") +
                  f"), added {(peak.get('total', 0) - r['idle_mb']) / n * 1024:.0f} KB per page")
            print(f"  rounds (round, results, failures, seconds): {r['rounds']}")
            for round_, results, to_flower, bound, to64 in r["aggregate"]:
                print(f"  round {round_}: {results} updates; |server - Flower FedAvg| max {to_flower:.3g} "
                      f"(float32 bound {bound:.3g}); |server - float64 mean| max {to64:.3g}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
