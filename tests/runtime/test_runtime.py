"""The runtime: planning (order, slots, liveness) and running, with clear errors.  Pure numpy, no onnxruntime."""

import platform
import sys

import numpy as np
import pytest

from onnxtrain.ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from onnxtrain.runtime import FeedError, GraphError, RunError, Session
from onnxtrain.runtime.memory import keep_freed_memory

IN_PYODIDE = True  # pure numpy: also run inside Pyodide by tests/browser/test_in_pyodide.py
FLOAT, INT64 = 1, 7


def vi(name, elem=FLOAT, shape=None):
    return ValueInfo(name, TensorType(elem, shape))


def mlp_model(shuffled=False):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [
        Node("MatMul", ["x", "w"], ["xw"], name="mm"),
        Node("Add", ["xw", "b"], ["h"], name="add"),
        Node("Relu", ["h"], ["y"], name="relu"),
        Node("ReduceSum", ["y"], ["s"], name="sum", attributes={"keepdims": Attribute("keepdims", AttrType.INT, 0)}),
    ]
    if shuffled:
        nodes = nodes[::-1]
    graph = Graph(name="g", nodes=nodes, inputs=[vi("x", shape=["batch", 4])],
                  outputs=[vi("y", shape=["batch", 3]), vi("s", shape=[])],
                  initializers=[Tensor("w", w, FLOAT), Tensor("b", b, FLOAT)])
    return Model(graph=graph, opset_imports={"": 17}), w, b


def reference(x, w, b):
    y = np.maximum(x @ w + b, 0)
    return y, y.sum()


@pytest.mark.parametrize("shuffled", [False, True], ids=["file-order", "reversed-nodes"])
def test_runs_in_dependency_order(shuffled):
    model, w, b = mlp_model(shuffled)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    y, s = Session(model).run([x])
    ry, rs = reference(x, w, b)
    np.testing.assert_allclose(y, ry, rtol=1e-6)
    np.testing.assert_allclose(s, rs, rtol=1e-5)
    assert y.dtype == np.float32


def test_feeds_by_name_and_selected_outputs():
    model, w, b = mlp_model()
    x = np.ones((2, 4), np.float32)
    (s,) = Session(model).run({"x": x}, ["s"])
    np.testing.assert_allclose(s, reference(x, w, b)[1], rtol=1e-6)


def test_intermediates_are_freed_but_outputs_and_initializers_kept():
    model, _, _ = mlp_model()
    plan = Session(model).plan
    freed = {s for step in plan.steps for s in step.free}
    names = {v: k for k, v in plan.slot_of.items()}
    assert {names[s] for s in freed} == {"x", "xw", "h"}


def test_initializer_that_is_also_an_input_is_a_default():
    model, w, b = mlp_model()
    model.graph.inputs.append(vi("b", shape=[3]))
    session = Session(model)
    x = np.ones((1, 4), np.float32)
    np.testing.assert_allclose(session.run({"x": x})[0], reference(x, w, b)[0], rtol=1e-6)
    b2 = np.full(3, 5, np.float32)
    np.testing.assert_allclose(session.run({"x": x, "b": b2})[0], reference(x, w, b2)[0], rtol=1e-6)


@pytest.mark.parametrize("feed, message", [
    (np.ones((2, 4), np.float64), "input 'x' must have dtype float32, got float64"),
    (np.ones((2, 5), np.float32), "input 'x' must have shape [batch, 4], got [2, 5]"),
    (np.ones(4, np.float32), "input 'x' must have shape [batch, 4], got [4]"),
    ("text", "input 'x' must be a numpy array, got str"),
])
def test_bad_feeds_name_the_input(feed, message):
    model, _, _ = mlp_model()
    with pytest.raises(FeedError) as e:
        Session(model).run([feed])
    assert message in str(e.value)


def test_wrong_feed_count_and_unknown_name():
    model, _, _ = mlp_model()
    session = Session(model)
    with pytest.raises(FeedError, match=r"expected 1 inputs \['x'\], got 2"):
        session.run([np.ones((1, 4), np.float32)] * 2)
    with pytest.raises(FeedError, match="'labels' is not an input of the graph"):
        session.run({"x": np.ones((1, 4), np.float32), "labels": np.zeros(1)})


@pytest.mark.parametrize("code, bits, value", [(17, np.array([0x2F], np.uint8), 0.46875),      # float8e4m3fn
                                               (16, np.array([0x3FC0], np.uint16), 1.5),       # bfloat16
                                               (22, np.array([0x0F], np.uint8), -1.0)],        # int4
                         ids=["float8e4m3fn", "bfloat16", "int4"])
def test_a_plain_array_fed_for_a_bit_pattern_input_is_its_bits(code, bits, value):
    graph = Graph(name="g", nodes=[Node("Cast", ["x"], ["y"], attributes={"to": Attribute("to", AttrType.INT, FLOAT)})],
                  inputs=[vi("x", code, [1])], outputs=[vi("y", FLOAT, [1])])
    assert Session(Model(graph=graph, opset_imports={"": 21})).run([bits])[0].tolist() == [value]


def test_undefined_value_is_a_graph_error():
    model, _, _ = mlp_model()
    model.graph.nodes[1].inputs[1] = "bias_missing"
    with pytest.raises(GraphError, match="ai.onnx::Add node 'add' reads 'bias_missing'"):
        Session(model)


def test_cycle_is_a_graph_error():
    graph = Graph(nodes=[Node("Relu", ["b"], ["a"], name="n1"), Node("Relu", ["a"], ["b"], name="n2")],
                  outputs=[vi("a")])
    with pytest.raises(GraphError, match="cycle"):
        Session(Model(graph=graph))


