"""onnxtrain.tasks.text on all-MiniLM-L6-v2 (float16 weights, as the site ships it): the export against
onnxruntime (merged LoRA equal to the unmerged model), LoRA's artifacts trained by onnxruntime-training 1.19.2 to
the same losses, the export zip, snapshots, and bad input."""
import io
import json
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import minilm
import ort_cases as oc
from onnxtrain import ir
from onnxtrain.ir.dtypes import DataType
from onnxtrain.ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL
from onnxtrain.tasks.text import Encoder, TextSession
from onnxtrain.tasks.training import inference_model
from onnxtrain.train.data import DataError

TEXTS = {
    "sport": ["The team won the match in overtime.", "She scored two goals in the final.",
              "The coach praised the defenders after the game.", "He ran the marathon in under three hours."],
    "food": ["Add the garlic and simmer for ten minutes.", "This soup needs more salt.",
             "We baked bread with rye flour.", "The restaurant serves fresh pasta every day."],
    "tech": ["The new phone has a faster chip.", "Update your browser to fix the bug.",
             "The server crashed after the deploy.", "Install the driver and reboot the laptop."],
}
QUERIES = ["Who won the game last night?", "a recipe for pancakes", "my laptop will not boot", "ok"]
LONG = "the printer keeps jamming " * 40   # about 200 tokens: cut to 128


@pytest.fixture(scope="module")
def files():
    return minilm.files()


@pytest.fixture(scope="module")
def encoder(files):
    return Encoder(files[0])


def taught(encoder, files, texts=TEXTS) -> TextSession:
    session = TextSession(encoder, files[1])
    for k, (name, rows) in enumerate(texts.items()):
        assert session.add_class(name) == k
        session.add_texts(rows, k)
    return session


def train(session, epochs, batch_size=4, learning_rate=1e-3):
    while session.epoch < epochs:
        session.step(batch_size, learning_rate)


def ort_feeds(session, texts) -> dict:
    batch = session.tokenizer.batch(texts)
    return {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}


def test_head_mode_predicts_as_its_export_in_onnxruntime_and_flags_cut_texts(encoder, files):
    session = taught(encoder, files)
    assert session.info()["hidden"] == 384 and session.info()["max_length"] == 128
    added = session.add_texts(["Tickets for the derby sold out fast.", LONG], 0)
    assert added["truncated"] == [1] and len(added["ids"]) == 2
    assert [t[2] for t in session.texts(0)] == [False] * 5 + [True]
    info = session.setup(mode="head", validation=0.25, seed=1)
    assert info["mode"] == "head" and info["train"] + info["validation"] == 14 and info["parameters"] == 3 * 384 + 3
    first = session.step(4, 0.01)["loss"]
    train(session, 20, learning_rate=0.01)
    assert session.step(4, 0.01)["loss"] < first / 2
    metrics = session.evaluate()
    assert metrics["on"] == "validation" and metrics["loss"] > 0 and metrics["accuracy"] == 1.0
    assert metrics["counts"] == info["validation_per_class"] == [2, 1, 1]
    assert np.sum(metrics["confusion"], axis=1).tolist() == metrics["counts"]
    predicted = session.predict(QUERIES + [LONG])
    assert [p["class_name"] for p in predicted[:3]] == ["sport", "food", "tech"]
    assert [p["truncated"] for p in predicted] == [False] * 4 + [True]
    data = session.export_model()
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    assert json.loads({p.key: p.value for p in model.metadata_props}["onnxtrain.classes"]) == list(TEXTS)
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    probabilities, label = reference.run(["probabilities", "label"], ort_feeds(session, QUERIES + [LONG]))
    np.testing.assert_allclose(probabilities, [p["probabilities"] for p in predicted], atol=2e-6)
    assert label.tolist() == [p["label"] for p in predicted]


