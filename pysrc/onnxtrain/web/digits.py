"""The drawing flow at the JavaScript boundary: buffers and JS arrays onto onnxtrain.tasks.handwriting."""
from __future__ import annotations

from ..tasks import handwriting
from .bridge import _buffer, _bytes
from .tabular import training_run


class DigitsSession(handwriting.DigitsSession):
    """tasks.handwriting.DigitsSession for the worker."""

    def __init__(self, model, replay=None, classes=None):
        super().__init__(_bytes(model), None if replay is None else _bytes(replay),
                         None if classes is None else list(_buffer(classes)), run=training_run)

    @classmethod
    def restore(cls, snapshot, replay=None) -> "DigitsSession":
        return super().restore(_bytes(snapshot), None if replay is None else _bytes(replay))

    def add_example(self, pixels, label) -> dict:
        return super().add_example(_buffer(pixels), label)

    def predict(self, pixels) -> list:
        return super().predict(_buffer(pixels))
