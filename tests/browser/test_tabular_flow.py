"""The CSV flow end to end through the page's UI, with the downloaded model checked in onnxruntime."""
import base64
import json
import re
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import ort_cases as oc
from browser.conftest import reload_and_resume, screenshot
from onnxtrain.checkpoint import read_checkpoint
from onnxtrain.tasks import tabular
from tasks.test_tabular import wine_csv

# Training stopped (its button enabled again) with a run to resume
RESUMABLE = ("() => !document.getElementById('csv-train').disabled"
             " && document.getElementById('csv-train').textContent === 'Resume'")


def train_through_ui(page, epochs=15):
    page.select_option("#csv-label", "cultivar")
    page.fill("#csv-epochs", str(epochs))
    page.click("#csv-train")
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Done.') "
                           "|| !document.getElementById('csv-error').hidden", timeout=180_000)
    assert page.is_hidden("#csv-error"), page.text_content("#csv-error")


def test_csv_file_trains_and_the_download_matches_the_page(site_page, tmp_path):
    page = site_page.page
    csv_path = tmp_path / "wine.csv"
    csv_path.write_bytes(wine_csv())
    page.set_input_files("#csv-file", str(csv_path))
    page.wait_for_selector("#csv-setup:not([hidden])")
    assert "region" in page.text_content("#csv-info") and page.input_value("#csv-task") == "classification"
    train_through_ui(page)
    assert "accuracy" in page.text_content("#csv-metrics")
    assert page.text_content("#csv-signature").startswith(
        "The model: Inputs: numeric float [batch, 13], categorical string [batch, 1]. Outputs: output float [batch, 3], "
        "probabilities float [batch, 3], label int64 [batch].")
    assert page.locator("#csv-confusion table").count() == 1 and page.locator("#csv-chart canvas").count() >= 1
    with page.expect_download() as download:
        page.click("#csv-download")
    model = tmp_path / "model.onnx"
    download.value.save_as(model)
    assert download.value.suggested_filename == "wine.onnx"
    check_checkpoint_and_artifacts(page, tmp_path, model, epochs=15)

    table = tabular.parse_csv(csv_path.read_bytes())
    prep = tabular.prepare(table, "cultivar", "classification")
    pre = prep["preprocessing"]
    num, cat = pre.raw_inputs(table, prep["val_rows"])
    label = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(
        ["label"], {"numeric": num, "categorical": cat.astype(str)})[0]
    in_page = site_page.task_call("csv", "predictValidation")
    assert [pre.classes[i] for i in label] == in_page
    accuracy = float(np.mean(label == prep["y_val"]))
    baseline = max(np.mean(prep["y_val"] == k) for k in range(len(pre.classes)))
    assert accuracy > baseline + 0.3, (accuracy, baseline)
    unlabelled = tmp_path / "new_rows.csv"
    unlabelled.write_bytes(b"\n".join(line.rsplit(b",", 1)[0] for line in csv_path.read_bytes().splitlines()[:11]))
    page.set_input_files("#csv-try-file", str(unlabelled))
    page.wait_for_function("() => document.querySelector('#csv-try-result table') || !document.getElementById('csv-error').hidden")
    assert page.is_hidden("#csv-error"), page.text_content("#csv-error")
    assert page.locator("#csv-try-result tr").count() == 11
    first = page.text_content("#csv-try-result tr:nth-child(2) td")
    assert first.split(" (")[0] == pre.classes[ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(
        ["label"], {"numeric": pre.raw_inputs(table, [0])[0], "categorical": pre.raw_inputs(table, [0])[1].astype(str)})[0][0]]
    check_try_it_pages(page, csv_path, model, pre)
    screenshot(page, "#csv", "csv")


