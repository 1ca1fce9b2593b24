"""The site as a deployment (site/, what `build.py serve` serves): static files under any sub-path, offline once
cached, a new deploy reaching the page behind a host that lets browsers cache for an hour, its CSP, and nothing of
the tests in it (no test hooks, no test wheels)."""
import json
import re
import os
import shutil
import threading
import time

import pytest

import build
from browser.conftest import CHROMIUM_ARGS, Page

RUN_PYTHON = re.compile(r"(?<![.\w])runPython\b|handlers\.runPython")
TEST_WHEELS = tuple(name for name, _ in build.TEST_WHEELS)
# Records the policy violations of the page (the production page has no hooks of its own to ask).
CSP_VIOLATIONS = ("window.__violations = []; document.addEventListener('securitypolicyviolation', "
                  "(e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));")


def wait_ready(page):
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('Ready')",
                           timeout=120_000)


def wait_controlled(page):
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=120_000)


def serve(root, log=None, **options):
    """A server of ``root``; with ``log``, every request's (path, status) is appended to it."""
    class Recording(build.SiteHandler):
        def log_request(self, code="-", size="-"):
            if log is not None:
                log.append((self.path, int(code)))
    server = build.make_server(root, 0, handler_class=Recording, **options)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture
def sub_path_url(tmp_path):
    os.symlink(build.SITE, tmp_path / "some-app")
    server, url = serve(tmp_path, isolate=False)
    yield url + "some-app/"
    server.shutdown()


def test_sub_path_then_offline(browser, sub_path_url):
    context = browser.new_context()
    context.add_init_script(CSP_VIOLATIONS)
    page = context.new_page()
    wrapped = Page(context, page, sub_path_url)
    page.goto(sub_path_url)
    wait_ready(page)
    assert "numpy 2.0.2" in page.text_content("#status")
    wait_controlled(page)
    assert wrapped.off_origin() == []
    context.set_offline(True)
    page.reload()
    wait_ready(page)
    page.click("#csv-sample")
    page.wait_for_selector("#csv-setup:not([hidden])")
    assert page.evaluate("() => window.__violations") == []
    context.close()


def test_the_site_holds_no_test_hooks_nor_test_wheels():
    files = [p for p in build.SITE.rglob("*") if p.is_file()]
    assert not (build.SITE / "testing").exists()
    assert not [p for p in files if p.name.startswith(TEST_WHEELS)]
    manifest = json.loads((build.SITE / "precache.json").read_text())
    assert not [f for f in manifest["files"] if "testing/" in f or f.split("/")[-1].startswith(TEST_WHEELS)]
    for path in files:
        if path.suffix in (".js", ".mjs", ".html", ".json") and path.parts[-2] not in ("pyodide", "vendor"):
            text = path.read_text(errors="replace")
            # a runPython message (a handler or its name; Pyodide's own py.runPython is no message)
            assert not RUN_PYTHON.search(text) and "window.onnxtrain =" not in text, path
    # the test site is the site plus its hooks: the same files, but for the hooks, the wheels and the manifest
    changed = {p.relative_to(build.TEST_SITE).as_posix() for p in build.TEST_SITE.rglob("*") if p.is_file()
               and not ((build.SITE / p.relative_to(build.TEST_SITE)).is_file()
                        and (build.SITE / p.relative_to(build.TEST_SITE)).read_bytes() == p.read_bytes())}
    hooks = {p.relative_to(build.TEST_HOOKS).as_posix() for p in build.TEST_HOOKS.rglob("*") if p.is_file()}
    hooks = {"onnxtrain/engine.mjs" if h == "onnxtrain/engine_hooks.mjs" else h for h in hooks}  # bundled in it
    hooks.add("onnxtrain/onnxtrain.mjs")  # it exports _engineCall for the hooks
    assert {c for c in changed if not c.startswith("testing/")} == hooks | {"sw.js", "precache.json"}


