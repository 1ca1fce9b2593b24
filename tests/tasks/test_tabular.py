"""The page's tabular flow in CPython: CSV -> preprocessing -> MLP artifacts -> training -> an exported model
that takes the raw columns and runs in onnxruntime."""
import csv
import io
import json

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.datasets import load_wine

from onnxtrain import api, artifacts, ir
from onnxtrain.tasks import tabular
from onnxtrain.tasks.split import stratified_split
from onnxtrain.train import csv as train_csv
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
    columns = json.dumps(load_wine().feature_names)
    assert line.endswith(f"""Input 'numeric': float32 [batch, 13], the columns {columns} in this order, NaN where a \
value is missing. Input 'categorical': string [batch, 1], the columns ["region"] in this order (one-hot encoded inside \
the model). Predicts "cultivar": output 'label' is the index of the class in ["class_0", "class_1", "class_2"], \
'probabilities' the probability of each.""")
    assert json.loads(model.metadata_props["onnxtrain.classes"]) == ["class_0", "class_1", "class_2"]


def test_regression_exports_and_beats_predicting_the_mean():
    table = tabular.parse_csv(wine_csv(missing=False))
    prep, model = train_table(table, "proline", "regression", epochs=60)
    num, cat = prep["preprocessing"].raw_inputs(table, prep["val_rows"])
    (pred,) = ort.InferenceSession(ir.to_bytes(model), providers=["CPUExecutionProvider"]).run(
        None, {"numeric": num, "categorical": cat.astype(str)})
    y = prep["y_val"]
    assert np.mean(np.abs(pred - y)) < np.mean(np.abs(y - prep["y_train"].mean()))


@pytest.mark.parametrize("text, message", [
    (b"", "the CSV file is empty"),
    (b" \n\n ,  \n", "the CSV file is empty"),
    (b"a,b\n", "the CSV file has a header row but no data rows"),
    (b"a,b\n\n,\n", "the CSV file has a header row but no data rows"),
    (b"a,b\n1,2\n3\n", "the CSV file: row 3 has 1 fields, but the header has 2"),
    (b"a,b\n\n1,2\n\n3,4,5\n", "the CSV file: row 5 has 3 fields, but the header has 2"),  # rows as in the file
    (b"\xff\xfea\x00,\x00b\x00", "the CSV file is UTF-16 text: save it as CSV UTF-8"),
    (b"a,b\n1,\xe9\n", r"the CSV file is not UTF-8 text \(byte 6, line 2\)"),
    (b"a,b\n1,2\n3," + b"x" * 140_000 + b"\n", r"the CSV file: row 3 cannot be read as CSV \(field larger than"),
    (b"a,b,a\n1,2,3\n", r'the CSV file has two columns named "a" \(columns 1 and 3\): rename one'),
    (b"a, b ,b\n1,2,3\n", r'two columns named "b" \(columns 2 and 3\)'),  # names are compared as shown, stripped
    (b"x,,column 2\n1,2,3\n", r'two columns named "column 2" \(columns 2 and 3\)'),  # an unnamed column's name
    (b",".join(b"c%d" % i for i in range(1001)) + b"\n" + b",".join([b"1"] * 1001) + b"\n",
     "the CSV file has 1,001 columns; at most 1,000 can be used"),
])
def test_bad_csv_files(text, message):
    with pytest.raises(tabular.DataError, match=message):
        tabular.parse_csv(text)


def test_one_class_label_is_refused():
    table = tabular.parse_csv(b"x,y\n1,a\n2,a\n3,a\n4,a\n5,a\n")
    with pytest.raises(tabular.DataError, match="only one class"):
        tabular.prepare(table, "y", "classification")


def test_tabular_session_trains_evaluates_and_exports():
    session = tabular.TabularSession(wine_csv())
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


def ort_outputs(model: bytes, pre, table, rows=None) -> list:
    num, cat = pre.raw_inputs(table, range(len(table.rows)) if rows is None else rows)
    feeds = {}
    if pre.numeric:
        feeds["numeric"] = num
    if pre.categorical:
        feeds["categorical"] = cat.astype(str)
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)


