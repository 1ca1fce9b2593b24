"""The page's tabular flow in CPython: CSV -> preprocessing -> MLP artifacts -> training -> an exported model
that takes the raw columns and runs in onnxruntime."""
import csv
import io

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.datasets import load_wine

from onnxtrain import api, artifacts, ir
from onnxtrain.web import tabular
from onnxtrain.web import signature


def wine_csv(missing=True) -> bytes:
    data = load_wine()
    rng = np.random.default_rng(0)
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(list(data.feature_names) + ["region", "cultivar"])
    for row, target in zip(data.data, data.target):
        cells = [f"{v:g}" for v in row]
        if missing and rng.random() < 0.1:
            cells[rng.integers(0, len(cells))] = ""
        region = ["north", "south", "east"][int(row[0] > 13) + int(row[12] > 1000)]
        w.writerow(cells + [region, f"class_{target}"])
    return out.getvalue().encode()


def train_table(table, label, task, epochs=40):
    prep = tabular.prepare(table, label, task)
    pre = prep["preprocessing"]
    n_out = len(pre.classes) if task == "classification" else 1
    forward = tabular.mlp_model(pre.n_features, [16], n_out)
    arts = artifacts.generate_artifacts(
        forward, requires_grad=[t.name for t in forward.graph.initializers],
        loss=artifacts.LossType.CrossEntropyLoss if task == "classification" else artifacts.LossType.MSELoss,
        optimizer=artifacts.OptimType.AdamW)
    state = api.CheckpointState.load_checkpoint(arts["checkpoint"])
    module = api.Module(arts["training_model.onnx"], state, arts["eval_model.onnx"])
    optimizer = api.Optimizer(arts["optimizer_model.onnx"], module)
    optimizer.set_learning_rate(0.01)
    x, y = prep["x_train"], prep["y_train"]
    for _ in range(epochs):
        for start in range(0, len(x), 32):
            module(x[start:start + 32], y[start:start + 32])
            optimizer.step()
            module.lazy_reset_grad()
    exported = ir.load(module.export_model_for_inferencing(None, ["output"]))
    return prep, tabular.with_preprocessing(exported, pre)


def test_describe_and_task_detection():
    table = tabular.parse_csv(wine_csv())
    info = tabular.describe(table)
    kinds = {c["name"]: c["kind"] for c in info["columns"]}
    assert kinds["alcohol"] == "numeric" and kinds["region"] == "categorical" and kinds["cultivar"] == "categorical"
    assert info["rows"] == 178 and info["suggested_label"] == "cultivar"
    assert sum(c["missing"] for c in info["columns"]) > 0
    assert tabular.detect_task(table, "cultivar") == "classification"
    assert tabular.detect_task(table, "proline") == "regression"


def test_exported_model_takes_raw_columns_and_beats_the_baseline():
    table = tabular.parse_csv(wine_csv())
    prep, model = train_table(table, "cultivar", "classification")
    pre = prep["preprocessing"]
    num, cat = pre.raw_inputs(table, prep["val_rows"])
    sess = ort.InferenceSession(ir.to_bytes(model), providers=["CPUExecutionProvider"])
    logits, probs, label = sess.run(None, {"numeric": num, "categorical": cat.astype(str)})
    # the graph's preprocessing equals the numpy one, and our runtime agrees with onnxruntime
    from onnxtrain.runtime import Session
    ours = Session(model).run({"numeric": num, "categorical": cat})
    np.testing.assert_allclose(ours[0], logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ours[2], label)
    accuracy = float(np.mean(label == prep["y_val"]))
    baseline = max(np.mean(prep["y_val"] == k) for k in range(len(pre.classes)))
    assert accuracy > baseline + 0.3, (accuracy, baseline)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    # the page's line on how to call the model agrees with onnxruntime's view of it
    line = signature(ir.to_bytes(model))
    described = lambda vs: ", ".join(f"{v.name} {v.type[7:-1]} [{', '.join(map(str, v.shape))}]" for v in vs)  # noqa: E731
    assert line.startswith(f"Inputs: {described(sess.get_inputs())}. Outputs: {described(sess.get_outputs())}. ")
    assert line.endswith("Classes: class_0, class_1, class_2")


def test_regression_exports_and_beats_predicting_the_mean():
    table = tabular.parse_csv(wine_csv(missing=False))
    prep, model = train_table(table, "proline", "regression", epochs=60)
    num, cat = prep["preprocessing"].raw_inputs(table, prep["val_rows"])
    (pred,) = ort.InferenceSession(ir.to_bytes(model), providers=["CPUExecutionProvider"]).run(
        None, {"numeric": num, "categorical": cat.astype(str)})
    y = prep["y_val"]
    assert np.mean(np.abs(pred - y)) < np.mean(np.abs(y - prep["y_train"].mean()))


@pytest.mark.parametrize("text, message", [
    (b"", "is empty"),
    (b"a,b\n", "no data rows"),
    (b"a,b\n1,2\n3\n", "row 3 has 1 fields, but the header has 2"),
    (b"\xff\xfe\x00a", "not UTF-8"),
])
def test_bad_csv_files(text, message):
    with pytest.raises(tabular.DataError, match=message):
        tabular.parse_csv(text)


def test_one_class_label_is_refused():
    table = tabular.parse_csv(b"x,y\n1,a\n2,a\n3,a\n4,a\n5,a\n")
    with pytest.raises(tabular.DataError, match="only one class"):
        tabular.prepare(table, "y", "classification")


