"""Symbolic shape inference (``onnxtrain.runtime.shapes.infer_types``) against onnx's own inference.

Each model is built with onnx.helper with symbolic input dims, then inferred twice: by
``onnx.shape_inference.infer_shapes(strict_mode=True, data_prop=True)`` and by onnxtrain. Where onnx gives an
int we must give that int, where onnx keeps a named symbol we must give that name, and where onnx gives a fresh
symbol (``unk__N``) or no dim, any symbol or None is accepted. Every int and every symbol we give is also checked
against the model run in onnxruntime at two sets of input sizes, so that a wrong int or two unequal dims under
one symbol fail even where onnx knows nothing. Where onnxtrain knows more than onnx (a symbol pinned by a
weight), the case says what is right and why.
"""
from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxtrain import ir
from onnxtrain.runtime.shapes import infer_types

F, F16, I64, BOOL = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL
FRESH = "unk__"  # the prefix of the symbols onnx invents


# ---- building models --------------------------------------------------------------------------------

def inp(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def floats(name, values):
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def weight(name, shape, seed=0):
    return floats(name, np.random.default_rng(seed).standard_normal(shape))


def node(op, inputs, outputs, domain="", **attrs):
    return helper.make_node(op, inputs, outputs, name=f"{op}_{outputs[0]}", domain=domain or None, **attrs)


def constant(name, array):
    """A Constant node (as torch exports), not an initializer."""
    return helper.make_node("Constant", [], [name], name=f"Constant_{name}",
                            value=numpy_helper.from_array(np.asarray(array), name))


def model(nodes, inputs, inits=(), opset=17, domains=()):
    """Every node output is a graph output with no type: both engines must infer every one of them."""
    outputs = [onnx.ValueInfoProto(name=o) for n in nodes for o in n.output if o]
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


# ---- comparing --------------------------------------------------------------------------------------

def _dims(type_proto):
    t = type_proto.tensor_type
    if not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param") else None
            for d in t.shape.dim]


def onnx_types(m) -> dict:
    """{output name: (elem type, dims)} as onnx infers them."""
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    return inferred, {o.name: (o.type.tensor_type.elem_type, _dims(o.type)) for o in inferred.graph.output}


def ours(m, names=None) -> dict:
    names = names or [o.name for o in m.graph.output]
    return infer_types(ir.load(m.SerializeToString()), names)


def _input_symbols(m) -> list:
    found = []
    for vi in m.graph.input:
        for d in _dims(vi.type) or []:
            if isinstance(d, str) and d not in found:
                found.append(d)
    return found


def _feeds(m, sizes: dict, special: dict, rng) -> dict:
    feeds = {}
    for vi in m.graph.input:
        shape = [sizes[d] if isinstance(d, str) else d for d in _dims(vi.type)]
        elem = vi.type.tensor_type.elem_type
        if vi.name in special:
            feeds[vi.name] = special[vi.name](shape)
        elif elem == BOOL:
            feeds[vi.name] = np.asarray(rng.random(shape) > 0.5)
        elif elem in (F, F16, TensorProto.DOUBLE):
            feeds[vi.name] = rng.standard_normal(shape).astype(helper.tensor_dtype_to_np_dtype(elem))
        else:  # indices and labels: 0 is valid for every axis and class
            feeds[vi.name] = np.zeros(shape, helper.tensor_dtype_to_np_dtype(elem))
    return feeds


def check_at_run_time(inferred, got: dict, sizes_list, special=None):
    """Run ``inferred`` (onnx's typed copy, every value a graph output) in onnxruntime at each of ``sizes_list``
    ({input symbol: size}) and hold every int and symbol of ``got`` to the sizes seen."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(inferred.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = list(got)
    for sizes in sizes_list:
        values = session.run(names, _feeds(inferred, sizes, special or {}, np.random.default_rng(0)))
        seen = {}
        for name, value in zip(names, values):
            shape = got[name].shape
            if shape is None:
                continue
            assert len(shape) == np.ndim(value), f"{name}: we say rank {len(shape)}, it ran as {np.shape(value)}"
            for axis, (d, size) in enumerate(zip(shape, np.shape(value))):
                where = f"{name} axis {axis} at sizes {sizes}: we say {d!r}, it ran as {size}"
                if isinstance(d, int):
                    assert d == size, where
                elif isinstance(d, str):
                    assert sizes.get(d, seen.setdefault(d, size)) == size, where


def default_sizes(m) -> list:
    symbols = _input_symbols(m)
    return [{s: 3 + i for i, s in enumerate(symbols)}, {s: 6 + 2 * i for i, s in enumerate(symbols)}]


def assert_matches(m, knows_more=None, sizes=None, special=None):
    """onnxtrain's types of every value of ``m`` against onnx's; ``knows_more``: {name: dims} where ours is
    right and more precise than onnx's (each case says why)."""
    knows_more = knows_more or {}
    inferred, theirs = onnx_types(m)
    got = ours(m)
    assert set(got) == set(theirs)
    for name, (elem, dims) in theirs.items():
        mine = got[name]
        if elem:
            assert mine.elem_type == elem, f"{name}: elem type {mine.elem_type}, onnx says {elem}"
        if name in knows_more:
            assert mine.shape == knows_more[name], f"{name}: {mine.shape}, expected {knows_more[name]}"
            continue
        if dims is None:
            continue
        assert mine.shape is not None and len(mine.shape) == len(dims), f"{name}: {mine.shape}, onnx says {dims}"
        for axis, (d, theirs_d) in enumerate(zip(mine.shape, dims)):
            where = f"{name} axis {axis}: we say {d!r}, onnx says {theirs_d!r} (all: {mine.shape} vs {dims})"
            if isinstance(theirs_d, int) or (isinstance(theirs_d, str) and not theirs_d.startswith(FRESH)):
                assert d == theirs_d and type(d) is type(theirs_d), where
            else:
                assert d is None or isinstance(d, (int, str)) and not isinstance(d, bool), where
    check_at_run_time(inferred, got, sizes or default_sizes(m), special)


