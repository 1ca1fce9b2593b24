"""Personalizing a pretrained backbone at the JavaScript boundary: the page's RGBA pixels (one flat byte buffer and
[count, height, width]) onto onnxtrain.tasks.personalize, with the page's run (a bridge TrainingSession)."""
from __future__ import annotations

import numpy as np

from ..api.module import PROVIDERS
from ..tasks import personalize
from ..tasks.checks import whole
from ..train.data import DataError
from .bridge import _buffer, _bytes
from .tabular import run_on
from .train_loop import camel_keys


def _pixels(pixels, shape, what: str) -> np.ndarray:
    """RGBA uint8 bytes of [count, height, width] as [count, height, width, 4]."""
    dims = list(_buffer(shape))
    sizes = [whole(d, 1) for d in dims]
    if len(dims) != 3 or None in sizes:
        raise DataError(f"{what}: the shape {str(dims)[:60]} is not [count, height, width] in whole numbers of 1 "
                        f"or more")
    n, h, w = sizes
    data = _bytes(pixels)
    if len(data) != n * h * w * 4:
        raise DataError(f"{what}: the pixel buffer has {len(data):,} bytes, but {n} RGBA image{'s' * (n != 1)} of "
                        f"{w}×{h} px take {n * h * w * 4:,}")
    return np.frombuffer(data, np.uint8).reshape(n, h, w, 4)


class PersonalizeSession(personalize.PersonalizeSession):
    """tasks.personalize.PersonalizeSession for the worker."""

    def __init__(self, backbone, providers=None):
        self.provider, run = run_on(providers)
        super().__init__(_bytes(backbone), run=run, device=PROVIDERS[self.provider])

    @classmethod
    def from_snapshot(cls, backbone, snapshot, providers=None) -> "PersonalizeSession":
        session = cls(backbone, providers)
        session._load_snapshot(_bytes(snapshot))
        return session

    def info(self) -> dict:
        b = self.backbone
        return {"inputSize": b.preprocess["size"], "features": b.features, "blockShape": b.block_shape,
                "backboneBytes": b.bytes, "backboneSha256": b.sha256, "source": b.source,
                "executionProvider": self.provider}

    def add_samples(self, pixels, shape, index) -> list:
        """RGBA images [count, height, width] of class ``index``; their sample ids."""
        return super().add_samples(_pixels(pixels, shape, "the samples"), index)

    def setup(self, fine_tune=False, validation=0.0, seed=0, optimizer="AdamW") -> dict:
        return camel_keys(super().setup(fine_tune, validation, seed, optimizer))

    def predict(self, pixels, shape) -> list:
        """For each RGBA image of [count, height, width]: {probabilities, label, className}."""
        return [camel_keys(p) for p in super().predict(_pixels(pixels, shape, "the image"))]