def check_try_it_pages(page, csv_path, model, pre):
    """A labelled file in "Try it": 100 rows a page, the true label beside the prediction, and the accuracy over
    all rows as onnxruntime gives it for the downloaded model."""
    page.set_input_files("#csv-try-file", {"name": "all.csv", "mimeType": "text/csv", "buffer": csv_path.read_bytes()})
    page.wait_for_function("() => document.getElementById('csv-try-status').textContent.startsWith('rows 1–100 of 178')")
    assert page.eval_on_selector_all("#csv-try-result tr:first-child th", "(hs) => hs.map((h) => h.textContent)")[:3] \
        == ["prediction", "true cultivar", "right?"]
    table = tabular.parse_csv(csv_path.read_bytes())
    num, cat = pre.raw_inputs(table, range(len(table.rows)))
    predicted = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(
        ["label"], {"numeric": num, "categorical": cat.astype(str)})[0]
    truth = [r[table.header.index("cultivar")] for r in table.rows]
    known = [i for i, t in enumerate(truth) if not tabular.is_missing(t)]
    accuracy = np.mean([pre.classes[predicted[i]] == truth[i] for i in known])
    over = "all 178 rows" if len(known) == 178 else f"the {len(known)} labelled rows"
    assert f"accuracy over {over}: {100 * accuracy:.1f}%" in page.text_content("#csv-try-status")
    cells = page.eval_on_selector_all("#csv-try-result tr", "(rs) => rs.slice(1).map((r) => [...r.cells].slice(0, 3).map((c) => c.textContent))")
    assert [[p.split(" (")[0], t, ok] for p, t, ok in cells] == [
        [pre.classes[predicted[i]], truth[i], "" if i not in known else "yes" if pre.classes[predicted[i]] == truth[i] else "no"]
        for i in range(100)]
    assert page.is_disabled("#csv-try-previous")
    page.click("#csv-try-next")
    page.wait_for_function("() => document.getElementById('csv-try-status').textContent.startsWith('rows 101–178 of 178')")
    assert page.locator("#csv-try-result tr").count() == 79 and page.is_disabled("#csv-try-next")
    page.click("#csv-try-previous")
    page.wait_for_function("() => document.getElementById('csv-try-status').textContent.startsWith('rows 1–100 of 178')")


def check_checkpoint_and_artifacts(page, tmp_path, model, epochs):
    """The checkpoint and the artifact set downloaded from the page load in onnxruntime-training, hold the
    downloaded model's weights, and train on."""
    with page.expect_download() as download:
        page.click("#csv-checkpoint")
    assert download.value.suggested_filename == "wine.ckpt"
    api = oc.ort_api()
    state = api.CheckpointState.load_checkpoint(download.value.path())
    assert state.properties["epoch"] == epochs and json.loads(state.properties["onnxtrain.tabular"])["label"] == "cultivar"
    with page.expect_download() as download:
        page.click("#csv-artifacts")
    assert download.value.suggested_filename == "wine-artifacts.zip"
    folder = tmp_path / "artifacts"
    zipfile.ZipFile(download.value.path()).extractall(folder)
    state = api.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = api.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
    optimizer = api.Optimizer(str(folder / "optimizer_model.onnx"), module)
    weights = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(model)).graph.initializer}
    for name, parameter in state.parameters:
        np.testing.assert_array_equal(parameter.data, weights[name], err_msg=name)
    x = np.zeros((4, weights["fc1.weight"].shape[1]), np.float32)
    assert np.isfinite(module(x, np.zeros(4, np.int64)))
    optimizer.step()


def test_bad_csv_files_show_clear_errors_and_the_page_recovers(site_page, tmp_path):
    page = site_page.page
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b,c\n1,2,3\n4,5\n")
    page.set_input_files("#csv-file", str(ragged))
    page.wait_for_selector("#csv-error:not([hidden])")
    assert "row 3 has 2 fields, but the header has 3" in page.text_content("#csv-error")
    one_class = tmp_path / "one.csv"
    one_class.write_text("x,y\n" + "".join(f"{i},same\n" for i in range(10)))
    page.set_input_files("#csv-file", str(one_class))
    page.wait_for_function("() => document.getElementById('csv-error').hidden")
    page.select_option("#csv-label", "y")
    page.select_option("#csv-task", "classification")
    page.click("#csv-train")
    page.wait_for_selector("#csv-error:not([hidden])")
    assert "only one class" in page.text_content("#csv-error")
    page.click("#csv-sample")
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Loaded wine.csv')")
    train_through_ui(page, epochs=3)


def test_a_run_is_saved_each_epoch_and_resumes_after_a_reload(own_page):
    page = own_page.page
    page.click("#csv-sample")
    page.wait_for_selector("#csv-setup:not([hidden])")
    page.fill("#csv-epochs", "400")
    page.select_option("#csv-optimizer", "SGD")
    page.fill("#csv-lr", "0.05")
    page.click("#csv-train")
    page.wait_for_function("() => /epoch ([3-9]|\\d\\d+)\\/400/.test(document.getElementById('csv-metrics').textContent)",
                           timeout=120_000)
    page.click("#csv-pause")
    page.wait_for_function(RESUMABLE)
    page.reload()
    page.wait_for_selector("#runs:not([hidden])")
    screenshot(page, "#runs", "saved-runs")
    line = reload_and_resume(page, "wine.csv")
    saved_epoch = int(line.split("epoch ")[1].split("/")[0])
    assert saved_epoch >= 3
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Restored')")
    assert page.input_value("#csv-epochs") == "400" and page.input_value("#csv-optimizer") == "SGD"
    assert page.input_value("#csv-lr") == "0.05"
    page.fill("#csv-epochs", str(saved_epoch + 2))
    page.click("#csv-train")
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Done.')",
                           timeout=120_000)
    assert f"epoch {saved_epoch + 2}/{saved_epoch + 2}" in page.text_content("#csv-metrics")
    page.click("#runs-list li button:text('Delete')")
    page.wait_for_selector("#runs", state="hidden")


