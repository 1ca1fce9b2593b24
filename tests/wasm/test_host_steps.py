"""Nodes without a C kernel run on the host between the executor's segments: their inputs are numpy views of the
program's buffers, their outputs copied back; in-place ones write into the fed arrays themselves."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from helpers import MS, WASM, assert_bits, node_model, run_both
from onnxtrain import ir
from onnxtrain.runtime import Session

RNG = np.random.default_rng(2)


def test_a_host_node_between_two_segments():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Cos", ["a"], ["b"]),
             helper.make_node("Mul", ["b", "x"], ["c"]), helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])])
    model = ir.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    want = Session(model).run([x])
    session = Session(model, WASM)
    got = session.run([x])
    assert_bits(got[0], want[0])
    assert session.fallbacks == ["ai.onnx::Cos node: no C kernel for ai.onnx::Cos"]
    kinds = [type(s).__name__ for s in session.last_program.steps]
    assert kinds == ["Call", "HostStep", "Call", "Call"]


def test_an_in_place_host_node_writes_the_fed_arrays():
    grads = [RNG.standard_normal((5, 3)).astype(np.float32), RNG.standard_normal(3).astype(np.float32)]
    model = node_model("InplaceClipGradNorm", {"g": grads}, ["out"], domain=MS, max_norm=0.5)
    want, got, session, (theirs, mine) = run_both(model, [grads])
    assert len(session.fallbacks) == 1 and "InplaceClipGradNorm" in session.fallbacks[0]
    for g, w in zip(mine[0], theirs[0]):
        assert_bits(g, w, "the gradient, clipped in place")
    for g, w in zip(got[0], want[0]):
        assert_bits(g, w)
