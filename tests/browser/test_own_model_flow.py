"""Train your own model in the page: a forward model (artifacts generated there) or ORT's artifacts."""
import io
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

import ort_cases as oc
from browser.conftest import reload_and_resume, screenshot


def npz(tmp_path, name="data.npz", n=120, classes=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 20)).astype(np.float32)
    labels = np.argmax(x[:, :classes], axis=1).astype(np.int64)
    path = tmp_path / name
    buf = io.BytesIO()
    np.savez(buf, input=x, labels=labels)
    path.write_bytes(buf.getvalue())
    return path, x, labels


def train_and_download(page, tmp_path, epochs=8):
    page.fill("#own-epochs", str(epochs))
    page.fill("#own-lr", "0.01")
    page.click("#own-train")
    page.wait_for_function("() => /^Done/.test(document.getElementById('own-metrics').textContent) "
                           "|| !document.getElementById('own-error').hidden", timeout=120_000)
    assert page.is_hidden("#own-error"), page.text_content("#own-error")
    with page.expect_download() as download:
        page.click("#own-download")
    assert page.locator("#own-chart canvas").count() >= 1
    path = tmp_path / "trained.onnx"
    download.value.save_as(path)
    return path


def accuracy(model_path, x, labels):
    out = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"]).run(["output"], {"input": x})[0]
    return float(np.mean(out.argmax(axis=1) == labels))


def test_forward_model_head_only(site_page, tmp_path):
    page = site_page.page
    forward = tmp_path / "mlp.onnx"
    forward.write_bytes(oc.mlp(n_in=20, hidden=16, n_out=5).SerializeToString())
    page.set_input_files("#own-files", str(forward))
    page.wait_for_selector("#own-generate:not([hidden])")
    assert page.locator("input[name=own-param]").count() == 4
    page.uncheck("input[value='fc1.weight']")
    page.uncheck("input[value='fc1.bias']")
    page.click("#own-prepare")
    page.wait_for_selector("#own-data:not([hidden])")
    assert "input, labels" in page.text_content("#own-inputs")
    with page.expect_download() as download:
        page.click("#own-artifacts")
    assert download.value.suggested_filename == "mlp-artifacts.zip"
    with zipfile.ZipFile(download.value.path()) as archive:
        archive.extractall(tmp_path / "artifacts")
        assert sorted(archive.namelist()) == ["README.txt", "checkpoint", "eval_model.onnx", "optimizer_model.onnx",
                                              "training_model.onnx"]
    state = oc.ort_api().CheckpointState.load_checkpoint(str(tmp_path / "artifacts" / "checkpoint"))
    assert sorted(n for n, p in state.parameters if p.requires_grad) == ["fc2.bias", "fc2.weight"]
    data, x, labels = npz(tmp_path, n=600)
    page.set_input_files("#own-npz", str(data))
    page.wait_for_function("() => !document.getElementById('own-train').disabled")
    assert page.is_visible("#own-keep-best") and page.is_checked("#own-keep-best")  # 60 validation rows
    before = accuracy(forward, x, labels)
    trained = train_and_download(page, tmp_path, epochs=20)
    screenshot(page, "#own", "own-model")
    _, held_x, held_labels = npz(tmp_path, "held_out.npz", n=200, seed=1)
    baseline = np.bincount(held_labels).max() / len(held_labels)
    # only the head learns, on top of a random frozen 16-unit layer, so held-out accuracy tops out near 0.5
    assert accuracy(trained, held_x, held_labels) > max(before, baseline) + 0.1
    weights = {i.name: i for i in onnx.load(str(trained)).graph.initializer}
    original = {i.name: i for i in onnx.load(str(forward)).graph.initializer}
    np.testing.assert_array_equal(numpy_helper.to_array(weights["fc1.weight"]),
                                  numpy_helper.to_array(original["fc1.weight"]))  # frozen stays frozen


def csv_file(tmp_path, n=120, classes=5):
    """The same kind of data as ``npz``, as a CSV of numbers with the label column in the middle."""
    _, x, labels = npz(tmp_path, n=n, classes=classes)
    path = tmp_path / "data.csv"
    rows = [",".join([f"x{i}" for i in range(10)] + ["labels"] + [f"x{i}" for i in range(10, 20)])]
    rows += [",".join([repr(float(v)) for v in r[:10]] + [str(c)] + [repr(float(v)) for v in r[10:]])
             for r, c in zip(x, labels)]
    path.write_text("\n".join(rows))
    return path, x, labels


def upload_ort_artifacts_and_data(page, tmp_path, data_file=npz):
    """ORT's four artifacts of the MLP case and data for them (a .npz or CSV file), chosen in the page."""
    files = oc.files("mlp_ce_adamw")
    page.set_input_files("#own-files", [str(files[k]) for k in ("training", "eval", "optimizer", "checkpoint")])
    page.wait_for_selector("#own-data:not([hidden])")
    data, x, labels = data_file(tmp_path)
    page.set_input_files("#own-npz", str(data))
    page.wait_for_function("() => !document.getElementById('own-train').disabled")
    return x, labels


def test_ort_artifacts_upload(site_page, tmp_path):
    page = site_page.page
    x, labels = upload_ort_artifacts_and_data(page, tmp_path, csv_file)
    assert page.text_content("#own-metrics") == "120 rows (108 for training, 12 for validation)."
    trained = train_and_download(page, tmp_path)
    screenshot(page, "#own", "ort-artifacts")
    _, held_x, held_labels = npz(tmp_path, "held_out.npz", n=200, seed=1)
    assert accuracy(trained, held_x, held_labels) > np.bincount(held_labels).max() / len(held_labels) + 0.2


def test_bad_files_are_named(site_page, tmp_path):
    page = site_page.page
    junk = tmp_path / "notes.onnx"
    junk.write_text("this is not a model")
    page.set_input_files("#own-files", str(junk))
    page.wait_for_selector("#own-error:not([hidden])")
    assert "this file is not an ONNX model" in page.text_content("#own-error")
    model = oc.mlp(n_in=20, hidden=16, n_out=5)
    model.graph.node[1].op_type = "Tan"
    odd = tmp_path / "cos.onnx"
    odd.write_bytes(model.SerializeToString())
    page.set_input_files("#own-files", str(odd))
    page.wait_for_function("() => document.getElementById('own-error').textContent.includes('Tan')")
    page.click("#own-prepare")
    page.wait_for_function("() => document.getElementById('own-error').textContent.includes("
                           "'The gradient builder has not been registered: Tan for node relu1')")


def test_a_run_resumes_after_a_reload(own_page, tmp_path):
    page = own_page.page
    upload_ort_artifacts_and_data(page, tmp_path)
    page.fill("#own-epochs", "3")
    page.click("#own-train")
    page.wait_for_function("() => /^Done/.test(document.getElementById('own-metrics').textContent)", timeout=120_000)
    trained = site_parameters(own_page)
    assert "epoch 3/3" in reload_and_resume(page, "ORT artifacts")
    page.wait_for_function("() => document.getElementById('own-metrics').textContent.startsWith('Restored')")
    np.testing.assert_array_equal(site_parameters(own_page), trained)
    page.fill("#own-epochs", "5")
    page.click("#own-train")
    page.wait_for_function("() => /^Done/.test(document.getElementById('own-metrics').textContent)", timeout=120_000)
    assert "epoch 5/5" in page.text_content("#own-metrics")
    assert "epoch 5/5" in page.text_content("#runs-list li span")


def site_parameters(page):
    return np.array(page.page.evaluate(
        "async () => Array.from((await window.onnxtrain.tasks.own().getContiguousParameters(false)).data)"), np.float32)