# ---- the op families --------------------------------------------------------------------------------

def _elementwise():
    return [
        pytest.param(model([node("Add", ["x", "y"], ["s"]), node("Mul", ["s", "b"], ["p"]),
                            node("Sub", ["p", "one"], ["d"]), node("Div", ["d", "row"], ["q"])],
                           [inp("x", ["N", "C"]), inp("y", ["N", "C"]), inp("b", ["C"]), inp("row", [1, "C"])],
                           [floats("one", 1.0)]), {}, None, id="same-symbols-and-lower-rank"),
        pytest.param(model([node("Mul", ["col", "row"], ["outer"])], [inp("col", ["N", 1]), inp("row", [1, "C"])]),
                     {}, None, id="symbol-vs-1"),
        # x ["N", 4] + c [5, 4]: the sum is [5, 4], but N may be 1 as well as 5, so x keeps its symbol
        pytest.param(model([node("Add", ["x", "c"], ["y"]), node("Relu", ["x"], ["r"])], [inp("x", ["N", 4])],
                           [weight("c", (5, 4))]), {}, [{"N": 5}, {"N": 1}], id="symbol-vs-int"),
        pytest.param(model([node("Add", ["x", "y"], ["s"])], [inp("x", ["N", 4]), inp("y", ["M", 4])]),
                     {}, [{"N": 3, "M": 3}, {"N": 1, "M": 5}, {"N": 4, "M": 1}], id="symbol-vs-other-symbol"),
        pytest.param(model([node("Relu", ["x"], ["a"]), node("Sigmoid", ["a"], ["b"]), node("Exp", ["b"], ["c"]),
                            node("Neg", ["c"], ["d"]), node("Abs", ["d"], ["e"]), node("Sqrt", ["e"], ["f"]),
                            node("Tanh", ["f"], ["g"]), node("LeakyRelu", ["g"], ["h"], alpha=0.1),
                            node("Identity", ["h"], ["i"]), node("Erf", ["i"], ["j"])],
                           [inp("x", ["N", 3, "S"])]), {}, None, id="unary"),
        pytest.param(model([node("Less", ["x", "y"], ["lt"]), node("Not", ["lt"], ["ge"]),
                            node("And", ["ge", "m"], ["both"]), node("Equal", ["x", "y"], ["eq"])],
                           [inp("x", ["N", 3]), inp("y", [3]), inp("m", ["N", 1], BOOL)]), {}, None,
                     id="comparisons-are-bool"),
        pytest.param(model([node("Sum", ["a", "b", "c"], ["s"]), node("Max", ["a", "c"], ["mx"]),
                            node("Pow", ["s", "two"], ["p"])],
                           [inp("a", ["N", 1, 4]), inp("b", ["C", 1]), inp("c", [4])], [floats("two", 2.0)]),
                     {}, None, id="variadic-and-pow"),
        pytest.param(model([node("Where", ["cond", "x", "zero"], ["w"])],
                           [inp("cond", ["N", 1], BOOL), inp("x", [1, "C"])], [floats("zero", 0.0)]),
                     {}, None, id="where"),
        pytest.param(model([node("Cast", ["x"], ["i"], to=I64), node("Cast", ["i"], ["h"], to=F16),
                            node("CastLike", ["h", "x"], ["back"])], [inp("x", ["N", 2])], opset=17), {}, None,
                     id="cast"),
    ]


