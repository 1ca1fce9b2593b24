"""onnx's backend node test data (model.onnx and test_data_set_*), run on onnxtrain's runtime."""
from __future__ import annotations

import fnmatch
import glob
import os

import numpy as np
import onnx
from onnx import numpy_helper as nh

from onnxtrain import ir
from onnxtrain.ir import dtypes
from onnxtrain.runtime import Session

NODE_DATA = glob.glob(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node"))[0]


def node_tests(*patterns, excluded=()) -> list:
    """Names of the node tests matching any of ``patterns``, less ``excluded``."""
    names = os.listdir(NODE_DATA)
    return sorted({n for p in patterns for n in fnmatch.filter(names, p)} - set(excluded))


def _load(path, typ):
    """A value as onnxtrain holds it: bfloat16, float8 and 4-bit tensors (float32 or int8/uint8 values in onnx's
    data) as bit patterns of their type."""
    kind = typ.WhichOneof("value")
    proto = {"sequence_type": onnx.SequenceProto, "optional_type": onnx.OptionalProto}.get(kind, onnx.TensorProto)()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    value = (nh.to_list if kind == "sequence_type" else nh.to_optional if kind == "optional_type"
             else nh.to_array)(proto)
    if kind == "tensor_type" and typ.tensor_type.elem_type in dtypes.BIT_PATTERN_TYPES:
        return dtypes.to_bits(typ.tensor_type.elem_type, value)
    if kind == "tensor_type" and typ.tensor_type.elem_type == dtypes.STRING:
        return _text(value)
    return value


def _text(strings):
    """A STRING tensor as str (onnx's data holds str, onnxtrain's kernels give bytes)."""
    out = np.empty(strings.shape, dtype=object)
    out.ravel()[:] = [s.decode("utf-8") if isinstance(s, bytes) else s for s in strings.ravel()]
    return out


def _same(got, want, rtol, atol):
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(_same(a, b, rtol, atol)
                                                                       for a, b in zip(got, want))
    if want is None or got is None:
        return got is None and want is None
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype == object:
        got = _text(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.kind in "fc":
        return np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return np.array_equal(got, want)


def _untagged(value):
    """A bit-pattern array as the plain uint8/uint16 array a caller would feed (without ir.dtypes' type tag)."""
    return value.view(np.dtype(value.dtype.str)) if isinstance(value, np.ndarray) and value.dtype.metadata else value


def check_node_test(name, rtol=1e-3, atol=1e-7, plain_bits=False):
    """Run every data set of node test ``name`` and compare all outputs (onnx's own default tolerances).
    ``plain_bits`` feeds bfloat16, float8 and 4-bit inputs as plain uint8/uint16 bit patterns."""
    d = os.path.join(NODE_DATA, name)
    m = onnx.load(os.path.join(d, "model.onnx"))
    session = Session(ir.load(m.SerializeToString()))
    for case in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
        feeds = {vi.name: _load(os.path.join(case, f"input_{i}.pb"), vi.type) for i, vi in enumerate(m.graph.input)
                 if os.path.exists(os.path.join(case, f"input_{i}.pb"))}
        if plain_bits:
            feeds = {k: _untagged(v) for k, v in feeds.items()}
        want = [_load(os.path.join(case, f"output_{i}.pb"), vi.type) for i, vi in enumerate(m.graph.output)]
        got = session.run(feeds)
        for i, (g, w) in enumerate(zip(got, want)):
            assert _same(g, w, rtol, atol), f"{name} {os.path.basename(case)} output {i}:\n{g!r}\nexpected\n{w!r}"
