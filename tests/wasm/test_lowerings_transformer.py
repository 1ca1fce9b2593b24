"""The lowerings the conv block and the transformer need, each against the numpy provider bit for bit: layouts
(Constant, Cast, Transpose, Expand), Neg, Sqrt, Reciprocal, Sum, Scale, the reductions in numpy's orders,
GlobalAveragePool, LayerNormalization and its gradient."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import MS, run_both
from onnxtrain import ir
from test_lowerings import check, rand


def ints(*values):
    return np.array(values, np.int64)


# -- layouts ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,perm", [((8, 64, 4, 32), [0, 2, 1, 3]), ((8, 64, 4, 32), [0, 2, 3, 1]),
                                        ((3, 5), None), ((2, 3, 4), [2, 0, 1]), ((1, 6, 1, 5), [3, 2, 1, 0])])
def test_transpose(shape, perm):
    x = rand(*shape)
    attrs = {} if perm is None else {"perm": perm}
    check(node_model_("Transpose", {"x": x}, **attrs), [x])


def node_model_(op, feeds, initializers=None, domain="", opset=17, **attrs):
    from helpers import node_model
    return node_model(op, feeds, ["y"], domain=domain, initializers=initializers, opset=opset, **attrs)


@pytest.mark.parametrize("x_shape,shape", [((3, 1), (3, 4)), ((5,), (2, 3, 5)), ((2, 1, 4), (1, 3, 1)),
                                           ((4,), (4,))])
def test_expand(x_shape, shape):
    x = rand(*x_shape)
    check(node_model_("Expand", {"x": x}, initializers={"s": ints(*shape)}), [x])


def test_constant_and_cast_record_nothing():
    value = numpy_helper.from_array(rand(3, 4), "c")
    nodes = [helper.make_node("Constant", [], ["c"], value=value),
             helper.make_node("Add", ["x", "c"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    model = ir.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    session = check(model, [rand(3, 4)])
    assert session.last_program.dispatch_count == 1


def test_cast_to_another_type_runs_on_the_host():
    x = rand(3, 4)
    want, got, session, _ = run_both(node_model_("Cast", {"x": x}, to=TensorProto.INT64), [x])
    assert len(session.fallbacks) == 1 and "casts integers and bool to float32" in session.fallbacks[0]
    assert (got[0] == want[0]).all()


# -- element-wise -------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:invalid value", "ignore:divide by zero")
@pytest.mark.parametrize("op", ["Neg", "Sqrt", "Reciprocal"])
def test_unary(op):
    x = rand(17, 33)
    x[0, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0]
    check(node_model_(op, {"x": x}), [x])


@pytest.mark.parametrize("shapes", [[(4, 5), (4, 5)], [(4, 5), (5,), (3, 1, 1)], [(6,)], [(2, 3), (2, 3), (2, 3), (3,)]])
def test_sum(shapes):
    feeds = {f"x{i}": rand(*s) for i, s in enumerate(shapes)}
    check(node_model_("Sum", feeds), list(feeds.values()))


@pytest.mark.parametrize("scale,scale_down", [(np.float32(0.125), 0), (ints(64), 1), (np.float32(3.0), 1)])
def test_scale(scale, scale_down):
    x = rand(8, 16)
    check(node_model_("Scale", {"x": x}, initializers={"s": np.asarray(scale).reshape(1)}, domain=MS,
                      scale_down=scale_down), [x])


# -- reductions ---------------------------------------------------------------------------------------------

REDUCTIONS = [((8, 64, 128), [1, 0]), ((8, 64, 128), [1]), ((8, 64, 128), [-1]), ((8, 64, 128), [0, 1, 2]),
              ((3, 300), [1]), ((5, 1, 7), [0]), ((5, 1), [0]), ((4, 6, 1, 5), [1, 2]), ((2, 3, 4, 5), [2, 3]),
              ((1000,), [0]), ((4, 2, 1), [2, 1])]


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("shape,axes", REDUCTIONS)
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean"])
def test_reductions(op, shape, axes, keepdims):
    x = rand(*shape) * 10
    x.reshape(-1)[::7] = -0.0
    opset = 18 if op == "ReduceMean" else 17
    check(node_model_(op, {"x": x}, initializers={"axes": ints(*axes)}, opset=opset, keepdims=keepdims), [x])


def test_reduce_mean_with_the_axes_attribute():
    x = rand(8, 64, 128)
    check(node_model_("ReduceMean", {"x": x}, axes=[1], keepdims=0), [x])


def test_a_reduction_numpy_adds_otherwise_runs_on_the_host():
    x = rand(4, 5, 6)
    want, got, session, _ = run_both(node_model_("ReduceSum", {"x": x}, initializers={"axes": ints(0, 2)}), [x])
    assert len(session.fallbacks) == 1 and "order" in session.fallbacks[0]


def test_global_average_pool():
    x = rand(16, 32, 48, 48)
    check(node_model_("GlobalAveragePool", {"x": x}), [x])


# -- LayerNormalization -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis,bias", [((8, 64, 128), -1, True), ((8, 64, 128), -1, False),
                                             ((4, 6, 5), 1, True), ((3, 300), -1, True), ((5, 7), 1, True)])
def test_layer_normalization(shape, axis, bias):
    x = rand(*shape) * 3 + 1
    trailing = shape[axis:] if axis >= 0 else shape[axis:]
    feeds = {"x": x, "scale": rand(*trailing)}
    if bias:
        feeds["b"] = rand(*trailing)
    from helpers import node_model
    model = node_model("LayerNormalization", feeds, ["y", "mean", "inv_std"], axis=axis, epsilon=1e-5)
    check(model, list(feeds.values()))


@pytest.mark.parametrize("shape,axis", [((8, 64, 128), -1), ((4, 6, 5), 1), ((3, 300), -1)])
@pytest.mark.parametrize("outputs", [["dx", "dscale", "dbias"], ["dx", "", ""], ["", "dscale", "dbias"]])
def test_layer_normalization_grad(shape, axis, outputs):
    from helpers import node_model
    from onnxtrain.ops.norm import LayerNormalization
    x, dy = rand(*shape) * 3 + 1, rand(*shape)
    trailing = shape[axis:]
    scale = rand(*trailing)
    _, mean, inv_std = LayerNormalization(x, scale, axis=axis)
    feeds = {"dy": dy, "x": x, "scale": scale, "mean": mean, "inv_std": inv_std}
    model = node_model("LayerNormalizationGrad", feeds, outputs, domain=MS, axis=axis)
    check(model, list(feeds.values()))


def test_layer_normalization_with_a_scale_per_row_runs_on_the_host():
    from helpers import node_model
    x, scale = rand(4, 6), rand(4, 6)
    model = node_model("LayerNormalization", {"x": x, "scale": scale}, ["y"], axis=-1)
    want, got, session, _ = run_both(model, [x, scale])
    assert len(session.fallbacks) == 1 and "normalised from axis" in session.fallbacks[0]
    np.testing.assert_array_equal(got[0], want[0])


def test_conv_grad_of_one_channel_sums_a_long_column_as_numpy():
    """The bias and weight gradients of one channel over 9000 images: numpy adds the column pairwise in blocks of
    8192."""
    from helpers import node_model
    for seed in range(4):     # a sum in the other order can match by chance: four draws
        rng = np.random.default_rng(seed)
        x, w, dy = [rng.standard_normal(s).astype(np.float32) for s in ((9000, 1, 1, 1), (1, 1, 1, 1), (9000, 1, 1, 1))]
        model = node_model("ConvGrad", {"dy": dy, "x": x, "w": w}, ["dx", "dw", "db"], domain=MS,
                           kernel_shape=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
        check(model, [dy * 100, x, w])