def test_the_production_page_gives_scripts_no_way_to_python(browser):
    server, url = serve(build.SITE, isolate=False)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        wait_ready(page)
        # no test hook at all: no RPC, and none of the flows' (they reach the tests only through the test site's
        # window.onnxtrain)
        hooks = page.evaluate("() => Object.keys(window).filter((k) => k.startsWith('onnxtrain'))")
        assert hooks == []
        # app.js, imported again by a page script, gives nothing (its RPC is module-private)
        assert page.evaluate("async () => Object.keys(await import(new URL('app.js', location.href).href))") == []
        # the library's engine, as a script could start one: it has no runPython request
        error = page.evaluate("""() => new Promise((resolve, reject) => {
            const worker = new Worker(new URL('onnxtrain/engine.mjs', location.href), { type: 'module' });
            worker.onmessage = (e) => { if (e.data.id === 1) resolve(e.data.error.message); };  // not progress
            worker.onerror = (e) => reject(new Error(`the engine did not start: ${e.message}`));
            worker.postMessage({ id: 1, method: 'runPython', handle: null, args: [{ code: '1 + 1' }] });
        })""")
        assert error == "unknown method 'runPython'"
    finally:
        context.close()
        server.shutdown()


def test_the_csp_blocks_base_and_form_targets(browser):
    server, url = serve(build.SITE, isolate=False)
    context = browser.new_context()
    context.add_init_script(CSP_VIOLATIONS)
    try:
        page = context.new_page()
        wrapped = Page(context, page, url)
        page.goto(url)
        wait_ready(page)
        csp = page.get_attribute("meta[http-equiv='Content-Security-Policy']", "content")
        assert "base-uri 'none'" in csp and "form-action 'none'" in csp
        assert page.evaluate("() => window.__violations") == []
        page.evaluate("""() => {
            const base = document.createElement('base');
            base.href = 'http://127.0.0.2/';
            document.head.prepend(base);
            const form = Object.assign(document.createElement('form'), { action: 'http://127.0.0.2/', method: 'get' });
            document.body.append(form);
            form.submit();
        }""")
        page.wait_for_function("() => window.__violations.length >= 2")
        assert page.evaluate("() => document.baseURI") == url
        assert sorted(v.split()[0] for v in page.evaluate("() => window.__violations")) == ["base-uri", "form-action"]
        assert page.url == url and wrapped.off_origin() == []
    finally:
        context.close()
        server.shutdown()


def deploy_copy(dest, marker):
    """site/ as a deploy whose app.js sets globalThis.onnxtrainDeploy = marker (hard links but for what changes)."""
    shutil.copytree(build.SITE, dest, copy_function=build.link_or_copy)
    app = (build.SITE / "app.js").read_bytes() + f'\nglobalThis.onnxtrainDeploy = "{marker}";\n'.encode()
    build.replace_file(dest / "app.js", app)
    build.write_precache(dest)
    return "onnxtrain-" + json.loads((dest / "precache.json").read_text())["version"]


