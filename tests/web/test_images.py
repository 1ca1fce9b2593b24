"""The image-folder flow in CPython: pixels -> CNN artifacts -> training -> an export that takes RGB 0..1."""
import numpy as np
import onnxruntime as ort
import pytest

from onnxtrain.tasks import DataError
from onnxtrain.tasks.images import ImageSession


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
    session = ImageSession.from_rgba(pixels.tobytes(), list(pixels.shape), labels.tolist(), ["red", "blue", "green"])
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
        ImageSession.from_rgba(pixels.tobytes(), list(pixels.shape), [0] * len(labels), ["only", "empty"])


def test_a_saved_run_resumes_with_its_weights_and_epoch():
    pixels, labels = synthetic()
    args = (pixels.tobytes(), list(pixels.shape), labels.tolist(), ["red", "blue", "green"])
    a = ImageSession.from_rgba(*args)
    while a.epoch < 2:
        a.step(16, 0.01)
    saved = a.checkpoint()
    b = ImageSession.from_rgba(*args)
    assert b.restore(saved) == 2
    assert b.evaluate() == a.evaluate()
    assert b.predict(pixels[0].tobytes()) == a.predict(pixels[0].tobytes())


def test_the_issues_24_images_split_alike_per_class():
    pixels, labels = synthetic(n_per_class=8)
    session = ImageSession.from_rgba(pixels.tobytes(), list(pixels.shape), labels.tolist(), ["red", "blue", "green"])
    assert session.info["validation_per_class"] == [2, 2, 2] and session.info["train_per_class"] == [6, 6, 6]
    x_val, y_val = session.training.trainer.validation_data
    y_train = session.training.trainer.train_data[1]
    assert np.bincount(y_val).tolist() == [2, 2, 2] and np.bincount(y_train).tolist() == [6] * 3
    assert y_val.dtype == np.int64
    again = ImageSession.from_rgba(pixels.tobytes(), list(pixels.shape), labels.tolist(), ["red", "blue", "green"])
    np.testing.assert_array_equal(again.training.trainer.validation_data[0], x_val)
    other = ImageSession.from_rgba(pixels.tobytes(), list(pixels.shape), labels.tolist(), ["red", "blue", "green"],
                                   seed=1)
    assert not np.array_equal(other.training.trainer.validation_data[0], x_val)
    # uneven classes: round per class, and a class of one image trains
    keep = np.r_[0:8, 8:13, 16:17]
    uneven = ImageSession.from_rgba(pixels[keep].tobytes(), [len(keep), 16], labels[keep].tolist(),
                                    ["red", "blue", "green"])
    assert uneven.info["validation_per_class"] == [2, 1, 0] and uneven.info["train_per_class"] == [6, 4, 1]


@pytest.mark.parametrize("size", [1, 4, 7, 129, 4096])
def test_an_image_size_outside_the_range_is_refused(size):
    pixels = np.zeros((6, size, size, 4), np.uint8) if size < 200 else np.zeros(6 * 4, np.uint8)
    with pytest.raises(DataError, match=f"^an image size of {size} px is not possible; choose from 8 to 128 px$"):
        ImageSession.from_rgba(pixels.tobytes(), [6, size], [0, 1, 2] * 2, ["a", "b", "c"])


def test_the_smallest_size_trains():
    pixels, labels = synthetic(n_per_class=4, size=8)
    session = ImageSession.from_rgba(pixels.tobytes(), [12, 8], labels.tolist(), ["a", "b", "c"])
    assert np.isfinite(session.step(4, 0.01)["loss"]) and len(session.predict(pixels[0].tobytes())) == 3


@pytest.mark.parametrize("change, message", [
    (dict(pixels=b"\0" * 100),
     r"^the images: the pixel buffer has 100 bytes, but 6 RGBA images of 16×16 px take 6,144$"),
    (dict(shape=[6]), r"^the image shape \[6\] is not \[count, size\] in whole numbers$"),
    (dict(shape=[6, 16.5]), r"the image shape \[6, 16.5\] is not \[count, size\]"),
    (dict(shape=[0, 16], pixels=b""), "^there are 0 images; add images to the class subfolders$"),
    (dict(labels=[0, 1, 2, 0, 1]), "^there are 6 images but 5 labels$"),
    (dict(labels=[0, 1, 2, 0, 1, 3]), r'^image 6 has the label "3"; a label is a class index from 0 to 2$'),
    (dict(labels=[0, -1, 2, 0, 1, 2]), 'image 2 has the label "-1"'),
    (dict(labels=[0, 1.5, 2, 0, 1, 2]), 'image 2 has the label "1.5"'),
    (dict(labels=[0, None, 2, 0, 1, 2]), 'image 2 has the label "None"'),
    (dict(classes=["a", " ", "c"]), "^class 2 has an empty name; name each class subfolder$"),
    (dict(classes=["a", "", "c"]), "^class 2 has an empty name"),
    (dict(classes=["a", "b", "a"]), r'^two classes are named "a" \(classes 1 and 3\)$'),
    (dict(labels=[0, 0, 2, 0, 0, 2]), r"at least two class subfolders with images in each \(found \{'a': 4, 'b': 0"),
    (dict(validation=0), "^the validation share is \"0\"; it must be above 0 and below 1"),
])
def test_mismatched_pixels_labels_and_classes_are_refused(change, message):
    pixels, _ = synthetic(n_per_class=2)
    args = dict(pixels=pixels.tobytes(), shape=[6, 16], labels=[0, 0, 1, 1, 2, 2], classes=["a", "b", "c"])
    args.update(change)
    with pytest.raises(DataError, match=message):
        ImageSession.from_rgba(**args)


def test_class_names_stay_as_given_and_the_export_quotes_them():
    import json
    from onnxtrain import ir
    from onnxtrain.web import signature
    names = ['<img src=x onerror="1">', "a; b, c", "line\nbreak"]
    pixels, labels = synthetic(n_per_class=3)
    session = ImageSession.from_rgba(pixels.tobytes(), list(pixels.shape), labels.tolist(), names)
    assert session.classes == names and session.info["classes"] == names
    with pytest.raises(DataError, match=r"^the image: the pixel buffer has 12 bytes, but 1 RGBA image of 16×16 px "
                                        r"take 1,024$"):
        session.predict(b"\0" * 12)
    model = session.export_model()
    line = signature(model)
    assert line.startswith("Inputs: image float [batch, 3, 16, 16]. Outputs: output float [batch, 3], probabilities "
                           "float [batch, 3], label int64 [batch]. Input 'image': float32 [batch, 3, 16, 16], RGB, "
                           "values 0..1 (resized to 16x16). Output 'label' is the index of the class in ")
    marker = "the index of the class in "
    assert json.JSONDecoder().raw_decode(line, line.index(marker) + len(marker))[0] == names
    assert json.loads(ir.load(model).metadata_props["onnxtrain.classes"]) == names
