"""The model a Block builds into: a context-local current model (no module-global state)."""
from __future__ import annotations

import contextlib
import contextvars
import copy

from ..ir import load
from ..ir.builder import GraphBuilder
from ..ir.model import Graph, Model

_CURRENT = contextvars.ContextVar("onnxblock_model", default=None)


class Building:
    """The model under construction, with a builder and onnxblock's ``onnx::<token>::<n>`` names."""

    def __init__(self, model: Model):
        self.model = model
        self.builder = GraphBuilder(model.graph)
        self.counter = 0

    def name(self, token: str) -> str:
        while True:
            self.counter += 1
            candidate = f"onnx::{token}::{self.counter}"
            if candidate not in self.builder.names:
                self.builder.names.add(candidate)
                return candidate

    def value_info(self, name: str):
        """The declared ValueInfo of a graph input or output called ``name``, or None."""
        g = self.model.graph
        for vi in list(g.inputs) + list(g.outputs) + list(g.value_info):
            if vi.name == name:
                return vi
        return None

    def exists(self, name: str) -> bool:
        return name in self.builder.names or self.value_info(name) is not None


def current() -> Building:
    building = _CURRENT.get()
    if building is None:
        raise RuntimeError("a Block can only be called inside onnxblock.base(model) or onnxblock.empty_base(), "
                           "or from generate_artifacts")
    return building


@contextlib.contextmanager
def building(model: Model):
    token = _CURRENT.set(Building(model))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def base(model, model_path=None):
    """Build on a copy of ``model`` (an IR Model, ONNX bytes or a path), as ORT's onnxblock.base does."""
    if not isinstance(model, Model):
        model = load(model.SerializeToString() if hasattr(model, "SerializeToString") else model)
    with building(copy.deepcopy(model)) as b:
        yield b.model


@contextlib.contextmanager
def empty_base(opset_version: int | None = None):
    """Build a model from nothing (an optimizer model, say)."""
    model = Model(graph=Graph(name="graph"), ir_version=10, opset_imports={"": opset_version or 17},
                  producer_name="onnxtrain")
    with building(model) as b:
        yield b.model
