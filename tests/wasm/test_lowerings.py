"""Each lowering against the numpy provider, bit for bit: the executor calls the same C kernels, in the same
order, as the numpy provider's ops with the native build, so the bits must be the same (with no node on the
host).  Softmax cross-entropy is the exception, tested against numpy with a tolerance in test_loss.py."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from helpers import MS, assert_bits, lowered, node_model, run_both

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def check(model, feeds: list, outputs=None):
    want, got, session, _ = run_both(model, feeds)
    lowered(session)
    for i, (g, w) in enumerate(zip(got, want)):
        if outputs is None or i in outputs:
            assert_bits(g, w, f"output {i}")
    return session


# -- matrices -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("transA,transB,alpha,beta,c_shape", [
    (0, 1, 1.0, 1.0, (10,)), (0, 0, 1.0, 1.0, (1, 10)), (1, 0, 0.5, 2.0, (7, 1)), (1, 1, 1.0, 1.0, (7, 10)),
    (0, 0, 1.0, 0.0, (10,)), (0, 1, 2.0, 1.0, None), (0, 0, 1.0, 1.0, ())])
def test_gemm(transA, transB, alpha, beta, c_shape):
    a = rand(*((33, 7) if transA else (7, 33)))
    b = rand(*((10, 33) if transB else (33, 10)))
    feeds = {"a": a, "b": b}
    if c_shape is not None:
        feeds["c"] = rand(*c_shape)
    model = node_model("Gemm", feeds, ["y"], transA=transA, transB=transB, alpha=alpha, beta=beta)
    check(model, list(feeds.values()))


@pytest.mark.parametrize("a_shape,b_shape", [((64, 784), (784, 128)), ((3, 5, 6), (6, 4)), ((2, 1, 5, 6), (3, 6, 2)),
                                             ((5, 6), (2, 6, 3))])
def test_matmul(a_shape, b_shape):
    feeds = {"a": rand(*a_shape), "b": rand(*b_shape)}
    check(node_model("MatMul", feeds, ["y"]), list(feeds.values()))


def test_matmul_of_a_vector_runs_on_the_host():
    """numpy's matmul (not the C gemm) takes 1-D operands: the node stays numpy's, and says so."""
    feeds = {"a": rand(6), "b": rand(6, 3)}
    want, got, session, _ = run_both(node_model("MatMul", feeds, ["y"]), list(feeds.values()))
    assert len(session.fallbacks) == 1 and "1-D" in session.fallbacks[0]
    assert_bits(got[0], want[0])


def test_fused_matmul():
    feeds = {"a": rand(2, 8, 5), "b": rand(2, 6, 8)}
    check(node_model("FusedMatMul", feeds, ["y"], domain=MS, alpha=0.25, transA=1, transB=1), list(feeds.values()))


# -- element-wise -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["Relu", "Sigmoid"])
def test_unary(op):
    x = rand(64, 130)
    x[0, :4] = [0.0, -0.0, np.inf, -np.inf]
    check(node_model(op, {"x": x}, ["y"]), [x])


@pytest.mark.parametrize("op", ["ReluGrad", "SigmoidGrad"])
def test_activation_grads(op):
    dy, x = rand(17, 33), rand(17, 33)
    x[0, :3] = [0.0, -0.0, np.nan]
    check(node_model(op, {"dy": dy, "x": x}, ["dx"], domain=MS), [dy, x])


def test_softmax_and_its_gradient():
    x, dy = rand(12, 37), rand(12, 37)
    check(node_model("Softmax", {"x": x}, ["y"], axis=-1), [x])
    y = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    check(node_model("SoftmaxGrad_13", {"dy": dy, "y": y}, ["dx"], domain=MS, axis=-1), [dy, y])


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("a_shape,b_shape", [((5, 7), (5, 7)), ((5, 7), (7,)), ((3, 1, 7), (4, 1)), ((), (2, 3)),
                                             ((2, 3, 4, 5), (1, 3, 1, 5))])
def test_binary(op, a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape)
    if op == "Div":
        b.reshape(-1)[0] = 0.0
    check(node_model(op, {"a": a, "b": b}, ["y"]), [a, b])


# -- views ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,feeds,attrs", [
    ("Identity", {"x": rand(3, 4)}, {}),
    ("Flatten", {"x": rand(2, 3, 4)}, {"axis": 2}),
    ("Reshape", {"x": rand(2, 3, 4), "s": np.array([0, -1], np.int64)}, {}),
    ("Squeeze", {"x": rand(2, 1, 4), "axes": np.array([1], np.int64)}, {}),
    ("Unsqueeze", {"x": rand(2, 4), "axes": np.array([0, 3], np.int64)}, {}),
])
def test_views_record_nothing(op, feeds, attrs):
    x = feeds.pop("x")
    init = feeds                  # the shape and axes are constants of the graph
    model = node_model(op, {"x": x}, ["y"], initializers=init, **attrs)
    session = check(model, [x])
    assert session.last_program.dispatch_count == 0


def test_shape_is_known():
    """Shape of a computed tensor is known from the static shapes: Relu then Shape gives no host node."""
    x = rand(3, 5)
    relu = helper.make_node("Relu", ["x"], ["r"])
    shape = helper.make_node("Shape", ["r"], ["s"])
    graph = helper.make_graph([relu, shape], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
                              [helper.make_tensor_value_info("s", TensorProto.INT64, [2])])
    from onnxtrain import ir
    model = ir.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    check(model, [x])


# -- reductions ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("axis", [0, -2])
def test_reduce_sum_over_rows(keepdims, axis):
    x = rand(64, 10)
    x[:, 3] = -0.0
    model = node_model("ReduceSum", {"x": x}, ["y"], initializers={"axes": np.array([axis], np.int64)},
                       keepdims=keepdims)
    check(model, [x])


# -- convolution and pooling --------------------------------------------------------------------------------

CONVS = [  # x shape, w shape, attributes
    ((4, 1, 28, 28), (8, 1, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 3, 9, 11), (4, 3, 3, 2), {"strides": [2, 1], "pads": [0, 1, 2, 0], "dilations": [1, 2]}),
    ((2, 4, 7, 7), (6, 2, 3, 3), {"group": 2}),
    ((2, 6, 8, 8), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),     # depthwise
    ((3, 5, 6, 6), (7, 5, 1, 1), {}),                                       # the input is its own columns
    ((2, 3, 8, 8), (4, 3, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_shape,w_shape,attrs", CONVS)
def test_conv(x_shape, w_shape, attrs, bias):
    feeds = {"x": rand(*x_shape), "w": rand(*w_shape)}
    if bias:
        feeds["b"] = rand(w_shape[0])
    check(node_model("Conv", feeds, ["y"], **attrs), list(feeds.values()))


def _conv_out(x, w, attrs):
    from onnxtrain.runtime import Session
    return Session(node_model("Conv", {"x": x, "w": w}, ["y"], **attrs)).run([x, w])[0]


@pytest.mark.parametrize("outputs", [["dx", "dw", "db"], ["", "dw", "db"], ["dx", "", ""]])
@pytest.mark.parametrize("x_shape,w_shape,attrs", CONVS)
def test_conv_grad(x_shape, w_shape, attrs, outputs):
    x, w = rand(*x_shape), rand(*w_shape)
    dy = rand(*_conv_out(x, w, attrs).shape)
    model = node_model("ConvGrad", {"dy": dy, "x": x, "w": w}, outputs, domain=MS, **attrs)
    want, got, session, _ = run_both(model, [dy, x, w])
    lowered(session)
    assert len(got) == len([o for o in outputs if o])
    for g, wnt in zip(got, want):
        assert_bits(g, wnt)


POOLS = [((4, 8, 28, 28), {"kernel_shape": [2, 2], "strides": [2, 2]}),
         ((2, 3, 9, 10), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
         ((2, 3, 7, 7), {"kernel_shape": [3, 2], "ceil_mode": 1, "strides": [2, 2]})]


@pytest.mark.parametrize("x_shape,attrs", POOLS)
def test_maxpool_and_grad(x_shape, attrs):
    x = rand(*x_shape)
    x[0, 0, 0, :2] = np.nan
    x[0, 1, :2, :2] = 1.0           # ties: the first maximum wins
    want, got, session, _ = run_both(node_model("MaxPool", {"x": x}, ["y", "i"], **attrs), [x])
    lowered(session)
    assert_bits(got[0], want[0], "Y")
    np.testing.assert_array_equal(got[1], want[1])
    dy, indices = rand(*want[0].shape), want[1]
    vi = [helper.make_tensor_value_info("dx", TensorProto.FLOAT, [None, *x_shape[1:]])]
    model = node_model("MaxPoolGrad", {"dy": dy, "i": indices}, ["dx"], value_infos=vi, **attrs)
    check(model, [dy, indices])


def test_maxpool_without_indices():
    x = rand(2, 3, 8, 8)
    check(node_model("MaxPool", {"x": x}, ["y"], kernel_shape=[2, 2], strides=[2, 2]), [x])


# -- in-place training ops ----------------------------------------------------------------------------------

@pytest.mark.parametrize("overwrite", [True, False, None])
def test_accumulator(overwrite):
    buf, value = rand(5, 7), rand(5, 7)
    feeds = {"buf": buf, "value": value}
    if overwrite is not None:
        feeds["flag"] = np.array([overwrite])
    model = node_model("InPlaceAccumulatorV2", feeds, ["updated", "out"], domain=MS)
    want, got, session, (theirs, mine) = run_both(model, list(feeds.values()))
    lowered(session)
    assert_bits(mine[0], theirs[0], "the buffer, updated in place")
    for g, w in zip(got, want):
        assert_bits(g, w)


def _optimizer_feeds(shapes, steps_taken):
    params = [rand(*s) for s in shapes]
    grads = [rand(*s) for s in shapes]
    m1 = [rand(*s) * 0.1 for s in shapes]
    m2 = [np.abs(rand(*s)) * 0.01 for s in shapes]
    return [np.array([1e-3], np.float32), np.array([steps_taken], np.int64), params, grads, m1, m2]


@pytest.mark.parametrize("adam_mode,correct_bias,weight_decay", [(0, 1, 0.01), (1, 1, 0.0), (1, 0, 0.1),
                                                                 (1, 1, 0.01)])
@pytest.mark.parametrize("step", [1, 2, 7, 1000, 123457])
def test_adamw(adam_mode, correct_bias, weight_decay, step):
    """The bias corrections come from the step read at run time, pow in double-double (mathlib.c), rounded as
    ``float(a) ** t`` is: the updates are numpy's bits."""
    feeds = _optimizer_feeds([(128, 784), (128,), (10, 128), (10,)], step)
    names = ["lr", "step", "params", "grads", "m1", "m2"]
    model = node_model("AdamWOptimizer", dict(zip(names, feeds)), ["updated", "p_out", "m1_out", "m2_out"],
                       domain=MS, alpha=0.9, beta=0.999, epsilon=1e-8, weight_decay=weight_decay,
                       correct_bias=correct_bias, adam_mode=adam_mode)
    want, got, session, (theirs, mine) = run_both(model, feeds)
    lowered(session)
    assert_bits(got[0], want[0], "updated")
    for seq in (2, 4, 5):
        for i, (g, w) in enumerate(zip(mine[seq], theirs[seq])):
            assert_bits(g, w, f"{names[seq]}[{i}]")


