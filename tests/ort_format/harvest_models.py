"""Forward models whose training graphs (onnxtrain's and onnxruntime's) hold onnxruntime's own ops, and
one-node models of the forward ops of those domains: what op_schemas_source.py converts to read their
schemas back.  Also the transformer-like block the ORT format tests train end to end."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
MS = "com.microsoft"


def _model(nodes, inputs, outputs, inits, opset=17, ms=False):
    graph = helper.make_graph(nodes, "harvest", inputs, outputs, inits)
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if ms else [])
    return helper.make_model(graph, opset_imports=imports, ir_version=8)


def _param(rng, name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), name)


def _const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def transformer(batch=2, seq=3, dim=8, hidden=16, gelu="erf", dropout_ratio=0.0, seed=0):
    """LayerNormalization, MatMul + Add, a GELU ("erf": through Erf; "ms": com.microsoft::Gelu), MatMul,
    Softmax and Dropout (training mode, ``dropout_ratio``) over [batch, seq, dim]; output [batch, seq, dim]."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((1 + 0.1 * rng.standard_normal(dim)).astype(np.float32), "ln.weight"),
             _param(rng, "ln.bias", (dim,)), _param(rng, "fc1.weight", (dim, hidden)),
             _param(rng, "fc1.bias", (hidden,)), _param(rng, "fc2.weight", (hidden, dim)),
             _const("ratio", np.float32(dropout_ratio)), _const("training", np.bool_(True))]
    nodes = [helper.make_node("LayerNormalization", ["input", "ln.weight", "ln.bias"], ["ln", "ln_mean", "ln_inv_std"], axis=-1,
                              epsilon=1e-5),
             helper.make_node("MatMul", ["ln", "fc1.weight"], ["mm1"]),
             helper.make_node("Add", ["mm1", "fc1.bias"], ["h"])]
    if gelu == "ms":
        nodes.append(helper.make_node("Gelu", ["h"], ["act"], domain=MS))
    else:
        inits += [_const("sqrt2", np.float32(np.sqrt(2))), _const("one", np.float32(1)),
                  _const("half", np.float32(0.5))]
        nodes += [helper.make_node("Div", ["h", "sqrt2"], ["h_s"]), helper.make_node("Erf", ["h_s"], ["erf"]),
                  helper.make_node("Add", ["erf", "one"], ["erf1"]), helper.make_node("Mul", ["h", "erf1"], ["he"]),
                  helper.make_node("Mul", ["he", "half"], ["act"])]
    nodes += [helper.make_node("MatMul", ["act", "fc2.weight"], ["mm2"]),
              helper.make_node("Softmax", ["mm2"], ["sm"], axis=-1),
              helper.make_node("Dropout", ["sm", "ratio", "training"], ["output", "mask"])]
    return _model(nodes, [helper.make_tensor_value_info("input", F, [batch, seq, dim])],
                  [helper.make_tensor_value_info("output", F, [batch, seq, dim])], inits, ms=gelu == "ms")


TRANSFORMER_PARAMS = ["ln.weight", "ln.bias", "fc1.weight", "fc1.bias", "fc2.weight"]


def _on_param(op, shape, out_shape, consts=(), n_outputs=1, opset=17, domain="", **attrs):
    """``output = op(P, *consts) + input``: a one-op model whose parameter P gets the op's gradient."""
    rng = np.random.default_rng(0)
    inits = [_param(rng, "P", shape)] + [_const(n, v) for n, v in consts]
    outs = ["y"] + [f"extra{i}" for i in range(1, n_outputs)]
    nodes = [helper.make_node(op, ["P"] + [n for n, _ in consts], outs, domain=domain, **attrs),
             helper.make_node("Add", ["y", "input"], ["output"])]
    return _model(nodes, [helper.make_tensor_value_info("input", F, out_shape)],
                  [helper.make_tensor_value_info("output", F, out_shape)], inits, opset, ms=bool(domain))


def _rnn(op, gates, opset=17):
    """An LSTM or GRU (hidden 2, input 3, sequence 2, batch 1) whose weights are the parameters."""
    rng = np.random.default_rng(0)
    h = 2
    inits = [_param(rng, "W", (1, gates * h, 3)), _param(rng, "R", (1, gates * h, h)),
             _param(rng, "B", (1, 2 * gates * h)), _param(rng, "X", (2, 1, 3))]
    nodes = [helper.make_node(op, ["X", "W", "R", "B"], ["y"], hidden_size=h),
             helper.make_node("Add", ["y", "input"], ["output"])]
    return _model(nodes, [helper.make_tensor_value_info("input", F, [2, 1, 1, h])],
                  [helper.make_tensor_value_info("output", F, [2, 1, 1, h])], inits, opset)


def batch_norm():
    """A BatchNormalization in training mode over [4, 3, 2] whose scale and bias are the parameters."""
    rng = np.random.default_rng(0)
    inits = [_param(rng, "scale", (3,)), _param(rng, "bias", (3,)), _const("mean", np.float32(np.zeros(3))),
             _const("var", np.float32(np.ones(3)))]
    node = helper.make_node("BatchNormalization", ["input", "scale", "bias", "mean", "var"],
                            ["output", "running_mean", "running_var"], training_mode=1)
    return _model([node], [helper.make_tensor_value_info("input", F, [4, 3, 2])],
                  [helper.make_tensor_value_info("output", F, [4, 3, 2])], inits)


