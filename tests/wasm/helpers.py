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
         np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.uint8): TensorProto.UINT8,
         np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32}


def value_info(name: str, value, dynamic: bool = False):
    if isinstance(value, list):
        return helper.make_tensor_sequence_value_info(name, TYPES[value[0].dtype], None)
    shape = [None] * np.ndim(value) if dynamic else np.shape(value)
    return helper.make_tensor_value_info(name, TYPES[np.asarray(value).dtype], shape)


def node_model(op: str, feeds: dict, outputs: list, domain: str = "", value_infos=(), opset: int = 17,
               initializers=None, dynamic: bool = False, **attrs):
    """A model of one node over inputs ``feeds`` (name -> example value; "" for an omitted input), of their
    shapes (any shape of their rank when ``dynamic``)."""
    names = list(feeds)
    inits = [helper.make_tensor(n, TYPES[v.dtype], v.shape, v.reshape(-1).tolist())
             for n, v in (initializers or {}).items()]
    node = helper.make_node(op, names + list(initializers or {}), outputs, domain=domain, **attrs)
    typed = {vi.name: vi for vi in value_infos}   # an output's static shape, where a kernel needs it
    graph = helper.make_graph([node], "g", [value_info(n, v, dynamic) for n, v in feeds.items() if n],
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


def executor_math():
    """A stand-in for the numpy module whose float32 ``exp`` and ``log`` are the executor's (mathlib.c, through
    the native build's exp_f32 and log_f32): patched into the numpy kernels' modules, the numpy provider computes
    softmax cross-entropy with the same exp and log as the wasm provider."""
    import ctypes
    import types

    from onnxtrain.ops import simd

    lib = simd._lib

    def elementwise(kernel, fallback):
        def fn(x, out=None, order="K"):
            x = np.asarray(x)
            if x.dtype != np.float32:
                return fallback(x, out=out) if out is not None else fallback(x)
            src = np.ascontiguousarray(x)
            dst = np.empty(src.shape, np.float32)
            if src.size:
                kernel(src.size, ctypes.c_void_p(src.ctypes.data), ctypes.c_void_p(dst.ctypes.data))
            if out is not None:
                out[...] = dst
                return out
            return dst
        return fn

    class Numpy(types.ModuleType):
        def __getattr__(self, name):
            return getattr(np, name)

    shim = Numpy("numpy_with_executor_math")
    shim.exp = elementwise(lib.exp_f32, np.exp)
    shim.log = elementwise(lib.log_f32, np.log)
    return shim


def use_executor_math(monkeypatch) -> None:
    """The numpy kernels of softmax cross-entropy (ops/simd.py, ops/nn.py's log_softmax, ops/loss.py) on the
    executor's exp and log."""
    from onnxtrain.ops import loss, nn, simd
    shim = executor_math()
    for module in (simd, nn, loss):
        monkeypatch.setattr(module, "np", shim)
