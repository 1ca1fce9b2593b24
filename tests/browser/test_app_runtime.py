"""The app's runtime: the library's engine (Pyodide, numpy, the onnxtrain wheel, the SIMD kernels) loaded from the
site only, the demo section, and training through the library from the app's page as CPython trains."""
import numpy as np
import pytest

import ort_cases as oc

CASE = "mlp_ce_adamw"
# Trains the artifacts (lists of bytes) on the batches in the page, with the library the app uses: the losses.
TRAIN = """async ([files, batches]) => {
  const { Tensor, TrainingSession } = await import(new URL("onnxtrain/onnxtrain.mjs", location.href).href);
  const bytes = (list) => new Uint8Array(list);
  const session = await TrainingSession.create({ trainModel: bytes(files.training), evalModel: bytes(files.eval),
    optimizerModel: bytes(files.optimizer), checkpointState: bytes(files.checkpoint) });
  const tensor = ({ type, data, dims }) => new Tensor(type,
    type === "int64" ? BigInt64Array.from(data.map(BigInt)) : Float32Array.from(data), dims);
  const losses = [];
  for (const batch of batches) {
    const out = await session.runTrainStep(
      Object.fromEntries(session.trainingInputNames.map((name, i) => [name, tensor(batch[i])])));
    await session.runOptimizerStep();
    await session.lazyResetGrad();
    losses.push(out[session.trainingOutputNames[0]].data[0]);
  }
  await session.release();
  return losses;
}"""


def js_batches(batches):
    return [[{"type": a.dtype.name, "data": a.ravel().tolist(), "dims": list(a.shape)} for a in batch]
            for batch in batches]


def files_of(name):
    f = oc.files(name)
    return {k: list(f[k].read_bytes()) for k in ("training", "eval", "optimizer", "checkpoint")}


def train_in_page(page, batches, case=CASE):
    return page.evaluate(TRAIN, [files_of(case), js_batches(batches)])


def cpython_losses(batches, case=CASE):
    return oc.api_run(oc.files(case), batches)[0]


def test_runtime_loaded_from_the_site(site_page):
    assert site_page.info["numpy"] == "2.0.2"
    assert site_page.info["python"].startswith("3.12")


@pytest.mark.parametrize("case", [CASE, "cnn_ce_sgd", "mlp_custom_weighted_adamw"])
def test_training_in_the_apps_engine_matches_cpython(site_page, case):
    batches = oc.batches(case, 20)
    np.testing.assert_allclose(train_in_page(site_page.page, batches, case), cpython_losses(batches, case), rtol=1e-5)


def test_the_demo_page_trains_through_its_ui(site_page):
    page = site_page.page
    page.fill("#steps", "60")
    page.click("#train")
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('Trained')",
                           timeout=120_000)
    assert "held-out loss" in page.text_content("#metrics")
    assert page.is_hidden("#error")


def test_no_request_leaves_the_origin(site_page):
    assert site_page.requests, "the request log is empty, so it proves nothing"
    assert any(u.endswith(".wasm") for u in site_page.requests)
    assert any("onnxtrain-" in u and u.endswith(".whl") for u in site_page.requests)
    assert site_page.off_origin() == []


def test_without_the_kernel_modules_the_page_trains_with_numpy(browser, site_url):
    """A host that lost the kernel files (or an engine without wasm SIMD): numpy's kernels, same losses."""
    context = browser.new_context()
    context.route("**/kernels/*", lambda route: route.fulfill(status=404, body="missing"))
    page = context.new_page()
    page.goto(site_url)
    info = page.evaluate("() => window.onnxtrain.ready")
    assert info["kernels"] is None
    assert "numpy kernels only" in page.locator("#status").text_content()
    batches = oc.batches(CASE, 5)
    np.testing.assert_allclose(train_in_page(page, batches), cpython_losses(batches), rtol=1e-5)
    context.close()
