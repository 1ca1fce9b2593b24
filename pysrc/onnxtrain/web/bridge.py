"""The boundary with JavaScript: a request's values as plain Python values (``plain``), the numpy array a tensor is
copied into (``new_array``), and what the page is told of a model (``describe_model``, ``signature``).

Everything crosses the boundary as bytes, numpy arrays, numbers, lists and dicts, so the same code runs (and is
tested) in CPython.  The only Pyodide-specific step is in ``plain``: a JavaScript value that arrives as a JsProxy
is converted by its ``to_py()`` (a typed array's gives a memoryview).
"""
from __future__ import annotations

import json
import re

import numpy as np

from .. import ir
from ..ir.model import OptionalType, SequenceType, SparseTensorType, TensorType

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
          "bool": np.bool_}


#: onnxruntime-web's tensor type names, by numpy dtype
TYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64", np.dtype(np.int64): "int64",
         np.dtype(np.int32): "int32", np.dtype(np.uint8): "uint8", np.dtype(np.bool_): "bool",
         np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.uint16): "uint16",
         np.dtype(np.uint32): "uint32", np.dtype(np.uint64): "uint64"}


_AS_THEY_ARE = {np.ndarray, str, int, float, bool, type(None)}


def plain(value):
    """A request's value as plain Python: a buffer (a typed array's memoryview) as bytes, a JsProxy as what its
    ``to_py()`` gives, lists and dicts with their values converted; numpy arrays (the engine's tensors), numbers,
    strings and None as they are."""
    if type(value) in _AS_THEY_ARE:  # most of a request (a failed getattr costs more than the whole check)
        return value
    to_py = getattr(value, "to_py", None)  # a JsProxy in Pyodide
    if to_py is not None:
        value = to_py()
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    if isinstance(value, dict):
        return {key: plain(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def new_array(shape, dtype: str, nbytes: int) -> tuple:
    """(an uninitialised array of ``shape`` and ``dtype``, the address of its data) for the worker to copy a
    typed array's ``nbytes`` bytes into: one copy, straight into Pyodide's memory."""
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; use one of {sorted(DTYPES)}")
    shape = [int(d) for d in plain(shape)]
    array = np.empty(shape, DTYPES[dtype])
    if array.nbytes != nbytes:
        raise ValueError(f"a buffer of {nbytes // array.itemsize} {dtype} values cannot have shape {shape}")
    return array, array.__array_interface__["data"][0]


def describe_model(model) -> dict:
    """A forward model's inputs, outputs and parameters (initializers), for the page's checklist."""
    from ..autodiff import GRADIENT_RULES, NO_GRADIENT  # not a module the engine's start imports

    try:
        m = ir.load(model)
    except ir.ModelDecodeError as e:
        raise ValueError(f"this file is not an ONNX model ({e})") from None
    g = m.graph
    shape = lambda vi: None if vi.type is None or getattr(vi.type, "shape", None) is None else \
        ["?" if d is None else d for d in vi.type.shape]  # noqa: E731
    return {"inputs": [{"name": v.name, "shape": shape(v)} for v in g.inputs],
            "outputs": [{"name": v.name, "shape": shape(v)} for v in g.outputs],
            "parameters": [{"name": t.name, "shape": list(t.data.shape), "count": int(t.data.size),
                            "float": t.data.dtype.kind == "f"} for t in g.initializers],
            "ops_without_gradient": sorted({n.op_type for n in g.nodes}
                                           - set(GRADIENT_RULES) - NO_GRADIENT - {"Constant"})}


def _type_text(t) -> str:
    if isinstance(t, (TensorType, SparseTensorType)):
        dims = "" if t.shape is None else f" [{', '.join('?' if d is None else str(d) for d in t.shape)}]"
        return f"{ir.dtypes.name(t.elem_type)}{dims}"
    if isinstance(t, (SequenceType, OptionalType)):
        return f"{type(t).__name__[:-4].lower()}({'?' if t.elem_type is None else _type_text(t.elem_type)})"
    return "?"


def signature(model) -> str:
    """How to call a model, in a line: its inputs and outputs with types and shapes, then its doc string.  A name
    that is not a plain identifier (spaces, commas, quotes) is quoted as a JSON string, so the line reads one way."""
    g = ir.load(model).graph

    def values(infos):
        return ", ".join(f"{v.name if re.fullmatch(r'[A-Za-z0-9_.:/-]+', v.name) else json.dumps(v.name)} "
                         f"{_type_text(v.type)}" for v in infos)
    return f"Inputs: {values(g.inputs)}. Outputs: {values(g.outputs)}." + (f" {g.doc_string}" if g.doc_string else "")