@pytest.fixture(scope="module")
def lora_session(encoder, files):
    """Three classes of four texts, set up for LoRA (rank 4) and trained 2 epochs."""
    session = taught(encoder, files)
    info = session.setup(mode="lora", rank=4, seed=0)
    # 18 adapted projections of 384 x 384: 4 x (384 + 384) each, and the head
    assert info["mode"] == "lora" and info["parameters"] == 18 * 4 * 768 + 3 * 384 + 3
    train(session, 2)
    return session


def test_the_merged_export_equals_the_unmerged_model(lora_session):
    """The exported model (adapters merged into the weights, which float16 stores where exact) against the run's
    inference model (adapters apart), both in onnxruntime.  Merging computes x (W + A B s) instead of x W + x A B
    s: float32 rounds the sums differently, by about 1e-7 of a value, through six layers."""
    session = lora_session
    data = session.export_model()
    merged = ir.load(data)
    names = {t.name: t for t in merged.graph.initializers}
    assert not [n for n in names if "lora" in n]
    adapted = [f"encoder.layer.{i}.attention.self.{p}.weight" for i in range(6) for p in ("query", "key", "value")]
    assert all(names[w].data_type == DataType.FLOAT for w in adapted)   # merged: no longer float16 values
    assert names["encoder.layer.0.intermediate.dense.weight.float16"].data_type == DataType.FLOAT16
    print(f"LoRA export: {len(data) / 1e6:.1f} MB")
    assert len(data) < 60e6
    unmerged = ir.to_bytes(inference_model(session.training.module))
    feeds = ort_feeds(session, QUERIES + [LONG])
    want = ort.InferenceSession(unmerged, providers=["CPUExecutionProvider"]).run(["output"], feeds)[0]
    got = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(["output", "probabilities"], feeds)
    print(f"merged vs unmerged: largest score difference {np.abs(got[0] - want).max():.2e}")
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], [p["probabilities"] for p in session.predict(QUERIES + [LONG])], atol=1e-5)


def ort_and_onnxtrain_steps(session, tmp_path, batches: list, learning_rate: float) -> tuple:
    """The run's artifacts_zip (its models and checkpoint) trained one step a batch by onnxruntime-training 1.19.2
    and by onnxtrain's api: (their losses, their trainable parameters after each step, the parameters before),
    onnxruntime-training's first."""
    with zipfile.ZipFile(io.BytesIO(session.artifacts_zip())) as z:
        arts = {name: z.read(name) for name in (TRAINING_MODEL, EVAL_MODEL, OPTIMIZER_MODEL, CHECKPOINT)}
    for name, value in arts.items():
        (tmp_path / name).write_bytes(value)
    training = oc.ort_api()
    state = training.CheckpointState.load_checkpoint(str(tmp_path / CHECKPOINT))
    module = training.Module(str(tmp_path / TRAINING_MODEL), state, str(tmp_path / EVAL_MODEL))
    optimizer = training.Optimizer(str(tmp_path / OPTIMIZER_MODEL), module)
    optimizer.set_learning_rate(learning_rate)
    before = module.get_contiguous_parameters(True).numpy().copy()
    losses, params = [], []
    for batch in batches:
        losses.append(oc.first_output(module(*batch)))
        optimizer.step()
        module.lazy_reset_grad()
        params.append(module.get_contiguous_parameters(True).numpy().copy())
    files = {"training": arts[TRAINING_MODEL], "eval": arts[EVAL_MODEL], "optimizer": arts[OPTIMIZER_MODEL],
             "checkpoint": arts[CHECKPOINT]}
    ours, our_params, _ = oc.api_run(files, batches, learning_rate)
    print(f"losses: onnxruntime-training {losses}, onnxtrain {ours}")
    return (losses, ours), (params, our_params), before


def text_batches(session, rows_list: list, shift: int = 0) -> list:
    """Batches of the run's texts at ``rows_list``, their labels moved on by ``shift`` classes."""
    ids = session.settings["ids"]
    labels = (np.array(session.settings["labels"], np.int64) + shift) % len(session.classes())
    out = []
    for rows in rows_list:
        feeds = ort_feeds(session, [session.store[ids[r]][0] for r in rows])
        out.append((feeds["input_ids"], feeds["attention_mask"], labels[rows]))
    return out


