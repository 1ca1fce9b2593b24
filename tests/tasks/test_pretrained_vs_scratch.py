"""The same few photos per class, trained the two ways the image flow offers: the head of the pretrained
EfficientNet-Lite0 (tasks.personalize) and the small CNN from scratch (tasks.images).  Both exported models run in
onnxruntime on scenes the training never saw (the objects on other backgrounds).  The pretrained backbone must
recognise the objects; the CNN, with the same samples, must do clearly worse."""
import numpy as np
import onnxruntime as ort
import pytest

from onnxtrain.tasks.images import ImageSession
from onnxtrain.tasks.personalize import PersonalizeSession
from photo_scenes import scenes
from test_personalize import backbone_bytes  # noqa: F401  (the fixture)

# the site's pretrained backbone (build.py site), and two trainings on real photos
pytestmark = [pytest.mark.slow, pytest.mark.site]

PER_CLASS = 10       # the folder: 10 photos of each of 4 objects, 2 of them held out for validation by the flow
EPOCHS = 30
PRETRAINED_BAR = 0.9  # of 4 classes on new backgrounds
MARGIN = 0.2          # the CNN from scratch stays this far below


def _ort(model: bytes) -> ort.InferenceSession:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def _train(session, batch_size=8, learning_rate=1e-3):
    session.training.trainer.configure(epochs=EPOCHS, batch_size=batch_size, learning_rate=learning_rate)
    session.training.trainer.run()
    session.training.trainer.use_best()


@pytest.fixture(scope="module")
def folder():
    return scenes(PER_CLASS, held_out=False)


@pytest.fixture(scope="module")
def held_out():
    return scenes(25, held_out=True)


@pytest.fixture(scope="module")
def pretrained_accuracy(backbone_bytes, folder, held_out):  # noqa: F811
    images, labels, names = folder
    session = PersonalizeSession(backbone_bytes)
    for name in names:
        session.add_class(name)
    for i in range(len(names)):
        session.add_samples(images[labels == i], i)
    session.setup(validation=0.2, seed=0)
    _train(session)
    x, y, _ = held_out
    predicted = _ort(session.export_model()).run(["label"], {"image": x})[0]
    return float(np.mean(predicted == y))


@pytest.mark.parametrize("size", [32, 64])
def test_the_pretrained_backbone_recognises_objects_on_new_backgrounds_and_the_cnn_does_clearly_worse(
        folder, held_out, pretrained_accuracy, size):
    from PIL import Image
    images, labels, names = folder
    small = lambda a: np.stack([np.asarray(Image.fromarray(i).resize((size, size), Image.BILINEAR)) for i in a])  # noqa
    scratch = ImageSession(small(images), labels, names, validation=0.2, seed=0)
    _train(scratch)
    x, y, _ = held_out
    rgb = small(x).transpose(0, 3, 1, 2).astype(np.float32) / 255
    scratch_accuracy = float(np.mean(_ort(scratch.export_model()).run(["label"], {"image": rgb})[0] == y))
    print(f"held-out accuracy, {PER_CLASS} photos per class: pretrained {pretrained_accuracy:.2f}, "
          f"CNN from scratch at {size} px {scratch_accuracy:.2f}")
    assert pretrained_accuracy >= PRETRAINED_BAR
    assert scratch_accuracy <= pretrained_accuracy - MARGIN