def test_try_it_pages_through_all_rows_with_the_true_labels_and_accuracy():
    session = tabular.TabularSession(wine_csv())
    session.setup("cultivar", "classification", [16])
    while session.epoch < 3:
        session.step(32, 0.01)
    data = wine_csv()
    table = tabular.parse_csv(data)
    pre = session.prep["preprocessing"]
    expected = [pre.classes[i] for i in ort_outputs(session.export_model(), pre, table)[2]]
    pages = [session.predict_csv(data, offset, 100) for offset in (0, 100)]
    assert [len(p["rows"]) for p in pages] == [100, 78] and all(p["total"] == 178 for p in pages)
    assert [p["offset"] for p in pages] == [0, 100] and pages[1]["rows"][0] == table.rows[100]
    assert pages[0]["predictions"] + pages[1]["predictions"] == expected
    assert pages[0]["labels"] + pages[1]["labels"] == [r[-1] for r in table.rows]  # the true label of each row
    assert pages[0]["label"] == "cultivar" and pages[0]["header"] == table.header
    truth = [r[-1] for r in table.rows]
    assert pages[0]["accuracy"] == pages[1]["accuracy"] == np.mean([p == t for p, t in zip(expected, truth)])
    assert pages[0]["mae"] is None and len(pages[1]["confidence"]) == 78 and pages[0]["labelled"] == 178
    assert set(pages[0]) == {"header", "rows", "predictions", "confidence", "total", "offset", "labels", "label",
                             "accuracy", "mae", "labelled"}
    # more training: the next page comes from the new weights, not from the cached predictions
    while session.epoch < 12:
        session.step(32, 0.01)
    again = session.predict_csv(data, 150, 10)
    now = [pre.classes[i] for i in ort_outputs(session.export_model(), pre, table)[2]]
    assert again["predictions"] == now[150:160] and again["accuracy"] > 0.8
    assert again["accuracy"] == np.mean([p == t for p, t in zip(now, truth)])

    # a file without the label column: predictions only; rows whose label is missing are left out of the accuracy
    unlabelled = b"\n".join(line.rsplit(b",", 1)[0] for line in data.splitlines()[:21])
    result = session.predict_csv(unlabelled)
    assert result["total"] == 20 and result["labels"] is None and result["accuracy"] is None
    assert result["predictions"] == now[:20]
    gaps = b"\n".join(line.rsplit(b",", 1)[0] + (b"," if i in (3, 4) else line[line.rindex(b","):])
                      for i, line in enumerate(data.splitlines()))
    result = session.predict_csv(gaps, 0, 5)
    assert result["labels"] == truth[:2] + ["", ""] + truth[4:5] and result["labelled"] == 176
    assert result["accuracy"] == np.mean([p == t for i, (p, t) in enumerate(zip(now, truth)) if i not in (2, 3)])

    with pytest.raises(tabular.DataError, match=r'the CSV file to predict lacks the columns \["alcohol", '):
        session.predict_csv(b"x,y\n1,2\n")
    with pytest.raises(tabular.DataError, match="row offset 178 is past the end: the file has 178 data rows"):
        session.predict_csv(data, 178)
    for offset, limit, message in [(-1, 100, 'the offset is "-1"; it must be a whole number of 0 or more'),
                                   (0.5, 100, 'the offset is "0.5"'),
                                   (0, 0, 'the limit is "0"; it must be a whole number from 1 to 1000'),
                                   (0, 1001, 'the limit is "1001"')]:
        with pytest.raises(tabular.DataError, match=message):
            session.predict_csv(data, offset, limit)


