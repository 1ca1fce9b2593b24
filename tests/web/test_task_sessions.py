"""The app's tasks as sessions of the library's registry, in CPython: they train as onnxtrain.tasks does with a
Trainer, carry each epoch's checkpoint, resume exactly, and refuse what a task has not got."""
import io
import zipfile

import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.tasks import tabular as tabular_task
from onnxtrain.web.sessions import Registry
from tasks.test_tabular import wine_csv

OPTIONS = {"epochs": 3, "batchSize": 32, "learningRate": 0.01, "schedule": "linear", "warmup": 0.1,
           "keepBest": True, "patience": 10}


def train(registry, handle, options, budget=5):
    begin = registry.call("train_begin", handle, [options])
    records = []
    while True:
        out = registry.call("train_continue", handle, [budget])
        records += out["records"]
        if out["done"]:
            return begin, records, registry.call("train_end", handle, [True])


def tabular_handle(registry, data):
    handle = registry.call("create_task", None, ["tabular", [data, "wine.csv"]])["handle"]
    registry.call("setup", handle, ["cultivar", "classification", [16]])
    return handle



def reference_losses(reference, **options) -> list:
    """The losses of the task ``reference`` trained in CPython by its Trainer, evaluating after each epoch."""
    expected = []
    reference.training.trainer.configure(**options, keep_best=False, evaluate=lambda _t: reference.evaluate())
    reference.training.trainer.run(on_progress=expected.append)
    return [r["loss"] for r in expected]

def test_a_tabular_task_trains_in_the_registry_as_the_cpython_task_does():
    data = wine_csv()
    registry = Registry()
    handle = tabular_handle(registry, data)
    assert registry.call("describe", handle, [])["rows"] == 178
    begin, records, summary = train(registry, handle, {**OPTIONS, "checkpoints": True})
    assert begin["epoch"] == 0 and begin["epochs"] == 3 and len(records) == 3 * begin["stepsPerEpoch"]

    reference = tabular_task.TabularSession(data, "wine.csv")
    reference.setup("cultivar", "classification", [16])
    trainer = reference.training.trainer
    trainer.configure(epochs=3, batch_size=32, learning_rate=0.01, schedule="linear", warmup=0.1, keep_best=True,
                      patience=10, evaluate=lambda _t: reference.evaluate())
    expected = []
    trainer.run(on_progress=expected.append)
    assert [r["loss"] for r in records] == [r["loss"] for r in expected]
    assert [r["learningRate"] for r in records] == [r["learning_rate"] for r in expected]
    ends = [r for r in records if r["epochDone"]]
    assert [r["metrics"]["accuracy"] for r in ends] == [r["metrics"]["accuracy"] for r in expected if r["epoch_done"]]
    assert all(isinstance(r["checkpoint"], bytes) for r in ends)
    assert [("bestCheckpoint" in r) for r in ends] == [r["best"]["improved"] for r in ends]
    trainer.use_best()
    assert summary["metrics"] == reference.evaluate() and summary["best"]["restored"]
    assert registry.call("export_model", handle, []) == reference.export_model()
    state = api.CheckpointState.load_checkpoint(summary["checkpoint"])
    assert state.properties["epoch"] == 3


