"""Headless Chromium (Debian's) driven by Playwright against the test site (build.TEST_SITE: site/ plus the test
hooks, window.onnxtrain and the worker's runPython) served on 127.0.0.1."""
import base64
import shutil
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import build  # noqa: E402

SHOTS = ROOT / "test-output"


def screenshot(page, selector: str, name: str) -> None:
    """Save a flow's final screen (a laptop-width and a phone-width picture) under test-output/."""
    SHOTS.mkdir(exist_ok=True)
    page.locator(selector).screenshot(path=str(SHOTS / f"{name}-laptop.png"))
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator(selector).screenshot(path=str(SHOTS / f"{name}-phone.png"))
    page.set_viewport_size(size)


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def site_url():
    if not (build.TEST_SITE / "index.html").exists():
        pytest.fail(f"{build.TEST_SITE} is not built: run the tests through `python3 build.py test`")
    # with COOP/COEP, as a host that sends them, or as a visitor's page after the service worker's one reload
    # (test_isolation.py): the page starts isolated at once; the tests of a plain host serve their own
    server, url = build.serve_in_background(build.TEST_SITE, isolate=True)
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """A page of the site with every request recorded, and the test hooks at hand (window.onnxtrain: the engine's
    start info, requests to the engine by name, the app's tasks)."""

    def __init__(self, context, page, url):
        self.context, self.page, self.url, self.requests = context, page, url, []
        context.on("request", lambda r: self.requests.append(r.url))
        self.console = []
        page.on("console", lambda m: self.console.append(m.text))

    def call(self, type_, args=None, timeout=120_000):
        """The engine's answer to the request ``type_`` (window.onnxtrain.call); an error, naming the request, when
        none comes within ``timeout`` milliseconds."""
        return self.page.evaluate("""([t, a, ms]) => new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`the engine did not answer ${t} within ${ms} ms`)), ms);
            window.onnxtrain.call(t, a).then(resolve, reject).finally(() => clearTimeout(timer));
        })""", [type_, args or {}, timeout])

    def task_call(self, flow: str, method: str, *args):
        """A method of the app's current task (or session) of ``flow`` ("csv", "images", "digits", "own")."""
        return self.page.evaluate("([f, m, a]) => window.onnxtrain.tasks[f]()[m](...a)", [flow, method, list(args)])

    def task_bytes(self, flow: str, method: str, *args) -> bytes:
        """A task method that returns bytes, carried over as base64 (quick for megabytes)."""
        return base64.b64decode(self.page.evaluate("""async ([f, m, a]) => {
            const bytes = await window.onnxtrain.tasks[f]()[m](...a);
            let text = "";
            for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
            return btoa(text);
        }""", [flow, method, list(args)]))

    def off_origin(self):
        return [u for u in self.requests if not (u.startswith(self.url) or u.startswith("blob:")
                                                 or u.startswith("data:"))]


def opened_site(browser, site_url):
    """The site in a fresh context (its own storage), ready; at the end, proof that nothing left the origin."""
    context = browser.new_context()
    page = context.new_page()
    wrapped = Page(context, page, site_url)
    page.goto(site_url)
    page.wait_for_function("() => window.onnxtrain !== undefined")
    wrapped.info = page.evaluate("() => window.onnxtrain.ready")
    yield wrapped
    context.close()
    assert wrapped.requests and wrapped.off_origin() == []


@pytest.fixture(scope="module")
def site_page(browser, site_url):
    """One page for a module's tests."""
    yield from opened_site(browser, site_url)


@pytest.fixture
def own_page(browser, site_url):
    """A page of the test's own, for tests that reload or need a clean state."""
    yield from opened_site(browser, site_url)


def reload_and_resume(page, describes: str) -> str:
    """Reload the page, then press Resume on the one saved run whose line contains ``describes``; its line."""
    page.reload()
    page.evaluate("() => window.onnxtrain.ready")
    page.wait_for_selector("#runs:not([hidden])")
    item = page.locator("#runs-list li", has_text=describes)
    assert item.count() == 1, page.text_content("#runs-list")
    line = item.locator("span").text_content()
    item.locator("button:text('Resume')").click()
    return line


LIBRARY_PAGE = """<!doctype html><meta charset="utf-8"><title>a page of one's own</title>
<script type="module">
window.lib = await import("./onnxtrain/onnxtrain.mjs");
</script>
"""


@contextmanager
def library_page(browser, root: Path, paths: list):
    """A page of its own (window.lib: the library) on a plain static server at ``root``, with the site's library
    folder and the site's files or folders ``paths`` (relative to the site), as a web developer would deploy them;
    at the end, proof that nothing left the origin."""
    for path in [build.LIBRARY, *paths]:
        source = build.TEST_SITE / path
        if not source.exists():
            pytest.fail(f"{build.TEST_SITE} has no {path}: run the tests through `python3 build.py test`")
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, root / path, copy_function=build.link_or_copy)
        else:
            build.link_or_copy(source, root / path)
    (root / "index.html").write_text(LIBRARY_PAGE)
    server = build.make_server(root, 0, isolate=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    context = browser.new_context()
    raw = context.new_page()
    wrapped = Page(context, raw, url)
    raw.goto(url)
    raw.wait_for_function("() => window.lib !== undefined")
    yield wrapped
    context.close()
    server.shutdown()
    assert wrapped.requests and wrapped.off_origin() == [], wrapped.off_origin()