def test_try_it_for_regression_gives_the_mean_absolute_error_over_all_rows():
    data = wine_csv(missing=False)
    session = tabular.TabularSession(data)
    session.setup("proline", "regression", [8])
    while session.epoch < 2:
        session.step(32, 0.01)
    table = tabular.parse_csv(data)
    model, pre = session.export_model(), session.prep["preprocessing"]
    pred = ort_outputs(model, pre, table)[0].ravel()
    from onnxtrain.runtime import Session
    num, cat = pre.raw_inputs(table, range(len(table.rows)))
    ours = Session(ir.load(model)).run({"numeric": num, "categorical": cat})[0].ravel()
    np.testing.assert_allclose(ours, pred, rtol=1e-5, atol=1e-6)  # float32 sums: an ulp apart from onnxruntime
    truth = np.array([float(r[table.header.index("proline")]) for r in table.rows])
    result = session.predict_csv(data, 170)
    assert result["total"] == 178 and len(result["rows"]) == 8 and result["confidence"] is None
    assert result["accuracy"] is None and result["label"] == "proline"
    # the error over all rows as the downloaded model predicts them, to float64 rounding
    np.testing.assert_allclose(result["mae"], np.mean(np.abs(ours.astype(np.float64) - truth)), rtol=1e-12)
    np.testing.assert_allclose(result["predictions"], pred[170:], rtol=1e-6)
    assert result["labels"] == [r[table.header.index("proline")] for r in table.rows[170:]]
    lines = data.splitlines()
    j = table.header.index("proline")
    cells = lines[5].split(b",")
    cells[j] = b"lots"
    with pytest.raises(tabular.DataError, match='row 6, column "proline": "lots" is not a number, but the model '
                                                'predicts numbers for this column'):
        session.predict_csv(b"\n".join(lines[:5] + [b",".join(cells)] + lines[6:]))


def test_a_word_in_a_numeric_column_of_a_try_it_file_names_row_column_and_value():
    session = tabular.TabularSession(wine_csv())
    session.setup("cultivar", "classification", [8])
    lines = wine_csv().splitlines()
    cells = lines[7].split(b",")
    cells[1] = b"twelve"
    text = b"\n".join(lines[:3] + [b""] + lines[3:7] + [b",".join(cells)] + lines[8:])  # with a blank line: row 9
    with pytest.raises(tabular.DataError, match='^row 9, column "malic_acid": "twelve" is not a number, but the model '
                                                'was trained on numbers in this column$'):
        session.predict_csv(text)
    with pytest.raises(tabular.DataError, match="the CSV file to predict has two columns named"):
        session.predict_csv(b"a,a\n1,2\n")


def test_try_it_caps_the_rows(monkeypatch):
    session = tabular.TabularSession(b"x,y\n" + b"".join(b"%d,%s\n" % (i, b"ab"[i % 2:i % 2 + 1]) for i in range(20)))
    session.setup("y", "classification", [4])
    monkeypatch.setattr(tabular, "MAX_PREDICT_ROWS", 10)
    with pytest.raises(tabular.DataError, match="the CSV file to predict has 11 rows; at most 10 are predicted at "
                                                "once: split the file"):
        session.predict_csv(b"x\n" + b"1\n" * 11)
    assert session.predict_csv(b"x\n" + b"1\n" * 10)["total"] == 10
    with pytest.raises(tabular.DataError, match="set up the model first"):
        tabular.TabularSession(b"x,y\n1,2\n").predict_csv(b"x\n1\n")