def test_adamw_program_serves_every_step():
    """One compiled program: the step and the learning rate are read from their buffers each run."""
    from helpers import WASM
    from onnxtrain.runtime import Session
    feeds = _optimizer_feeds([(9, 4), (4,)], 1)
    names = ["lr", "step", "params", "grads", "m1", "m2"]
    model = node_model("AdamWOptimizer", dict(zip(names, feeds)), ["updated"], domain=MS, adam_mode=1)
    import copy
    mine, theirs = copy.deepcopy(feeds), copy.deepcopy(feeds)
    numpy_session, wasm_session = Session(model), Session(model, WASM)
    for step in range(1, 6):
        for f in (mine, theirs):
            f[0][...] = 1e-3 * step
            f[1][...] = step
        numpy_session.run(theirs)
        wasm_session.run(mine)
        for seq in (2, 4, 5):
            for g, w in zip(mine[seq], theirs[seq]):
                assert_bits(g, w)
    assert len(wasm_session._programs) == 1


@pytest.mark.parametrize("signal", [None, True, False])
def test_sgd(signal):
    feeds = [np.array([0.05], np.float32), [rand(6, 3), rand(3)], [rand(6, 3), rand(3)]]
    names = {"lr": feeds[0], "params": feeds[1], "grads": feeds[2]}
    if signal is not None:
        feeds.append(np.array([signal]))
        names["signal"] = feeds[-1]
    model = node_model("SGDOptimizerV2", names, ["updated", "p_out"], domain=MS)
    want, got, session, (theirs, mine) = run_both(model, feeds)
    lowered(session)
    assert_bits(got[0], want[0])
    for g, w in zip(mine[1], theirs[1]):
        assert_bits(g, w)