def test_a_task_resumes_from_an_epochs_checkpoint_exactly():
    data = wine_csv()
    registry = Registry()
    a = tabular_handle(registry, data)
    _, records, _ = train(registry, a, {**OPTIONS, "checkpoints": True, "keepBest": False})
    first = [r for r in records if r["epochDone"]][0]
    b = tabular_handle(registry, data)
    assert registry.call("restore", b, [first["checkpoint"]]) == 1
    _, rest, _ = train(registry, b, {**OPTIONS, "keepBest": False})
    assert [r["loss"] for r in rest] == [r["loss"] for r in records[len(records) // 3:]]
    assert registry.call("checkpoint", b, []) == registry.call("checkpoint", a, [])


def test_a_training_task_refuses_other_calls_and_a_task_refuses_what_it_has_not():
    registry = Registry()
    handle = tabular_handle(registry, wine_csv())
    registry.call("train_begin", handle, [{"epochs": 1}])
    with pytest.raises(RuntimeError, match=r"this session is training: exportModel\(\) has to wait"):
        registry.call("export_model", handle, [])
    registry.call("train_end", handle, [False])
    with pytest.raises(ValueError, match="a tabular task has no method 'predict'"):
        registry.call("predict", handle, [b""])
    with pytest.raises(ValueError, match="a task's train has no option 'validation'"):
        registry.call("train_begin", handle, [{"validation": 0.5}])
    with pytest.raises(ValueError, match="unknown kind of task 'video'"):
        registry.call("create_task", None, ["video", []])
    fresh = registry.call("create_task", None, ["tabular", [wine_csv(), "wine.csv"]])["handle"]
    with pytest.raises(ValueError, match="set the task up first"):
        registry.call("train_begin", fresh, [{}])
    assert registry.call("train_begin", handle, [{"epochs": 2}])["epoch"] == 0  # the refused calls changed nothing


def test_handwriting_fine_tunes_through_the_registry():
    from onnxtrain.tasks.handwriting import pretrain
    from sklearn.datasets import load_digits
    digits = load_digits()
    model = pretrain(digits.data[:300].astype(np.float32) / 16, digits.target[:300], epochs=2)
    registry = Registry()
    handle = registry.call("create_task", None, ["handwriting", [model]])["handle"]
    assert registry.call("classes", handle, []) == [str(i) for i in range(10)]
    registry.call("add_example", handle, [digits.data[400].tolist(), 3])
    registry.call("start_fine_tune", handle, [True])
    _, records, summary = train(registry, handle, {"epochs": 2, "batchSize": 32, "learningRate": 0.01,
                                                   "keepBest": False})
    assert summary["epochs"] == 2 and "metrics" not in summary and records[-1]["done"]
    assert registry.call("finish_fine_tune", handle, [])["examples"] == 1
    snapshot = registry.call("snapshot", handle, [])
    again = registry.call("create_task", None, ["handwriting_snapshot", [snapshot]])["handle"]
    assert registry.call("export_model", again, []) == registry.call("export_model", handle, [])


def test_read_dataset_gives_a_sessions_training_data_from_npz_or_csv():
    f = oc.files("mlp_ce_adamw")
    registry = Registry()
    handle = registry.call("create", None, [f["checkpoint"].read_bytes(), f["training"].read_bytes(),
                                            f["eval"].read_bytes(), f["optimizer"].read_bytes()])["handle"]
    x, y = oc.batches("mlp_ce_adamw", 2)[0]
    buffer = io.BytesIO()
    np.savez(buffer, input=x, labels=y)
    out = registry.call("read_dataset", handle, [buffer.getvalue(), "data.npz"])
    assert out["rows"] == 8 and out["inputs"] == {"input": [[8, 20], "float32"], "labels": [[8], "int64"]}
    assert out["dataset"]["input"]["data"] == x.tobytes()
    csv = "\n".join([",".join([f"f{i}" for i in range(20)] + ["labels"])]
                    + [",".join([*map(repr, map(float, row)), str(label)]) for row, label in zip(x, y)]).encode()
    from_csv = registry.call("read_dataset", handle, [csv, "data.csv"])
    assert from_csv["dataset"] == out["dataset"]
    buffer = io.BytesIO()
    np.savez(buffer, input=x[:, :5], labels=y)
    with pytest.raises(ValueError, match=r"input 'input' of the data file must have dims \['\?', 20\], got \[8, 5\]"):
        registry.call("read_dataset", handle, [buffer.getvalue(), "data.npz"])


def test_describe_model_names_inputs_parameters_and_the_signature():
    model = oc.CASES["mlp_ce_adamw"].forward().SerializeToString()
    info = Registry().call("describe_model", None, [model])
    assert [i["name"] for i in info["inputs"]] == ["input"] and info["opsWithoutGradient"] == []
    assert info["signature"] == "Inputs: input float [batch, 20]. Outputs: output float [batch, 5]."


def drain(registry, handle) -> list:
    """The records of train_continue calls of one step each, until the run is done."""
    records = []
    while True:
        out = registry.call("train_continue", handle, [0])
        records += out["records"]
        if out["done"]:
            return records


def test_a_paused_session_run_goes_on_with_resume_as_if_never_paused():
    f = oc.files("mlp_ce_adamw")
    x, y = [np.concatenate(a) for a in zip(*oc.batches("mlp_ce_adamw", 3))]
    data = {"input": x, "labels": y}
    options = {"epochs": 2, "batchSize": 5, "learningRate": 0.01, "schedule": "linear", "validation": 0.25}

    def session(registry):
        return registry.call("create", None, [f["checkpoint"].read_bytes(), f["training"].read_bytes(),
                                              f["eval"].read_bytes(), f["optimizer"].read_bytes()])["handle"]
    registry = Registry()
    whole = session(registry)
    registry.call("train_begin", whole, [data, options])
    straight = drain(registry, whole)
    paused = session(registry)
    registry.call("train_begin", paused, [data, options])
    first = registry.call("train_continue", paused, [0])["records"]  # one step, then the page aborts
    registry.call("train_end", paused, [False])
    with pytest.raises(ValueError, match="a resumed run keeps its data: the option 'seed' cannot change"):
        registry.call("train_begin", paused, [data, {"resume": True, "seed": 3}])
    with pytest.raises(ValueError, match="this dataset of 10 rows is not the one of 24 rows"):
        registry.call("train_begin", paused, [{k: v[:10] for k, v in data.items()}, {"resume": True}])
    begin = registry.call("train_begin", paused, [data, {"resume": True, "epochs": 2}])
    assert begin["epoch"] == 0 and begin["validationRows"] == 6
    rest = drain(registry, paused)
    assert [r["loss"] for r in first + rest] == [r["loss"] for r in straight]
    assert [r["learningRate"] for r in first + rest] == [r["learningRate"] for r in straight]
    fresh = session(registry)
    with pytest.raises(ValueError, match="there is no run to resume"):
        registry.call("train_begin", fresh, [data, {"resume": True}])


@pytest.mark.slow
@pytest.mark.site
def test_personalize_trains_through_the_registry_as_the_cpython_task_does():
    """The "personalize" kind: the page's RGBA bytes in, the same losses and export as tasks.personalize with a
    Trainer, camelCase results, a snapshot kind, and the methods it has not refused."""
    from onnxtrain.tasks.personalize import PersonalizeSession
    from tasks.test_personalize import BACKBONE, crops, photos, rgba
    if not BACKBONE.exists():
        pytest.fail(f"{BACKBONE} is missing: build the site first (`python3 build.py site`)")
    backbone = BACKBONE.read_bytes()
    images = {name: rgba(crops(photo, 3, "left", k)) for k, (name, photo) in enumerate(list(photos().items())[:2])}
    registry = Registry()
    handle = registry.call("create_task", None, ["personalize", [backbone]])["handle"]
    reference = PersonalizeSession(backbone)
    for k, (name, x) in enumerate(images.items()):
        assert registry.call("add_class", handle, [name]) == k == reference.add_class(name)
        n, h, w = x.shape[:3]
        assert registry.call("add_samples", handle, [x.tobytes(), [n, h, w], k]) == reference.add_samples(x, k)
    with pytest.raises(ValueError, match=r"the pixel buffer has 10 bytes, but 1 RGBA image of 4×4 px take 64"):
        registry.call("add_samples", handle, [bytes(10), [1, 4, 4], 0])
    assert registry.call("counts", handle, []) == [3, 3]
    setup = registry.call("setup", handle, [False, 0.34, 1, "AdamW"])
    assert setup["trainPerClass"] == [2, 2] and setup["validationPerClass"] == [1, 1] and not setup["fineTune"]
    reference.setup(False, 0.34, 1)
    _, records, summary = train(registry, handle, {"epochs": 4, "batchSize": 2, "learningRate": 0.003,
                                                   "keepBest": False})
    assert [r["loss"] for r in records] == reference_losses(reference, epochs=4, batch_size=2, learning_rate=0.003)
    assert summary["metrics"] == reference.evaluate() and summary["metrics"]["on"] == "validation"
    assert registry.call("export_model", handle, []) == reference.export_model()
    x = images["china"][:1]
    prediction = registry.call("predict", handle, [x.tobytes(), [1, *x.shape[1:3]]])
    assert prediction == [{"probabilities": p["probabilities"], "label": p["label"], "className": p["class_name"]}
                          for p in reference.predict(x)]
    snapshot = registry.call("snapshot", handle, [])
    again = registry.call("create_task", None, ["personalize_snapshot", [backbone, snapshot]])["handle"]
    assert registry.call("checkpoint", again, []) == registry.call("checkpoint", handle, [])
    assert registry.call("sample_list", again, []) == [[i, int(i > 3)] for i in range(1, 7)]
    with pytest.raises(ValueError, match="a personalize task has no method 'start_fine_tune'"):
        registry.call("start_fine_tune", handle, [])


def test_task_results_have_camel_case_keys_and_keep_the_users_names():
    """What a task gives JavaScript has camelCase keys (as onnxtrain.d.ts declares them); a column or class name
    that is a key or a value stays as the user wrote it."""
    rng = np.random.default_rng(0)
    rows = [f"{a:.3f},{'snake_case' if a > 0 else 'other_kind'},{'red_wine' if a + b > 0 else 'white_wine'}"
            for a, b in rng.normal(size=(60, 2))]
    csv = "\n".join(["alcohol_level,grape_kind,wine_class", *rows]).encode()
    registry = Registry()
    handle = registry.call("create_task", None, ["tabular", [csv, "wines.csv"]])["handle"]
    info = registry.call("describe", handle, [])
    assert sorted(info) == ["columns", "preview", "rows", "suggestedLabel", "task"]
    assert info["suggestedLabel"] == "wine_class" and [c["name"] for c in info["columns"]][:2] == [
        "alcohol_level", "grape_kind"]
    setup = registry.call("setup", handle, ["wine_class", "classification", [4]])
    assert sorted(setup) == ["categorical", "classes", "droppedRows", "features", "missingCells", "nonfiniteCells",
                             "numeric", "parameters", "task", "trainRows", "validationRows"]
    assert setup["trainRows"] + setup["validationRows"] == 60 and setup["droppedRows"] == 0
    assert setup["classes"] == ["red_wine", "white_wine"] and setup["numeric"] == ["alcohol_level"]
    assert setup["categorical"] == ["grape_kind"]
    tried = registry.call("predict_csv", handle, [csv, 0, 5])
    assert tried["header"] == ["alcohol_level", "grape_kind", "wine_class"] and tried["label"] == "wine_class"

    pixels = rng.integers(0, 256, (6, 8, 8, 4), dtype=np.uint8)
    images = registry.call("create_task", None, ["images", [pixels.tobytes(), [6, 8], [0, 1] * 3,
                                                            ["cat_photos", "dog_photos"], 0.34]])["handle"]
    info = registry.call("info", images, [])
    assert sorted(info) == ["classes", "images", "parameters", "size", "train", "trainPerClass", "validation",
                            "validationPerClass"]
    assert info["classes"] == ["cat_photos", "dog_photos"] and info["trainPerClass"] == [2, 2]


def test_handwriting_counts_keep_the_class_names_as_keys():
    from onnxtrain.tasks.handwriting import pretrain
    from sklearn.datasets import load_digits
    digits = load_digits()
    model = pretrain(digits.data[:100].astype(np.float32) / 16, digits.target[:100], epochs=1)
    registry = Registry()
    handle = registry.call("create_task", None, ["handwriting", [model]])["handle"]
    assert registry.call("add_class", handle, ["smiley_face"]) == 10
    counts = registry.call("add_example", handle, [digits.data[0].tolist(), 10])
    assert counts == {**{str(i): 0 for i in range(10)}, "smiley_face": 1}
    registry.call("start_fine_tune", handle, [True])
    train(registry, handle, {"epochs": 1})
    assert registry.call("finish_fine_tune", handle, []) == {"examples": 1}


def zip_files(data: bytes) -> dict:
    """A .zip's files by name (their bytes; the times they carry differ from one export to the next)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_text_trains_through_the_registry_as_the_cpython_task_does():
    """The "text" kind: the page's lists of strings and CSV bytes in, the same ids, losses, predictions and .zip as
    tasks.text with a Trainer, camelCase results, a snapshot kind, and the methods it has not refused."""
    from onnxtrain.tasks.text import TextSession
    from text import minilm
    encoder, tokenizer = minilm.files()
    texts = {"food": ["Simmer the onions in butter.", "Knead the dough, then let it rise.", "Season the soup."],
             "sport": ["The striker scored twice.", "She won the marathon.", "Our team lost the final."]}
    registry = Registry()
    handle = registry.call("create_task", None, ["text", [encoder, tokenizer]])["handle"]
    reference = TextSession(encoder, tokenizer)
    info = registry.call("info", handle, [])
    assert info == {"hidden": 384, "maxLength": 128, "encoderBytes": len(encoder),
                    "encoderSha256": reference.info()["encoder_sha256"], "executionProvider": "wasm"}
    for k, (name, batch) in enumerate(texts.items()):
        assert registry.call("add_class", handle, [name]) == k == reference.add_class(name)
        assert registry.call("add_texts", handle, [batch, k]) == reference.add_texts(batch, k)
    rows = b"text,topic\nFog lingers in the valleys.,weather\nBake the cake for an hour.,food\n"
    assert registry.call("add_csv", handle, [rows, "text", "topic"]) == reference.add_csv(rows, "text", "topic") \
        == {"added": 2, "classes": ["food", "sport", "weather"], "truncated": 0}
    with pytest.raises(ValueError, match="body"):
        registry.call("add_csv", handle, [rows, "body", "topic"])
    assert registry.call("counts", handle, []) == [4, 3, 1]
    assert registry.call("texts", handle, []) == reference.texts()
    setup = registry.call("setup", handle, ["head", 8, 0, 1, "AdamW"])
    assert setup["trainPerClass"] == [4, 3, 1] and setup["mode"] == "head" and setup["rank"] is None
    reference.setup("head", 8, 0, 1)
    _, records, summary = train(registry, handle, {"epochs": 3, "batchSize": 4, "learningRate": 0.01,
                                                   "keepBest": False})
    assert [r["loss"] for r in records] == reference_losses(reference, epochs=3, batch_size=4, learning_rate=0.01)
    assert summary["metrics"] == reference.evaluate() and summary["metrics"]["on"] == "train"
    probe = ["Fry the garlic in olive oil.", " ".join(["a long day at the stadium"] * 40)]
    prediction = registry.call("predict", handle, [probe])
    assert prediction == [{"probabilities": p["probabilities"], "label": p["label"], "className": p["class_name"],
                           "truncated": p["truncated"]} for p in reference.predict(probe)]
    assert [p["truncated"] for p in prediction] == [False, True]
    bundle = zip_files(registry.call("export_zip", handle, []))
    assert bundle == zip_files(reference.export_zip())
    assert registry.call("export_model", handle, []) == bundle["model.onnx"]  # exportModel: the ONNX model
    snapshot = registry.call("snapshot", handle, [])
    again = registry.call("create_task", None, ["text_snapshot", [encoder, tokenizer, snapshot]])["handle"]
    assert registry.call("checkpoint", again, []) == registry.call("checkpoint", handle, [])
    assert registry.call("predict", again, [probe]) == prediction
    with pytest.raises(ValueError, match="a text task has no method 'add_samples'"):
        registry.call("add_samples", handle, [])
