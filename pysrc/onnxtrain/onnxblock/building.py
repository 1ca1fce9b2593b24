"""The model a Block builds into: a context-local current model (no module-global state).

The truth is onnxtrain's IR: onnxtrain's blocks build into it.  Where the model was given as an
``onnx.ModelProto`` (or comes from ``empty_base`` where onnx imports), user code (``self.base`` inside
``build``, ``accessor.model``) gets one ``onnx.ModelProto`` instead, the same object every time, which it may
change.  The two are kept in step lazily: the proto is written from the IR when user code asks for it, and read
back into the IR at the next access of onnxtrain's own code after that; when one of onnxtrain's blocks,
called from user code, returns, its nodes are written into the proto in place, so that references user code
holds see them.  Nothing is converted while no proto has been handed out (generate_artifacts' own path)."""
from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses

from ..ir import load
from ..ir.builder import GraphBuilder
from ..ir.model import Graph, Model
from ..ir.ort_names import MS_DOMAIN
from . import protos

_CURRENT = contextvars.ContextVar("onnxblock_model", default=None)


def _adopt(dst, src) -> None:
    """Make dataclass ``dst`` equal to ``src`` in place (so that holders of ``dst`` see the change)."""
    for f in dataclasses.fields(dst):
        setattr(dst, f.name, getattr(src, f.name))


def shallow_copy(model: Model) -> Model:
    """A copy of ``model`` whose initializers share their (never written) arrays with ``model``'s."""
    memo = {id(t.data): t.data for t in model.graph.initializers}
    return copy.deepcopy(model, memo)


class Building:
    """The model under construction, with a builder and onnxblock's ``onnx::<token>::<n>`` names.
    ``protos``: hand user code an ``onnx.ModelProto`` rather than the IR."""

    def __init__(self, model: Model, protos: bool = False):
        self._model = model
        self.protos = protos
        self._builder = GraphBuilder(model.graph)
        self.counter = 0
        self._proto = None           # the ModelProto handed to user code, once it asked
        self._proto_is_truth = False  # user code may have changed the proto since the IR was last read from it
        self._ir_changed = False      # the IR may have changed since the proto was last written
        self._depth = 0               # nesting of onnxtrain's own blocks

    @property
    def model(self) -> Model:
        """The IR, for onnxtrain's own code (it may change it)."""
        if self._proto_is_truth:
            self._read_back()
        self._ir_changed = True
        return self._model

    @property
    def builder(self) -> GraphBuilder:
        """The IR's builder, for onnxtrain's own code (it may change the IR)."""
        self.model  # noqa: B018  (reads back a changed proto first)
        return self._builder

    def replace(self, model: Model) -> None:
        """The model becomes ``model`` (ORT's blocks ``CopyFrom`` their result into the base)."""
        self.model  # noqa: B018  (reads back a changed proto first)
        graph = self._model.graph
        _adopt(self._model, model)
        _adopt(graph, model.graph)
        self._model.graph = graph
        self._builder.names |= GraphBuilder(graph).names

    def _read_back(self) -> None:
        self._proto_is_truth = False
        self.replace(protos.model_from_proto(self._proto))

    def handed_out(self):
        """The model as user code sees it: the ModelProto (written from the IR if that changed), or the IR."""
        if not self.protos:
            return self.model
        if self._proto is None:
            self._proto = protos.model_to_proto(self._model)
        elif self._ir_changed and not self._proto_is_truth:
            protos.copy_into(self._proto, protos.model_to_proto(self._model))
        self._ir_changed = False
        self._proto_is_truth = True
        return self._proto

    @contextlib.contextmanager
    def own_code(self):
        """Around onnxtrain's own blocks: when the outermost returns, a handed-out proto gets its changes."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if self._depth == 0 and self._proto is not None and self._ir_changed:
            self.handed_out()

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


class ModelAccessor:
    """What ``base`` and ``empty_base`` give: ``model`` is the model being built (an ``onnx.ModelProto`` where
    the model was given as one, or onnx imports for ``empty_base``; else the IR)."""

    def __init__(self, building_: Building, model_path=None):
        self._building = building_
        self._path = model_path

    @property
    def model(self):
        return self._building.handed_out()

    @property
    def path(self) -> str:
        if self._path is None:
            raise RuntimeError("The path to the onnx model was not set. Please use the context manager "
                               "onnxblock.onnx_model to create the model and pass in a string.")
        return self._path

    @property
    def has_path(self) -> bool:
        return self._path is not None


def current() -> Building:
    building_ = _CURRENT.get()
    if building_ is None:
        raise RuntimeError("a Block can only be called inside onnxblock.base(model) or onnxblock.empty_base(), "
                           "or from generate_artifacts")
    return building_


@contextlib.contextmanager
def building(model: Model, protos: bool = False):
    token = _CURRENT.set(Building(model, protos))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def empty_model(opset_version: int | None = None) -> Model:
    return Model(graph=Graph(name="graph"), ir_version=10, opset_imports={MS_DOMAIN: 1, "": opset_version or 17},
                 producer_name="onnxtrain")


@contextlib.contextmanager
def base(model, model_path=None):
    """Build on a copy of ``model``, as ORT's onnxblock.base does.  An ``onnx.ModelProto`` comes back as one
    (``accessor.model``, ``self.base``, ``to_model_proto()``); an IR Model, ONNX bytes or a path as the IR."""
    if model is None:
        raise RuntimeError("Base onnx model cannot be None. Please use onnxblock.empty_base if you would like to "
                           "build a model from scratch.")
    as_proto = protos.is_proto(model)
    if as_proto:
        model = protos.model_from_proto(model)
    elif isinstance(model, Model):
        model = copy.deepcopy(model)
    else:
        model = load(model)
    with building(model, as_proto) as b:
        yield ModelAccessor(b, model_path)


@contextlib.contextmanager
def empty_base(opset_version: int | None = None):
    """Build a model from nothing (an optimizer model, say); an ``onnx.ModelProto`` where onnx imports."""
    with building(empty_model(opset_version), protos.available()) as b:
        yield ModelAccessor(b)