def _matmul():
    tb = model([node("Gemm", ["x", "w", "bias"], ["y"], transB=1, alpha=0.5)], [inp("x", ["N", 4])],
               [weight("w", (3, 4)), weight("bias", (3,))])
    ta = model([node("Gemm", ["a", "b"], ["y"], transA=1)], [inp("a", ["K", "N"]), inp("b", ["K", "M"])])
    both = model([node("Gemm", ["a", "w", "c"], ["y"], transA=1, transB=1)], [inp("a", [4, "N"]), inp("c", ["N", 1])],
                 [weight("w", (5, 4))])
    return [
        pytest.param(tb, {}, None, id="gemm-transB-bias"),
        pytest.param(ta, {}, None, id="gemm-transA"),
        pytest.param(both, {}, [{"N": 3}, {"N": 1}], id="gemm-transA-transB-broadcast-C"),
        pytest.param(model([node("MatMul", ["v", "u"], ["dot"]), node("MatMul", ["v", "m"], ["vm"]),
                            node("MatMul", ["m2", "v"], ["mv"])],
                           [inp("v", ["K"]), inp("u", ["K"]), inp("m", ["K", "M"]), inp("m2", ["M", "K"])]),
                     {}, None, id="matmul-1d"),
        pytest.param(model([node("MatMul", ["x", "w"], ["y"])], [inp("x", ["B", "S", 4])], [weight("w", (4, 6))]),
                     {}, None, id="matmul-batched"),
        pytest.param(model([node("MatMul", ["x", "y"], ["z"])],
                           [inp("x", ["B", 1, "N", "K"]), inp("y", ["H", "K", 2])]),
                     {}, None, id="matmul-broadcast-batch"),
    ]


def _shape_ops():
    x4 = inp("x", ["N", 2, 3, 3])
    view = model([node("Shape", ["x"], ["shape"]), constant("zero", np.int64(0)),
                  node("Gather", ["shape", "zero"], ["n"], axis=0), constant("axes0", np.int64([0])),
                  node("Unsqueeze", ["n", "axes0"], ["n1"]), constant("minus1", np.int64([-1])),
                  node("Concat", ["n1", "minus1"], ["target"], axis=0), node("Reshape", ["x", "target"], ["flat"])],
                 [x4])
    return [
        pytest.param(model([node("Reshape", ["x", "s"], ["y"])], [inp("x", [2, 3, 4])], [ints("s", [4, -1])]),
                     {}, None, id="reshape-constant"),
        pytest.param(model([node("Reshape", ["x", "s"], ["y"]), node("Reshape", ["x", "t"], ["z"])],
                           [inp("x", ["N", 3, 4])], [ints("s", [0, -1]), ints("t", [0, 0, 2, 2])]),
                     {}, None, id="reshape-0-and-minus1"),
        pytest.param(model([node("Reshape", ["x", "s"], ["y"])], [inp("x", ["N", "C", 4])], [ints("s", [0, 0, 2, -1])]),
                     {}, None, id="reshape-0-keeps-symbols"),
        pytest.param(view, {}, None, id="view-size0-minus1"),
        pytest.param(model([node("Shape", ["x"], ["all"]), node("Shape", ["x"], ["tail"], start=1),
                            node("Shape", ["x"], ["mid"], start=1, end=-1), node("Size", ["x"], ["size"])],
                           [x4], opset=17), {}, None, id="shape-start-end-size"),
        pytest.param(model([node("Shape", ["x"], ["shape"]), node("ConstantOfShape", ["shape"], ["zeros"]),
                            node("Expand", ["y", "shape"], ["e"])], [inp("x", ["N", 3]), inp("y", [1, 1])]),
                     {}, None, id="constant-of-shape-and-expand-from-shape"),
        pytest.param(model([node("Flatten", ["x"], ["f1"], axis=1), node("Flatten", ["x"], ["f0"], axis=0),
                            node("Flatten", ["x"], ["f2"], axis=2), node("Flatten", ["x"], ["fm1"], axis=-1)], [x4]),
                     {}, None, id="flatten"),
        pytest.param(model([node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]), node("Transpose", ["x"], ["r"])],
                           [inp("x", ["N", "C", "H", 5])]), {}, None, id="transpose"),
        pytest.param(model([node("Unsqueeze", ["x", "a"], ["u"]), node("Squeeze", ["u", "b"], ["s"]),
                            node("Squeeze", ["y"], ["all"])],
                           [inp("x", ["N", "C"]), inp("y", [1, 3, 1])], [ints("a", [0, -1]), ints("b", [0])], opset=13),
                     {}, None, id="squeeze-unsqueeze-axes-input"),
        pytest.param(model([node("Concat", ["a", "b"], ["c1"], axis=1), node("Concat", ["a", "d"], ["c0"], axis=0),
                            node("Concat", ["a", "a"], ["cneg"], axis=-1)],
                           [inp("a", ["N", 2]), inp("b", ["N", 3]), inp("d", ["M", 2])]), {}, None, id="concat"),
        pytest.param(model([node("Split", ["x"], ["h1", "h2"], axis=1),
                            node("Split", ["x", "parts"], ["p1", "p2"], axis=1)],
                           [inp("x", ["N", 4])], [ints("parts", [1, 3])], opset=13), {}, None, id="split-13"),
        pytest.param(model([node("Split", ["x"], ["a", "b", "c"], axis=-1, num_outputs=3)], [inp("x", ["N", 7])],
                           opset=18), {}, None, id="split-18-num-outputs"),
    ]


