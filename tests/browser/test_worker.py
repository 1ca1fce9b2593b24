"""The onnxtrain wheel trains in the page's Web Worker under Pyodide, served only from 127.0.0.1."""
import numpy as np
import onnxruntime as ort
import pytest

import ort_cases as oc
from onnxtrain import api

CASE = "mlp_ce_adamw"
TO_JS = """
([files, batches]) => {
  const buf = (bytes) => bytes === null ? null : new Uint8Array(bytes).buffer;
  const arr = (i) => ({shape: i.shape, dtype: i.dtype,
                       data: i.dtype === "int64" ? BigInt64Array.from(i.data.map(BigInt)) : new Float32Array(i.data)});
  window.__files = files && Object.fromEntries(Object.entries(files).map(([k, v]) => [k, buf(v)]));
  window.__batches = batches.map((b) => b.map(arr));
}"""
BYTES = "(b) => Array.from(new Uint8Array(b))"


def js_batch(batch):
    return [{"data": a.ravel().tolist(), "shape": list(a.shape), "dtype": a.dtype.name} for a in batch]


def files_of(name):
    f = oc.files(name)
    return {"training": list(f["training"].read_bytes()), "checkpoint": list(f["checkpoint"].read_bytes()),
            "evalModel": list(f["eval"].read_bytes()), "optimizer": list(f["optimizer"].read_bytes())}


def load_and_train(page, batches, files=None, case=CASE):
    page.page.evaluate(TO_JS, [files or files_of(case), [js_batch(b) for b in batches]])
    page.page.evaluate("() => window.onnxtrain.call('load', window.__files)")
    return page.page.evaluate("() => window.onnxtrain.call('train', {batches: window.__batches})")


def cpython_run(batches, case=CASE):
    f = oc.files(case)
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"])
    optimizer = api.Optimizer(f["optimizer"], module)
    losses = []
    for batch in batches:
        losses.append(float(np.asarray(module(*batch)).reshape(-1)[0]))
        optimizer.step()
        module.lazy_reset_grad()
    return losses, state, module


def test_runtime_loaded_from_the_site(site_page):
    assert site_page.info["numpy"] == "2.0.2"
    assert site_page.info["python"].startswith("3.12")


@pytest.mark.parametrize("case", [CASE, "cnn_ce_sgd", "mlp_custom_weighted_adamw"])
def test_training_in_the_worker_matches_cpython(site_page, case):
    batches = oc.batches(case, 20)
    result = load_and_train(site_page, batches, case=case)
    expected, _, _ = cpython_run(batches, case)
    assert not result["cancelled"] and len(result["losses"]) == 20
    np.testing.assert_allclose(result["losses"], expected, rtol=1e-5)


def test_batches_are_transferred_and_progress_is_reported(site_page):
    batches = oc.batches(CASE, 4)
    site_page.page.evaluate(TO_JS, [files_of(CASE), [js_batch(b) for b in batches]])
    out = site_page.page.evaluate("""async () => {
      await window.onnxtrain.call('load', window.__files);
      const progress = [];
      const transfer = window.__batches.flat().map((input) => input.data.buffer);
      const result = await window.onnxtrain.call('train', {batches: window.__batches},
                                                 {transfer, onProgress: (p) => progress.push(p)});
      return {result, progress, left: transfer.map((buffer) => buffer.byteLength)};
    }""")
    assert out["left"] == [0] * 8  # handed over to the worker, not copied
    assert [(p["step"], p["steps"]) for p in out["progress"]] == [(i, 4) for i in range(1, 5)]
    assert [p["loss"] for p in out["progress"]] == out["result"]["losses"]
    assert all(p["examplesPerSecond"] > 0 for p in out["progress"])
    np.testing.assert_allclose(out["result"]["losses"], cpython_run(batches)[0], rtol=1e-5)


def test_checkpoint_saved_in_the_page_loads_in_cpython(site_page):
    batches = oc.batches(CASE, 5)
    load_and_train(site_page, batches)
    data = bytes(site_page.page.evaluate(
        f"async () => ({BYTES})(await window.onnxtrain.call('saveCheckpoint', {{includeOptimizerState: true}}))"))
    in_page = np.frombuffer(bytes(site_page.page.evaluate(
        f"async () => ({BYTES})(await window.onnxtrain.call('parameters', {{}}))")), np.float32)
    f = oc.files(CASE)
    loaded = api.CheckpointState.load_checkpoint(data)
    module = api.Module(f["training"], loaded)
    np.testing.assert_array_equal(module.get_contiguous_parameters(), in_page)  # bit-equal
    assert loaded._optimizer.step == 5
    # and the same training in CPython (numpy with BLAS) ends within float32 rounding of it
    _, _, reference = cpython_run(batches)
    np.testing.assert_allclose(in_page, reference.get_contiguous_parameters(), rtol=1e-5, atol=1e-7)