def test_a_csv_of_numbers_feeds_a_models_features_and_labels_like_the_same_npz():
    import ort_cases as oc
    from onnxtrain.web.sessions import Registry
    f = oc.files("mlp_ce_adamw")
    registry = Registry()
    handle = registry.call("create", None, [f[k].read_bytes() for k in ("checkpoint", "training", "eval",
                                                                           "optimizer")])["handle"]
    rng = np.random.default_rng(0)
    x = np.round(rng.standard_normal((40, 20)), 3).astype(np.float32)
    y = np.argmax(x[:, :5], axis=1)
    header = [f"x{i}" for i in range(10)] + ["labels"] + [f"x{i}" for i in range(10, 20)]
    rows = [[f"{v:.3f}" for v in r[:10]] + [str(label)] + [f"{v:.3f}" for v in r[10:]] for r, label in zip(x.tolist(), y)]
    text = "\n".join(",".join(r) for r in [header] + rows).encode()
    types = registry.sessions[handle].train_inputs
    inputs = train_csv.csv_inputs(text, types)
    np.testing.assert_array_equal(inputs["input"], x)
    assert inputs["labels"].dtype == np.int64 and inputs["input"].dtype == np.float32
    buffer = io.BytesIO()
    np.savez(buffer, input=x, labels=y.astype(np.int64))
    from_csv = registry.call("read_dataset", handle, [text, "data.csv"])
    assert from_csv == registry.call("read_dataset", handle, [buffer.getvalue(), "data.npz"])
    assert from_csv["dataset"]["input"]["data"] == x.tobytes() and from_csv["rows"] == 40

    bad = {"text": b"a,labels\nx,1\n", "gap": b"a,labels\n,1\n1,0\n", "narrow": b"a,b,labels\n1,2,0\n",
           "fraction": ("\n".join([",".join(header)] + [",".join(["0.5"] * 21)])).encode()}
    bad["inf"] = b"a,labels\n1,0\n\n-inf,1\n"
    bad["overflow"] = b"a,labels\n1,0\n1e39,1\n"
    bad["one column"] = b"labels\n1\n"
    for name, message in [("text", 'column "a" of the data file is not numeric'),
                          ("gap", 'column "a" of the data file has 1 missing values'),
                          ("inf", r'column "a" of the data file has 1 non-finite values \(first: row 4, "-inf"\)'),
                          ("overflow", r'column "a" of the data file has 1 non-finite values \(first: row 3, "1e39"\)'),
                          ("one column", r'the data file has one column \("labels"\)'),
                          ("narrow", r"input 'input' takes \[20\] values per row, but the data file has 2 feature"),
                          ("fraction", 'the label column "labels" must hold whole numbers')]:
        with pytest.raises(tabular.DataError, match=message):
            train_csv.csv_inputs(bad[name], types)
    with pytest.raises(tabular.DataError, match="fits a model whose training inputs are features and labels"):
        train_csv.csv_inputs(text, {"a": types["input"], "b": types["input"], "labels": types["labels"]})


