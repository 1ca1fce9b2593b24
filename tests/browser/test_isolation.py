"""Cross-origin isolation on a server that sends no COOP/COEP: the site's service worker (sw.js) and the library's
standalone isolation-sw.js add the headers, and onnxtrain's isolate() reloads the first visit once, so the page and
its engine worker are crossOriginIsolated (SharedArrayBuffer defined in the worker) and train; no second reload,
nothing off the origin, a second visit isolated at once, and ?isolation=off not isolated, still training."""
import shutil

import pytest

import build
from browser.conftest import Page

READY = "() => document.getElementById('status').textContent.startsWith('Ready')"
ENGINE = "/onnxtrain/engine.mjs"


@pytest.fixture(scope="module")
def plain_url():
    """The site on a server without COOP/COEP, as a GitHub-Pages-style host."""
    server, url = build.serve_in_background(build.SITE, isolate=False)
    yield url
    server.shutdown()
    server.server_close()


class Visit(Page):
    """A page with its main frame's navigations (each load and reload) recorded."""

    def __init__(self, context, url):
        super().__init__(context, context.new_page(), url)
        self.loads, self.loads_from_worker = [], []
        self.page.on("framenavigated", lambda frame: frame == self.page.main_frame and self.loads.append(frame.url))
        self.page.on("response", lambda r: r.request.is_navigation_request() and self.loads_from_worker.append(
            r.from_service_worker))

    def open(self, path="", ready=READY):
        self.page.goto(self.url + path)
        self.page.wait_for_function(ready, timeout=180_000)
        return self

    def isolated(self):
        """(the page's crossOriginIsolated, the engine worker's, whether the worker has SharedArrayBuffer)."""
        engine = [w for w in self.page.workers if w.url.endswith(ENGINE)]
        assert len(engine) == 1, [w.url for w in self.page.workers]
        worker = engine[0].evaluate("() => [self.crossOriginIsolated, typeof SharedArrayBuffer === 'function']")
        return (self.page.evaluate("() => crossOriginIsolated"), *worker)


def train_in_app(visit):
    page = visit.page
    page.fill("#steps", "20")
    page.click("#train")
    page.wait_for_function("() => /^(Trained|Something)/.test(document.getElementById('status').textContent)",
                           timeout=120_000)
    assert page.text_content("#status").startswith("Trained"), page.text_content("#error")
    assert "held-out loss" in page.text_content("#metrics")


def test_the_app_isolates_itself_with_one_reload_then_at_once_and_opts_out(browser, plain_url):
    context = browser.new_context()
    try:
        first = Visit(context, plain_url).open()
        assert first.isolated() == (True, True, True)
        train_in_app(first)
        # one reload: the first load by the network, the second served by the service worker (with the headers)
        assert len(first.loads) == 2 and first.loads_from_worker == [False, True], (first.loads,
                                                                                     first.loads_from_worker)
        assert first.page.evaluate("() => sessionStorage.length") == 0  # the reload's guard is cleared once isolated
        assert first.off_origin() == []

        second = Visit(context, plain_url).open()
        assert second.isolated() == (True, True, True)
        assert len(second.loads) == 1 and second.loads_from_worker == [True]

        opted_out = Visit(context, plain_url).open("?isolation=off")
        assert opted_out.isolated() == (False, False, False)
        assert len(opted_out.loads) == 1 and opted_out.loads_from_worker == [True]  # the worker, without headers
        train_in_app(opted_out)
        assert len(first.loads) == 2 and second.off_origin() == opted_out.off_origin() == []
    finally:
        context.close()


def test_the_opt_out_on_a_first_visit_starts_without_a_reload(browser, plain_url):
    context = browser.new_context()
    try:
        visit = Visit(context, plain_url).open("?isolation=off")
        assert visit.isolated() == (False, False, False)
        assert len(visit.loads) == 1 and visit.off_origin() == []
    finally:
        context.close()


def test_a_host_that_sends_the_headers_gets_no_reload(browser):
    server, url = build.serve_in_background(build.SITE, isolate=True)
    context = browser.new_context()
    try:
        visit = Visit(context, url).open()
        assert visit.isolated() == (True, True, True)
        # the worker registers once the runtime is up, installs and claims the page: still no reload
        visit.page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=120_000)
        assert len(visit.loads) == 1 and visit.loads_from_worker == [False] and visit.off_origin() == []
    finally:
        context.close()
        server.shutdown()
        server.server_close()