def _slice():
    big = np.iinfo(np.int64).max
    cases = {"step": ([1], [8], [1], [2]), "negative-start": ([-3], [big], [1], [1]),
             "clamped-end": ([2], [100], [-1], [1]), "negative-step": ([-1], [-big], [1], [-1]),
             "two-axes": ([0, 1], [2, -1], [2, 1], [1, 1]), "symbolic-axis": ([0], [2], [0], [1])}
    out = []
    for name, (starts, ends, axes, steps) in cases.items():
        out.append(pytest.param(
            model([node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])], [inp("x", ["N", 10, 6])],
                  [ints("starts", starts), ints("ends", ends), ints("axes", axes), ints("steps", steps)]),
            {}, None, id=f"slice-{name}"))
    out.append(pytest.param(model([node("Slice", ["x", "starts", "ends"], ["y"])], [inp("x", [7, "N"])],
                                  [ints("starts", [2]), ints("ends", [-2])]), {}, None, id="slice-default-axes"))
    return out


def _indexing():
    return [
        pytest.param(model([node("Expand", ["x", "s"], ["e"]), node("Expand", ["y", "t"], ["f"])],
                           [inp("x", [3, 1]), inp("y", ["N", 1])], [ints("s", [2, 1, 4]), ints("t", [1, 5])]),
                     {}, None, id="expand"),
        pytest.param(model([node("Tile", ["x", "r"], ["t"]), node("Tile", ["y", "r"], ["u"])],
                           [inp("x", [2, 3]), inp("y", ["N", 3])], [ints("r", [2, 2])]), {}, None, id="tile"),
        pytest.param(model([node("Gather", ["emb", "ids"], ["g"]), node("Gather", ["x", "col"], ["g1"], axis=1),
                            node("Gather", ["x", "one"], ["scalar_index"], axis=1)],
                           [inp("ids", ["N", "S"], I64), inp("x", ["N", 5])],
                           [weight("emb", (10, 4)), ints("col", [0, 2, 4]), ints("one", 1)]),
                     {}, None, id="gather"),
        pytest.param(model([node("GatherElements", ["x", "idx"], ["g"], axis=1)],
                           [inp("x", ["N", 5]), inp("idx", ["N", 2], I64)]), {}, None, id="gather-elements"),
        pytest.param(model([node("TopK", ["x", "k"], ["values", "indices"], axis=-1)], [inp("x", ["N", 6])],
                           [ints("k", [2])]), {}, None, id="topk"),
        pytest.param(model([node("ArgMax", ["x"], ["keep"], axis=1),
                            node("ArgMax", ["x"], ["drop"], axis=1, keepdims=0),
                            node("ArgMin", ["x"], ["last"], axis=0, keepdims=0, select_last_index=1)],
                           [inp("x", ["N", 6, "S"])]), {}, None, id="argmax"),
    ]


def _conv():
    x = inp("x", ["N", 3, 8, 8])
    return [
        pytest.param(model([node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                 strides=[2, 2])], [x], [weight("w", (4, 3, 3, 3)), weight("b", (4,))]),
                     {}, None, id="conv-pads-strides"),
        pytest.param(model([node("Conv", ["x", "w"], ["y"], dilations=[2, 2], pads=[0, 1, 2, 0])], [x],
                           [weight("w", (4, 3, 3, 3))]), {}, None, id="conv-dilations-asymmetric-pads"),
        pytest.param(model([node("Conv", ["x", "w"], ["y"], group=3)], [x], [weight("w", (6, 1, 3, 3))]),
                     {}, None, id="conv-groups"),
        pytest.param(model([node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])],
                           [inp("x", ["N", 3, 7, 8])], [weight("w", (4, 3, 3, 3))]), {}, None, id="conv-same-upper"),
        pytest.param(model([node("Conv", ["x", "w"], ["y"], strides=[2])], [inp("x", ["N", 2, 9])],
                           [weight("w", (5, 2, 3))]), {}, None, id="conv-1d"),
        pytest.param(model([node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [inp("x", ["N", 3, "H", "W"])],
                           [weight("w", (4, 3, 3, 3))]), {}, None, id="conv-symbolic-spatial"),
        pytest.param(model([node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2]),
                            node("ConvTranspose", ["x", "w"], ["z"], strides=[2, 2], output_padding=[1, 1],
                                 pads=[1, 1, 1, 1]),
                            node("ConvTranspose", ["x", "wg"], ["g"], group=2)],
                           [inp("x", ["N", 4, 5, 5])], [weight("w", (4, 2, 3, 3)), weight("wg", (4, 3, 2, 2))]),
                     {}, None, id="conv-transpose"),
    ]