def test_lora_gradients_equal_onnxruntime_trainings(encoder, files, tmp_path):
    """A new LoRA run with SGD: a step's parameter change is the learning rate times the gradient, of the head
    and of every adapter (B starts at zero, so A's first gradient is zero: the later steps check A).  The labels
    are the wrong ones, so that the loss and the gradients are large (the run's head starts fitted)."""
    session = taught(encoder, files, {name: rows[:2] for name, rows in TEXTS.items()})
    session.setup(mode="lora", rank=2, seed=3, optimizer="SGD")
    batches = text_batches(session, [[0, 2, 4], [1, 3, 5], [0, 1, 2, 3, 4, 5]], shift=1)
    (want, got), (theirs, ours), before = ort_and_onnxtrain_steps(session, tmp_path, batches, 0.05)
    assert min(want) > 1
    np.testing.assert_allclose(got, want, rtol=1e-5)
    start = before
    for a, b in zip(theirs, ours):
        change, our_change = a - start, b - start
        assert np.abs(change).max() > 0
        # float32 sums of the two runtimes differ by a few ulps of the gradients' terms
        np.testing.assert_allclose(our_change, change, rtol=1e-3, atol=1e-4 * np.abs(change).max())
        start = a
    assert before.size == 18 * 2 * 768 + 3 * 384 + 3
    assert np.count_nonzero(ours[-1] != before) > before.size / 2   # most of A and B moved (tiny changes round away)


def test_lora_artifacts_continue_in_onnxruntime_training_to_the_same_losses(lora_session, tmp_path):
    """The trained run's artifacts_zip (its checkpoint after 2 epochs, AdamW's moments in it) trained 3 more
    steps by onnxruntime-training 1.19.2 and by onnxtrain."""
    batches = text_batches(lora_session, ([0, 4, 8, 1], [2, 6, 10, 3], [5, 7, 9, 11]))
    (want, got), (theirs, ours), before = ort_and_onnxtrain_steps(lora_session, tmp_path, batches, 1e-3)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(theirs, ours):
        np.testing.assert_allclose(b - before, a - before, rtol=1e-3, atol=1e-7)


def test_the_export_zip_holds_the_model_the_tokenizer_and_a_readme(lora_session, files, tmp_path, monkeypatch):
    with zipfile.ZipFile(io.BytesIO(lora_session.export_zip())) as z:
        assert sorted(z.namelist()) == ["README.md", "model.onnx", "tokenizer.json"]
        assert z.read("tokenizer.json") == files[1]
        readme = z.read("README.md").decode()
        model = z.read("model.onnx")
        z.extractall(tmp_path)
    assert "onnxruntime-web" in readme and "InferenceSession" in readme and '"sport", "food", "tech"' in readme
    # the README's Python, run as it is beside the files (with the tokenizers package)
    code = readme.split("```python\n")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(code, scope)
    assert scope["classes"] == list(TEXTS)
    assert scope["label"].tolist() == [p["label"] for p in lora_session.predict(["some text", "another one"])]
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert json.loads(session.get_modelmeta().custom_metadata_map["onnxtrain.classes"]) == list(TEXTS)
    labels = session.run(["label"], ort_feeds(lora_session, QUERIES))[0]
    assert labels.tolist() == [p["label"] for p in lora_session.predict(QUERIES)]