LIBRARY_PAGE = """<!doctype html><meta charset="utf-8"><title>a library page</title>
<script type="module">
import { Tensor, TrainingSession, isolate, start } from "./onnxtrain/onnxtrain.mjs";
window.isolation = await isolate("%s");
await start();
const url = (name) => `artifacts/mlp/${name}`;
const session = await TrainingSession.create({ checkpointState: url("checkpoint"),
  trainModel: url("training_model.onnx"), evalModel: url("eval_model.onnx"),
  optimizerModel: url("optimizer_model.onnx") });
const losses = [];
for (let step = 0; step < 5; step++) {
  const x = Float32Array.from({ length: 8 * 20 }, (_, i) => Math.sin(i * 0.37));
  const y = BigInt64Array.from({ length: 8 }, (_, i) => BigInt(i %% 5));
  const [input, labels] = session.trainingInputNames;
  const out = await session.runTrainStep({ [input]: new Tensor("float32", x, [8, 20]),
    [labels]: new Tensor("int64", y, [8]) });
  await session.runOptimizerStep();
  await session.lazyResetGrad();
  losses.push(out[session.trainingOutputNames[0]].data[0]);
}
window.losses = losses;
</script>
<script>window.addEventListener("error", (e) => { window.losses = [String(e.message)]; });
window.addEventListener("unhandledrejection", (e) => { window.losses = [String(e.reason)]; });</script>
"""


@pytest.fixture(scope="module")
def library_url(tmp_path_factory):
    """A page of another site on a server without COOP/COEP: the library folder, the package's isolation-sw.js
    copied to the site's root (index.html registers it) and under sub/ (guard.html registers that one, whose scope,
    sub/, leaves the page uncontrolled), missing.html registering a file that is not there, and the demo MLP's
    artifacts."""
    root = tmp_path_factory.mktemp("library-site")
    shutil.copytree(build.SITE / build.LIBRARY, root / build.LIBRARY, copy_function=build.link_or_copy)
    shutil.copytree(build.SITE / "artifacts" / "mlp", root / "artifacts" / "mlp", copy_function=build.link_or_copy)
    (root / "sub").mkdir()
    for where in (root, root / "sub"):
        shutil.copy2(root / build.LIBRARY / "isolation-sw.js", where / "isolation-sw.js")
    (root / "index.html").write_text(LIBRARY_PAGE % "isolation-sw.js")
    (root / "guard.html").write_text(LIBRARY_PAGE % "sub/isolation-sw.js")
    (root / "missing.html").write_text(LIBRARY_PAGE % "missing-sw.js")
    server, url = build.serve_in_background(root, isolate=False)
    yield url
    server.shutdown()
    server.server_close()


TRAINED = "() => window.losses !== undefined"


def test_the_library_isolation_worker_isolates_a_page_with_one_reload(browser, library_url):
    context = browser.new_context()
    try:
        first = Visit(context, library_url).open(ready=TRAINED)
        assert first.page.evaluate("() => window.isolation") is True
        assert first.isolated() == (True, True, True)
        losses = first.page.evaluate("() => window.losses")
        assert len(losses) == 5 and all(0 < loss < 10 for loss in losses) and losses[-1] < losses[0], losses
        assert len(first.loads) == 2 and first.loads_from_worker == [False, True]

        second = Visit(context, library_url).open(ready=TRAINED)
        assert second.isolated() == (True, True, True) and len(second.loads) == 1

        opted_out = Visit(context, library_url).open("?isolation=off", ready=TRAINED)
        assert opted_out.page.evaluate("() => window.isolation") is False
        assert opted_out.isolated() == (False, False, False) and len(opted_out.loads) == 1
        assert first.off_origin() == second.off_origin() == opted_out.off_origin() == []
    finally:
        context.close()


def test_a_page_the_worker_cannot_control_reloads_once_then_goes_on_without_isolation(browser, library_url):
    context = browser.new_context()
    try:
        visit = Visit(context, library_url).open("guard.html", ready=TRAINED)
        assert visit.page.evaluate("() => [window.isolation, navigator.serviceWorker.controller]") == [False, None]
        assert visit.isolated() == (False, False, False)
        assert len(visit.loads) == 2, visit.loads  # the one reload, then the guard in sessionStorage
        assert visit.off_origin() == []
    finally:
        context.close()


def test_a_worker_that_does_not_register_leaves_the_page_as_it_is_with_a_warning(browser, library_url):
    context = browser.new_context()
    try:
        visit = Visit(context, library_url).open("missing.html", ready=TRAINED)
        assert visit.page.evaluate("() => window.isolation") is False and len(visit.loads) == 1
        assert visit.isolated() == (False, False, False)
        warned = [line for line in visit.console if "isolation service worker" in line]
        assert len(warned) == 1 and "missing-sw.js did not register" in warned[0], visit.console
        assert len(visit.page.evaluate("() => window.losses")) == 5
    finally:
        context.close()
