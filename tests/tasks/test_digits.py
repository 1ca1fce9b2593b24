"""Personalising the pretrained digit classifier, in CPython: pretraining on scikit-learn's digits, a new class,
head-only and whole-model fine-tuning, and the export in onnxruntime."""
import io

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.datasets import load_digits

from onnxtrain import ir
from onnxtrain.tasks import DataError
from onnxtrain.tasks.handwriting import DigitsSession, pretrain


@pytest.fixture(scope="module")
def pretrained():
    digits = load_digits()
    return pretrain(digits.data[:1500], digits.target[:1500], epochs=15), digits


def cross(scale=16.0):
    img = np.zeros((8, 8), np.float32)
    for i in range(8):
        img[i, i] = img[i, 7 - i] = scale
    return img.ravel()


def test_pretrained_model_recognises_held_out_digits(pretrained):
    model, digits = pretrained
    session = DigitsSession(model)
    probs = np.array([session.predict(x) for x in digits.data[1500:]])
    assert np.mean(probs.argmax(axis=1) == digits.target[1500:]) > 0.85


@pytest.mark.parametrize("head_only", [True, False], ids=["head-only", "whole-model"])
def test_a_new_class_is_learned_and_exported(pretrained, head_only):
    model, digits = pretrained
    rng = np.random.default_rng(1)
    replay = io.BytesIO()
    np.savez(replay, x=(digits.data[:200] / 16).astype(np.float32), y=digits.target[:200])
    session = DigitsSession(model, replay.getvalue())
    label = session.add_class("X")
    for _ in range(6):
        session.add_example(np.clip(cross() + rng.normal(0, 1.5, 64), 0, 16), label)
    before = ir.load(session.export_model())
    result = session.fine_tune(epochs=15, learning_rate=0.01, head_only=head_only)
    assert result["last_loss"] < result["first_loss"]
    assert np.argmax(session.predict(cross())) == label
    exported = session.export_model()
    out = ort.InferenceSession(exported, providers=["CPUExecutionProvider"]).run(
        ["label"], {"pixels": np.stack([cross(), digits.data[1600].astype(np.float32)])})[0]
    assert out[0] == label and out[1] == digits.target[1600]
    fc1 = lambda m: {t.name: t.data for t in m.graph.initializers}["fc1.weight"]  # noqa: E731
    assert np.array_equal(fc1(ir.load(exported)), fc1(before)) == head_only


def test_errors(pretrained):
    session = DigitsSession(pretrained[0])
    with pytest.raises(DataError, match="draw and add a few examples"):
        session.fine_tune()
    with pytest.raises(DataError, match="is taken"):
        session.add_class("3")


def test_a_snapshot_restores_the_model_classes_and_drawings(pretrained):
    session = DigitsSession(pretrained[0])
    label = session.add_class("X")
    for _ in range(3):
        session.add_example(cross(), label)
    session.add_example(cross(8.0), 3)
    session.fine_tune(epochs=3)
    restored = DigitsSession.restore(session.snapshot())
    assert restored.classes == session.classes and restored.counts() == session.counts() == {
        **{str(i): 0 for i in range(10)}, "3": 1, "X": 3}
    np.testing.assert_array_equal(np.stack(restored.examples), np.stack(session.examples))
    assert restored.predict(cross()) == session.predict(cross())
    assert restored.export_model() == session.export_model()
    with pytest.raises(DataError, match="saved drawings cannot be read"):
        DigitsSession.restore(b"not an npz")


@pytest.mark.parametrize("name, message", [
    ("", "^a class needs a name$"),
    ("  \t ", "^a class needs a name$"),
    ("x" * 41, r'^the class name "x{41}" has 41 characters; at most 40$'),
    ("a\nb", r'^the class name "a\\nb" contains a control or invisible character \(U\+000A\)$'),
    ("a\x00b", r"control or invisible character \(U\+0000\)"),
    ("evil\u202etxt", r"control or invisible character \(U\+202E\)"),
    ("a\u2028b", r"control or invisible character \(U\+2028\)"),
    ("3", r'^the class name "3" is taken \(by "3"\); choose another$'),
    ("cross", r'^the class name "cross" is taken \(by "Cross"\)'),
    ("  CROSS ", r'the class name "CROSS" is taken \(by "Cross"\)'),
])
def test_bad_class_names_are_refused_and_change_nothing(pretrained, name, message):
    session = DigitsSession(pretrained[0])
    session.add_class("Cross")
    before = session.export_model()
    with pytest.raises(DataError, match=message):
        session.add_class(name)
    assert session.classes == [str(i) for i in range(10)] + ["Cross"] and session.export_model() == before