def small_csv(rows=40, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    lines = ["a,b,kind,y"] + [f"{rng.normal():.3f},{rng.normal():.3f},{'pq'[i % 2]},{'xyz'[i % 3]}"
                              for i in range(rows)]
    return "\n".join(lines).encode()


@pytest.mark.parametrize("hidden, message", [
    ([0], 'hidden layer 1 has size "0"; a layer size is a whole number from 1 to 1,000,000'),
    ([8, -3], 'hidden layer 2 has size "-3"'),
    ([float("nan")], 'hidden layer 1 has size "nan"'),
    ([float("inf")], 'hidden layer 1 has size "inf"'),
    ([2.5], 'hidden layer 1 has size "2.5"'),
    ([10**7], 'hidden layer 1 has size "10000000"'),
    (["many"], 'hidden layer 1 has size "many"'),
    ([True], 'hidden layer 1 has size "True"'),
    ([None], 'hidden layer 1 has size "None"'),
    ("8, x", 'hidden layer 2 has size "x"'),
    ([4] * 17, "17 hidden layers were asked for; at most 16 are allowed"),
    ([5000, 5000], r"hidden layers \[5000, 5000\] with 4 features give 25,045,003 parameters; at most 20,000,000"),
])
def test_bad_hidden_layer_sizes_are_refused_and_change_nothing(hidden, message):
    session = tabular.TabularSession(small_csv())
    first = session.setup("y", "classification", [4])
    with pytest.raises(tabular.DataError, match=message):
        session.setup("y", "classification", hidden)
    assert session.settings["hidden"] == [4]
    assert session.training.module.get_parameters_size(True) == first["parameters"]
    assert session.step(8, 0.01)["examples"] == 8


def test_hidden_sizes_as_text_and_whole_floats():
    session = tabular.TabularSession(small_csv())
    # 4 features: a, b and the one-hot kind (p, q); 3 classes
    assert session.setup("y", "classification", "8, 4")["parameters"] == (4 + 1) * 8 + 9 * 4 + 5 * 3
    assert session.setup("y", "classification", [8.0])["parameters"] == 5 * 8 + 9 * 3
    assert session.setup("y", "classification", [])["parameters"] == 5 * 3  # no hidden layer: a linear model


@pytest.mark.parametrize("task", ["foo", "", "Classification", None, 1])
def test_an_unknown_task_is_refused(task):
    session = tabular.TabularSession(small_csv())
    with pytest.raises(tabular.DataError,
                       match=r'the task is ("\S*"|not given); it must be "classification" or "regression"'):
        session.setup("y", task, [4])
    assert session.training is None
    with pytest.raises(tabular.DataError, match="set up the model first"):
        session.step(8, 0.01)


@pytest.mark.parametrize("validation", [0, 1, -0.2, 1.5, float("nan"), "a fifth", None, True])
def test_a_bad_validation_share_is_refused(validation):
    with pytest.raises(tabular.DataError, match=f'^the validation share is "{validation}"; it must be above 0 and below 1'):
        tabular.prepare(tabular.parse_csv(small_csv()), "y", "classification", validation)


def test_label_column_problems():
    table = tabular.parse_csv(small_csv())
    with pytest.raises(tabular.DataError, match='there is no column named "nope"'):
        tabular.prepare(table, "nope", "classification")
    with pytest.raises(tabular.DataError, match='there is no column named "nope"'):
        tabular.detect_task(table, "nope")
    with pytest.raises(tabular.DataError, match=r'the label column "kind" has text values \(row 2: "p"\), so it '
                                                r'cannot be a regression target'):
        tabular.prepare(table, "kind", "regression")
    with pytest.raises(tabular.DataError, match='the label column "y" has only one class \\("a"\\); a classifier '
                                                'needs at least two'):
        tabular.prepare(tabular.parse_csv(b"x,y\n1,a\n2,a\n3,a\n4,a\n5,\n"), "y", "classification")
    with pytest.raises(tabular.DataError, match='only 0 rows have a value in the label column "y"; at least 4'):
        tabular.prepare(tabular.parse_csv(b"x,y\n1,\n2,NA\n3,inf\n"), "y", "regression")
    with pytest.raises(tabular.DataError, match="there are no feature columns besides the label"):
        tabular.prepare(tabular.parse_csv(b"y\na\nb\na\nb\n"), "y", "classification")


def test_non_finite_cells_are_missing_and_reported():
    text = b"\n".join([b"a,b,c,y", b"1,inf,x,1.5", b"2,-inf,y,2.5", b"3,1e39,x,inf", b"4,-1E+40,y,3.5", b"nan,5,x,4.5",
                       b"6,Infinity,y,5.5", b"7,3.4e38,x,6.5", b",8,y,7.5", b"9,9,x,8.5", b"10,10,y,9.5"])
    table = tabular.parse_csv(text)
    columns = {c["name"]: c for c in tabular.describe(table)["columns"]}
    assert {k: (c["kind"], c["missing"], c["nonfinite"]) for k, c in columns.items()} == {
        "a": ("numeric", 2, 0), "b": ("numeric", 0, 5), "c": ("categorical", 0, 0), "y": ("numeric", 0, 1)}
    assert set(columns["a"]) == {"name", "kind", "missing", "distinct", "nonfinite"}
    assert tabular.detect_task(table, "y") == "regression"
    assert tabular.detect_task(table, "b") == "classification"  # its finite values are few whole numbers
    assert tabular.detect_task(tabular.parse_csv(b"x,y\n1,inf\n2,-inf\n"), "y") == "regression"
    prep = tabular.prepare(table, "y", "regression", validation=0.25)
    assert prep["dropped_rows"] == 1 and prep["nonfinite_cells"] == 4  # the row whose label is 1e39 is dropped
    pre = prep["preprocessing"]
    num, _ = pre.raw_inputs(table, range(len(table.rows)))
    b = num[:, pre.numeric.index("b")]
    assert np.isnan(b[[0, 1, 2, 3, 5]]).all() and b[6] == np.float32(3.4e38) and b[7] == 8
    assert np.isfinite(prep["x_train"]).all() and np.isfinite(prep["x_val"]).all()
    assert np.isfinite(prep["y_train"]).all() and 2 not in prep["train_rows"] + prep["val_rows"]
    fitted = [float(b[r]) for r in prep["train_rows"] if np.isfinite(b[r])]  # the mean of the finite ones
    np.testing.assert_allclose(pre.mean[pre.numeric.index("b")], np.mean(fitted), rtol=1e-6)
    session = tabular.TabularSession(text)
    setup = session.setup("y", "regression", [4], validation=0.25)
    assert setup["nonfinite_cells"] == 4 and setup["missing_cells"] == 6  # 2 in a, the 4 in b
    assert all(np.isfinite(session.step(4, 0.01)["loss"]) for _ in range(5))
    # the exported model imputes them as it does a missing value
    out = ort_outputs(session.export_model(), session.prep["preprocessing"], table)[0]
    assert np.isfinite(out).all()


def test_classification_splits_are_stratified_and_seeded():
    # 30 of "big", 11 of "mid", 3 of "few", 1 of "one"
    counts = {"big": 30, "mid": 11, "few": 3, "one": 1}
    labels = [c for c, n in counts.items() for _ in range(n)]
    rng = np.random.default_rng(3)
    rng.shuffle(labels)
    text = ("x,y\n" + "".join(f"{i},{c}\n" for i, c in enumerate(labels))).encode()
    table = tabular.parse_csv(text)
    prep = tabular.prepare(table, "y", "classification", 0.2, seed=5)
    split = lambda rows: {c: sum(labels[r] == c for r in rows) for c in counts}  # noqa: E731
    assert split(prep["val_rows"]) == {"big": 6, "mid": 2, "few": 1, "one": 0}  # round(n × 0.2) per class
    assert split(prep["train_rows"]) == {"big": 24, "mid": 9, "few": 2, "one": 1}
    assert prep["preprocessing"].classes == ["big", "few", "mid", "one"]
    again = tabular.prepare(table, "y", "classification", 0.2, seed=5)
    assert again["val_rows"] == prep["val_rows"] and again["train_rows"] == prep["train_rows"]
    other = tabular.prepare(table, "y", "classification", 0.2, seed=6)
    assert other["val_rows"] != prep["val_rows"] and split(other["val_rows"]) == split(prep["val_rows"])
    # every class rounds to no validation row: one row of the largest class goes
    tiny = tabular.parse_csv(b"x,y\n1,a\n2,a\n3,b\n4,b\n5,a\n")
    prep = tabular.prepare(tiny, "y", "classification", 0.2)
    assert [tiny.rows[r][1] for r in prep["val_rows"]] == ["a"] and len(prep["train_rows"]) == 4
    with pytest.raises(tabular.DataError, match="each class has a single example"):
        stratified_split([0, 1, 2, 3], 0.2, 0)


def test_oversized_files_are_refused_with_the_cap(monkeypatch):
    with pytest.raises(tabular.DataError, match=r"the CSV file has 67,108,865 bytes; at most 67,108,864 \(64 MiB\)"):
        tabular.parse_csv(b"a" * (64 * 2**20 + 1))
    monkeypatch.setattr(train_csv, "MAX_CELLS", 100)
    with pytest.raises(tabular.DataError, match=r"data.csv has more than 100 cells \(rows × columns\)"):
        tabular.parse_csv(b"a,b\n" + b"1,2\n" * 50, "data.csv")
    assert len(tabular.parse_csv(b"a,b\n" + b"1,2\n" * 49).rows) == 49


def test_a_byte_order_mark_and_semicolons():
    table = tabular.parse_csv("\ufeffa;b\n1,5;2\n".encode())
    assert table.header == ["a", "b"] and table.rows == [["1,5", "2"]]


def signature_of(text: bytes, label: str, task: str) -> str:
    session = tabular.TabularSession(text)
    session.setup(label, task, [4])
    return signature(session.export_model())


def test_the_signature_is_right_for_every_task_and_any_names():
    odd = ['a;b', 'c, d', 'say "hi"', 'two\nlines', "Classes: x"]
    rng = np.random.default_rng(0)
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(odd + ["t,ext", "the; label"])
    for i in range(30):
        w.writerow([f"{v:.3f}" for v in rng.normal(size=5)] + [["u", "v"][i % 2], ["k;1", 'k"2'][i % 3 == 0]])
    text = out.getvalue().encode()
    line = signature_of(text, "the; label", "classification")
    doc = line[line.index("Input 'numeric'"):]
    decoder = json.JSONDecoder()
    after = lambda marker: decoder.raw_decode(doc, doc.index(marker) + len(marker))[0]  # noqa: E731
    assert after("Input 'numeric': float32 [batch, 5], the columns ") == odd
    assert after("Input 'categorical': string [batch, 1], the columns ") == ["t,ext"]
    assert after("Predicts ") == "the; label"
    assert after("output 'label' is the index of the class in ") == ["k\"2", "k;1"]
    assert "\n" not in line

    # regression: no classes, no empty lists, the label named
    reg = signature_of(wine_csv(missing=False), "proline", "regression")
    assert reg.endswith("""in this order (one-hot encoded inside the model). Predicts "proline" (regression): output \
'output' [batch, 1].""") and "Classes" not in reg and "[]" not in reg and "class" not in reg
    assert "'probabilities'" not in reg and "label" not in reg.split("Predicts")[0]
    # numbers only: no categorical input mentioned
    only_numbers = signature_of(b"a,b,y\n" + b"".join(b"%d,%d,%d.5\n" % (i, i * i % 7, i) for i in range(20)), "y",
                                "regression")
    assert only_numbers == ("Inputs: numeric float [batch, 2]. Outputs: output float [batch, 1]. Input 'numeric': "
                            'float32 [batch, 2], the columns ["a", "b"] in this order, NaN where a value is missing. '
                            "Predicts \"y\" (regression): output 'output' [batch, 1].")
    # text only: no numeric input mentioned
    only_text = signature_of(b"c,y\n" + b"".join(b"%s,%s\n" % (b"pq"[i % 2:i % 2 + 1], b"ab"[i % 2:i % 2 + 1])
                                                 for i in range(20)), "y", "classification")
    assert only_text.endswith("Input 'categorical': string [batch, 1], the columns [\"c\"] in this order (one-hot "
                              "encoded inside the model). Predicts \"y\": output 'label' is the index of the class in "
                              "[\"a\", \"b\"], 'probabilities' the probability of each.")
    assert "numeric" not in only_text


def test_extreme_but_finite_numbers():
    # a spread of denormals is a constant column for float32: centred, not divided by ~0
    tiny = tabular.prepare(tabular.parse_csv(b"a,y\n0,p\n1e-45,q\n0,p\n1e-45,q\n0,p\n"), "y", "classification")
    assert tiny["preprocessing"].std == [1.0] and np.isfinite(tiny["x_train"]).all()
    wide = b"a,y\n-3e38,p\n" + b"3e38,q\n3e38,p\n" * 3
    with pytest.raises(tabular.DataError, match='^column "a" spans -3e\\+38 to 3e\\+38, too wide to standardise in '
                                                'float32: rescale the column$'):
        tabular.prepare(tabular.parse_csv(wide), "y", "classification")
    large = b"a,y\n1,2\n2,3\n3,2e15\n4,5\n5,6\n"
    with pytest.raises(tabular.DataError, match=r'^the label column "y" has values as large as "2e15" \(row 4\); a '
                                                r'squared error overflows float32 beyond ±1e\+15: rescale the column'):
        tabular.prepare(tabular.parse_csv(large), "y", "regression")
    # most rows to validation still leaves one to train on
    prep = tabular.prepare(tabular.parse_csv(b"a,y\n1,1.5\n2,2.5\n3,3.5\n4,4.5\n"), "y", "regression", 0.9)
    assert len(prep["train_rows"]) == 1 and len(prep["val_rows"]) == 3