def test_the_kernel_table_covers_the_training_steps():
    from onnxtrain.wasm.registry import wasm_lookup, wasm_ops
    steps = {("", "Gemm"), ("", "Relu"), ("", "SoftmaxCrossEntropyLoss"), (MS, "SoftmaxCrossEntropyLossGrad"),
             ("", "ReduceSum"), ("", "Identity"), (MS, "ReluGrad"), (MS, "InPlaceAccumulatorV2"),
             (MS, "AdamWOptimizer"), (MS, "SGDOptimizerV2"), ("", "Conv"), (MS, "ConvGrad"), ("", "MaxPool"),
             ("", "MaxPoolGrad"), ("", "Shape"), ("", "Flatten"), ("", "Reshape")}
    assert steps <= set(wasm_ops())
    assert all(wasm_lookup(op, domain).__name__ == op for domain, op in steps)
    assert wasm_lookup("Cos") is None


def _gemm_then_accumulate(also_output: bool):
    nodes = [helper.make_node("Gemm", ["dy", "x"], ["g"], transA=1),
             helper.make_node("InPlaceAccumulatorV2", ["buf", "g", "reset"], ["updated"], domain=MS)]
    info = {"dy": [16, 5], "x": [16, 7], "buf": [5, 7]}
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in info.items()]
    inputs.append(helper.make_tensor_value_info("reset", TensorProto.BOOL, [1]))
    outputs = [helper.make_tensor_value_info("updated", TensorProto.BOOL, [1])]
    if also_output:
        outputs.append(helper.make_tensor_value_info("g", TensorProto.FLOAT, [5, 7]))
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    from onnxtrain import ir
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return ir.load(helper.make_model(graph, opset_imports=opsets).SerializeToString())


@pytest.mark.parametrize("also_output", [False, True])
@pytest.mark.parametrize("reset", [True, False])
def test_gemm_into_its_accumulator(also_output, reset):
    """Fused (wasm/fuse.py) unless the product is read elsewhere (here: a graph output); numpy's bits either way."""
    feeds = [rand(16, 5), rand(16, 7), rand(5, 7), np.array([reset])]
    want, got, session, (theirs, mine) = run_both(_gemm_then_accumulate(also_output), feeds)
    lowered(session)
    assert_bits(mine[2], theirs[2], "the accumulation buffer")
    for g, w in zip(got, want):
        assert_bits(g, w)
    runner = next(iter(session._programs.values()))
    ops = [c.op for segment in runner.segments for c in segment[2]]
    assert ("gemm_accumulate" in ops) == (not also_output)