def test_a_batch_too_large_for_memory_is_caught_changes_nothing_and_a_smaller_one_trains_on(own_page, tmp_path):
    """A real allocation failure in the worker: 2400 rows through a 250000-wide layer make a 2.4 GB activation,
    which numpy in wasm32 Pyodide cannot allocate (its arrays stop at 2 GiB, its heap at 4 GiB)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 8))
    rows = [",".join(f"{v:.4f}" for v in r) + f",c{int(np.argmax(r[:3]))}" for r in x]
    path = tmp_path / "wide.csv"
    path.write_text("\n".join([",".join([f"f{i}" for i in range(8)] + ["label"])] + rows))
    page = own_page.page
    page.set_input_files("#csv-file", str(path))
    page.wait_for_selector("#csv-setup:not([hidden])")
    page.fill("#csv-hidden", "250000")
    page.fill("#csv-batch", "2400")
    page.fill("#csv-epochs", "1")
    page.click("#csv-train")
    page.wait_for_selector("#csv-error:not([hidden])", timeout=180_000)
    assert page.text_content("#csv-error") == (
        "ran out of memory training a batch of 2400 rows: choose a smaller batch size "
        "(nothing was changed, training can go on)")
    assert page.text_content("#csv-train") == "Resume"

    table = tabular.parse_csv(path.read_bytes())
    prep = tabular.prepare(table, "label", "classification")
    untrained = tabular.mlp_model(prep["preprocessing"].n_features, [250000], 3)
    state = read_checkpoint(own_page.task_bytes("csv", "checkpoint"))
    assert state.properties["epoch"] == 0 and state.optimizer_groups[0].step == 0
    for tensor in untrained.graph.initializers:
        np.testing.assert_array_equal(state.trainable[tensor.name], tensor.data, err_msg=tensor.name)

    page.fill("#csv-batch", "64")
    page.click("#csv-train")
    page.wait_for_function("() => document.getElementById('csv-progress').value > 0", timeout=60_000)
    page.click("#csv-pause")
    page.wait_for_function(RESUMABLE, timeout=60_000)
    assert page.is_hidden("#csv-error")
    state = read_checkpoint(own_page.task_bytes("csv", "checkpoint"))
    assert state.optimizer_groups[0].step >= 1
    trained = state.trainable["fc1.weight"]
    assert np.isfinite(trained).all() and not np.array_equal(trained, untrained.graph.initializers[0].data)


def overfit_csv(n=80, seed=0) -> str:
    """A noisy label a 128-unit network learns by heart within a few epochs: validation loss then climbs."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6))
    y = np.where(x[:, 0] + rng.standard_normal(n) * 1.5 > 0, "yes", "no")
    return "f1,f2,f3,f4,f5,f6,label\n" + "".join(",".join(f"{v:.3f}" for v in r) + f",{c}\n" for r, c in zip(x, y))


def cross_entropy(logits, labels):
    logits = logits.astype(np.float64)
    top = logits.max(axis=1, keepdims=True)
    log_sum = np.log(np.exp(logits - top).sum(axis=1)) + top[:, 0]
    return float(np.mean(log_sum - logits[np.arange(len(labels)), labels]))


def downloaded_validation_logits(page, tmp_path, path):
    """The downloaded model's logits (onnxruntime) on the validation rows of the CSV at ``path``, and their labels."""
    with page.expect_download() as download:
        page.click("#csv-download")
    model = tmp_path / "best.onnx"
    download.value.save_as(model)
    table = tabular.parse_csv(path.read_bytes())
    prep = tabular.prepare(table, "label", "classification")
    num, _ = prep["preprocessing"].raw_inputs(table, prep["val_rows"])
    logits = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(["output"], {"numeric": num})[0]
    return logits, prep["y_val"]