def test_names_as_given_with_emoji_and_at_most_fifty_classes(pretrained):
    import json
    from onnxtrain.web import signature
    session = DigitsSession(pretrained[0])
    names = ["👩‍💻", 'say "hi", ok; then', "x" * 40]
    assert [session.add_class(n) for n in names] == [10, 11, 12]
    line = signature(session.export_model())
    marker = "the index of the class in "
    assert line.startswith("Inputs: pixels float [batch, 64]. Outputs: output float [batch, 13], probabilities "
                           "float [batch, 13], label int64 [batch]. Input 'pixels': 8x8 grayscale, row-major, values "
                           "0..16 (ink high). Output 'label' is the index of the class in ")
    shown = json.JSONDecoder().raw_decode(line, line.index(marker) + len(marker))[0]
    assert shown == [str(i) for i in range(10)] + names
    for i in range(13, 50):
        session.add_class(f"c{i}")
    with pytest.raises(DataError, match="^there are 50 classes already; at most 50$"):
        session.add_class("one more")
    assert len(session.classes) == 50 and len(session.predict(cross())) == 50


@pytest.mark.parametrize("pixels, label, message", [
    (np.zeros(63), 0, "^a drawing is 8x8 = 64 values, not 63$"),
    (np.zeros(65), 0, "^a drawing is 8x8 = 64 values, not 65$"),
    (np.r_[np.zeros(10), np.nan, np.zeros(53)], 0, "^a drawing has a non-finite value at pixel 10$"),
    (np.r_[np.inf, np.zeros(63)], 0, "^a drawing has a non-finite value at pixel 0$"),
    (np.r_[-1, np.zeros(63)], 0, "^a drawing's values run from 0 to 16; this one has -1 to 0$"),
    (np.r_[17, np.zeros(63)], 0, "^a drawing's values run from 0 to 16; this one has 0 to 17$"),
    (["a"] * 64, 0, "^a drawing is 64 numbers from 0 to 16"),
    (np.zeros(64), 11, r'^the label "11" is not a class index from 0 to 10$'),
    (np.zeros(64), -1, r'^the label "-1" is not a class index'),
    (np.zeros(64), 1.5, r'^the label "1.5" is not a class index'),
    (np.zeros(64), True, r'^the label "True" is not a class index'),
    (np.zeros(64), "x", r'^the label "x" is not a class index'),
])
def test_bad_drawings_are_refused_and_change_nothing(pretrained, pixels, label, message):
    session = DigitsSession(pretrained[0])
    session.add_class("X")
    session.add_example(cross(), 10)
    with pytest.raises(DataError, match=message):
        session.add_example(pixels, label)
    assert session.labels == [10] and len(session.examples) == 1


def test_predict_refuses_a_bad_drawing(pretrained):
    session = DigitsSession(pretrained[0])
    with pytest.raises(DataError, match="^a drawing is 8x8 = 64 values, not 16$"):
        session.predict(np.zeros(16))
    with pytest.raises(DataError, match="non-finite value at pixel 63"):
        session.predict(np.r_[np.zeros(63), np.nan])


def test_a_snapshot_that_does_not_fit_is_refused(pretrained):
    session = DigitsSession(pretrained[0])
    session.add_class("X")
    session.add_example(cross(), 10)
    archive = dict(np.load(io.BytesIO(session.snapshot())))
    for change, message in [(dict(labels=np.array([11])), r"examples \[1, 64\], 1 labels, 11 classes"),
                            (dict(labels=np.array([1, 2])), r"examples \[1, 64\], 2 labels"),
                            (dict(examples=np.zeros((1, 63), np.float32)), r"examples \[1, 63\]"),
                            (dict(examples=np.full((1, 64), np.nan, np.float32)), "saved drawings cannot be read"),
                            (dict(classes=np.array([str(i) for i in range(10)]), labels=np.array([3])),
                             "^the model's head has 11 outputs but there are 10 class names$")]:
        buffer = io.BytesIO()
        np.savez(buffer, **{**archive, **change})
        with pytest.raises(DataError, match=message):
            DigitsSession.restore(buffer.getvalue())
