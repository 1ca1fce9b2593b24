"""The image-folder flow at the JavaScript boundary: the page's decoded RGBA pixels (one flat byte buffer and
[count, size]) onto onnxtrain.tasks.images."""
from __future__ import annotations

import numpy as np

from ..tasks import images
from ..tasks.images import cnn_model  # noqa: F401  (for tools and tests)
from ..tasks.checks import whole
from ..train.data import DataError
from .bridge import _buffer, _bytes
from .tabular import run_on
from .train_loop import camel_keys


def _shape(shape) -> tuple:
    """(image count, side) from the page's [count, size]."""
    dims = list(_buffer(shape))
    n, size = [whole(d, 0) for d in dims[:2]] if len(dims) >= 2 else (None, None)
    if n is None or size is None:
        raise DataError(f"the image shape {str(dims)[:60]} is not [count, size] in whole numbers")
    images.check_size(n, size)
    return n, size


def _pixels(pixels, n: int, size: int, what: str) -> np.ndarray:
    """RGBA uint8 bytes as [n, size, size, 4]."""
    data = _bytes(pixels)
    need = n * size * size * 4
    if len(data) != need:
        raise DataError(f"{what}: the pixel buffer has {len(data):,} bytes, but {n} RGBA image{'s' * (n != 1)} of "
                        f"{size}×{size} px take {need:,}")
    return np.frombuffer(data, np.uint8).reshape(n, size, size, 4)


class ImageSession(images.ImageSession):
    """tasks.images.ImageSession for the worker."""

    def __init__(self, pixels, shape, labels, classes, validation: float = 0.2, seed: int = 0,
                 optimizer: str = "AdamW", providers=None):
        n, size = _shape(shape)
        self.provider, run = run_on(providers)
        super().__init__(_pixels(pixels, n, size, "the images"), list(_buffer(labels)), list(_buffer(classes)),
                         validation, seed, optimizer, run=run)
        self.info = camel_keys(self.info)

    def predict(self, pixels) -> list:
        """Class probabilities for one RGBA image of the session's size (uint8 bytes)."""
        return super().predict(_pixels(pixels, 1, self.size, "the image")[0])

    def restore(self, data) -> int:
        return super().restore(_bytes(data))