def test_the_best_epoch_is_kept_training_stops_early_and_a_resumed_run_knows_it(own_page, tmp_path):
    page = own_page.page
    path = tmp_path / "noisy.csv"
    path.write_text(overfit_csv())
    page.set_input_files("#csv-file", str(path))
    page.wait_for_selector("#csv-setup:not([hidden])")
    assert page.is_checked("#csv-keep-best")
    for field, value in {"hidden": "128", "batch": "16", "lr": "0.02", "epochs": "100", "patience": "4"}.items():
        page.fill(f"#csv-{field}", value)
    page.click("#csv-train")
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Done.') "
                           "|| !document.getElementById('csv-error').hidden", timeout=180_000)
    assert page.is_hidden("#csv-error"), page.text_content("#csv-error")
    text = page.text_content("#csv-metrics")
    found = re.search(r"Stopped early at epoch (\d+): no better validation loss for 4 epochs; "
                      r"kept epoch (\d+) \(validation loss ([0-9.]+)\)", text)
    assert found, text
    stopped, best, best_loss = int(found[1]), int(found[2]), float(found[3])
    assert stopped == best + 4 < 100 and "s left" not in text
    shown_accuracy = re.search(rf"epoch {best} · validation accuracy ([0-9.]+)%", text)
    assert shown_accuracy, text  # the line describes the kept epoch, the model the run now holds
    assert page.get_attribute("#csv-chart", "data-best-epoch") == str(best)

    # The download is the best epoch's model: onnxruntime gives it the kept validation loss.
    logits, labels = downloaded_validation_logits(page, tmp_path, path)
    assert cross_entropy(logits, labels) == pytest.approx(best_loss, rel=2e-3)
    assert f"{100 * np.mean(logits.argmax(axis=1) == labels):.1f}" == shown_accuracy[1]

    line = reload_and_resume(page, "noisy.csv")
    assert f"epoch {stopped}/100" in line
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Restored')")
    assert page.get_attribute("#csv-chart", "data-best-epoch") == str(best)
    assert "s left" not in page.text_content("#csv-metrics")
    state = read_checkpoint(own_page.task_bytes("csv", "checkpoint"))
    assert json.loads(state.properties["onnxtrain.best"])["best_epoch"] == best



def test_a_paused_run_resumed_after_a_reload_still_ends_at_its_best_epoch(own_page, tmp_path):
    """Paused past its best epoch, reloaded and resumed: the best epoch's parameters come back with the run
    (the saved best-epoch checkpoint), so finishing puts them back although the live ones are of a later epoch."""
    page = own_page.page
    path = tmp_path / "noisy.csv"
    path.write_text(overfit_csv())
    page.set_input_files("#csv-file", str(path))
    page.wait_for_selector("#csv-setup:not([hidden])")
    for field, value in {"hidden": "128", "batch": "16", "lr": "0.02", "epochs": "400", "patience": "0"}.items():
        page.fill(f"#csv-{field}", value)
    page.click("#csv-train")
    page.wait_for_function("() => /epoch ([6-9]|\\d\\d+)\\/400/.test(document.getElementById('csv-metrics').textContent)",
                           timeout=120_000)
    page.click("#csv-pause")
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.endsWith('paused')")
    line = reload_and_resume(page, "noisy.csv")
    epoch = int(line.split("epoch ")[1].split("/")[0])
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Restored')")
    tracker = json.loads(read_checkpoint(own_page.task_bytes("csv", "checkpoint")).properties["onnxtrain.best"])
    best, best_loss = tracker["best_epoch"], tracker["best_loss"]
    assert best < epoch and page.get_attribute("#csv-chart", "data-best-epoch") == str(best)
    page.fill("#csv-epochs", str(epoch + 1))
    page.click("#csv-train")
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Done.') "
                           "|| !document.getElementById('csv-error').hidden", timeout=120_000)
    assert page.is_hidden("#csv-error"), page.text_content("#csv-error")
    shown = page.evaluate("(v) => v.toPrecision(4)", best_loss)
    assert page.text_content("#csv-metrics").startswith(f"Done. Kept epoch {best}, the best (validation loss {shown}). ")
    logits, labels = downloaded_validation_logits(page, tmp_path, path)
    assert cross_entropy(logits, labels) == pytest.approx(best_loss, rel=1e-4)

SAVED_RUNS = """async () => {
  const db = await new Promise((ok, fail) => { const r = indexedDB.open("onnxtrain"); r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
  const runs = await new Promise((ok, fail) => {
    const r = db.transaction("runs").objectStore("runs").getAll(); r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
  db.close();
  const base64 = (buffer) => { const b = new Uint8Array(buffer); let s = "";
    for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000)); return btoa(s); };
  return runs.map((r) => ({ epoch: r.epoch, checkpoint: base64(r.checkpoint) }));
}"""