def training_models():
    """{name: (forward model, the parameters to train)}; trained with MSE and SGD."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 4, (4, 6)).astype(np.int64)
    one_op = {
        "gather": _on_param("Gather", (10, 6), [4, 6], [("ids", np.int64([1, 3, 3, 7]))], axis=0),
        "gather_elements": _on_param("GatherElements", (4, 6), [4, 6], [("idx", idx)], axis=0),
        "topk": _on_param("TopK", (4, 6), [4, 3], [("k", np.int64([3]))], n_outputs=2),
        "slice": _on_param("Slice", (4, 6), [4, 2], [("starts", np.int64([1])), ("ends", np.int64([3])),
                                                      ("axes", np.int64([1]))]),
        "relu": _on_param("Relu", (4, 6), [4, 6]),
        "sigmoid": _on_param("Sigmoid", (4, 6), [4, 6]),
        "tanh": _on_param("Tanh", (4, 6), [4, 6]),
        "leaky_relu": _on_param("LeakyRelu", (4, 6), [4, 6], alpha=0.2),
        "softmax": _on_param("Softmax", (4, 6), [4, 6], axis=-1),
        "log_softmax": _on_param("LogSoftmax", (4, 6), [4, 6], axis=-1),
        "dropout": _on_param("Dropout", (4, 6), [4, 6], [("ratio", np.float32(0.5)), ("training", np.bool_(True))],
                             n_outputs=2),
        "maxpool": _on_param("MaxPool", (1, 2, 4, 4), [1, 2, 2, 2], kernel_shape=[2, 2], strides=[2, 2]),
        "maxpool_opset12": _on_param("MaxPool", (1, 2, 4, 4), [1, 2, 2, 2], opset=12, kernel_shape=[2, 2],
                                     strides=[2, 2], n_outputs=2),
        "ms_gelu": _on_param("Gelu", (4, 6), [4, 6], domain=MS),
        "layer_norm": _on_param("LayerNormalization", (4, 6), [4, 6], [("scale", np.float32(np.ones(6))),
                                                                         ("bias", np.float32(np.zeros(6)))],
                                 n_outputs=3),
    }
    models = {name: (m, ["P"]) for name, m in one_op.items()}
    models["batch_norm"] = (batch_norm(), ["scale", "bias"])
    models["lstm"] = (_rnn("LSTM", 4), ["W", "R", "B"])
    models["gru"] = (_rnn("GRU", 3), ["W", "R", "B"])
    models["transformer"] = (transformer(), TRANSFORMER_PARAMS)
    models["transformer_ms_gelu"] = (transformer(gelu="ms", dropout_ratio=0.1), TRANSFORMER_PARAMS)
    return models


#: The training models whose artifacts onnxruntime 1.19.2 cannot make or convert, and why.
ORT_CANNOT = {
    "maxpool": "its ORT format converter crashes on the MaxPool training graph",
    "maxpool_opset12": "its ORT format converter crashes on the MaxPool training graph",
    "lstm": "its gradient builder rejects the LSTM graph (a type error)",
    "gru": "its gradient builder rejects the GRU graph (a type error)",
}


def _one_node(op, inputs, outputs, domain=MS, **attrs):
    """A model of one node of ``domain``: inputs and outputs as (name, elem type, shape)."""
    vi = lambda specs: [helper.make_tensor_value_info(n, t, s) for n, t, s in specs]  # noqa: E731
    node = helper.make_node(op, [n for n, _, _ in inputs], [n for n, _, _ in outputs], domain=domain, **attrs)
    return _model([node], vi(inputs), vi(outputs), [], ms=True)


def forward_ms_models():
    """One-node models of the com.microsoft forward ops that forward models or onnxruntime's optimizer bring."""
    x, w, b, y = ("X", F, [4, 6]), ("W", F, [6, 5]), ("B", F, [5]), ("Y", F, [4, 5])
    return {
        "reduce_all_l2": _one_node("ReduceAllL2", [("A", F, [3]), ("C", F, [2, 2])], [("N", F, [])]),
        "fused_matmul": _one_node("FusedMatMul", [x, w], [y], alpha=0.5),
        "fused_gemm": _one_node("FusedGemm", [x, w, b], [y], activation="Relu"),
        "fused_conv": _one_node("FusedConv", [("X", F, [1, 2, 5, 5]), ("W", F, [3, 2, 3, 3]), ("B", F, [3])],
                                [("Y", F, [1, 3, 3, 3])], activation="Relu"),
        "bias_gelu": _one_node("BiasGelu", [x, ("B", F, [6])], [("Y", F, [4, 6])]),
        "fast_gelu": _one_node("FastGelu", [x], [("Y", F, [4, 6])]),
        "quick_gelu": _one_node("QuickGelu", [x], [("Y", F, [4, 6])]),
    }
