"""Personalising the pretrained digit classifier, in CPython: pretraining on scikit-learn's digits, a new class,
head-only and whole-model fine-tuning, and the export in onnxruntime."""
import io

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.datasets import load_digits

from onnxtrain import ir
from onnxtrain.web.digits import DigitsSession, pretrain
from onnxtrain.web.tabular import DataError


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
