"""onnxtrain.tasks.personalize on the site's pretrained backbone (site/artifacts/efficientnet_lite0/backbone.onnx,
made by `python3 build.py site`): real photos in a few classes, the preprocessing graph and the exported model
against onnxruntime, fine-tuning's gradients against onnxruntime-training 1.19.2 on the same onnxtrain-made
artifacts, snapshots, and bad input."""
import json
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from sklearn.datasets import load_sample_images
from skimage import data as skdata

import ort_cases as oc
from onnxtrain import api, ir
from onnxtrain.ir.dtypes import DataType
from onnxtrain.ir.model import Attribute, AttrType, Node, Tensor
from onnxtrain.runtime import Session
from onnxtrain.tasks import backbone as backbone_mod
from onnxtrain.tasks.personalize import PersonalizeSession
from onnxtrain.tasks.preprocess import preprocess_model
from onnxtrain.tasks.training import inference_model, make_artifacts
from onnxtrain.train.data import DataError

# the site's pretrained backbone, as build.py site makes it
pytestmark = [pytest.mark.slow, pytest.mark.site]

ROOT = Path(__file__).resolve().parents[2]
BACKBONE = ROOT / "site" / "artifacts" / "efficientnet_lite0" / "backbone.onnx"
ACCURACY_BAR = 0.85  # held-out crops (other half of each photo) of three photos, 4 training crops per class; chance 1/3


@pytest.fixture(scope="module")
def backbone_bytes() -> bytes:
    if not BACKBONE.exists():
        pytest.fail(f"{BACKBONE} is missing: build the site first (`python3 build.py site`, or run the tests through "
                    f"`python3 build.py test`)")
    return BACKBONE.read_bytes()


@pytest.fixture(scope="module")
def backbone(backbone_bytes):
    return backbone_mod.Backbone(backbone_bytes)


def photos() -> dict:
    """Three real photos (RGB uint8): scikit-learn's china and flower, scikit-image's cat."""
    china, flower = load_sample_images().images
    return {"china": china, "flower": flower, "cat": skdata.chelsea()}


def crops(photo: np.ndarray, n: int, side: str, seed: int, size=(150, 190)) -> np.ndarray:
    """``n`` crops of ``size`` (height, width) from the left or right half of ``photo``, some flipped."""
    rng = np.random.default_rng(seed)
    h, w = photo.shape[:2]
    lo, hi = (0, w // 2) if side == "left" else (w // 2, w)
    out = []
    for k in range(n):
        ch, cw = size[0], min(size[1], hi - lo)
        y = rng.integers(0, h - ch + 1)
        x = rng.integers(lo, hi - cw + 1)
        crop = photo[y:y + ch, x:x + cw]
        out.append(crop[:, ::-1] if k % 2 else crop)
    return np.ascontiguousarray(np.stack(out))


def rgba(images: np.ndarray) -> np.ndarray:
    return np.concatenate([images, np.full(images.shape[:3] + (1,), 255, np.uint8)], axis=3)


@pytest.fixture(scope="module")
def taught(backbone):
    """A session with the three photos' classes, 4 RGBA crops each from the photos' left halves, and held-out crops
    from the right halves (RGB), 8 per class."""
    session = PersonalizeSession(backbone)
    test_x, test_y = [], []
    started = time.perf_counter()
    for label, (name, photo) in enumerate(photos().items()):
        assert session.add_class(name) == label
        session.add_samples(rgba(crops(photo, 4, "left", label)), label)
        test_x.append(crops(photo, 8, "right", 10 + label))
        test_y += [label] * 8
    seconds = time.perf_counter() - started
    print(f"embedded 12 samples of 150x190 px in {seconds:.2f} s: {12 / seconds:.1f} per second (CPython, one thread)")
    return session, np.concatenate(test_x), np.array(test_y)


def train(session, epochs=20, batch_size=8, learning_rate=0.003):
    while session.epoch < epochs:
        session.step(batch_size, learning_rate)


def test_the_preprocessing_graph_equals_onnxruntime_and_crops_the_centre(backbone):
    p = backbone.preprocess
    model = preprocess_model(p["size"], p["mean"], p["std"])
    data = ir.to_bytes(model)
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    ours = Session(model)
    rng = np.random.default_rng(0)
    for shape in [(2, 300, 400, 4), (1, 427, 640, 3), (1, 100, 50, 3), (3, 224, 224, 4), (1, 1000, 700, 3),
                  (1, 7, 9, 4)]:
        image = rng.integers(0, 256, shape, dtype=np.uint8)
        expected = reference.run(None, {"image": image})[0]
        got = ours.run([image])[0]
        assert got.shape == (shape[0], 3, p["size"], p["size"]) and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)  # normalised values of about +-3
    # a wide image: a blue square between red sides is all that is left, each channel normalised
    image = np.zeros((1, 60, 180, 3), np.uint8)
    image[:, :, :60] = image[:, :, 120:] = (255, 0, 0)
    image[:, :, 60:120] = (0, 0, 255)
    got = ours.run([image])[0][0]
    want = (np.array([0, 0, 1.0]) - p["mean"]) / p["std"]
    np.testing.assert_allclose(got.mean(axis=(1, 2)), want, rtol=1e-5)
    np.testing.assert_allclose(got.std(axis=(1, 2)), 0, atol=1e-5)