def test_missing_kernel_names_the_op():
    graph = Graph(nodes=[Node("NoSuchOp", ["x"], ["y"], name="weird", domain="com.example")],
                  inputs=[vi("x")], outputs=[vi("y")])
    with pytest.raises(GraphError, match="com.example::NoSuchOp node 'weird'"):
        Session(Model(graph=graph, opset_imports={"": 17, "com.example": 1}))


def test_unsupported_attribute_is_a_graph_error():
    model, _, _ = mlp_model()
    model.graph.nodes[2].attributes["bogus"] = Attribute("bogus", AttrType.INT, 1)
    with pytest.raises(GraphError, match="Relu node 'relu'.*attribute 'bogus'"):
        Session(model)


def test_kernel_failure_names_node_and_shapes():
    model, _, _ = mlp_model()
    model.graph.inputs[0] = vi("x")  # no declared shape, so the feed check lets a bad shape through
    with pytest.raises(RunError) as e:
        Session(model).run([np.ones((2, 7), np.float32)])
    assert "ai.onnx::MatMul node 'mm' failed on inputs (x: float32[2, 7], w: float32[4, 3])" in str(e.value)


def test_run_is_repeatable_and_does_not_touch_initializers():
    model, w, b = mlp_model()
    w0 = w.copy()
    session = Session(model)
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    first = session.run([x])
    second = session.run([x])
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(model.graph.initializers[0].data, w0)


# ---- dead nodes -----------------------------------------------------------------------------------

def test_nodes_no_output_needs_are_dropped():
    model, w, b = mlp_model()
    model.graph.nodes += [Node("MatMul", ["x", "x"], ["dead"], name="dead_mm"),   # would fail: [n, 4] @ [n, 4]
                          Node("Neg", ["dead"], ["dead2"], name="dead_neg"),
                          Node("MaxPool", ["y3"], ["y3p", "y3i"], name="pool",
                               attributes={"kernel_shape": Attribute("kernel_shape", AttrType.INTS, [1])}),
                          Node("Unsqueeze", ["y", "axes"], ["y3"], name="unsq")]
    model.graph.initializers.append(Tensor("axes", np.array([1], np.int64), INT64))
    model.graph.outputs.append(vi("y3p"))
    session = Session(model)
    ran = [step.node.name for step in session.plan.steps]
    assert ran == ["mm", "add", "relu", "sum", "unsq", "pool"]
    assert "dead" not in session.plan.slot_of and "dead2" not in session.plan.slot_of
    assert session.plan.steps[-1].kwargs["_outputs"] == (True, False)   # Indices are not used
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    y, s, y3p = session.run([x])
    np.testing.assert_allclose(y, reference(x, w, b)[0], rtol=1e-6)
    np.testing.assert_array_equal(y3p, y[:, None, :])
    with pytest.raises(ValueError, match="'dead2' is not a value the graph computes"):
        session.run([x], ["dead2"])


def test_in_place_nodes_run_when_nothing_reads_their_outputs():
    nodes = [Node("InPlaceAccumulatorV2", ["buffer", "x"], ["flag"], name="acc", domain="com.microsoft"),
             Node("Relu", ["x"], ["y"], name="relu")]
    graph = Graph(nodes=nodes, inputs=[vi("buffer", shape=[3]), vi("x", shape=[3])], outputs=[vi("y", shape=[3])])
    session = Session(Model(graph=graph, opset_imports={"": 17, "com.microsoft": 1}))
    assert [step.node.name for step in session.plan.steps] == ["acc", "relu"]
    buffer = np.ones(3, np.float32)
    session.run([buffer, np.array([1, -2, 3], np.float32)])
    np.testing.assert_array_equal(buffer, [2, -1, 4])


def test_mse_training_graph_runs_no_dead_nodes():
    """The Sub gradient rule also makes the target's gradient (a Neg) that nothing uses."""
    from onnxtrain import artifacts
    from onnxtrain.api import CheckpointState, Module

    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    graph = Graph(name="lin", nodes=[Node("MatMul", ["x", "w"], ["xw"], name="mm"),
                                     Node("Add", ["xw", "b"], ["y"], name="add")],
                  inputs=[vi("x", shape=["batch", 4])], outputs=[vi("y", shape=["batch", 3])],
                  initializers=[Tensor("w", w, FLOAT), Tensor("b", b, FLOAT)])
    files = artifacts.generate_artifacts(Model(graph=graph, opset_imports={"": 17}), requires_grad=["w", "b"],
                                         loss=artifacts.LossType.MSELoss, optimizer=artifacts.OptimType.AdamW)
    module = Module(files["training_model.onnx"], CheckpointState.load_checkpoint(files["checkpoint"]))
    planned = module._train.plan
    assert "Neg" in [n.op_type for n in planned.graph.nodes]
    assert "Neg" not in [step.node.op_type for step in planned.steps]
    assert len(planned.steps) < len(planned.graph.nodes)

    x = rng.standard_normal((5, 4)).astype(np.float32)
    target = rng.standard_normal((5, 3)).astype(np.float32)
    loss = module(x, target)
    dy = 2 * (x @ w + b - target) / target.size
    np.testing.assert_allclose(loss, np.mean((x @ w + b - target) ** 2), rtol=1e-5)
    np.testing.assert_allclose(module._state._entries["w"].grad, x.T @ dy, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(module._state._entries["b"].grad, dy.sum(axis=0), rtol=1e-5, atol=1e-6)


def test_freed_memory_is_kept_for_the_next_step_on_glibc_only():
    glibc = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"
    assert keep_freed_memory() is glibc and keep_freed_memory() is glibc
