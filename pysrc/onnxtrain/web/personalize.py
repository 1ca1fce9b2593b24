"""Personalizing a pretrained backbone at the JavaScript boundary: the page's images are RGBA bytes and their
[count, height, width], which onnxtrain.tasks.personalize takes as uint8 [count, height, width, 4]."""
from __future__ import annotations

from ..tasks import personalize
from ..tasks.checks import rgba, whole
from ..train.data import DataError


def _pixels(pixels: bytes, shape, what: str):
    """RGBA uint8 bytes of [count, height, width] as [count, height, width, 4]."""
    dims = list(shape)
    sizes = [whole(d, 1) for d in dims]
    if len(dims) != 3 or None in sizes:
        raise DataError(f"{what}: the shape {str(dims)[:60]} is not [count, height, width] in whole numbers of 1 "
                        f"or more")
    return rgba(pixels, *sizes, what)


class PersonalizeSession(personalize.PersonalizeSession):
    """tasks.personalize.PersonalizeSession taking the page's images."""

    def add_samples(self, pixels, shape, index) -> list:
        """RGBA images [count, height, width] of class ``index``; their sample ids."""
        return super().add_samples(_pixels(pixels, shape, "the samples"), index)

    def predict(self, pixels, shape) -> list:
        """For each RGBA image of [count, height, width]: {probabilities, label, class_name}."""
        return super().predict(_pixels(pixels, shape, "the image"))
