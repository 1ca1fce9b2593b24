"""onnx's backend node cases (onnx/backend/test/data/node) over tensors whose ops all have a C kernel, on the wasm provider
against the numpy provider: numpy's bits (Exp, Tanh and Pow: the executor's math, within 2 ulp, test_lowerings_text.py), with the
node lowered or, for a case a lowering does not cover, on the host.  A Resize whose scales are fed has its output
shape follow the data, which a compiled program cannot: the session runs those feeds on the numpy kernels."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from helpers import WASM
from onnxtrain import ir
from onnxtrain.backend import _to_onnxtrain
from onnxtrain.runtime import Session
from onnxtrain.wasm.registry import wasm_ops

ROOT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
OPS = {op for domain, op in wasm_ops() if domain in ("", "ai.onnx")}
OWN_MATH = {"Exp", "Tanh", "Pow"}   # the executor's math, not numpy's bits: within 2 ulp (test_lowerings_text.py)


def _cases() -> list:
    found = []
    for folder in sorted(ROOT.glob("test_*")):
        model = onnx.load(str(folder / "model.onnx"))
        tensors = all(v.type.HasField("tensor_type") for v in model.graph.input)   # not sequences, optionals
        if tensors and model.graph.node and all(n.op_type in OPS for n in model.graph.node):
            found.append(folder.name)
    return found


def _inputs(folder: Path, model) -> list:
    """The case's inputs as onnxtrain takes them (bit-pattern types as ir.dtypes tags them: onnxtrain.backend)."""
    arrays = []
    for i, value in enumerate(model.graph.inputs):
        t = onnx.TensorProto()
        t.ParseFromString((folder / "test_data_set_0" / f"input_{i}.pb").read_bytes())
        arrays.append(_to_onnxtrain(numpy_helper.to_array(t), value.type))
    return arrays


@pytest.mark.parametrize("case", _cases())
def test_node_case(case):
    folder = ROOT / case
    proto = onnx.load(str(folder / "model.onnx"))
    model = ir.load(proto.SerializeToString())
    inputs = _inputs(folder, model)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = Session(model).run(inputs)
        session = Session(model, WASM)
        got = session.run(inputs)
        if proto.graph.node[0].op_type == "Resize" and "scales" in case:
            assert session.planned is not None and "may follow the data" in session.planned, session.planned
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if g.dtype == object:
            assert (g == w).all()
        elif {n.op_type for n in proto.graph.node} & OWN_MATH and g.dtype == np.float32:
            ulps = np.abs(g.view(np.int32).astype(np.int64) - w.view(np.int32).astype(np.int64))
            assert ulps.max() <= 2
        else:
            assert g.tobytes() == w.tobytes(), f"{case}: {np.count_nonzero(g != w)} of {g.size} values differ"
