"""The CSV flow at the JavaScript boundary: JsProxy buffers to bytes and lists, onto onnxtrain.tasks.tabular, with
the page's run (a bridge TrainingSession, whose best-epoch and artifact calls the worker makes)."""
from __future__ import annotations

import functools

from ..api.module import provider_for
from ..tasks import tabular
from ..tasks.csv_table import describe, detect_task  # noqa: F401  (the names tools and tests reach through this module)
from ..tasks.split import stratified_split  # noqa: F401
from ..tasks.tabular import mlp_model  # noqa: F401
from ..tasks.tabular_prep import prepare, with_preprocessing  # noqa: F401
from ..train.csv import csv_inputs as read_csv_inputs, is_missing, parse_csv  # noqa: F401
from ..train.data import DataError  # noqa: F401
from .bridge import TrainingSession, _buffer, _bytes
from .train_loop import camel_keys


def training_run(arts: dict, train: list, validation=None, seed: int = 0, providers=None) -> TrainingSession:
    """The page's run of a task: a bridge TrainingSession holding the data (see tasks.training), on the first of
    ``providers`` that is here."""
    session = TrainingSession.from_artifacts(arts, providers)
    session.set_data(train, validation, seed)
    return session


def run_on(providers) -> tuple:
    """(the first of ``providers``, onnxruntime-web's executionProviders names, that is here; the page's run of a
    task on it)."""
    provider = provider_for(None if providers is None else [str(p) for p in _buffer(providers)])
    return provider, functools.partial(training_run, providers=[provider])


def csv_inputs(data, inputs) -> dict:
    return read_csv_inputs(_bytes(data), _buffer(inputs))


class TabularSession(tabular.TabularSession):
    """tasks.tabular.TabularSession for the worker."""

    def __init__(self, data, name: str = "the CSV file", providers=None):
        self.provider, run = run_on(providers)
        super().__init__(_bytes(data), str(name), run=run)

    def describe(self) -> dict:
        return camel_keys(super().describe())

    def setup(self, label, task, hidden, validation=0.2, seed=0, optimizer="AdamW") -> dict:
        return camel_keys(super().setup(label, task, _buffer(hidden), validation, seed, optimizer))

    def restore(self, data) -> int:
        return super().restore(_bytes(data))

    def predict_csv(self, data, offset=0, limit=100) -> dict:
        return super().predict_csv(_bytes(data), offset, limit)