@pytest.mark.parametrize("mode", ["head", "lora"])
def test_snapshot_round_trip_keeps_classes_texts_and_the_run(encoder, files, lora_session, mode):
    if mode == "lora":
        session = lora_session
    else:
        session = taught(encoder, files)
        session.setup(mode="head", validation=0.25, seed=2)
        train(session, 3, learning_rate=0.01)
    snapshot = session.snapshot()
    restored = TextSession.from_snapshot(files[0], files[1], snapshot)
    assert restored.classes() == list(TEXTS) and restored.counts() == session.counts()
    assert restored.texts() == session.texts() and restored.sample_list() == session.sample_list()
    assert restored.epoch == session.epoch and restored.settings == session.settings
    np.testing.assert_allclose([p["probabilities"] for p in restored.predict(QUERIES)],
                               [p["probabilities"] for p in session.predict(QUERIES)], atol=1e-6)
    assert restored.add_texts(["Chop the onions finely."], 1)["ids"] == [session.next_id]
    other = TextSession(files[0], files[1])
    with pytest.raises(DataError, match="cannot be read"):
        TextSession.from_snapshot(files[0], files[1], b"not a snapshot")
    data = np.load(io.BytesIO(snapshot))
    meta = json.loads(data["meta"].tobytes())
    meta["encoder"] = "0" * 64
    arrays = {k: data[k] for k in data.files}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with pytest.raises(DataError, match="another encoder"):
        other._load_snapshot(buffer.getvalue())
    assert other.classes() == []


def test_bad_input_is_refused_and_leaves_the_session_as_it_was(encoder, files):
    session = taught(encoder, files)
    before = (session.classes(), session.counts(), session.texts())
    bad_texts = [("sport", "must be a list"), (["fine", "   "], "text 1 is empty"), (["fine", 3], "text 1 is a int"),
                 ([], "the list is empty"), ([b"bytes"], "text 0 is a bytes")]
    for texts, message in bad_texts:
        with pytest.raises(DataError, match=message):
            session.add_texts(texts, 0)
    with pytest.raises(DataError, match="there is no class 3"):
        session.add_texts(["fine"], 3)
    csv = "message,topic\nThe match was great,sport\nBake it for an hour,food\n".encode()
    with pytest.raises(DataError, match=r'there is no column named "text"; the columns are \["message", "topic"\]'):
        session.add_csv(csv, "text", "topic")
    with pytest.raises(DataError, match=r'there is no column named "label"'):
        session.add_csv(csv, "message", "label")
    with pytest.raises(DataError, match=r"not UTF-8 text \(byte 30, line 2\)"):
        session.add_csv("message,topic\nThe match was gr\u00e9at".encode("latin-1") + b",sport\n", "message", "topic")
    with pytest.raises(DataError, match='line 4 has no text in the column "message"'):
        session.add_csv(csv + b" ,tech\n", "message", "topic")
    with pytest.raises(DataError, match='line 4 has no label in the column "topic"'):
        session.add_csv(csv + b"A new phone,\n", "message", "topic")
    many = "message,topic\n" + "".join(f"text {i},class {i}\n" for i in range(48))
    with pytest.raises(DataError, match="names 51 classes .* at most 50"):
        session.add_csv(many.encode(), "message", "topic")
    assert (session.classes(), session.counts(), session.texts()) == before
    added = session.add_csv(csv + b"My laptop is slow,Tech\n" + f"{LONG},new\n".encode(), "message", "topic")
    assert added == {"added": 4, "classes": ["sport", "food", "tech", "new"], "truncated": 1}
    assert session.counts() == [5, 5, 5, 1]
    session.add_class("empty")
    with pytest.raises(DataError, match='the class "empty" has no texts'):
        session.setup()
    session.remove_class(4)
    for kwargs, message in [({"mode": "full"}, "the mode is"), ({"mode": "lora", "rank": 0}, "LoRA rank"),
                            ({"validation": 1.5}, "validation share"), ({"seed": -1}, "seed")]:
        with pytest.raises(DataError, match=message):
            session.setup(**kwargs)
    with pytest.raises(DataError, match="there is no trained model"):
        session.predict(["anything"])
    with pytest.raises(DataError, match="the tokenizer cannot be read"):
        TextSession(encoder, b"{}")
    with pytest.raises(DataError, match=r"must have the inputs \['input_ids', 'attention_mask'\]; it has \['input'\]"):
        TextSession(oc_model_bytes(), files[1])


def oc_model_bytes() -> bytes:
    """A model that is not an encoder (the tests' small MLP)."""
    return oc.mlp(4, 3, 2).SerializeToString()
