"""Whether Chromium keeps the engine's compiled wasm for the next visit: the start's visits traced.

start.mjs compiles pyodide.asm.wasm with compileStreaming from its response in Cache Storage, which Chromium can
keep compiled code by (V8 hands Blink the module to store once enough of it is compiled by the optimizing tier).
Each visit of one fresh profile (a first visit, then --visits - 1 repeat visits, each a new page of the library's
start page, as bench_start_transfer.py serves it) is traced (the DevTools protocol's tracing, category
devtools.timeline, which carries Blink's wasm code cache events) for --linger seconds after start() resolves; it
prints per visit the count of each event: streamFromResponseCallback (a streaming compile from a response),
compiledModule (V8 offered code to keep), cachedModule (Blink stored it), moduleCacheHit (a visit compiled from
it), moduleCacheInvalid (stored code refused).  Run after `python3 build.py site`, with PYTHONPATH=pysrc.
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
import build  # noqa: E402
from bench_start_transfer import PAGE, TIMEOUT_MS, serve  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402

EVENTS = ["streamFromResponseCallback", "compiledModule", "cachedModule", "moduleCacheHit", "moduleCacheInvalid"]


def traced_visit(browser, context, url: str, trace: Path, first: bool, linger_s: float) -> dict:
    page = context.new_page()
    browser.start_tracing(page=page, path=str(trace), categories=["devtools.timeline",
                                                                   "disabled-by-default-devtools.timeline"])
    try:
        page.goto(url)
        page.wait_for_function("() => window.started !== undefined", timeout=TIMEOUT_MS)
        started = page.evaluate("() => window.started")
        if first:
            page.wait_for_function("() => window.snapshotStored()", timeout=TIMEOUT_MS, polling=200)
        page.wait_for_timeout(linger_s * 1000)
    finally:
        browser.stop_tracing()
        page.close()
    if "error" in started:
        sys.exit(f"start() failed: {started['error']}")
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    counts = collections.Counter(e["name"].removeprefix("v8.wasm.") for e in events
                                 if e["name"].startswith("v8.wasm."))
    return {"start": started["start"], "ms": started["ms"], **{name: counts[name] for name in EVENTS}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--visits", type=int, default=3)
    parser.add_argument("--linger", type=float, default=5.0, help="seconds traced after start() resolves")
    args, _ = parser.parse_known_args()
    from playwright.sync_api import sync_playwright
    if not (build.SITE / build.LIBRARY / "onnxtrain.mjs").exists():
        build.build_site()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        root = Path(tmp)
        shutil.copytree(build.SITE / build.LIBRARY, root / build.LIBRARY, copy_function=build.link_or_copy)
        (root / "index.html").write_text(PAGE)
        browser = p.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
        server, url = serve(root, "no-cache")
        try:
            context = browser.new_context()
            print(f"{'visit':7s} {'start':9s} {'ms':>6s} " + " ".join(f"{name:>26s}" for name in EVENTS))
            for visit in range(args.visits):
                row = traced_visit(browser, context, url, root / f"trace{visit}.json", visit == 0, args.linger)
                print(f"{visit + 1:<7d} {row['start']:9s} {row['ms']:6.0f} "
                      + " ".join(f"{row[name]:26d}" for name in EVENTS))
        finally:
            server.shutdown()
            browser.close()


if __name__ == "__main__":
    main()
