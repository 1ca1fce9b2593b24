"""Every gradient rule against central finite differences (float64), and the same graphs in onnxruntime."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onnxtrain import ir
from onnxtrain.autodiff import GRADIENT_RULES, NO_GRADIENT, GradientNotRegisteredError, build_gradient_graph
from onnxtrain.runtime import Session

R = np.random.default_rng(0)


def rnd(*shape, low=None):
    x = R.standard_normal(shape)
    return np.abs(x) + low if low is not None else x


def op_model(op, inputs, attrs, n_outputs=1, consts=(), dtype=np.float64, opset=17, domain="", w_shape=None):
    """op(inputs) -> output 0; loss = ReduceSum(output * w), w an input of shape ``w_shape``."""
    names = [f"x{i}" for i in range(len(inputs))]
    nodes = [helper.make_node(op, names, [f"y{i}" for i in range(n_outputs)], name="op", domain=domain, **attrs)]
    nodes += [helper.make_node("Mul", ["y0", "w"], ["weighted"], name="weigh"),
              helper.make_node("ReduceSum", ["weighted"], ["loss"], name="sum", keepdims=0)]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph_inputs, inits = [], []
    for i, (name, value) in enumerate(zip(names, inputs)):
        if i in consts:
            inits.append(onnx.numpy_helper.from_array(value, name))
        else:
            vt = helper.np_dtype_to_tensor_dtype(value.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, vt, value.shape))
    graph = helper.make_graph(nodes, "g", graph_inputs, [helper.make_tensor_value_info("loss", elem, [])], inits)
    graph.input.append(helper.make_tensor_value_info("w", elem, w_shape))
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def forward_output_shape(model, feeds):
    probe = ir.load(model.SerializeToString())
    probe.graph.nodes = probe.graph.nodes[:1]
    probe.graph.inputs = [v for v in probe.graph.inputs if v.name != "w"]
    probe.graph.outputs = [ir.ValueInfo("y0")]
    return Session(probe).run(feeds)[0].shape


def check(op, inputs, attrs=None, wrt=None, consts=(), n_outputs=1, opset=17, rtol=1e-6, atol=1e-8, ort_check=True,
          fresh=False):
    """``fresh``: each forward run in a new session (a seeded random op then draws its first values each time)."""
    attrs = attrs or {}
    wrt = wrt if wrt is not None else [i for i, v in enumerate(inputs) if v.dtype.kind == "f" and i not in consts]
    feeds = {f"x{i}": v for i, v in enumerate(inputs) if i not in consts}
    shape = forward_output_shape(op_model(op, inputs, attrs, n_outputs, consts, opset=opset), dict(feeds))
    model = op_model(op, inputs, attrs, n_outputs, consts, opset=opset, w_shape=list(shape))
    feeds["w"] = R.standard_normal(shape)
    names = [f"x{i}" for i in wrt]
    grad_model = build_gradient_graph(ir.load(model.SerializeToString()), "loss", names)
    session = Session(grad_model)
    got = dict(zip(session.output_names, session.run(feeds)))
    forward_model = ir.load(model.SerializeToString())
    kept = Session(forward_model)
    forward = (lambda: Session(forward_model).run(feeds)[0]) if fresh else (lambda: kept.run(feeds)[0])
    for name in names:
        x = feeds[name]
        numeric = np.zeros_like(x)
        eps = 1e-6
        for idx in np.ndindex(x.shape):
            saved = x[idx]
            x[idx] = saved + eps
            up = forward()
            x[idx] = saved - eps
            down = forward()
            x[idx] = saved
            numeric[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(got[f"{name}_grad"], numeric, rtol=rtol, atol=atol, err_msg=f"{op} d/d{name}")
    if ort_check:
        run_in_onnxruntime(grad_model, feeds, got)


def to_float32(graph):
    """float64 -> float32 in ``graph`` and its subgraphs (initializers, types, Cast targets, tensor attributes)."""
    for t in graph.initializers:
        if t.data.dtype == np.float64:
            t.data, t.data_type = t.data.astype(np.float32), TensorProto.FLOAT
    for vi in list(graph.inputs) + list(graph.outputs) + list(graph.value_info):
        if vi.type is not None and getattr(vi.type, "elem_type", None) == TensorProto.DOUBLE:
            vi.type.elem_type = TensorProto.FLOAT
    for node in graph.nodes:
        for a in node.attributes.values():
            if a.name == "to" and a.value == TensorProto.DOUBLE:
                a.value = TensorProto.FLOAT
            if a.type == ir.AttrType.TENSOR and a.value.data.dtype == np.float64:
                a.value.data, a.value.data_type = a.value.data.astype(np.float32), TensorProto.FLOAT
            if a.type == ir.AttrType.GRAPH:
                to_float32(a.value)


def run_in_onnxruntime(grad_model, feeds, got):
    """The same gradient graph in float32 in onnxruntime: it must load, run and agree with ours."""
    model32 = ir.load(ir.to_bytes(grad_model))
    to_float32(model32.graph)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(ir.to_bytes(model32), so, providers=["CPUExecutionProvider"])
    feeds32 = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in feeds.items()}
    outs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds32)))
    for name, value in got.items():
        if name.endswith("_grad"):
            np.testing.assert_allclose(outs[name], value, rtol=2e-3, atol=2e-4, err_msg=f"onnxruntime {name}")


CASES = [
    ("add-broadcast", "Add", [rnd(2, 3), rnd(3)], {}),
    ("add-broadcast-middle", "Add", [rnd(2, 3, 4), rnd(3, 1)], {}),
    ("sub", "Sub", [rnd(2, 3), rnd(2, 1)], {}),
    ("mul", "Mul", [rnd(2, 3), rnd(1, 3)], {}),
    ("div", "Div", [rnd(2, 3), rnd(3, low=0.5)], {}),
    ("neg", "Neg", [rnd(4)], {}),
    ("abs", "Abs", [rnd(5, low=0.1) * np.array([1, -1, 1, -1, 1])], {}),
    ("exp", "Exp", [rnd(3, 2)], {}),
    ("log", "Log", [rnd(3, 2, low=0.2)], {}),
    ("sqrt", "Sqrt", [rnd(3, 2, low=0.2)], {}),
    ("reciprocal", "Reciprocal", [rnd(3, low=0.5)], {}),
    ("pow", "Pow", [rnd(2, 3, low=0.3), np.array([2.5])], {}),
    ("relu", "Relu", [rnd(3, 4)], {}),
    ("sigmoid", "Sigmoid", [rnd(3, 4)], {}),
    ("tanh", "Tanh", [rnd(3, 4)], {}),
    ("leakyrelu", "LeakyRelu", [rnd(3, 4)], {"alpha": 0.1}),
    ("erf", "Erf", [rnd(3, 4)], {}),
    ("identity", "Identity", [rnd(3)], {}),
    ("gemm", "Gemm", [rnd(4, 3), rnd(5, 3), rnd(5)], {"transB": 1}),
    ("gemm-transA-alpha-beta", "Gemm", [rnd(3, 4), rnd(3, 5), rnd(4, 5)], {"transA": 1, "alpha": 0.5, "beta": 2.0}),
    # before opset 11 Gemm needs C: the gradient's Gemms get a zero C (onnxruntime refuses them without)
    ("gemm-opset9", "Gemm", [rnd(4, 3), rnd(5, 3), rnd(5)], {"transB": 1}, (), 9),
    ("gemm-opset10-transA", "Gemm", [rnd(3, 4), rnd(3, 5), rnd(4, 5)], {"transA": 1, "alpha": 0.5}, (), 10),
    ("matmul-2d", "MatMul", [rnd(4, 3), rnd(3, 2)], {}),
    ("matmul-batched-broadcast", "MatMul", [rnd(2, 4, 3), rnd(3, 5)], {}),
    ("reshape", "Reshape", [rnd(2, 6), np.array([3, 4], np.int64)], {}, [1]),
    ("flatten", "Flatten", [rnd(2, 3, 2)], {"axis": 1}),
    ("transpose", "Transpose", [rnd(2, 3, 4)], {"perm": [2, 0, 1]}),
    ("unsqueeze", "Unsqueeze", [rnd(2, 3), np.array([1], np.int64)], {}, [1]),
    ("squeeze", "Squeeze", [rnd(2, 1, 3), np.array([1], np.int64)], {}, [1]),
    ("expand", "Expand", [rnd(3, 1), np.array([2, 3, 4], np.int64)], {}, [1]),
    ("reducesum-axes", "ReduceSum", [rnd(2, 3, 4), np.array([1], np.int64)], {"keepdims": 0}, [1]),
    ("reducesum-keep", "ReduceSum", [rnd(2, 3, 4), np.array([0, 2], np.int64)], {"keepdims": 1}, [1]),
    ("reducesum-noop-empty-axes", "ReduceSum", [rnd(2, 3), np.array([], np.int64)],
     {"keepdims": 0, "noop_with_empty_axes": 1}, [1]),
    ("reducemax-18-noop", "ReduceMax", [rnd(2, 3), np.array([], np.int64)], {"keepdims": 0, "noop_with_empty_axes": 1},
     [1], 18),
    ("reducemean-all", "ReduceMean", [rnd(2, 3)], {"keepdims": 0}),
    ("reducemean-axis", "ReduceMean", [rnd(2, 3, 4)], {"axes": [-1]}),
    ("softmax", "Softmax", [rnd(3, 5)], {"axis": -1}),
    ("logsoftmax", "LogSoftmax", [rnd(3, 5)], {"axis": 1}),
    ("softmax-11-flattened", "Softmax", [rnd(2, 3, 4)], {"axis": 1}, (), 11),
    ("logsoftmax-11", "LogSoftmax", [rnd(3, 5)], {}, (), 11),
    ("clip-7-attributes", "Clip", [rnd(10)], {"min": -0.5, "max": 0.6}, (), 7),
    ("clip-7-min-only", "Clip", [rnd(10)], {"min": -0.2}, (), 7),
    ("slice-9-attributes", "Slice", [rnd(4, 5)], {"starts": [1, 0], "ends": [3, -1], "axes": [0, 1]}, (), 9),
    ("batchnorm-7-training", "BatchNormalization", [rnd(4, 3, 2), rnd(3), rnd(3), rnd(3), rnd(3, low=0.5)],
     {}, [3, 4], 7, 5),
    ("conv-pad", "Conv", [rnd(2, 3, 5, 5), rnd(4, 3, 3, 3), rnd(4)], {"pads": [1, 1, 1, 1]}),
    ("conv-stride-group", "Conv", [rnd(1, 4, 6, 6), rnd(4, 2, 3, 3)], {"strides": [2, 2], "group": 2}),
    ("maxpool", "MaxPool", [rnd(2, 2, 4, 4)], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("globalaveragepool", "GlobalAveragePool", [rnd(2, 3, 3, 2)], {}),
    ("where", "Where", [R.standard_normal((3, 4)) > 0, rnd(3, 4), rnd(4)], {}),
    ("concat", "Concat", [rnd(2, 3), rnd(2, 1)], {"axis": 1}),
    ("elu", "Elu", [rnd(3, 4)], {"alpha": 0.7}),
    ("atan", "Atan", [rnd(3, 4)], {}),
    ("softplus", "Softplus", [rnd(3, 4)], {}),
    ("softsign", "Softsign", [rnd(3, 4)], {}),
    ("hardsigmoid", "HardSigmoid", [4 * rnd(3, 4)], {"alpha": 0.3, "beta": 0.4}),
    ("hardswish", "HardSwish", [4 * rnd(3, 4)], {}, (), 14),
    ("selu", "Selu", [rnd(3, 4)], {}),
    ("celu", "Celu", [rnd(3, 4)], {"alpha": 0.7}, (), 12),
    ("thresholdedrelu", "ThresholdedRelu", [rnd(3, 4)], {"alpha": 0.3}),
    ("prelu", "PRelu", [rnd(2, 3, 4), rnd(3, 1)], {}),
    ("mish", "Mish", [rnd(3, 4)], {}, (), 18),
    ("sin", "Sin", [rnd(3, 4)], {}),
    ("cos", "Cos", [rnd(3, 4)], {}),
    ("gelu", "Gelu", [rnd(3, 4)], {}, (), 20),
    ("gelu-tanh", "Gelu", [rnd(3, 4)], {"approximate": "tanh"}, (), 20),
    ("clip", "Clip", [rnd(10), np.array(-0.5), np.array(0.6)], {}, [1, 2]),
    ("mean", "Mean", [rnd(2, 3), rnd(3)], {}),
    ("slice", "Slice", [rnd(4, 5), np.array([1, 0], np.int64), np.array([3, 5], np.int64),
                        np.array([0, 1], np.int64), np.array([1, 2], np.int64)], {}, [1, 2, 3, 4]),
    ("split", "Split", [rnd(5, 2), np.array([2, 3], np.int64)], {"axis": 0}, [1], 17, 2),
    ("pad", "Pad", [rnd(2, 3), np.array([1, 0, 0, 2], np.int64)], {}, [1]),
    ("pad-reflect", "Pad", [rnd(2, 4, 5), np.array([0, 2, 1, 0, 1, 3], np.int64)], {"mode": "reflect"}, [1]),
    ("pad-edge", "Pad", [rnd(2, 3), np.array([1, 2, 2, 0], np.int64)], {"mode": "edge"}, [1]),
    ("pad-wrap-axes-19", "Pad", [rnd(2, 3, 4), np.array([1, 3], np.int64), np.array(0.0), np.array([-1], np.int64)],
     {"mode": "wrap"}, [1, 2, 3], 19),
    ("pad-crop", "Pad", [rnd(3, 5), np.array([-1, 1, 0, -2], np.int64)], {}, [1]),
    ("tile", "Tile", [rnd(2, 3), np.array([2, 2], np.int64)], {}, [1]),
    ("reducemax", "ReduceMax", [rnd(3, 4)], {"axes": [1], "keepdims": 0}),
    ("reducemin", "ReduceMin", [rnd(3, 4)], {"axes": [0]}),
    ("batchnorm-training", "BatchNormalization", [rnd(4, 3, 2, 2), rnd(3), rnd(3), rnd(3), rnd(3, low=0.5)],
     {"training_mode": 1}, [3, 4], 17, 3),
    ("batchnorm-inference", "BatchNormalization", [rnd(4, 3, 2, 2), rnd(3), rnd(3), rnd(3), rnd(3, low=0.5)], {},
     [3, 4]),
    ("layernorm", "LayerNormalization", [rnd(2, 3, 4), rnd(4), rnd(4)], {}),
    ("layernorm-axis1", "LayerNormalization", [rnd(2, 3, 4), rnd(3, 4)], {"axis": 1}),
    ("matmul-1d-left", "MatMul", [rnd(3), rnd(2, 3, 4)], {}),
    ("matmul-1d-right", "MatMul", [rnd(2, 4, 3), rnd(3)], {}),
    ("matmul-1d-both", "MatMul", [rnd(3), rnd(3)], {}),
    ("convtranspose", "ConvTranspose", [rnd(2, 3, 3, 3), rnd(3, 2, 3, 3), rnd(2)], {"strides": [2, 2]}),
    ("convtranspose-pads-group", "ConvTranspose", [rnd(1, 4, 3, 3), rnd(4, 1, 3, 3)],
     {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1], "group": 2}),
    ("averagepool", "AveragePool", [rnd(2, 2, 5, 5)], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("averagepool-pad-include", "AveragePool", [rnd(1, 2, 4, 4)],
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("averagepool-ceil", "AveragePool", [rnd(1, 2, 5, 6)], {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("averagepool-pad-exclude", "AveragePool", [rnd(2, 1, 5, 4)],
     {"kernel_shape": [3, 3], "strides": [2, 1], "pads": [1, 1, 1, 0]}),
    ("averagepool-1d-ceil-pad-include", "AveragePool", [rnd(2, 3, 7)],
     {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1, "count_include_pad": 1}),
    ("lppool", "LpPool", [rnd(2, 2, 5, 4)], {"kernel_shape": [2, 2], "strides": [2, 1], "p": 3}),
    ("lppool-pads-2", "LpPool", [rnd(1, 2, 4, 4)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("globallppool", "GlobalLpPool", [rnd(2, 3, 3, 2)], {"p": 3}),
    ("nll-mean-weight-ignore", "NegativeLogLikelihoodLoss", [rnd(4, 3), np.array([0, 2, 1, 2], np.int64),
                                                             rnd(3, low=0.5)], {"ignore_index": 1}, [2]),
    ("nll-sum-spatial", "NegativeLogLikelihoodLoss", [rnd(2, 3, 2), np.array([[0, 2], [1, 1]], np.int64)],
     {"reduction": "sum"}),
    ("nll-none", "NegativeLogLikelihoodLoss", [rnd(3, 4), np.array([3, 0, 1], np.int64)], {"reduction": "none"}),
    ("resize-nearest", "Resize", [rnd(1, 2, 3, 4), np.array([], np.float32), np.array([1, 1, 2, 1.5])], {},
     [1, 2]),
    ("resize-linear", "Resize", [rnd(2, 1, 3, 5), np.array([], np.float32), np.array([1, 1, 2, 0.5])],
     {"mode": "linear"}, [1, 2]),
    ("resize-linear-sizes", "Resize", [rnd(1, 2, 4, 3), np.array([], np.float32), np.array([], np.float32),
                                       np.array([1, 2, 7, 5], np.int64)],
     {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [1, 2, 3]),
    ("resize-cubic", "Resize", [rnd(1, 1, 4, 5), np.array([], np.float32), np.array([1, 1, 1.5, 2])],
     {"mode": "cubic", "cubic_coeff_a": -0.5}, [1, 2]),
    ("resize-cubic-exclude-outside-sizes", "Resize", [rnd(2, 1, 5, 3), np.array([], np.float32),
                                                      np.array([], np.float32), np.array([2, 1, 3, 7], np.int64)],
     {"mode": "cubic", "exclude_outside": 1}, [1, 2, 3]),
    ("resize-linear-antialias-18", "Resize", [rnd(1, 2, 8, 6), np.array([], np.float32), np.array([0.5, 0.6])],
     {"mode": "linear", "antialias": 1, "axes": [2, 3]}, [1, 2], 18),
    ("resize-keep-aspect-18", "Resize", [rnd(1, 1, 4, 6), np.array([], np.float32), np.array([], np.float32),
                                         np.array([6, 6], np.int64)],
     {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}, [1, 2, 3], 18),
    ("resize-tf-crop", "Resize", [rnd(1, 1, 4, 4), np.array([0, 0, 0.2, -0.3, 1, 1, 0.9, 0.8]),
                                  np.array([], np.float32), np.array([1, 1, 3, 5], np.int64)],
     {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 2.0},
     [1, 2, 3]),
    ("resize-10", "Resize", [rnd(1, 2, 3, 4), np.array([1, 1, 2, 0.5], np.float32)], {"mode": "linear"}, [1], 10),
    ("upsample-9-nearest", "Upsample", [rnd(1, 2, 2, 3), np.array([1, 1, 2, 3], np.float32)], {}, [1], 9),
    ("gather", "Gather", [rnd(5, 3), np.array([[0, 4], [4, 2]], np.int64)], {"axis": 0}),
    ("sum-broadcast", "Sum", [rnd(2, 3), rnd(3), rnd(2, 1)], {}),
    ("cast", "Cast", [rnd(3, 2)], {"to": TensorProto.DOUBLE}),
    ("max-broadcast", "Max", [rnd(2, 3), rnd(3), rnd(2, 1)], {}),
    ("min", "Min", [rnd(3, 4), rnd(3, 4)], {}),
    ("max-one-input", "Max", [rnd(3)], {}),
    ("gatherelements", "GatherElements", [rnd(3, 4), np.array([[0, 2], [1, 1], [3, 0]], np.int64)], {"axis": 1}),
    ("scatterelements", "ScatterElements", [rnd(4, 3), np.array([[1, 0, 2], [3, 2, 0]], np.int64), rnd(2, 3)],
     {"axis": 0}),
    ("instancenorm", "InstanceNormalization", [rnd(2, 3, 2, 3), rnd(3), rnd(3)], {"epsilon": 0.01}),
    ("groupnorm-18", "GroupNormalization", [rnd(2, 4, 3), rnd(2), rnd(2)], {"num_groups": 2}, (), 18),
    ("groupnorm-21", "GroupNormalization", [rnd(2, 6, 2, 2), rnd(6), rnd(6)], {"num_groups": 3, "epsilon": 0.01},
     (), 21),
    ("depthtospace-dcr", "DepthToSpace", [rnd(2, 8, 2, 3)], {"blocksize": 2}),
    ("depthtospace-crd", "DepthToSpace", [rnd(1, 12, 2, 1)], {"blocksize": 2, "mode": "CRD"}),
    ("spacetodepth", "SpaceToDepth", [rnd(2, 2, 4, 6)], {"blocksize": 2}),
    ("cumsum", "CumSum", [rnd(3, 4), np.array(1, np.int64)], {}, [1]),
    ("cumsum-exclusive-reverse", "CumSum", [rnd(3, 4), np.array(0, np.int64)], {"exclusive": 1, "reverse": 1}, [1]),
    ("cumsum-reverse", "CumSum", [rnd(5), np.array(-1, np.int64)], {"reverse": 1}, [1]),
    ("reducelogsumexp", "ReduceLogSumExp", [rnd(2, 3, 4)], {"axes": [1], "keepdims": 0}),
    ("reducelogsumexp-18-all", "ReduceLogSumExp", [rnd(2, 3)], {}, (), 18),
    ("reducel2", "ReduceL2", [rnd(3, 4)], {"axes": [0]}),
    ("reducel2-18", "ReduceL2", [rnd(2, 3, 4), np.array([-1, 0], np.int64)], {"keepdims": 0}, [1], 18),
    ("reduceprod", "ReduceProd", [rnd(3, 4)], {"axes": [1], "keepdims": 0}),
    ("reduceprod-zeros-18", "ReduceProd", [rnd(4, 3) * np.array([[1, 1, 1], [0, 1, 1], [1, 0, 0], [0, 0, 0]]),
                                           np.array([1], np.int64)], {}, [1], 18),
    ("trilu-lower", "Trilu", [rnd(3, 4)], {"upper": 0}),
    ("trilu-upper-k", "Trilu", [rnd(2, 3, 4), np.array(1, np.int64)], {}, [1]),
    ("reducesumsquare", "ReduceSumSquare", [rnd(3, 4)], {"axes": [1], "keepdims": 0}),
    ("reducesumsquare-18", "ReduceSumSquare", [rnd(3, 4), np.array([0], np.int64)], {}, [1], 18),
    ("mvn", "MeanVarianceNormalization", [rnd(2, 3, 2, 2)], {}),
    ("mvn-axes", "MeanVarianceNormalization", [rnd(3, 4, 2)], {"axes": [1, 2]}),
    ("lrn", "LRN", [rnd(2, 5, 2, 2)], {"size": 3, "alpha": 0.3, "beta": 0.6, "bias": 1.5}),
    ("lrn-size-5", "LRN", [rnd(1, 6, 3, 1)], {"size": 5, "alpha": 0.5, "beta": 0.75}),
    ("lpnorm-2", "LpNormalization", [rnd(3, 4)], {"axis": 1}),
    ("lpnorm-1", "LpNormalization", [rnd(2, 3, 4)], {"axis": 1, "p": 1}),
    ("lpnorm-2-18", "LpNormalization", [rnd(3, 4)], {"axis": 0}, (), 18),
    ("einsum-bmm", "Einsum", [rnd(2, 3, 4), rnd(2, 4, 5)], {"equation": "bij,bjk->bik"}),
    ("einsum-transpose", "Einsum", [rnd(3, 4)], {"equation": "ij->ji"}),
    ("einsum-attention-scores", "Einsum", [rnd(2, 2, 3, 4), rnd(2, 2, 5, 4)], {"equation": "bhqd,bhkd->bhqk"}),
    ("einsum-attention-values", "Einsum", [rnd(2, 2, 3, 5), rnd(2, 2, 5, 4)], {"equation": "bhqk,bhkd->bhqd"}),
    ("einsum-linear", "Einsum", [rnd(2, 3, 4), rnd(5, 4)], {"equation": "bsd,ed->bse"}),
    ("einsum-dot", "Einsum", [rnd(4), rnd(4)], {"equation": "i,i->"}),
    ("einsum-matvec", "Einsum", [rnd(3, 4), rnd(4)], {"equation": "ij,j->i"}),
    ("einsum-ellipsis", "Einsum", [rnd(2, 3, 4), rnd(2, 4, 2)], {"equation": "...ij,...jk->...ik"}),
    ("einsum-implicit", "Einsum", [rnd(3, 4), rnd(4, 2)], {"equation": "ij,jk"}),
    ("einsum-summed-only-in-one", "Einsum", [rnd(3, 4), rnd(4, 2)], {"equation": "ij,jk->i"}),
    ("einsum-sum-all", "Einsum", [rnd(3, 4)], {"equation": "ij->"}),
    ("einsum-outer", "Einsum", [rnd(3), rnd(2)], {"equation": "i,j->ij"}),
    ("topk", "TopK", [rnd(3, 5), np.array([2], np.int64)], {"axis": 1}, [1], 17, 2),
    ("topk-smallest-axis0", "TopK", [rnd(4, 3), np.array([3], np.int64)], {"axis": 0, "largest": 0}, [1], 17, 2),
    ("globalmaxpool", "GlobalMaxPool", [rnd(2, 3, 3, 2)], {}),
    ("reducel1", "ReduceL1", [rnd(3, 4)], {"axes": [1]}),
    ("reducel1-18", "ReduceL1", [rnd(2, 3, 2), np.array([0, 2], np.int64)], {"keepdims": 0}, [1], 18),
    ("einsum-three", "Einsum", [rnd(2, 3), rnd(3, 4), rnd(4)], {"equation": "ij,jk,k->i"}),
    ("lstm", "LSTM", [rnd(3, 2, 4), 0.5 * rnd(1, 8, 4), 0.5 * rnd(1, 8, 2), rnd(1, 16)], {"hidden_size": 2}),
    ("rnn", "RNN", [rnd(3, 2, 4), 0.5 * rnd(1, 3, 4), 0.5 * rnd(1, 3, 3), rnd(1, 6)], {"hidden_size": 3}),
    ("gru", "GRU", [rnd(3, 2, 4), 0.5 * rnd(1, 6, 4), 0.5 * rnd(1, 6, 2), rnd(1, 12)], {"hidden_size": 2}),
    ("gru-linear-before-reset-7", "GRU", [rnd(4, 2, 3), 0.5 * rnd(1, 9, 3), 0.5 * rnd(1, 9, 3), rnd(1, 18)],
     {"hidden_size": 3, "linear_before_reset": 1}, (), 7),
]


def _case(c):
    """(op, inputs, attrs, consts, opset, n_outputs) with defaults for the optional trailing fields."""
    return c[1:4] + tuple(c[4:]) + ((), 17, 1)[len(c) - 4:]


@pytest.mark.parametrize("op, inputs, attrs, consts, opset, n_outputs", [_case(c) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_rule_matches_finite_differences(op, inputs, attrs, consts, opset, n_outputs):
    check(op, [np.array(v) for v in inputs], attrs, consts=consts, opset=opset, n_outputs=n_outputs)


def test_softmax_cross_entropy_loss_gradient():
    scores = rnd(4, 5)
    labels = np.array([0, 3, 1, 4], np.int64)
    weights = onnx.numpy_helper.from_array(rnd(5, low=0.5), "weights")
    for attrs, weighted in (({}, False), ({"reduction": "sum"}, False), ({"ignore_index": 1}, False),
                            ({}, True), ({"ignore_index": 3}, True)):
        model = helper.make_model(helper.make_graph(
            [helper.make_node("SoftmaxCrossEntropyLoss", ["s", "labels"] + (["weights"] if weighted else []),
                              ["loss"], name="sce", **attrs)], "g",
            [helper.make_tensor_value_info("s", TensorProto.DOUBLE, [4, 5]),
             helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
            [helper.make_tensor_value_info("loss", TensorProto.DOUBLE, [])], [weights] if weighted else []),
            opset_imports=[helper.make_opsetid("", 17)])
        ours = ir.load(model.SerializeToString())
        grad = Session(build_gradient_graph(ours, "loss", ["s"]))
        got = grad.run({"s": scores, "labels": labels}, ["s_grad"])[0]
        forward = Session(ours)
        numeric = np.zeros_like(scores)
        for idx in np.ndindex(scores.shape):
            s = scores.copy()
            s[idx] += 1e-6
            up = forward.run({"s": s, "labels": labels})[0]
            s[idx] -= 2e-6
            numeric[idx] = (up - forward.run({"s": s, "labels": labels})[0]) / 2e-6
        np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-9)


def test_missing_rule_uses_ort_wording():
    model = op_model("Tan", [rnd(3)], {})
    with pytest.raises(GradientNotRegisteredError,
                       match="^The gradient builder has not been registered: Tan for node op$"):
        build_gradient_graph(ir.load(model.SerializeToString()), "loss", ["x0"])


def test_wrt_errors():
    model = ir.load(op_model("Relu", [rnd(3)], {}).SerializeToString())
    with pytest.raises(ValueError, match="'nope': it is not a value of the graph"):
        build_gradient_graph(model, "loss", ["nope"])
    with pytest.raises(ValueError, match="'w' does not influence|no gradient"):
        build_gradient_graph(model, "y0", ["w"])


def test_rule_table_covers_the_core_ops():
    assert {"Gemm", "MatMul", "Conv", "MaxPool", "Relu", "SoftmaxCrossEntropyLoss", "Softmax"} <= set(GRADIENT_RULES)


def test_docs_list_exactly_the_rule_table():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "compatibility.md").read_text()
    listed = text.split("<!-- gradient-rules -->")[1].split("<!-- /gradient-rules -->")[0]
    assert [s.strip() for s in listed.split(",")] == sorted(GRADIENT_RULES)
    listed = text.split("<!-- no-gradient -->")[1].split("<!-- /no-gradient -->")[0]
    assert [s.strip() for s in listed.split(",")] == sorted(NO_GRADIENT)


def test_dropout_training_gradient_uses_the_mask():
    # a seeded Dropout draws its first mask in each new session, so finite differences (each run in a session of
    # its own) see a fixed function; onnxruntime draws other masks, so it is not compared here
    check("Dropout", [rnd(6, 5), np.array(0.3), np.array(True)], {"seed": 7}, consts=[1, 2], ort_check=False,
          fresh=True)


def test_max_and_min_share_ties_as_torch_does():
    import torch
    a = np.array([[1.0, 2.0, -3.0], [0.5, 0.5, 4.0]])
    b = np.array([1.0, 0.0, -3.0])
    w = R.standard_normal((2, 3))
    for op, fn in (("Max", torch.maximum), ("Min", torch.minimum)):
        model = op_model(op, [a, b], {}, w_shape=[2, 3])
        grads = Session(build_gradient_graph(ir.load(model.SerializeToString()), "loss", ["x0", "x1"]))
        got = dict(zip(grads.output_names, grads.run({"x0": a, "x1": b, "w": w})))
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        (fn(ta, tb) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(got["x0_grad"], ta.grad.numpy(), rtol=1e-12, err_msg=op)
        np.testing.assert_allclose(got["x1_grad"], tb.grad.numpy(), rtol=1e-12, err_msg=op)


@pytest.mark.parametrize("op, inputs, attrs, w_shape, message", [
    ("Einsum", [rnd(3, 3)], {"equation": "ii->i"}, [3], "diagonals"),
    ("Einsum", [rnd(2, 3, 4), rnd(1, 4, 2)], {"equation": "...ij,...jk->...ik"}, [2, 3, 2], "does not broadcast"),
    ("ScatterElements", [rnd(3), np.array([0, 2], np.int64), rnd(2)], {"reduction": "add"}, [3], "reduction 'none'"),
])
def test_unsupported_gradients_say_why(op, inputs, attrs, w_shape, message):
    model = op_model(op, inputs, attrs, opset=18, w_shape=w_shape)
    with pytest.raises(NotImplementedError, match=message):
        build_gradient_graph(ir.load(model.SerializeToString()), "loss", ["x0"])


#: Rules checked by finite differences in a test of their own rather than a CASES row.
OWN_TESTS = {"SoftmaxCrossEntropyLoss": test_softmax_cross_entropy_loss_gradient,
             "Dropout": test_dropout_training_gradient_uses_the_mask}


def test_every_rule_has_a_finite_difference_case():
    assert sorted(set(GRADIENT_RULES) - {c[1] for c in CASES} - set(OWN_TESTS)) == []


def test_a_rule_returning_more_gradients_than_inputs_is_named(monkeypatch):
    from onnxtrain.autodiff import rules
    monkeypatch.setitem(rules.GRADIENT_RULES, "Relu", lambda c, x, y, dy: [dy[0], dy[0]])
    model = ir.load(op_model("Relu", [rnd(3)], {}, w_shape=[3]).SerializeToString())
    with pytest.raises(ValueError, match="the gradient rule of Relu node 'op' returned 2 gradients for 1 inputs"):
        build_gradient_graph(model, "loss", ["x0"])


def test_values_read_like_math(monkeypatch):
    """A rule written with Values builds the same gradient as the op it describes: d tanh = dy * (1 - y^2)."""
    from onnxtrain.autodiff import rules
    x = rnd(3, 4)
    model = ir.load(op_model("Tanh", [x], {}, w_shape=[3, 4]).SerializeToString())
    w = R.standard_normal((3, 4))
    expected = Session(build_gradient_graph(model, "loss", ["x0"])).run({"x0": x, "w": w}, ["x0_grad"])[0]
    monkeypatch.setitem(rules.GRADIENT_RULES, "Tanh", lambda c, x, y, dy: [dy[0] * (1 - y[0] * y[0])])
    graph = build_gradient_graph(model, "loss", ["x0"])
    ops = [n.op_type for n in graph.graph.nodes if n.name.startswith("op_Grad")]
    assert ops == ["Mul", "Sub", "Mul"]
    got = Session(graph).run({"x0": x, "w": w}, ["x0_grad"])[0]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("row", ["hardswish", "prelu", "groupnorm-21", "einsum-three", "pad-reflect", "max-broadcast"])
def test_the_gradient_model_holds_plain_names(row):
    """Values stay inside the builder: the model holds plain strings (a Value would drag the whole build context
    into every copy of the model, and `+` on it would build an Add node)."""
    op, inputs, attrs, consts, opset, n_outputs = _case(next(c for c in CASES if c[0] == row))
    model = op_model(op, [np.array(v) for v in inputs], attrs, n_outputs, consts, opset=opset, w_shape=None)
    feeds = {f"x{i}": np.array(v) for i, v in enumerate(inputs) if i not in consts}
    shape = forward_output_shape(model, feeds)
    model = op_model(op, [np.array(v) for v in inputs], attrs, n_outputs, consts, opset=opset, w_shape=list(shape))
    wrt = [f"x{i}" for i, v in enumerate(inputs) if np.asarray(v).dtype.kind == "f" and i not in consts]
    graph = build_gradient_graph(ir.load(model.SerializeToString()), "loss", wrt).graph
    names = [v for n in graph.nodes for v in n.inputs + n.outputs] + [v.name for v in graph.value_info]
    assert {type(v) for v in names} == {str}


@pytest.mark.parametrize("op, inputs, attrs", [
    ("Add", [rnd(2, 3, 4), rnd(3)], {"broadcast": 1, "axis": 1}),
    ("Sub", [rnd(2, 3, 4), rnd(2, 3)], {"broadcast": 1, "axis": 0}),
    ("Mul", [rnd(2, 3, 4), rnd(3, 1)], {"broadcast": 1, "axis": -2}),
    ("Mul", [rnd(2, 3, 4), rnd(3, 4)], {"broadcast": 1}),
    ("Div", [rnd(2, 3, 4), rnd(3, low=0.5)], {"broadcast": 1, "axis": 1}),
    ("Div", [rnd(2, 3), rnd(1, low=0.5)], {"broadcast": 1, "axis": 1}),
    ("Mul", [rnd(2, 3), rnd(2, 3)], {}),
    ("Gemm", [rnd(4, 3), rnd(3, 5), rnd(5)], {"broadcast": 1, "alpha": 0.5, "beta": 2.0}),
    ("Gemm", [rnd(3, 4), rnd(5, 3), rnd(4, 5)], {"transA": 1, "transB": 1}),
    ("PRelu", [rnd(2, 3, 4), rnd(4)], {}),
])
def test_legacy_broadcast_follows_axis(op, inputs, attrs):
    """Opset 6's binary ops align B at ``axis``; onnxruntime has no opset-6 kernels for them, so finite
    differences alone judge these."""
    check(op, inputs, attrs, opset=6, ort_check=False)


def test_prelu_6_per_channel_slope_is_refused():
    model = op_model("PRelu", [rnd(2, 3, 4), rnd(3)], {}, opset=6, w_shape=[2, 3, 4])
    with pytest.raises(NotImplementedError, match="PRelu-1/6's per-channel slope"):
        build_gradient_graph(ir.load(model.SerializeToString()), "loss", ["x0", "x1"])


def recurrent_model(op, inputs, attrs, n_outputs, opset=17, w_shapes=None):
    """op over ``inputs`` (None: omitted), loss = sum over its outputs of ReduceSum(output * w_k)."""
    w_shapes = w_shapes or [None] * n_outputs
    names = ["" if v is None else f"x{i}" for i, v in enumerate(inputs)]
    outs = [f"y{k}" for k in range(n_outputs)]
    nodes = [helper.make_node(op, names, outs, name="op", **attrs)]
    nodes += [n for k in range(n_outputs) for n in (
        helper.make_node("Mul", [f"y{k}", f"w{k}"], [f"p{k}"]),
        helper.make_node("ReduceSum", [f"p{k}"], [f"s{k}"], keepdims=0))]
    nodes.append(helper.make_node("Sum", [f"s{k}" for k in range(n_outputs)], ["loss"]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                         for n, v in zip(names, inputs) if n]
        + [helper.make_tensor_value_info(f"w{k}", TensorProto.DOUBLE, w) for k, w in enumerate(w_shapes)],
        [helper.make_tensor_value_info("loss", TensorProto.DOUBLE, [])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def recurrent_output_shapes(op, inputs, attrs, n_outputs, opset=17):
    probe = ir.load(recurrent_model(op, inputs, attrs, n_outputs, opset).SerializeToString())
    probe.graph.nodes = probe.graph.nodes[:1]
    probe.graph.inputs = [v for v in probe.graph.inputs if v.name.startswith("x")]
    probe.graph.outputs = [ir.ValueInfo(f"y{k}") for k in range(n_outputs)]
    return [list(o.shape) for o in Session(probe).run({f"x{i}": v for i, v in enumerate(inputs) if v is not None})]


def check_all_outputs(op, inputs, attrs, n_outputs, opset=17):
    """Finite differences of a loss reading every output, then the same gradient graph in onnxruntime."""
    feeds = {f"x{i}": v for i, v in enumerate(inputs) if v is not None}
    shapes = recurrent_output_shapes(op, inputs, attrs, n_outputs, opset)
    model = ir.load(recurrent_model(op, inputs, attrs, n_outputs, opset, shapes).SerializeToString())
    forward = Session(model)
    feeds.update({f"w{k}": R.standard_normal(s) for k, s in enumerate(shapes)})
    wrt = [n for n in feeds if n.startswith("x")]
    grad_model = build_gradient_graph(model, "loss", wrt)
    got = dict(zip(Session(grad_model).output_names, Session(grad_model).run(feeds)))
    for name in wrt:
        x = feeds[name]
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            saved = x[idx]
            x[idx] = saved + 1e-6
            up = forward.run(feeds)[0]
            x[idx] = saved - 1e-6
            down = forward.run(feeds)[0]
            x[idx] = saved
            numeric[idx] = (up - down) / 2e-6
        np.testing.assert_allclose(got[f"{name}_grad"], numeric, rtol=1e-6, atol=1e-8, err_msg=f"{op} d/d{name}")
    run_in_onnxruntime(grad_model, feeds, got)


@pytest.mark.parametrize("op, inputs, attrs, n_outputs", [
    ("LSTM", [rnd(3, 2, 4), 0.5 * rnd(1, 12, 4), 0.5 * rnd(1, 12, 3), rnd(1, 24), None, rnd(1, 2, 3), rnd(1, 2, 3)],
     {"hidden_size": 3}, 3),
    ("LSTM", [rnd(2, 3, 2), 0.5 * rnd(1, 8, 2), 0.5 * rnd(1, 8, 2), None, None, None, rnd(1, 3, 2)],
     {"hidden_size": 2}, 3),
    ("LSTM", [rnd(4, 1, 3), 0.5 * rnd(1, 8, 3), 0.5 * rnd(1, 8, 2)], {"hidden_size": 2, "direction": "forward"}, 2),
    ("GRU", [rnd(3, 2, 4), 0.5 * rnd(1, 9, 4), 0.5 * rnd(1, 9, 3), rnd(1, 18), None, rnd(1, 2, 3)],
     {"hidden_size": 3}, 2),
    ("GRU", [rnd(3, 2, 2), 0.5 * rnd(1, 6, 2), 0.5 * rnd(1, 6, 2), None, None, rnd(1, 2, 2)],
     {"hidden_size": 2, "linear_before_reset": 1}, 2),
    ("RNN", [rnd(3, 2, 4), 0.5 * rnd(1, 3, 4), 0.5 * rnd(1, 3, 3), rnd(1, 6), None, rnd(1, 2, 3)],
     {"hidden_size": 3}, 2),
    ("RNN", [rnd(4, 2, 3), 0.5 * rnd(1, 2, 3), 0.5 * rnd(1, 2, 2), None, None, rnd(1, 2, 2)],
     {"hidden_size": 2, "direction": "reverse", "activations": ["Sigmoid"]}, 2),
    ("RNN", [rnd(3, 2, 3), 0.5 * rnd(2, 2, 3), 0.5 * rnd(2, 2, 2), rnd(2, 4), None, rnd(2, 2, 2)],
     {"hidden_size": 2, "direction": "bidirectional", "activations": ["Relu", "Tanh"]}, 2),
    ("RNN", [rnd(1, 3, 2), 0.5 * rnd(2, 2, 2), 0.5 * rnd(2, 2, 2)], {"hidden_size": 2, "direction": "bidirectional"},
     1),
])
def test_recurrent_gradients_through_every_output_and_initial_state(op, inputs, attrs, n_outputs):
    check_all_outputs(op, inputs, attrs, n_outputs)


@pytest.mark.parametrize("op, inputs, attrs, message", [
    ("LSTM", [rnd(2, 1, 2), rnd(2, 8, 2), rnd(2, 8, 2)], {"hidden_size": 2, "direction": "bidirectional"},
     "direction 'bidirectional'"),
    ("LSTM", [rnd(2, 1, 2), rnd(1, 8, 2), rnd(1, 8, 2)], {"hidden_size": 2, "direction": "reverse"},
     "direction 'reverse'"),
    ("LSTM", [rnd(2, 1, 2), rnd(1, 8, 2), rnd(1, 8, 2)], {"hidden_size": 2, "clip": 3.0}, "clip"),
    ("LSTM", [rnd(2, 1, 2), rnd(1, 8, 2), rnd(1, 8, 2)], {"hidden_size": 2, "input_forget": 1}, "input_forget"),
    ("LSTM", [rnd(1, 2, 2), rnd(1, 8, 2), rnd(1, 8, 2)], {"hidden_size": 2, "layout": 1}, "layout=1"),
    ("LSTM", [rnd(2, 1, 2), rnd(1, 8, 2), rnd(1, 8, 2), None, None, None, None, rnd(1, 6)], {"hidden_size": 2},
     "peephole weights P"),
    ("LSTM", [rnd(2, 1, 2), rnd(1, 8, 2), rnd(1, 8, 2), None, np.array([2], np.int32)], {"hidden_size": 2},
     "sequence_lens"),
    ("GRU", [rnd(2, 1, 2), rnd(1, 6, 2), rnd(1, 6, 2)], {"hidden_size": 2, "activations": ["Sigmoid", "Relu"]},
     "activations"),
    ("GRU", [rnd(2, 1, 2), rnd(1, 6, 2), rnd(1, 6, 2)],
     {"hidden_size": 2, "activations": ["HardSigmoid", "Tanh"], "activation_alpha": [0.3]}, "activations"),
    ("RNN", [rnd(2, 1, 2), rnd(1, 2, 2), rnd(1, 2, 2)], {"hidden_size": 2, "clip": 3.0}, "clip"),
    ("RNN", [rnd(1, 2, 2), rnd(1, 2, 2), rnd(1, 2, 2)], {"hidden_size": 2, "layout": 1}, "layout=1"),
    ("RNN", [rnd(2, 1, 2), rnd(1, 2, 2), rnd(1, 2, 2)], {"hidden_size": 2, "activations": ["Softsign"]},
     "activation 'softsign'"),
    ("RNN", [rnd(2, 1, 2), rnd(1, 2, 2), rnd(1, 2, 2), None, np.array([2], np.int32)], {"hidden_size": 2},
     "sequence_lens"),
])
def test_recurrent_gradients_outside_their_subset_are_refused(op, inputs, attrs, message):
    model = recurrent_model(op, inputs, attrs, 1, w_shapes=recurrent_output_shapes(op, inputs, attrs, 1))
    wrt = [f"x{i}" for i in (0, 1, 2)]
    with pytest.raises(NotImplementedError, match=message):
        build_gradient_graph(ir.load(model.SerializeToString()), "loss", wrt)


def test_rnn_gradient_needs_opset_11():
    inputs = [rnd(2, 1, 2), rnd(1, 2, 2), rnd(1, 2, 2)]
    model = recurrent_model("RNN", inputs, {"hidden_size": 2}, 1, opset=10,
                            w_shapes=recurrent_output_shapes("RNN", inputs, {"hidden_size": 2}, 1, opset=10))
    with pytest.raises(NotImplementedError, match="opset 11"):
        build_gradient_graph(ir.load(model.SerializeToString()), "loss", ["x1"])


@pytest.mark.parametrize("op, gates", [("RNN", 1), ("GRU", 3), ("LSTM", 4)])
def test_recurrent_gradient_when_the_model_omits_the_all_steps_output(op, gates):
    """Only Y_h is read: the rule adds the hidden-states output the gradient needs."""
    inputs = [rnd(3, 2, 2), 0.5 * rnd(1, gates * 2, 2), 0.5 * rnd(1, gates * 2, 2)]
    model = recurrent_model(op, inputs, {"hidden_size": 2}, 2, w_shapes=[[3, 1, 2, 2], [1, 2, 2]])
    node = model.graph.node[0]
    node.output[0] = ""
    model.graph.node.remove(model.graph.node[1])
    model.graph.node.remove(model.graph.node[1])
    model.graph.node[-1].input.remove("s0")
    model.graph.input.remove(next(i for i in model.graph.input if i.name == "w0"))
    ours = ir.load(model.SerializeToString())
    grads = Session(build_gradient_graph(ours, "loss", ["x1"]))
    feeds = {"x0": inputs[0], "x1": inputs[1].copy(), "x2": inputs[2], "w1": R.standard_normal((1, 2, 2))}
    got = grads.run(feeds, ["x1_grad"])[0]
    forward, numeric = Session(ours), np.zeros_like(feeds["x1"])
    for idx in np.ndindex(numeric.shape):
        feeds["x1"][idx] += 1e-6
        up = forward.run(feeds)[0]
        feeds["x1"][idx] -= 2e-6
        numeric[idx] = (up - forward.run(feeds)[0]) / 2e-6
        feeds["x1"][idx] += 1e-6
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)