def test_model_exported_in_the_page_runs_in_onnxruntime(site_page):
    batches = oc.batches(CASE, 5)
    load_and_train(site_page, batches)
    model = bytes(site_page.page.evaluate(
        f"async () => ({BYTES})(await window.onnxtrain.call('exportModel', {{outputNames: ['output']}}))"))
    _, _, module = cpython_run(batches)
    expected = module.export_model_for_inferencing(None, ["output"])
    x = oc.batches(CASE, 1, seed=3)[0][0]
    run = lambda m: ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]  # noqa
    np.testing.assert_allclose(run(model), run(expected), rtol=1e-6, atol=1e-7)


def test_errors_come_back_and_the_worker_stays_usable(site_page):
    files = files_of(CASE)
    broken = dict(files, training=files["training"][: len(files["training"]) // 2])
    site_page.page.evaluate(TO_JS, [broken, []])
    with pytest.raises(Exception, match="cannot load the training model"):
        site_page.page.evaluate("() => window.onnxtrain.call('load', window.__files)")
    x, y = oc.batches(CASE, 1)[0]
    with pytest.raises(Exception, match=r"input 'input' must have shape \[batch, 20\], got \[8, 7\]"):
        load_and_train(site_page, [(x[:, :7].copy(), y)])
    result = load_and_train(site_page, oc.batches(CASE, 3))
    assert len(result["losses"]) == 3 and all(np.isfinite(result["losses"]))


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


def test_cancel_stops_training_between_steps(site_page):
    batches = oc.batches(CASE, 1)
    site_page.page.evaluate(TO_JS, [files_of(CASE), [js_batch(b) for b in batches]])
    result = site_page.page.evaluate("""async () => {
      await window.onnxtrain.call('load', window.__files);
      const training = window.onnxtrain.call('train', {batches: Array(3000).fill(window.__batches[0])});
      await new Promise((r) => setTimeout(r, 300));
      await window.onnxtrain.call('cancel');
      return training;
    }""")
    assert result["cancelled"]
    assert 0 < len(result["losses"]) < 3000


def test_artifacts_generated_in_the_page_train_like_cpython(site_page):
    from onnxtrain import artifacts
    forward = oc.mlp(n_in=20, hidden=16, n_out=5)
    generated = site_page.page.evaluate("""async (model) => {
      const out = await window.onnxtrain.call('generateArtifacts', {model: new Uint8Array(model).buffer,
        requiresGrad: ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']});
      return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Array.from(new Uint8Array(v))]));
    }""", list(forward.SerializeToString()))
    expected = artifacts.generate_artifacts(forward, requires_grad=oc.MLP_ALL, loss=artifacts.LossType.CrossEntropyLoss,
                                            optimizer=artifacts.OptimType.AdamW)
    assert sorted(generated) == sorted(expected)
    assert bytes(generated["checkpoint"]) == expected["checkpoint"]
    files = {"training": generated["training_model.onnx"], "checkpoint": generated["checkpoint"],
             "evalModel": generated["eval_model.onnx"], "optimizer": generated["optimizer_model.onnx"]}
    batches = oc.batches(CASE, 10)
    result = load_and_train(site_page, batches, files=files)
    state = api.CheckpointState.load_checkpoint(expected["checkpoint"])
    module = api.Module(expected["training_model.onnx"], state, expected["eval_model.onnx"])
    optimizer = api.Optimizer(expected["optimizer_model.onnx"], module)
    losses = []
    for batch in batches:
        losses.append(float(module(*batch)))
        optimizer.step()
        module.lazy_reset_grad()
    np.testing.assert_allclose(result["losses"], losses, rtol=1e-5)


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
    page.evaluate(TO_JS, [files_of(CASE), [js_batch(b) for b in batches]])
    page.evaluate("() => window.onnxtrain.call('load', window.__files)")
    result = page.evaluate("() => window.onnxtrain.call('train', {batches: window.__batches})")
    np.testing.assert_allclose(result["losses"], cpython_run(batches)[0], rtol=1e-5)
    context.close()
