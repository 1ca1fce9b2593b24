"""What the service-worker isolation costs a first visit: page open -> "Ready" on a host that sends no COOP/COEP
(the page waits for the service worker's precache, reloads once, and starts isolated from the cache) against the
same site on a host that sends them (isolated at once; the worker registers after the start).

Each round is a fresh browser with an empty profile, once per host, in alternating order; both end cross-origin
isolated (checked), so the engine runs the same threads on both sides.  Reported: the median over rounds [min-max]
of page open -> Ready and, for the plain host, page open -> the reload; the ratio is the median of the per-round
ratios.  Run through `python3 build.py bench` (or with PYTHONPATH=pysrc once `python3 build.py site` has run).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import build  # noqa: E402
from bench_newcomer import summary  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402

READY = "() => document.getElementById('status').textContent.startsWith('Ready')"


def one_visit(playwright, url: str) -> dict:
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    try:
        page = browser.new_context().new_page()
        loads = []
        page.on("framenavigated", lambda frame: frame == page.main_frame and loads.append(time.perf_counter()))
        t0 = time.perf_counter()
        page.goto(url)
        page.wait_for_function(READY, timeout=600_000)
        ready = time.perf_counter()
        if not page.evaluate("() => crossOriginIsolated"):
            sys.exit(f"{url}: the page is not cross-origin isolated")
        return {"ready": (ready - t0) * 1e3, "loads": len(loads),
                "reload": (loads[1] - t0) * 1e3 if len(loads) > 1 else None}
    finally:
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args, _ = parser.parse_known_args()  # build.py bench hands every script the same arguments
    if not (build.SITE / "index.html").exists():
        sys.exit("site/ is not built: run `python3 build.py site` first")
    servers, urls = [], {}
    for host, isolate in (("headers", True), ("plain", False)):
        server, urls[host] = build.serve_in_background(build.SITE, isolate=isolate)
        servers.append(server)
    from playwright.sync_api import sync_playwright
    rounds = []
    try:
        with sync_playwright() as p:
            for i in range(args.rounds):
                order = ("headers", "plain") if i % 2 == 0 else ("plain", "headers")
                rounds.append({host: one_visit(p, urls[host]) for host in order})
                print(f"round {i + 1}: {rounds[-1]}, load average {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        for server in servers:
            server.shutdown()
    for r in rounds:
        if r["headers"]["loads"] != 1 or r["plain"]["loads"] != 2:
            sys.exit(f"expected one load with the headers and two without: {r}")
    print(f"first visit, page open -> Ready, ms (median [min-max] of {args.rounds} fresh browsers):")
    print(f"  host with COOP/COEP:             {summary([r['headers']['ready'] for r in rounds])}")
    print(f"  plain host (service worker):     {summary([r['plain']['ready'] for r in rounds])}")
    print(f"    of which page open -> reload:  {summary([r['plain']['reload'] for r in rounds])}")
    ratio = statistics.median(r["plain"]["ready"] / r["headers"]["ready"] for r in rounds)
    print(f"  plain / with headers:            {ratio:.2f}x")


if __name__ == "__main__":
    main()