def test_tabular_session_as_the_worker_drives_it():
    session = tabular.TabularSession(memoryview(wine_csv()))
    info = session.describe()
    assert info["task"] == "classification"
    setup = session.setup("cultivar", "classification", [16])
    assert setup["classes"] == ["class_0", "class_1", "class_2"] and setup["missing_cells"] > 0
    epochs = 0
    while epochs < 15:
        r = session.step(32, 0.01)
        epochs += r["epoch_done"]
    metrics = session.evaluate()
    assert metrics["accuracy"] > metrics["baseline"] + 0.3
    assert sum(map(sum, metrics["confusion"])) == setup["validation_rows"]
    model = session.export_model()
    pre = session.prep["preprocessing"]
    num, cat = pre.raw_inputs(session.table, session.prep["val_rows"])
    label = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        ["label"], {"numeric": num, "categorical": cat.astype(str)})[0]
    assert [pre.classes[i] for i in label] == session.predict_validation()


def test_a_saved_run_resumes_exactly():
    data = wine_csv()
    a = tabular.TabularSession(data)
    a.setup("cultivar", "classification", [8])
    for _ in range(12):  # part of the first epochs
        a.step(16, 0.01)
    while not a.step(16, 0.01)["epoch_done"]:
        pass
    saved = a.checkpoint()
    b = tabular.TabularSession(data)
    b.setup("cultivar", "classification", [8])
    assert b.restore(saved) == a.epoch
    # the shuffle order is not saved, so compare the state and one step on the same batch
    for n, p in a.training.state.parameters:
        np.testing.assert_array_equal(b.training.state.parameters[n].data, p.data)
    x, y = a.prep["x_train"][:16], a.prep["y_train"][:16]
    assert float(a.module(x, y)) == float(b.module(x, y))
    assert api.CheckpointState.load_checkpoint(saved).properties["epoch"] == a.epoch


def test_predict_rows_of_another_csv():
    session = tabular.TabularSession(wine_csv())
    session.setup("cultivar", "classification", [16])
    while session.epoch < 10:
        session.step(32, 0.01)
    unlabelled = b"\n".join(line.rsplit(b",", 1)[0] for line in wine_csv().splitlines()[:21])
    result = session.predict_csv(unlabelled)
    assert len(result["predictions"]) == 20 and set(result["predictions"]) <= {"class_0", "class_1", "class_2"}
    table = tabular.parse_csv(wine_csv())
    pre = session.prep["preprocessing"]
    num, cat = pre.raw_inputs(table, list(range(20)))
    label = ort.InferenceSession(session.export_model(), providers=["CPUExecutionProvider"]).run(
        ["label"], {"numeric": num, "categorical": cat.astype(str)})[0]
    assert [pre.classes[i] for i in label] == result["predictions"]
    with pytest.raises(tabular.DataError, match=r"lacks the columns \['alcohol'"):
        session.predict_csv(b"x,y\n1,2\n")


def test_a_csv_of_numbers_feeds_a_models_features_and_labels_like_the_same_npz():
    import ort_cases as oc
    from onnxtrain.web import TrainingSession
    f = oc.files("mlp_ce_adamw")
    make = lambda: TrainingSession(f["training"].read_bytes(), f["checkpoint"].read_bytes(),  # noqa: E731
                                   f["eval"].read_bytes(), f["optimizer"].read_bytes())
    rng = np.random.default_rng(0)
    x = np.round(rng.standard_normal((40, 20)), 3).astype(np.float32)
    y = np.argmax(x[:, :5], axis=1)
    header = [f"x{i}" for i in range(10)] + ["labels"] + [f"x{i}" for i in range(10, 20)]
    rows = [[f"{v:.3f}" for v in r[:10]] + [str(label)] + [f"{v:.3f}" for v in r[10:]] for r, label in zip(x.tolist(), y)]
    text = "\n".join(",".join(r) for r in [header] + rows).encode()
    from_csv, from_npz = make(), make()
    inputs = tabular.csv_inputs(text, from_csv.input_types())
    np.testing.assert_array_equal(inputs["input"], x)
    assert inputs["labels"].dtype == np.int64 and inputs["input"].dtype == np.float32
    from_csv.set_named(inputs)
    buffer = io.BytesIO()
    np.savez(buffer, input=x, labels=y.astype(np.int64))
    from_npz.set_npz(buffer.getvalue())
    for _ in range(5):
        assert from_csv.step(8, 0.01)["loss"] == from_npz.step(8, 0.01)["loss"]

    types = from_csv.input_types()
    bad = {"text": b"a,labels\nx,1\n", "gap": b"a,labels\n,1\n1,0\n", "narrow": b"a,b,labels\n1,2,0\n",
           "fraction": ("\n".join([",".join(header)] + [",".join(["0.5"] * 21)])).encode()}
    for name, message in [("text", "column 'a' of the data file is not numeric"),
                          ("gap", "column 'a' of the data file has 1 missing values"),
                          ("narrow", r"input 'input' takes \[20\] values per row, but the data file has 2 feature"),
                          ("fraction", "the label column 'labels' must hold whole numbers")]:
        with pytest.raises(tabular.DataError, match=message):
            tabular.csv_inputs(bad[name], types)
    with pytest.raises(tabular.DataError, match="fits a model whose training inputs are features and labels"):
        tabular.csv_inputs(text, {"a": types["input"], "b": types["input"], "labels": types["labels"]})
