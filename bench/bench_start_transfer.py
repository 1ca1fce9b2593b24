"""What the library's start transfers: a fresh visit and a repeat visit of a minimal page that calls start().

The issue's targets: a repeat visit transfers at most 0.5 MB, a fresh visit at most 12 MB from a host that
compresses as common static hosts do.  The built site's library folder (site/onnxtrain/) is served beside the page
by a server that compresses text, JavaScript, JSON and wasm with gzip for a browser that accepts it (brotli too
where this Python has the `brotli` package) and leaves already-compressed files (wheels, zips) as they are; every
response has Last-Modified; the host sends `Cache-Control: no-cache` (the browser keeps and revalidates, as on
most static hosts) or `no-store` (its HTTP cache keeps nothing: what the library's own cache saves).  Each run is
a fresh browser profile: a first visit (start() from nothing), then, once its Python snapshot is stored, a repeat
visit (same profile, new page).  Bytes transferred per file: what the server sent (status line, headers and body: on
127.0.0.1 over HTTP/1.1, what crossed the wire), which the targets are checked on, beside Chromium's count (the
DevTools protocol's encoded sizes, response headers plus body, as Playwright's request.sizes() reports them, the
worker's requests included; it leaves out the body of the engine's worker script and of requests the page
aborted).  Start time: navigation start -> start() resolved, median over the runs, and the engine's own start
timings per phase (start.mjs's).
Run through `python3 build.py bench` (or alone, after `python3 build.py site`).
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import build  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402

try:
    import brotli
except ImportError:
    brotli = None

MB = 1e6
TARGETS = {"fresh": 12 * MB, "repeat": 0.5 * MB}
TIMEOUT_MS = 300_000
# the types common static hosts compress (wheels and zips are compressed already)
COMPRESSED_TYPES = ("text/", "application/javascript", "application/json", "application/wasm", "image/svg+xml")

PAGE = """<!doctype html><meta charset="utf-8"><title>start</title><link rel="icon" href="data:,">
<script type="module">
import { start } from "./onnxtrain/onnxtrain.mjs";
start().then((info) => { window.started = { ms: performance.now(), start: info && info.start, timings: info && info.timings }; },
             (err) => { window.started = { error: err.message }; });
// the engine's Python snapshot, stored by the first visit for the next (start.mjs keeps it in IndexedDB)
window.snapshotStored = () => new Promise((resolve) => {
  const open = indexedDB.open("onnxtrain-python");
  open.onerror = () => resolve(false);
  open.onsuccess = () => {
    const db = open.result;
    if (!db.objectStoreNames.contains("snapshot")) { db.close(); resolve(false); return; }
    const get = db.transaction("snapshot").objectStore("snapshot").get("python");
    get.onsuccess = () => { db.close(); resolve(get.result !== undefined); };
    get.onerror = () => { db.close(); resolve(false); };
  };
});
</script>
"""


class CountingWriter(io.RawIOBase):
    """A response stream that adds what it writes to its server's count for the request's path."""

    def __init__(self, stream, handler):
        self.stream, self.handler = stream, handler

    def writable(self):
        return True

    def write(self, data):
        server, path = self.handler.server, self.handler.path.split("?")[0].lstrip("/")
        with server.lock:
            server.sent[path] = server.sent.get(path, 0) + len(data)
        return self.stream.write(data)

    def flush(self):
        self.stream.flush()


class CompressingHandler(build.SiteHandler):
    """The site's static files, compressed for a browser that accepts it, with Last-Modified and 304s."""
    compressed = {}  # (path, mtime, encoding) -> bytes

    def setup(self):
        super().setup()
        self.wfile = CountingWriter(self.wfile, self)

    def encoding(self) -> str | None:
        accepted = [e.split(";")[0].strip() for e in self.headers.get("Accept-Encoding", "").split(",")]
        return "br" if brotli and "br" in accepted else "gzip" if "gzip" in accepted else None

    def send_head(self):
        path = self.translate_path(self.path)
        ctype = self.guess_type(path)
        encoding = self.encoding()
        if not os.path.isfile(path) or not ctype.startswith(COMPRESSED_TYPES) or encoding is None:
            return super().send_head()
        mtime = os.stat(path).st_mtime
        modified = self.date_time_string(int(mtime))
        if self.headers.get("If-Modified-Since") == modified:
            self.send_response(304)
            self.send_header("Last-Modified", modified)
            self.end_headers()
            return None
        key = (path, mtime, encoding)
        if key not in self.compressed:
            data = Path(path).read_bytes()
            self.compressed[key] = brotli.compress(data) if encoding == "br" else gzip.compress(data, 6)
        body = self.compressed[key]
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", modified)
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        return io.BytesIO(body)