def test_few_samples_per_class_classify_held_out_crops(taught):
    session, x, y = taught
    info = session.setup(validation=0)
    assert info["samples"] == 12 and info["train_per_class"] == [4, 4, 4] and not info["fine_tune"]
    assert info["parameters"] == 3 * 1280 + 3
    started = time.perf_counter()
    train(session)
    print(f"head trained 20 epochs on 12 samples in {time.perf_counter() - started:.2f} s")
    predictions = session.predict(x)
    accuracy = np.mean([p["label"] for p in predictions] == y)
    print(f"held-out accuracy {accuracy:.3f} on {len(y)} crops from the other halves of the photos")
    assert accuracy >= ACCURACY_BAR
    assert session.evaluate()["on"] == "train" and session.evaluate()["accuracy"] == 1.0
    assert all(p["class_name"] == session.classes()[p["label"]] for p in predictions)
    np.testing.assert_allclose([sum(p["probabilities"]) for p in predictions], 1, rtol=1e-6)
    # a step later the predictions are the new parameters' (the head's session is made again)
    session.step(12, 0.05)
    again = session.predict(x[:4])
    fresh = Session(inference_model(session.training.module)).run([session.backbone.embed(x[:4])[0]])[0]
    assert not np.allclose([p["probabilities"] for p in again], [p["probabilities"] for p in predictions[:4]])
    np.testing.assert_allclose([p["probabilities"] for p in again], np.exp(fresh) / np.exp(fresh).sum(1, keepdims=True),
                               rtol=1e-5)


@pytest.mark.parametrize("fine_tune", [False, True])
def test_the_export_runs_in_onnxruntime_as_onnxtrain_predicts(taught, fine_tune, tmp_path):
    session, x, y = taught
    session.setup(fine_tune=fine_tune, validation=0.25, seed=1)
    train(session, epochs=3)
    data = session.export_model()
    print(f"exported model ({'fine-tuned conv_head' if fine_tune else 'head only'}): {len(data) / 1e6:.1f} MB")
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    meta = {p.key: p.value for p in model.metadata_props}
    assert json.loads(meta["onnxtrain.classes"]) == ["china", "flower", "cat"]
    assert [i.name for i in model.graph.input] == ["image"]
    assert {"probabilities", "label"} <= {o.name for o in model.graph.output}
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    ours = Session(ir.load(data))
    rng = np.random.default_rng(3)
    odd = rng.integers(0, 256, (2, 97, 61, 3), dtype=np.uint8)
    for images in (x[:6], rgba(x[6:12]), odd, rgba(odd)):
        probabilities, label = reference.run(["probabilities", "label"], {"image": images})
        assert probabilities.dtype == np.float32 and label.dtype == np.int64
        predicted = session.predict(images)
        np.testing.assert_allclose(probabilities, [p["probabilities"] for p in predicted], atol=2e-5)
        assert label.tolist() == [p["label"] for p in predicted]
        np.testing.assert_allclose(ours.run([images], ["probabilities"])[0], probabilities, atol=2e-5)


