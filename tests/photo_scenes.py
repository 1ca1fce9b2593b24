"""Few-shot image classes from real photos: an object (a region of one of the photos that ship in the test venv's
packages) placed at a random size, place and brightness on a background photo.  Training scenes use one set of
backgrounds and held-out scenes another, so a classifier has to recognise the object, not the scene around it:
what a person recording "my mug" and "my keys" on their desk, then showing them elsewhere, asks of a model."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from artifacts.photos import photos  # noqa: E402

#: class name -> (photo, rows, columns): the object
OBJECTS = {"cat": ("chelsea", slice(30, 280), slice(100, 350)),
           "coffee": ("coffee", slice(20, 380), slice(120, 480)),
           "rocket": ("rocket", slice(0, 427), slice(180, 460)),
           "astronaut": ("astronaut", slice(0, 300), slice(100, 400))}
TRAIN_BACKGROUNDS = ["china", "flower", "grass"]
HELD_OUT_BACKGROUNDS = ["gravel", "brick", "hubble_deep_field", "immunohistochemistry"]


def _backgrounds(names: list) -> list:
    import skimage.data
    known = photos()
    out = []
    for name in names:
        image = known[name] if name in known else getattr(skimage.data, name)()
        out.append(np.stack([image] * 3, -1) if image.ndim == 2 else image[..., :3])
    return out


def _resized(image: np.ndarray, side: int) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.fromarray(np.ascontiguousarray(image)).resize((side, side), Image.BILINEAR), np.float32)


def scenes(per_class: int, held_out: bool, seed: int = 0, size: int = 224, classes=None) -> tuple:
    """(uint8 RGB [n, size, size, 3], int64 labels, class names): ``per_class`` scenes of each object, on the
    training backgrounds or (``held_out``) the others."""
    names = list(classes or OBJECTS)
    known = photos()
    backgrounds = _backgrounds(HELD_OUT_BACKGROUNDS if held_out else TRAIN_BACKGROUNDS)
    rng = np.random.default_rng([seed, int(held_out)])
    images, labels = [], []
    for label, name in enumerate(names):
        photo, rows, cols = OBJECTS[name]
        thing = known[photo][rows, cols]
        for _ in range(per_class):
            back = backgrounds[rng.integers(len(backgrounds))]
            h, w = back.shape[:2]
            k = min(h, w)
            top, left = rng.integers(0, h - k + 1), rng.integers(0, w - k + 1)
            frame = _resized(back[top:top + k, left:left + k], size)
            side = int(size * rng.uniform(0.45, 0.75))
            patch = _resized(thing, side)
            if rng.random() < 0.5:
                patch = patch[:, ::-1]
            y, x = rng.integers(0, size - side + 1, 2)
            frame[y:y + side, x:x + side] = patch * rng.uniform(0.8, 1.2)
            images.append(np.clip(frame, 0, 255).astype(np.uint8))
            labels.append(label)
    return np.stack(images), np.array(labels, np.int64), names
