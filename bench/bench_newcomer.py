"""A newcomer trains the sample CSV: clicks only, default settings, from a cold page open.

The issue asks that "a newcomer can train the sample CSV in under a minute without reading anything".
Each round is a fresh browser with an empty profile (no service-worker cache), and does only what a
newcomer would: wait for "use the sample (wine)" to be usable, click it, press Train, wait for
"Done.", then download the model.  Timed: page open -> sample button usable, click Train -> Done,
and page open -> trained model downloadable (the total).  Every round also checks that no request
left the site's origin and that the download is a non-empty .onnx file.  The site is served without
cross-origin isolation, as a static host would.  Run through `python3 build.py bench`.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import build  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402

TIMINGS = ["page open -> sample usable", "click Train -> Done", "page open -> model downloadable"]
TIMEOUT_MS = 600_000
ERROR_SHOWN = "!document.getElementById('csv-error').hidden"


def wait_for(page, condition: str) -> None:
    """Wait until the condition (a JS expression) holds, failing loudly if the page shows an error."""
    page.wait_for_function(f"() => ({condition}) || {ERROR_SHOWN}", timeout=TIMEOUT_MS)
    if page.evaluate(f"() => {ERROR_SHOWN}"):
        sys.exit(f"the page showed an error: {page.text_content('#csv-error')}")


def one_round(playwright, url: str) -> dict:
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    try:
        context = browser.new_context(accept_downloads=True)
        requests = []
        context.on("request", lambda r: requests.append(r.url))
        page = context.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        wait_for(page, "!document.getElementById('csv-sample').disabled")
        sample = time.perf_counter()
        page.click("#csv-sample")
        wait_for(page, "!document.getElementById('csv-setup').hidden")
        t_train = time.perf_counter()
        page.click("#csv-train")
        wait_for(page, "document.getElementById('csv-metrics').textContent.startsWith('Done.')")
        done = time.perf_counter()
        wait_for(page, "!document.getElementById('csv-download').disabled")
        downloadable = time.perf_counter()
        metrics = page.text_content("#csv-metrics")
        with page.expect_download() as info:
            page.click("#csv-download")
        name, size = info.value.suggested_filename, Path(info.value.path()).stat().st_size
        if not name.endswith(".onnx") or size == 0:
            sys.exit(f"bad download: {name!r}, {size} bytes")
        off_origin = [u for u in requests if not u.startswith((url, "blob:", "data:"))]
        if off_origin:
            sys.exit(f"requests left the site's origin: {off_origin}")
        accuracy = re.search(r"validation accuracy ([\d.]+%)", metrics)
        return {TIMINGS[0]: (sample - t0) * 1e3, TIMINGS[1]: (done - t_train) * 1e3,
                TIMINGS[2]: (downloadable - t0) * 1e3, "accuracy": accuracy[1] if accuracy else metrics,
                "requests": len(requests), "download": f"{name} ({size} bytes)"}
    finally:
        browser.close()


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} [{min(values):.0f}-{max(values):.0f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args, _ = parser.parse_known_args()  # build.py bench hands every script the same arguments
    from playwright.sync_api import sync_playwright
    if not (build.SITE / "index.html").exists():
        build.build_site()
    server, url = build.serve_in_background(build.SITE)
    with sync_playwright() as p:
        rounds = [one_round(p, url) for _ in range(args.rounds)]
    server.shutdown()
    print(f"Newcomer, sample CSV (wine), default settings: median [min-max] over {args.rounds} "
          f"fresh-browser rounds")
    print(f"{'phase':34s} {'ms':>22s}")
    for timing in TIMINGS:
        print(f"{timing:34s} {summary([r[timing] for r in rounds]):>22s}")
    for i, r in enumerate(rounds, 1):
        print(f"round {i}: validation accuracy {r['accuracy']}, {r['requests']} requests, 0 off-origin, "
              f"downloaded {r['download']}")
    total = statistics.median(r[TIMINGS[2]] for r in rounds) / 1e3
    print(f"total median {total:.1f} s: {'under' if total < 60 else 'NOT under'} 60 s")


if __name__ == "__main__":
    main()