def ort_steps(arts: dict, tmp_path: Path, batches: list) -> list:
    """onnxruntime-training 1.19.2 on onnxtrain's artifacts: the trainable parameters after each step."""
    training = oc.ort_api()
    for name, value in arts.items():
        (tmp_path / name).write_bytes(value)
    state = training.CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = training.Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"))
    optimizer = training.Optimizer(str(tmp_path / "optimizer_model.onnx"), module)
    out = []
    for batch in batches:
        module(*batch)
        optimizer.step()
        module.lazy_reset_grad()
        out.append(module.get_contiguous_parameters(True).numpy().copy())
    return out


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
def test_fine_tuning_gradients_equal_onnxruntime_training(taught, optimizer, tmp_path):
    """The conv_head + Gemm head's artifacts (onnxtrain's generate_artifacts) trained by onnxtrain and by
    onnxruntime-training on the same cached block maps: with SGD the parameter change of a step is the gradient."""
    session, _, _ = taught
    forward = session.head_model(True, seed=0)
    trainable = ["head.weight", "head.bias", *session.backbone.conv]
    arts = make_artifacts(forward, "CrossEntropyLoss", optimizer, trainable=trainable)
    ids = list(session.samples)
    block = np.stack([session.store[s][1] for s in ids])
    labels = np.array([session.samples[s] for s in ids], np.int64)
    batches = [(block[i::3], labels[i::3]) for i in range(3)]
    expected = ort_steps(arts, tmp_path, batches)
    files = {"training": arts["training_model.onnx"], "eval": arts["eval_model.onnx"],
             "optimizer": arts["optimizer_model.onnx"], "checkpoint": arts["checkpoint"]}
    _, ours, _ = oc.api_run(files, batches)
    start = api.CheckpointState.load_checkpoint(arts["checkpoint"])
    before = api.Module(arts["training_model.onnx"], start).get_contiguous_parameters(True)
    assert before.size == 1280 * 320 + 1280 + 3 * 1280 + 3
    assert np.abs(ours[0] - before).max() > 0  # conv_head moved too
    for got, want in zip(ours, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if optimizer == "SGD":  # the first step's gradient of the conv_head weights, as a change: 1e-3 x gradient
        conv = slice(0, 1280 * 320)
        assert np.abs((before - ours[0])[conv]).max() > 1e-7


def test_fine_tuning_learns(taught):
    session, x, y = taught
    info = session.setup(fine_tune=True, validation=0)
    assert info["fine_tune"] and info["parameters"] == 1280 * 320 + 1280 + 3 * 1280 + 3
    first = session.step(12, 0.001)["loss"]
    train(session, epochs=10, batch_size=12, learning_rate=0.001)
    last = session.step(12, 0.001)["loss"]
    assert last < first / 4
    accuracy = np.mean([p["label"] for p in session.predict(x)] == y)
    print(f"fine-tuned: held-out accuracy {accuracy:.3f}")
    assert accuracy >= ACCURACY_BAR


def test_snapshot_round_trip_keeps_classes_samples_and_the_run(taught, backbone_bytes):
    taught_session, x, _ = taught
    session = PersonalizeSession(taught_session.backbone)
    session.add_class("a")
    session.add_class("b")
    ids_a = session.add_samples(x[:3], 0)
    ids_b = session.add_samples(x[8:11], 1)
    session.setup(validation=0.34, seed=2)
    train(session, epochs=2, batch_size=2)
    session.remove_sample(ids_a[0])  # after setup: the run keeps it
    new = session.add_samples(x[16:17], 1)
    snapshot = session.snapshot()
    restored = PersonalizeSession.from_snapshot(backbone_bytes, snapshot)
    assert restored.classes() == ["a", "b"] and restored.counts() == [2, 4]
    assert restored.sample_list() == [[i, 0] for i in ids_a[1:]] + [[i, 1] for i in ids_b + new]
    assert restored.epoch == session.epoch == 2
    assert restored.export_model() == session.export_model()
    assert restored.checkpoint() == session.checkpoint()
    for s in (session, restored):
        s.step(2, 0.01)
    assert restored.checkpoint() == session.checkpoint()
    assert restored.add_samples(x[:1], 0) == [session.next_id]
    # a snapshot without a run, and none at all
    empty = PersonalizeSession(taught_session.backbone)
    again = PersonalizeSession.from_snapshot(backbone_bytes, empty.snapshot())
    assert again.classes() == [] and again.training is None
    with pytest.raises(DataError, match="cannot be read"):
        PersonalizeSession.from_snapshot(backbone_bytes, b"not a snapshot")


def test_float16_weights_are_made_float32_once(backbone_bytes, backbone):
    """A backbone whose weights are float16 initializers each behind a Cast runs without the Casts, and gives what
    onnxruntime gives for the float16 model."""
    model = ir.load(backbone_bytes)
    g = model.graph
    casts, inits = [], []
    for t in backbone.folded.graph.initializers:
        if t.data_type == DataType.FLOAT and t.data.size > 16:
            inits.append(Tensor(t.name + ".fp16", t.data.astype(np.float16), DataType.FLOAT16))
            casts.append(Node("Cast", [t.name + ".fp16"], [t.name], name=t.name + ".cast",
                              attributes={"to": Attribute("to", AttrType.INT, DataType.FLOAT)}))
        else:
            inits.append(t)
    g.nodes = casts + [n for n in backbone.folded.graph.nodes]
    g.initializers = inits
    half = ir.to_bytes(model)
    folded = backbone_mod.Backbone(half)
    assert not any(n.op_type == "Cast" and n.inputs[0].endswith(".fp16") for n in folded.folded.graph.nodes)
    assert all(t.data_type != DataType.FLOAT16 for t in folded.folded.graph.initializers)
    size = backbone.preprocess["size"]
    x = np.random.default_rng(0).standard_normal((2, 3, size, size)).astype(np.float32)
    want = ort.InferenceSession(half, providers=["CPUExecutionProvider"]).run(["features"], {"input": x})[0]
    got = Session(folded.folded).run([x], ["features"])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    print(f"backbone {len(backbone_bytes) / 1e6:.1f} MB as given, {len(half) / 1e6:.1f} MB with float16 weights")


def test_bad_input_is_a_clear_error_and_changes_nothing(taught):
    session = PersonalizeSession(taught[0].backbone)
    with pytest.raises(DataError, match="there are no classes; add at least two"):
        session.setup()
    session.add_class("mug")
    with pytest.raises(DataError, match="there is one class"):
        session.setup()
    session.add_class("keys")
    with pytest.raises(DataError, match='taken \\(by "mug"\\)'):
        session.add_class("MUG")
    with pytest.raises(DataError, match="has no samples"):
        session.setup()
    image = taught[1][:2]
    session.add_samples(image, 0)
    with pytest.raises(DataError, match='the class "keys" has no samples'):
        session.setup()
    with pytest.raises(DataError, match=r'the images for class "keys" are float32 \[2, 150, 190, 3\]'):
        session.add_samples(image.astype(np.float32), 1)
    with pytest.raises(DataError, match=r"uint8 \[count, height, width, 3 or 4\]"):
        session.add_samples(image[..., :2], 1)
    with pytest.raises(DataError, match=r"uint8 \[count, height, width, 3 or 4\]"):
        session.add_samples(image[0], 1)
    with pytest.raises(DataError, match="there is no class 2; the classes are numbered 0 to 1"):
        session.add_samples(image, 2)
    with pytest.raises(DataError, match="there is no sample 99"):
        session.remove_sample(99)
    with pytest.raises(DataError, match="there is no trained head"):
        session.predict(image)
    with pytest.raises(DataError, match="validation share"):
        session.setup(validation=1.5)
    assert session.counts() == [2, 0] and session.classes() == ["mug", "keys"] and session.training is None
    session.add_samples(image, 1)
    session.setup()
    run = session.training
    with pytest.raises(DataError, match="validation share"):
        session.setup(validation=-1)
    assert session.training is run
    session.rename_class(1, "house keys")
    with pytest.raises(DataError, match="a class needs a name"):
        session.rename_class(0, "  ")
    assert session.classes() == ["mug", "house keys"] and session.training is run
    session.remove_class(0)
    assert session.classes() == ["house keys"] and session.counts() == [2] and session.training is None
    other = ir.load(ir.to_bytes(session.backbone.model))
    other.metadata_props = {}
    with pytest.raises(DataError, match="no onnxtrain.preprocess metadata"):
        backbone_mod.Backbone(ir.to_bytes(other))
    with pytest.raises(DataError, match="is not an ONNX model"):
        backbone_mod.Backbone(b"\x00junk")
    with pytest.raises(DataError, match="made with another backbone"):
        snapshot = session.snapshot()
        other.metadata_props = dict(session.backbone.model.metadata_props, extra="1")
        PersonalizeSession.from_snapshot(ir.to_bytes(other), snapshot)


def test_ir_cut_and_compose_name_what_is_wrong(backbone):
    """The IR helpers the task is built with: a cut keeps only what its outputs need; a composition prefixes the
    second model's names, and refuses names that clash or do not exist."""
    from onnxtrain.ir.compose import ComposeError, compose, cut
    from onnxtrain.ir.model import Graph, Model, TensorType, ValueInfo
    tail = backbone.tail
    clip = next(n for n in tail.graph.nodes if n.op_type == "Clip")
    first = cut(tail, {"act": clip.outputs[0]})
    assert [n.op_type for n in first.graph.nodes] == ["Conv", "Clip"]
    assert [v.name for v in first.graph.outputs] == ["act"] and [v.name for v in first.graph.inputs] == ["block"]
    assert len(first.graph.initializers) == len(tail.graph.initializers)
    with pytest.raises(ComposeError, match="the model has no value 'nothing' to cut at"):
        cut(tail, {"x": "nothing"})
    pool = Model(graph=Graph(nodes=[Node("GlobalAveragePool", ["x"], ["pooled"], name="pool"),
                                    Node("Flatten", ["pooled"], ["features"], name="flat")],
                             inputs=[ValueInfo("x", TensorType(DataType.FLOAT, None))],
                             outputs=[ValueInfo("features", TensorType(DataType.FLOAT, None))]))
    with pytest.raises(ComposeError, match="the second model has no input 'act'"):
        compose(first, pool, {"act": "act"})
    with pytest.raises(ComposeError, match="the first model has no output 'pooled'"):
        compose(first, pool, {"x": "pooled"})
    with pytest.raises(ComposeError, match="both models have a value named '.*'; give the second a prefix"):
        compose(first, cut(tail, {"act": clip.outputs[0]}), {"block": "act"})
    joined = compose(first, pool, {"x": "act"}, prefix="b.", outputs=["act", "features"])
    assert [n.name for n in joined.graph.nodes][-2:] == ["b.pool", "b.flat"]
    image = np.random.default_rng(0).standard_normal((2, *backbone.block_shape)).astype(np.float32)
    act, features = Session(joined).run([image])
    np.testing.assert_array_equal(features, Session(tail).run([image])[0])
    np.testing.assert_array_equal(act, Session(first).run([image])[0])