def _pool():
    x = inp("x", ["N", "C", 8, 8])
    return [
        pytest.param(model([node("MaxPool", ["x"], ["floor"], kernel_shape=[3, 3], strides=[2, 2]),
                            node("MaxPool", ["x"], ["ceil"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
                            node("MaxPool", ["x"], ["padded", "indices"], kernel_shape=[2, 2], pads=[1, 1, 1, 1])],
                           [x]), {}, None, id="maxpool"),
        pytest.param(model([node("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], strides=[3, 3], ceil_mode=1),
                            node("AveragePool", ["x"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                 count_include_pad=1),
                            node("AveragePool", ["x"], ["c"], kernel_shape=[2, 2], auto_pad="SAME_UPPER",
                                 strides=[3, 3])], [x]), {}, None, id="averagepool"),
        pytest.param(model([node("GlobalAveragePool", ["x"], ["gap"]), node("GlobalMaxPool", ["x"], ["gmp"])],
                           [inp("x", ["N", "C", "H", "W"])]), {}, None, id="global-pool"),
    ]


def _norm():
    stats = [weight(n, (3,), i) for i, n in enumerate(["scale", "bias", "mean", "var"])]
    return [
        pytest.param(model([node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])],
                           [inp("x", ["N", 3, "H", "W"])], stats, opset=15), {}, None, id="batchnorm-inference"),
        pytest.param(model([node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y", "rm", "rv"],
                                 training_mode=1)], [inp("x", ["N", 3, 4])], stats, opset=15),
                     {}, None, id="batchnorm-training"),
        pytest.param(model([node("LayerNormalization", ["x", "g", "b"], ["y", "mu", "rstd"], axis=-1),
                            node("LayerNormalization", ["x", "g2"], ["z"], axis=1)],
                           [inp("x", ["N", "S", 4]), inp("g2", ["S", 4])], [weight("g", (4,)), weight("b", (4,))]),
                     {}, None, id="layernorm"),
        pytest.param(model([node("Softmax", ["x"], ["s"], axis=1), node("LogSoftmax", ["x"], ["ls"]),
                            node("Hardmax", ["x"], ["h"], axis=0)], [inp("x", ["N", "S", 5])]),
                     {}, None, id="softmax"),
        pytest.param(model([node("Dropout", ["x", "ratio", "train"], ["y", "mask"]), node("Dropout", ["x"], ["plain"])],
                           [inp("x", ["N", 4])],
                           [floats("ratio", 0.5), numpy_helper.from_array(np.array(True), "train")], opset=13),
                     {}, None, id="dropout"),
    ]


def _reduce():
    x = inp("x", ["N", "S", 4])
    return [
        pytest.param(model([node("ReduceMean", ["x"], ["keep"], axes=[1]),
                            node("ReduceSum", ["x", "ax"], ["drop"], keepdims=0),
                            node("ReduceMax", ["x"], ["all"], keepdims=0, axes=[0, 1, 2]),
                            node("ReduceL2", ["x"], ["everything"])],
                           [x], [ints("ax", [-1, 0])], opset=13), {}, None, id="reduce-13"),
        pytest.param(model([node("ReduceMean", ["x", "ax"], ["m"], keepdims=0),
                            node("ReduceSum", ["x", "none"], ["noop"], noop_with_empty_axes=1),
                            node("ReduceSum", ["x"], ["whole"], keepdims=1),
                            node("ReduceLogSumExp", ["x", "ax"], ["lse"]),
                            node("ReduceSumSquare", ["x", "none"], ["sq"], keepdims=0)],
                           [x], [ints("ax", [1]), ints("none", np.zeros(0, np.int64))], opset=18),
                     {}, None, id="reduce-18-axes-input"),
    ]


def _losses():
    scores, labels = inp("scores", ["N", 5]), inp("labels", ["N"], I64)
    return [
        pytest.param(model([node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["none"], reduction="none"),
                            node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["mean", "log_prob"]),
                            node("SoftmaxCrossEntropyLoss", ["scores", "labels", "w"], ["wsum"], reduction="sum",
                                 ignore_index=-1)],
                           [scores, labels], [weight("w", (5,))]), {}, None, id="softmax-cross-entropy"),
        pytest.param(model([node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss", "lp"], reduction="none")],
                           [inp("scores", ["N", 5, "D"]), inp("labels", ["N", "D"], I64)]), {}, None,
                     id="softmax-cross-entropy-spatial"),
        pytest.param(model([node("LogSoftmax", ["scores"], ["lsm"]),
                            node("NegativeLogLikelihoodLoss", ["lsm", "labels"], ["none"], reduction="none"),
                            node("NegativeLogLikelihoodLoss", ["lsm", "labels"], ["mean"])],
                           [scores, labels]), {}, None, id="nll-loss"),
    ]