def visitor(browser, tmp_path, url):
    """A browser profile on disk, as a visitor's (its HTTP cache holds files of any size), at ``url`` once the page is
    ready: its context, page and Page wrapper."""
    context = browser.browser_type.launch_persistent_context(
        tmp_path / "profile", executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    page = context.new_page()
    wrapped = Page(context, page, url)
    page.goto(url)
    wait_ready(page)
    return context, page, wrapped


def caches_now(page):
    return page.evaluate("() => caches.keys()")


def test_a_new_deploy_reaches_the_page_behind_a_caching_host_and_works_offline(browser, tmp_path):
    """The host sends Cache-Control: max-age=3600 for every file, so the HTTP cache may hand back the first deploy's
    files for an hour.  The second deploy must reach the page: a reload starts its service worker, which installs
    and activates; the reload after that runs its files, online and then offline."""
    cache_a = deploy_copy(tmp_path / "a", "A")
    live = tmp_path / "live"
    os.symlink(tmp_path / "a", live)
    log = []
    server, url = serve(live, log, isolate=False, cache_control="max-age=3600")
    context, page, wrapped = visitor(browser, tmp_path, url)
    try:
        assert page.evaluate("() => globalThis.onnxtrainDeploy") == "A"
        wait_controlled(page)
        page.wait_for_function(f"async () => (await caches.keys()).includes({cache_a!r})")
        # the first visit: the host sends no COOP/COEP, so the page waits for the service worker's precache, then
        # reloads into the isolated page it serves, which loads everything from the cache
        wasm = [code for path, code in log if path.endswith("/pyodide.asm.wasm")]
        print(f"first visit, pyodide.asm.wasm requests by status: {wasm}")
        assert wasm == [200], wasm
        assert page.evaluate("() => crossOriginIsolated")

        cache_b = deploy_copy(tmp_path / "b", "B")  # made now, as a deploy is: its files are newer (Last-Modified)
        os.symlink(tmp_path / "b", tmp_path / "next")
        os.replace(tmp_path / "next", live)  # the deploy
        del log[:]
        page.reload()
        wait_ready(page)
        assert page.evaluate("() => globalThis.onnxtrainDeploy") == "A"  # the active worker's version, until B is in
        deadline = time.monotonic() + 120
        while caches_now(page) != [cache_b]:
            assert time.monotonic() < deadline, (caches_now(page), sorted(log))
            time.sleep(0.5)
        changed = sorted({path for path, code in log if code == 200})
        print(f"the update downloaded: {changed}")
        assert "/app.js" in changed and "/onnxtrain/pyodide/pyodide.asm.wasm" not in changed
        page.reload()
        wait_ready(page)
        assert page.evaluate("() => globalThis.onnxtrainDeploy") == "B"
        context.set_offline(True)
        page.reload()
        wait_ready(page)
        assert page.evaluate("() => globalThis.onnxtrainDeploy") == "B"
        page.click("#csv-sample")
        page.wait_for_selector("#csv-setup:not([hidden])")
        assert wrapped.off_origin() == []
    finally:
        context.close()
        server.shutdown()


def test_the_backbone_is_cached_when_first_loaded_not_at_install_and_then_works_offline(browser, tmp_path):
    """The service worker's install leaves out the pretrained backbone (precache.json's onDemand), so a visitor who
    never opens the camera or image flows does not download it; once a flow has loaded it, it is kept and a reload
    offline loads it from the cache."""
    manifest = json.loads((build.SITE / "precache.json").read_text())
    backbone = "artifacts/efficientnet_lite0/backbone.onnx"
    assert backbone in manifest["onDemand"] and backbone not in manifest["files"]
    log = []
    server, url = serve(build.SITE, log, isolate=False)
    context, page, wrapped = visitor(browser, tmp_path, url)
    try:
        wait_controlled(page)
        cache = "onnxtrain-" + manifest["version"]
        page.wait_for_function(f"async () => (await caches.keys()).includes({cache!r})", timeout=120_000)
        kept = f"async () => !!(await (await caches.open({cache!r})).match({backbone!r}))"
        assert not [path for path, _ in log if path.endswith("backbone.onnx")] and not page.evaluate(kept)

        def load_backbone():
            page.click("#cam-load")
            page.wait_for_function("() => /^Ready/.test(document.getElementById('cam-load-status').textContent) "
                                   "|| !document.getElementById('cam-error').hidden", timeout=120_000)
            assert page.is_hidden("#cam-error"), page.text_content("#cam-error")
        load_backbone()
        assert [code for path, code in log if path.endswith("backbone.onnx")] == [200]
        page.wait_for_function(kept)
        context.set_offline(True)
        page.reload()
        wait_ready(page)
        load_backbone()
        assert [code for path, code in log if path.endswith("backbone.onnx")] == [200]
        assert wrapped.off_origin() == []
    finally:
        context.close()
        server.shutdown()
