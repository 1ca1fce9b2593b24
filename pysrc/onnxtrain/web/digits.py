"""The drawing flow at the JavaScript boundary: buffers and JS arrays onto onnxtrain.tasks.handwriting."""
from __future__ import annotations

from ..tasks import handwriting
from .bridge import _buffer, _bytes
from .tabular import run_on


class DigitsSession(handwriting.DigitsSession):
    """tasks.handwriting.DigitsSession for the worker."""

    def __init__(self, model, replay=None, classes=None, providers=None):
        self.provider, run = run_on(providers)
        super().__init__(_bytes(model), None if replay is None else _bytes(replay),
                         None if classes is None else list(_buffer(classes)), run=run)

    @classmethod
    def restore(cls, snapshot, replay=None, providers=None) -> "DigitsSession":
        return super().restore(_bytes(snapshot), None if replay is None else _bytes(replay), providers=providers)

    def add_example(self, pixels, label) -> dict:
        return super().add_example(_buffer(pixels), label)

    def predict(self, pixels) -> list:
        return super().predict(_buffer(pixels))

    def finish_fine_tune(self) -> dict:
        """The examples fine-tuned on (the first and last loss are the summary's: the library's train() drives the
        run's Trainer directly, so they are not known here)."""
        return {"examples": super().finish_fine_tune()["examples"]}