def _misc():
    rnn_x = inp("x", ["S", "N", 3])
    then = helper.make_graph([node("Relu", ["x"], ["then_out"])], "then", [], [onnx.ValueInfoProto(name="then_out")])
    other = helper.make_graph([node("Neg", ["x"], ["else_out"])], "else", [], [onnx.ValueInfoProto(name="else_out")])
    return [
        pytest.param(model([node("Pad", ["x", "pads"], ["p"]),
                            node("Pad", ["x", "pads", "zero"], ["r"], mode="reflect")],
                           [inp("x", ["N", 4])], [ints("pads", [0, 1, 0, 2]), floats("zero", 0.0)]),
                     {}, None, id="pad"),
        pytest.param(model([node("Pad", ["x", "pads", "", "axes"], ["p"])], [inp("x", ["N", 3, 4])],
                           [ints("pads", [1, 2]), ints("axes", [-1])], opset=18), {}, None, id="pad-axes-18"),
        pytest.param(model([node("Resize", ["x", "", "scales"], ["up"], mode="nearest"),
                            node("Resize", ["x", "", "", "sizes"], ["to"], mode="linear")],
                           [inp("x", ["N", 3, 4, 4])], [floats("scales", [1, 1, 2, 1.5]), ints("sizes", [2, 3, 5, 7])],
                           opset=13), {}, [{"N": 2}, {"N": 2}], id="resize"),
        pytest.param(model([node("Einsum", ["a", "b"], ["c"], equation="bij,bjk->bik"),
                            node("Einsum", ["a"], ["tr"], equation="bii->b")],
                           [inp("a", ["B", 3, 3]), inp("b", ["B", 3, "K"])], opset=12), {}, None, id="einsum"),
        pytest.param(model([node("Einsum", ["a", "b"], ["c"], equation="...ij,...jk"),
                            node("Einsum", ["a", "b"], ["d"], equation="...ij,...jk->...ik"),
                            node("Einsum", ["a"], ["s"], equation="bij->")],
                           [inp("a", ["B", 3, 3]), inp("b", [1, 3, "K"])], opset=12), {}, None,
                     id="einsum-ellipsis-implicit"),
        pytest.param(model([node("LSTM", ["x", "w", "r", "b"], ["y", "y_h", "y_c"], hidden_size=2)], [rnn_x],
                           [weight("w", (1, 8, 3)), weight("r", (1, 8, 2)), weight("b", (1, 16))], opset=14),
                     {}, None, id="lstm"),
        pytest.param(model([node("GRU", ["x", "w", "r"], ["y", "y_h"], hidden_size=2, direction="bidirectional")],
                           [rnn_x], [weight("w", (2, 6, 3)), weight("r", (2, 6, 2))], opset=14), {}, None, id="gru"),
        pytest.param(model([node("If", ["cond"], ["chosen"], then_branch=then, else_branch=other)],
                           [inp("cond", [], BOOL), inp("x", ["N", 3])]), {}, None, id="if-subgraphs"),
    ]


CASES = _elementwise() + _matmul() + _shape_ops() + _slice() + _indexing() + _conv() + _pool() + _norm() \
    + _reduce() + _losses() + _misc()


@pytest.mark.parametrize("m, knows_more, sizes", CASES)
def test_types_match_onnx(m, knows_more, sizes):
    assert_matches(m, knows_more, sizes)


def test_data_dependent_dims_are_unknown_not_guessed():
    """A Reshape to a shape fed at run time and NonZero: onnx knows the rank and no dims; any int we give is
    held to two runs whose data differ."""
    m = model([node("Reshape", ["x", "s"], ["y"]), node("NonZero", ["x"], ["nz"])],
              [inp("x", ["N", 4]), inp("s", [2], I64)])
    inferred, theirs = onnx_types(m)
    got = ours(m)
    assert [len(got[n].shape) for n in ("y", "nz")] == [len(theirs[n][1]) for n in ("y", "nz")] == [2, 2]
    assert got["nz"].shape[0] == 2 and got["nz"].elem_type == I64
    rng = np.random.default_rng(1)
    for target in ([-1, 2], [4, -1]):
        check_at_run_time(inferred, {"y": got["y"]}, [{"N": 2}, {"N": 6}],
                          {"s": lambda shape, t=target: np.int64(t), "x": lambda shape: rng.standard_normal(shape)
                           .astype(np.float32)})


# ---- symbols unified by weights and constants, and true conflicts --------------------------------------

def test_symbol_pinned_by_a_weight_shows_downstream():
    """x ["N", "F"] into Gemm with W [3, 4]: F can only be 4, so x's other readers see 4 (onnx keeps F: it does
    not unify symbols across a node)."""
    m = model([node("Gemm", ["x", "w"], ["y"], transB=1), node("Relu", ["x"], ["r"]),
               node("ReduceSum", ["x", "ax"], ["s"], keepdims=0)],
              [inp("x", ["N", "F"])], [weight("w", (3, 4)), ints("ax", [0])], opset=13)
    assert_matches(m, knows_more={"r": ["N", 4], "s": [4]}, sizes=[{"N": 2, "F": 4}, {"N": 5, "F": 4}])