def test_a_non_finite_step_is_undone_reported_and_the_run_resumes_with_a_lower_rate(own_page, tmp_path):
    """SGD at a learning rate of 1e38 on prices near 50, far from fitted: the update overflows float32."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 3))
    path = tmp_path / "prices.csv"
    path.write_text("a,b,c,price\n" + "".join(f"{a:.3f},{b:.3f},{c:.3f},{10 * a + 50:.1f}\n" for a, b, c in x))
    page = own_page.page
    page.set_input_files("#csv-file", str(path))
    page.wait_for_selector("#csv-setup:not([hidden])")
    page.select_option("#csv-label", "price")
    page.select_option("#csv-task", "regression")
    page.select_option("#csv-optimizer", "SGD")
    page.uncheck("#csv-keep-best")
    page.fill("#csv-epochs", "400")
    page.fill("#csv-lr", "0.0001")
    page.click("#csv-train")
    page.wait_for_function("() => /epoch ([2-9]|\\d\\d+)\\/400/.test(document.getElementById('csv-metrics').textContent)",
                           timeout=120_000)
    page.click("#csv-pause")
    page.wait_for_function(RESUMABLE)
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.endsWith('paused')")
    assert "s left" not in page.text_content("#csv-metrics")
    [saved] = page.evaluate(SAVED_RUNS)
    before = own_page.task_bytes("csv", "checkpoint")

    page.fill("#csv-lr", "1e38")
    page.click("#csv-train")
    page.wait_for_selector("#csv-error:not([hidden])", timeout=60_000)
    error = page.text_content("#csv-error")
    assert "was undone" in error and "not finite" in error and "try a learning rate lower than the current 1e+38" in error
    assert page.text_content("#csv-train") == "Resume" and "s left" not in page.text_content("#csv-metrics")
    after = read_checkpoint(own_page.task_bytes("csv", "checkpoint"))
    for name, array in read_checkpoint(before).trainable.items():
        np.testing.assert_array_equal(after.trainable[name], array, err_msg=name)
    assert page.evaluate(SAVED_RUNS) == [saved]  # the saved run is the last good epoch's
    state = read_checkpoint(base64.b64decode(saved["checkpoint"]))
    assert all(np.isfinite(a).all() for a in state.trainable.values())

    page.fill("#csv-lr", "0.0001")
    page.fill("#csv-epochs", str(saved["epoch"] + 2))
    page.click("#csv-train")
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Done.') "
                           "|| !document.getElementById('csv-error').hidden", timeout=120_000)
    assert page.is_hidden("#csv-error"), page.text_content("#csv-error")
    assert f"epoch {saved['epoch'] + 2}/{saved['epoch'] + 2}" in page.text_content("#csv-metrics")
    [resumed] = page.evaluate(SAVED_RUNS)
    state = read_checkpoint(base64.b64decode(resumed["checkpoint"]))
    assert resumed["epoch"] == saved["epoch"] + 2 and all(np.isfinite(a).all() for a in state.trainable.values())


def test_the_data_info_follows_the_label_and_reports_non_finite_cells(site_page, tmp_path):
    rows = [f"{i * 0.5},{'inf' if i == 3 else '1e39' if i == 7 else i},{'red' if i % 2 else 'blue'},{'x' if i % 3 else 'y'}"
            for i in range(20)]
    path = tmp_path / "odd.csv"
    path.write_text("a,b,color,kind\n" + "\n".join(rows) + "\n")
    page = site_page.page
    page.set_input_files("#csv-file", str(path))
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Loaded odd.csv')")
    info = page.text_content("#csv-info")
    assert "predicting kind; text columns (one-hot encoded): color;" in info, info
    assert "values that are not finite numbers (inf, NaN or too large; treated as missing): b (2)" in info, info
    page.select_option("#csv-label", "color")
    page.wait_for_function("() => document.getElementById('csv-info').textContent.includes('predicting color')")
    assert "text columns (one-hot encoded): kind;" in page.text_content("#csv-info")
    page.select_option("#csv-label", "b")
    page.wait_for_function("() => document.getElementById('csv-info').textContent.includes('predicting b')")
    info = page.text_content("#csv-info")
    assert page.input_value("#csv-task") == "classification"  # inf and 1e39 are two more classes then
    assert "text columns (one-hot encoded): color, kind;" in info and "not finite" not in info and "left out" not in info
    page.select_option("#csv-task", "regression")
    page.wait_for_function("() => document.getElementById('csv-info').textContent.includes('left out')")
    assert "2 rows without a usable b value are left out" in page.text_content("#csv-info")
