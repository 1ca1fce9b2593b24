"""The image-folder flow in CPython: pixels -> CNN artifacts -> training -> an export that takes RGB 0..1."""
import numpy as np
import onnxruntime as ort
import pytest

from onnxtrain.web.images import ImageSession
from onnxtrain.web.tabular import DataError


def synthetic(n_per_class=20, size=16, seed=0):
    """Three classes: reddish, bluish, and green stripes; RGBA uint8."""
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for label in range(3):
        for _ in range(n_per_class):
            img = rng.integers(0, 80, (size, size, 4)).astype(np.uint8)
            if label == 0:
                img[..., 0] += 150
            elif label == 1:
                img[..., 2] += 150
            else:
                img[::2, :, 1] += 170
            img[..., 3] = 255
            images.append(img)
            labels.append(label)
    return np.stack(images), np.array(labels)


def test_cnn_learns_and_the_export_takes_rgb():
    pixels, labels = synthetic()
    session = ImageSession(memoryview(pixels.tobytes()), list(pixels.shape), labels.tolist(), ["red", "blue", "green"])
    while session.epoch < 8:
        session.step(16, 0.01)
    metrics = session.evaluate()
    assert metrics["accuracy"] > metrics["baseline"] + 0.3
    assert int(np.argmax(session.predict(pixels[-1].tobytes()))) == labels[-1]
    model = session.export_model()
    rgb = pixels[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255
    label = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["label"], {"image": rgb})[0]
    assert np.mean(label == labels) > 0.8


def test_a_folder_with_one_class_is_refused():
    pixels, labels = synthetic(n_per_class=3)
    with pytest.raises(DataError, match="at least two class subfolders"):
        ImageSession(pixels.tobytes(), list(pixels.shape), [0] * len(labels), ["only", "empty"])


def test_a_saved_run_resumes_with_its_weights_and_epoch():
    pixels, labels = synthetic()
    args = (memoryview(pixels.tobytes()), list(pixels.shape), labels.tolist(), ["red", "blue", "green"])
    a = ImageSession(*args)
    while a.epoch < 2:
        a.step(16, 0.01)
    saved = a.checkpoint()
    b = ImageSession(*args)
    assert b.restore(saved) == 2
    assert b.evaluate() == a.evaluate()
    assert b.predict(pixels[0].tobytes()) == a.predict(pixels[0].tobytes())