@pytest.mark.parametrize("pin", ["matmul", "conv", "sce-classes"])
def test_symbol_pinned_by_other_ops(pin):
    """Each op pins a symbol of its input to a weight's fixed size; onnx leaves the input's other readers with the
    symbol, onnxtrain gives the size."""
    if pin == "matmul":   # MatMul's contracted axis: K = 4
        m = model([node("MatMul", ["x", "w"], ["y"]), node("Neg", ["x"], ["r"])], [inp("x", ["N", "K"])],
                  [weight("w", (4, 6))])
        more, sizes = {"r": ["N", 4]}, [{"N": 2, "K": 4}, {"N": 3, "K": 4}]
    elif pin == "conv":   # Conv's input channels: C = 3 (the weight's in-channels times group)
        m = model([node("Conv", ["x", "w"], ["y"]), node("Neg", ["x"], ["r"])], [inp("x", ["N", "C", 5, 5])],
                  [weight("w", (4, 3, 3, 3))])
        more, sizes = {"r": ["N", 3, 5, 5]}, [{"N": 2, "C": 3}, {"N": 3, "C": 3}]
    else:                 # a loss weight of 5 classes pins the scores' class axis: C = 5
        m = model([node("SoftmaxCrossEntropyLoss", ["s", "l", "w"], ["loss", "lp"], reduction="none")],
                  [inp("s", ["N", "C"]), inp("l", ["N"], I64)], [weight("w", (5,))])
        more, sizes = {"lp": ["N", 5]}, [{"N": 2, "C": 5}, {"N": 4, "C": 5}]
    assert_matches(m, knows_more=more, sizes=sizes)


@pytest.mark.parametrize("tie", ["softmax-cross-entropy", "matmul", "concat"])
def test_symbols_tied_by_an_op_share_one_name(tie):
    """Two inputs whose symbols an op ties (the labels' batch and the scores' batch of a loss; MatMul's
    contracted axes) come out under one symbol, whichever of the two; onnx names each after its own input."""
    if tie == "softmax-cross-entropy":
        m = model([node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"], reduction="none"),
                   node("Identity", ["scores"], ["s"]), node("Identity", ["labels"], ["l"])],
                  [inp("scores", ["N", 5]), inp("labels", ["M"], I64)])
        pairs, symbols = [("s", 0, "l", 0), ("loss", 0, "s", 0)], {"N", "M"}
        sizes = [{"N": 2, "M": 2}, {"N": 7, "M": 7}]
    elif tie == "matmul":
        m = model([node("MatMul", ["a", "b"], ["c"]), node("Identity", ["a"], ["ia"]), node("Identity", ["b"], ["ib"])],
                  [inp("a", ["N", "K"]), inp("b", ["J", 3])])
        pairs, symbols = [("ia", 1, "ib", 0)], {"K", "J"}
        sizes = [{"N": 2, "K": 4, "J": 4}, {"N": 2, "K": 6, "J": 6}]
    else:   # Concat ties every axis but its own: the two batch symbols are one
        m = model([node("Concat", ["a", "b"], ["c"], axis=1), node("Identity", ["a"], ["ia"]),
                   node("Identity", ["b"], ["ib"])], [inp("a", ["N", 2]), inp("b", ["M", 3])])
        pairs, symbols = [("ia", 0, "ib", 0), ("c", 0, "ia", 0)], {"N", "M"}
        sizes = [{"N": 2, "M": 2}, {"N": 5, "M": 5}]
    inferred, _ = onnx_types(m)
    got = ours(m)
    for first, i, second, j in pairs:
        a, b = got[first].shape[i], got[second].shape[j]
        assert a == b and a in symbols, f"{first}[{i}] is {a!r}, {second}[{j}] is {b!r}: expected one of {symbols}"
    check_at_run_time(inferred, got, sizes)


def _refused(m, op, names, inputs):
    """infer_types refuses ``m`` with a ValueError naming the op type, one of the nodes ``names`` (with its
    ``inputs``) and the axis."""
    with pytest.raises(ValueError) as caught:
        ours(m)
    message = str(caught.value)
    assert op in message, message
    assert any(name in message and all(i in message for i in inputs[name]) for name in names), message
    assert re.search(r"axis|axes|dim", message, re.IGNORECASE), message


def test_conflict_with_a_weight_is_refused():
    """x [N, 3] MatMul W [4, 5]: the contracted axes disagree (onnx refuses it too)."""
    m = model([node("MatMul", ["feats", "proj.weight"], ["y"])], [inp("feats", ["N", 3])],
              [weight("proj.weight", (4, 5))])
    m.graph.node[0].name = "linear_7"
    with pytest.raises(onnx.shape_inference.InferenceError):
        onnx_types(m)
    _refused(m, "MatMul", ["linear_7"], {"linear_7": ["feats", "proj.weight"]})