def serve(root: Path, cache_control: str):
    server = build.make_server(root, 0, isolate=False, cache_control=cache_control, handler_class=CompressingHandler)
    server.lock, server.sent = threading.Lock(), {}
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def visit(context, server, url: str, wait_for_snapshot: bool) -> dict:
    """One page of ``context`` at ``url`` until start() resolves (and, if asked, the snapshot is stored): bytes
    transferred per file by Chromium's count and by the server's, the start time and the kind of start."""
    files, failed = {}, []

    def finished(request):
        if request.url.startswith(("blob:", "data:")):  # made in the page: nothing transferred
            return
        sizes = request.sizes()
        response = request.response()
        name = request.url[len(url):] if request.url.startswith(url) else request.url
        files[name] = files.get(name, 0) + sizes["responseHeadersSize"] + sizes["responseBodySize"]
        if response is None or response.status >= 400:
            failed.append(f"{request.url}: HTTP {response.status if response else '-'}")

    def aborted(request):  # a request the page dropped (its bytes so far count on the server's side)
        name = request.url[len(url):] if request.url.startswith(url) else request.url
        (dropped if request.failure == "net::ERR_ABORTED" else failed).append(f"{name}: {request.failure}")

    dropped = []
    context.on("requestfinished", finished)
    context.on("requestfailed", aborted)
    with server.lock:
        server.sent.clear()
    page = context.new_page()
    try:
        page.goto(url)
        page.wait_for_function("() => window.started !== undefined", timeout=TIMEOUT_MS)
        started = page.evaluate("() => window.started")
        if "error" in started:
            sys.exit(f"start() failed: {started['error']}")
        if wait_for_snapshot:
            page.wait_for_function("() => window.snapshotStored()", timeout=TIMEOUT_MS, polling=200)
            page.wait_for_timeout(1000)  # what the engine stores after start() settles
    finally:
        page.close()
        context.remove_listener("requestfinished", finished)
        context.remove_listener("requestfailed", aborted)
    if failed:
        sys.exit(f"requests failed: {failed}")
    off_origin = [name for name in files if "://" in name]
    if off_origin:
        sys.exit(f"requests left the page's origin: {off_origin}")
    with server.lock:
        sent = dict(server.sent)
    return {"files": files, "bytes": sum(files.values()), "server files": sent, "server bytes": sum(sent.values()),
            "start ms": started["ms"], "start": started.get("start"), "timings": started.get("timings") or {},
            "aborted": dropped}


def one_run(browser, server, url: str) -> dict:
    context = browser.new_context()
    try:
        fresh = visit(context, server, url, wait_for_snapshot=True)
        repeat = visit(context, server, url, wait_for_snapshot=False)
    finally:
        context.close()
    return {"fresh": fresh, "repeat": repeat}


def summary(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def table(runs: list[dict]) -> None:
    first = runs[0]
    names = sorted({n for visit in first.values() for key in ("files", "server files") for n in visit[key]},
                   key=lambda n: -first["fresh"]["files"].get(n, 0))
    print(f"{'file (first run; bytes: Chromium / server)':52s} {'fresh':>21s} {'repeat':>15s}")
    for name in names:
        counts = [f"{v['files'].get(name, 0):,d} / {v['server files'].get(name, 0):,d}" for v in first.values()]
        print(f"{(name or '(the page)')[:52]:52s} {counts[0]:>21s} {counts[1]:>15s}")
    print(f"{'visit':7s} {'server MB, median [min-max]':>28s} {'Chromium MB':>12s} {'target':>7s}        "
          f"{'start ms, median [min-max]':>26s}  start")
    for kind in ("fresh", "repeat"):
        mb = [r[kind]["server bytes"] / MB for r in runs]
        verdict = "met" if statistics.median(mb) * MB <= TARGETS[kind] else "MISSED"
        print(f"{kind:7s} {summary(mb, 3):>28s} {statistics.median(r[kind]['bytes'] / MB for r in runs):12.3f} "
              f"{'≤' + format(TARGETS[kind] / MB, 'g'):>7s} {verdict:6s} "
              f"{summary([r[kind]['start ms'] for r in runs], 0):>26s}  "
              f"{', '.join(sorted({str(r[kind]['start']) for r in runs}))}")
    for kind in ("fresh", "repeat"):
        phases = list(dict.fromkeys(k for r in runs for k in r[kind]["timings"]))
        print(f"{kind} visit, the engine's start timings (ms since it began, median [min-max]): " + ", ".join(
            f"{p} {summary([r[kind]['timings'][p] for r in runs if p in r[kind]['timings']], 0)}" for p in phases))
    for kind in ("fresh", "repeat"):
        if first[kind]["aborted"]:
            print(f"{kind} visit (first run), requests the page aborted: {', '.join(first[kind]['aborted'])}")


# How the host lets the browser keep its responses: "no-cache" (kept and revalidated, as most static hosts: the
# page gets 304s) and "no-store" (nothing kept by the browser's HTTP cache: what the library keeps itself).
HOSTS = {"revalidating host": "no-cache", "no-store host": "no-store"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, default=build.CACHE / "bench-start-transfer.json")
    args, _ = parser.parse_known_args()  # build.py bench hands every script the same arguments
    from playwright.sync_api import sync_playwright
    if not (build.SITE / build.LIBRARY / "onnxtrain.mjs").exists():
        build.build_site()
    results = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        root = Path(tmp)
        shutil.copytree(build.SITE / build.LIBRARY, root / build.LIBRARY, copy_function=build.link_or_copy)
        (root / "index.html").write_text(PAGE)
        browser = p.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for host, cache_control in HOSTS.items():
                server, url = serve(root, cache_control)
                try:
                    results[host] = [one_run(browser, server, url) for _ in range(args.runs)]
                finally:
                    server.shutdown()
        finally:
            browser.close()
    encoding = "brotli" if brotli else "gzip (no brotli: the brotli package is not installed)"
    print(f"onnxtrain's start(): bytes transferred, {encoding}-compressing static host; {args.runs} runs, each a "
          f"fresh profile, then a repeat visit")
    for host, runs in results.items():
        print(f"\n{host} (Cache-Control: {HOSTS[host]})")
        table(runs)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"encoding": "br" if brotli else "gzip", "targets": TARGETS,
                                     "hosts": {h: {"cache-control": HOSTS[h], "runs": r} for h, r in results.items()}},
                                    indent=1))
    print(f"(results in {args.json})")


if __name__ == "__main__":
    main()
