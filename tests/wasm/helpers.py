"""Single-node models run on the numpy provider and on the wasm provider, and bitwise comparison."""
from __future__ import annotations

import copy

import numpy as np
from onnx import TensorProto, helper

from onnxtrain import ir
from onnxtrain.runtime import Session
from onnxtrain.wasm.provider import open_provider

WASM = open_provider()
MS = "com.microsoft"
TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
         np.dtype(np.bool_): TensorProto.BOOL}


def value_info(name: str, value):
    if isinstance(value, list):
        return helper.make_tensor_sequence_value_info(name, TYPES[value[0].dtype], None)
    return helper.make_tensor_value_info(name, TYPES[np.asarray(value).dtype], np.shape(value))


def node_model(op: str, feeds: dict, outputs: list, domain: str = "", value_infos=(), opset: int = 17,
               initializers=None, **attrs):
    """A model of one node over inputs ``feeds`` (name -> example value; "" for an omitted input)."""
    names = list(feeds)
    inits = [helper.make_tensor(n, TYPES[v.dtype], v.shape, v.reshape(-1).tolist())
             for n, v in (initializers or {}).items()]
    node = helper.make_node(op, names + list(initializers or {}), outputs, domain=domain, **attrs)
    typed = {vi.name: vi for vi in value_infos}   # an output's static shape, where a kernel needs it
    graph = helper.make_graph([node], "g", [value_info(n, v) for n, v in feeds.items() if n],
                              [typed.get(o) or helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                               for o in outputs if o], initializer=inits)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    return ir.load(helper.make_model(graph, opset_imports=opsets).SerializeToString())


def run_both(model, feeds: list):
    """(numpy outputs, wasm outputs, the wasm session), each provider on its own copies of the feeds (in-place ops
    write into them), and the copies: (numpy's, wasm's)."""
    mine = copy.deepcopy(feeds)
    theirs = copy.deepcopy(feeds)
    want = Session(model).run(theirs)
    session = Session(model, WASM)
    got = session.run(mine)
    return want, got, session, (theirs, mine)


def assert_bits(got, want, what="") -> None:
    """Equal shapes, dtypes and bits (NaN payloads and signed zeros included)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape, got.dtype, want.dtype)
    if got.dtype == np.float32:
        got, want = got.view(np.uint32), want.view(np.uint32)
    differ = int(np.count_nonzero(got != want))
    assert differ == 0, f"{what}: {differ} of {got.size} values differ in their bits"


def lowered(session) -> None:
    """The last program ran with no node on the host."""
    assert session.fallbacks == [], session.fallbacks