@pytest.mark.parametrize("form", ["gemm", "conv"])
def test_two_pins_that_disagree_are_refused(form):
    """One symbol pinned to two sizes by two nodes (F = 4 and F = 5; C = 3 and C = 2): onnx does not see it (it
    does not unify), onnxtrain must refuse it naming the node where the sizes meet."""
    if form == "gemm":
        nodes = [helper.make_node("Gemm", ["feats", "weight_a"], ["ya"], name="head_a", transB=1),
                 helper.make_node("Gemm", ["feats", "weight_b"], ["yb"], name="head_b", transB=1)]
        m = model(nodes, [inp("feats", ["N", "F"])], [weight("weight_a", (3, 4)), weight("weight_b", (3, 5))])
    else:
        nodes = [helper.make_node("Conv", ["feats", "weight_a"], ["ya"], name="head_a"),
                 helper.make_node("Conv", ["feats", "weight_b"], ["yb"], name="head_b")]
        m = model(nodes, [inp("feats", ["N", "C", 5, 5])],
                  [weight("weight_a", (4, 3, 3, 3)), weight("weight_b", (4, 2, 3, 3))])
    onnx_types(m)  # onnx accepts it
    _refused(m, "Gemm" if form == "gemm" else "Conv", ["head_a", "head_b"],
             {"head_a": ["feats", "weight_a"], "head_b": ["feats", "weight_b"]})


# ---- com.microsoft training ops, against what onnxruntime-training declares and produces ---------------

MS = "com.microsoft"


def test_loss_internal_and_accumulator_shapes_at_run_time():
    m = model([node("SoftmaxCrossEntropyLossInternal", ["scores", "labels"], ["none", "log_prob"], domain=MS,
                    reduction="none"),
               node("SoftmaxCrossEntropyLossInternal", ["scores", "labels"], ["mean", "log_prob_2"], domain=MS),
               node("InPlaceAccumulatorV2", ["buffer", "grad", "reset"], ["done", "accumulated"], domain=MS)],
              [inp("scores", ["N", 5]), inp("labels", ["N"], I64), inp("buffer", ["N", 3]), inp("grad", ["N", 3]),
               inp("reset", [1], BOOL)], domains=[(MS, 1)])
    got = ours(m)
    expected = {"none": (F, ["N"]), "log_prob": (F, ["N", 5]), "mean": (F, []), "log_prob_2": (F, ["N", 5]),
                "done": (BOOL, [1]), "accumulated": (F, ["N", 3])}
    assert {n: (t.elem_type, t.shape) for n, t in got.items()} == expected
    check_at_run_time(m, got, [{"N": 2}, {"N": 7}])


def _ort_run_shapes(m, feeds) -> dict:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in m.graph.output]
    return {n: (np.asarray(v).dtype, np.shape(v)) for n, v in zip(names, session.run(names, feeds))}


@pytest.mark.parametrize("which", ["training", "optimizer"])
@pytest.mark.parametrize("case", ["mlp_ce_adamw", "mlp_ce_sgd"])
def test_ort_training_and_optimizer_models(case, which):
    """The loss and InPlaceAccumulatorV2's flags of ORT's training model, and AdamWOptimizer's or
    SGDOptimizerV2's flag of its optimizer model (whose inputs are sequences): as ORT declares them and as they
    come out when ORT runs them."""
    import ort_cases
    files = ort_cases.files(case)
    training = onnx.load(files["training"])
    params = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in training.graph.input
              if vi.name in ort_cases.MLP_ALL}
    m = training if which == "training" else onnx.load(files["optimizer"])
    ops = ({"InPlaceAccumulatorV2", "SoftmaxCrossEntropyLoss"} if which == "training"
           else {"AdamWOptimizer", "SGDOptimizerV2"})
    declared = {o.name: (o.type.tensor_type.elem_type, _dims(o.type)) for o in m.graph.output}
    names = [o for n in m.graph.node if n.op_type in ops for o in n.output if o in declared]
    assert len(names) == (5 if which == "training" else 1)
    got = infer_types(ir.load(m.SerializeToString()), names)
    assert {n: (t.elem_type, t.shape) for n, t in got.items()} == {n: declared[n] for n in names}
    for batch in (2, 5):
        if which == "training":
            feeds = {"input": np.zeros((batch, 20), np.float32), "labels": np.zeros(batch, np.int64),
                     "lazy_reset_grad": np.array([True])}
            for vi in m.graph.input:
                if vi.name not in feeds:
                    feeds[vi.name] = np.zeros(params[vi.name.split("_grad.accumulation.buffer")[0]], np.float32)
        else:
            feeds = {"learning_rate": np.float32([0.1]), "step": np.int64([1])}
            feeds.update({vi.name: [np.zeros(s, np.float32) for s in params.values()] for vi in m.graph.input
                          if vi.type.HasField("sequence_type")})
        ran = _ort_run_shapes(m, feeds)
        for n in names:
            assert ran[n] == (helper.tensor_dtype_to_np_dtype(got[n].elem_type), tuple(got[n].shape)), n

