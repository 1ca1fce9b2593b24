"""One gradient rule per op.

A rule gets the context ``c`` (builder, static types, the node) and the
gradient of each node output (a value name, or None when no gradient flows
there) and returns one gradient value name per node input (None for none).
Rules emit standard ONNX ops, or com.microsoft gradient ops that both
onnxruntime-training 1.19.2 and onnxtrain execute.
"""
from __future__ import annotations

import numpy as np

from ..ops.resize import resize_matrix, resize_plan

MS = "com.microsoft"
GRADIENT_RULES: dict = {}

#: Ops whose outputs carry no gradient to their inputs.
NO_GRADIENT = {"Shape", "Size", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or",
               "Xor", "ArgMax", "ArgMin", "Floor", "Ceil", "Round", "Sign", "ConstantOfShape", "Range", "NonZero",
               "IsNaN", "IsInf", "OneHot", "EyeLike", "RandomNormalLike", "RandomUniformLike"}


def rule(*op_types):
    def register(fn):
        for op in op_types:
            GRADIENT_RULES[op] = fn
        return fn
    return register


# ---- helpers ------------------------------------------------------------------------------------------

def reduce_sum(c, x: str, axes: list, keepdims: int) -> str:
    if c.opset >= 13:
        return c.b.op("ReduceSum", [x, c.b.ints(axes)], keepdims=keepdims)
    return c.b.op("ReduceSum", [x], axes=list(axes), keepdims=keepdims)


def unsqueeze(c, x: str, axes: list) -> str:
    if c.opset >= 13:
        return c.b.op("Unsqueeze", [x, c.b.ints(axes)])
    return c.b.op("Unsqueeze", [x], axes=list(axes))


def unbroadcast(c, grad: str, grad_shape, x: str) -> str:
    """``grad`` (of shape ``grad_shape``) summed over the axes along which ``x`` was broadcast."""
    x_shape = c.shape(x)
    if grad_shape is None or x_shape is None:
        raise NotImplementedError(f"{c.where()}: the shapes of '{x}' and its gradient must be known")
    lead = len(grad_shape) - len(x_shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(x_shape) if d == 1 and grad_shape[lead + i] != 1]
    if not axes:
        return grad
    summed = reduce_sum(c, grad, axes, keepdims=1)
    return c.b.op("Reshape", [summed, c.b.op("Shape", [x])]) if lead else summed


def scalar(c, value: float, like: str) -> str:
    return c.b.const(np.array(value, dtype=c.dtype(like)), "scalar")


# ---- elementwise ----------------------------------------------------------------------------------------

@rule("Identity")
def _identity(c, x, y, dy):
    return [dy[0]]


@rule("Add", "Sum")
def _add(c, x, y, dy):
    return [unbroadcast(c, dy[0], c.shape(y[0]), xi) for xi in x]


@rule("Sub")
def _sub(c, x, y, dy):
    return [unbroadcast(c, dy[0], c.shape(y[0]), x[0]),
            unbroadcast(c, c.b.op("Neg", [dy[0]]), c.shape(y[0]), x[1])]


@rule("Mul")
def _mul(c, x, y, dy):
    return [unbroadcast(c, c.b.op("Mul", [dy[0], x[1]]), c.shape(y[0]), x[0]) if c.wants(0) else None,
            unbroadcast(c, c.b.op("Mul", [dy[0], x[0]]), c.shape(y[0]), x[1]) if c.wants(1) else None]


@rule("Div")
def _div(c, x, y, dy):
    da = unbroadcast(c, c.b.op("Div", [dy[0], x[1]]), c.shape(y[0]), x[0]) if c.wants(0) else None
    db = None
    if c.wants(1):  # d(a/b)/db = -y/b
        db = unbroadcast(c, c.b.op("Neg", [c.b.op("Mul", [dy[0], c.b.op("Div", [y[0], x[1]])])]),
                         c.shape(y[0]), x[1])
    return [da, db]


@rule("Neg")
def _neg(c, x, y, dy):
    return [c.b.op("Neg", [dy[0]])]


@rule("Abs")
def _abs(c, x, y, dy):
    return [c.b.op("Mul", [dy[0], c.b.op("Sign", [x[0]])])]


@rule("Exp")
def _exp(c, x, y, dy):
    return [c.b.op("Mul", [dy[0], y[0]])]


@rule("Log")
def _log(c, x, y, dy):
    return [c.b.op("Div", [dy[0], x[0]])]


@rule("Sqrt")
def _sqrt(c, x, y, dy):
    return [c.b.op("Div", [dy[0], c.b.op("Mul", [y[0], scalar(c, 2.0, y[0])])])]


@rule("Reciprocal")
def _reciprocal(c, x, y, dy):
    return [c.b.op("Neg", [c.b.op("Mul", [dy[0], c.b.op("Mul", [y[0], y[0]])])])]


@rule("Pow")
def _pow(c, x, y, dy):
    base, exponent = x
    dx = de = None
    if c.wants(0):  # e * x^(e-1)
        e = exponent if c.dtype(exponent) == c.dtype(base) else c.b.op("Cast", [exponent], to=c.onnx_type(base))
        grad = c.b.op("Mul", [c.b.op("Mul", [dy[0], e]), c.b.op("Pow", [base, c.b.op("Sub", [e, scalar(c, 1.0, base)])])])
        dx = unbroadcast(c, grad, c.shape(y[0]), base)
    if c.wants(1):  # y * log(x)
        de = unbroadcast(c, c.b.op("Mul", [dy[0], c.b.op("Mul", [y[0], c.b.op("Log", [base])])]),
                         c.shape(y[0]), exponent)
    return [dx, de]


@rule("Relu")
def _relu(c, x, y, dy):
    return [c.b.op("ReluGrad", [dy[0], y[0]], domain=MS)]


@rule("Sigmoid")
def _sigmoid(c, x, y, dy):
    return [c.b.op("SigmoidGrad", [dy[0], y[0]], domain=MS)]


@rule("Tanh")
def _tanh(c, x, y, dy):
    return [c.b.op("TanhGrad", [dy[0], y[0]], domain=MS)]


@rule("LeakyRelu")
def _leaky_relu(c, x, y, dy):
    return [c.b.op("LeakyReluGrad", [dy[0], y[0]], domain=MS, alpha=c.node.attr("alpha", 0.01))]


@rule("Erf")
def _erf(c, x, y, dy):  # 2/sqrt(pi) * exp(-x^2)
    e = c.b.op("Exp", [c.b.op("Neg", [c.b.op("Mul", [x[0], x[0]])])])
    return [c.b.op("Mul", [dy[0], c.b.op("Mul", [e, scalar(c, 2 / np.sqrt(np.pi), x[0])])])]


@rule("Where")
def _where(c, x, y, dy):
    zero = scalar(c, 0.0, y[0])
    return [None,
            unbroadcast(c, c.b.op("Where", [x[0], dy[0], zero]), c.shape(y[0]), x[1]) if c.wants(1) else None,
            unbroadcast(c, c.b.op("Where", [x[0], zero, dy[0]]), c.shape(y[0]), x[2]) if c.wants(2) else None]


@rule("Cast")
def _cast(c, x, y, dy):
    return [c.b.op("Cast", [dy[0]], to=c.onnx_type(x[0]))]


# ---- matrix products --------------------------------------------------------------------------------------

@rule("Gemm")
def _gemm(c, x, y, dy):
    n = c.node
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    ta, tb = n.attr("transA", 0), n.attr("transB", 0)
    a, b_ = x[0], x[1]
    da = db = dc = None
    if c.wants(0):
        da = (c.b.op("Gemm", [b_, dy[0]], transA=tb, transB=1, alpha=alpha) if ta else
              c.b.op("Gemm", [dy[0], b_], transA=0, transB=1 - tb, alpha=alpha))
    if c.wants(1):
        db = (c.b.op("Gemm", [dy[0], a], transA=1, transB=ta, alpha=alpha) if tb else
              c.b.op("Gemm", [a, dy[0]], transA=1 - ta, transB=0, alpha=alpha))
    if len(x) > 2 and x[2] and c.wants(2) and beta != 0.0:
        g = dy[0] if beta == 1.0 else c.b.op("Mul", [dy[0], scalar(c, beta, y[0])])
        dc = unbroadcast(c, g, c.shape(y[0]), x[2])
    return [da, db, dc]


@rule("MatMul")
def _matmul(c, x, y, dy):
    """1-D operands are treated as [1, k] and [k, 1] matrices, as MatMul itself does."""
    a, b_ = x
    a_shape, b_shape = c.shape(a), c.shape(b_)
    g, g_shape = dy[0], list(c.shape(y[0]))
    if len(a_shape) == 1:
        a_shape = [1] + a_shape
        g, g_shape = unsqueeze(c, g, [len(g_shape) - (0 if len(b_shape) == 1 else 1)]), \
            g_shape[:len(g_shape) - (0 if len(b_shape) == 1 else 1)] + [1] + g_shape[len(g_shape) - (0 if len(b_shape) == 1 else 1):]
    if len(b_shape) == 1:
        b_shape = b_shape + [1]
        g, g_shape = unsqueeze(c, g, [len(g_shape)]), g_shape + [1]
    a2 = a if len(c.shape(a)) > 1 else unsqueeze(c, a, [0])
    b2 = b_ if len(c.shape(b_)) > 1 else unsqueeze(c, b_, [1])
    da = db = None
    if c.wants(0):
        grad = c.b.op("MatMul", [g, _swap_last(c, b2, len(b_shape))])
        da = _unbroadcast_to(c, grad, g_shape[:-1] + [a_shape[-1]], a, a_shape)
    if c.wants(1):
        grad = c.b.op("MatMul", [_swap_last(c, a2, len(a_shape)), g])
        db = _unbroadcast_to(c, grad, g_shape[:-2] + [b_shape[-2], g_shape[-1]], b_, b_shape)
    return [da, db]


def _swap_last(c, v: str, rank: int) -> str:
    return c.b.op("Transpose", [v], perm=list(range(rank - 2)) + [rank - 1, rank - 2])


def _unbroadcast_to(c, grad, grad_shape, x, matrix_shape):
    """Sum ``grad`` over broadcast batch axes down to ``matrix_shape``, then reshape to x's own shape."""
    lead = len(grad_shape) - len(matrix_shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(matrix_shape[:-2])
                                if d == 1 and grad_shape[lead + i] != 1]
    if axes:
        grad = reduce_sum(c, grad, axes, keepdims=1)
    if axes and lead or len(matrix_shape) != len(c.shape(x)):
        grad = c.b.op("Reshape", [grad, c.b.op("Shape", [x])])
    return grad


# ---- shapes -----------------------------------------------------------------------------------------------

@rule("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand")
def _reshape(c, x, y, dy):
    if c.node.op_type == "Expand":
        return [unbroadcast(c, dy[0], c.shape(y[0]), x[0]), None]
    return [c.b.op("Reshape", [dy[0], c.b.op("Shape", [x[0]])])] + [None] * (len(x) - 1)


@rule("Transpose")
def _transpose(c, x, y, dy):
    perm = c.node.attr("perm") or list(range(len(c.shape(x[0]))))[::-1]
    return [c.b.op("Transpose", [dy[0]], perm=[int(i) for i in np.argsort(perm)])]


def _reduce_axes(c, x, rank):
    if len(x) > 1 and x[1]:
        axes = c.constant(x[1])
        if axes is None:
            raise NotImplementedError(f"{c.where()}: reduction axes must be a constant")
        axes = [int(a) for a in axes.ravel()]
    else:
        axes = c.node.attr("axes")
    if not axes:
        return list(range(rank))
    return sorted(a + rank if a < 0 else a for a in axes)


def _expand_reduced(c, x, dy):
    rank = len(c.shape(x[0]))
    axes = _reduce_axes(c, x, rank)
    g = dy if c.node.attr("keepdims", 1) else unsqueeze(c, dy, axes)
    return c.b.op("Expand", [g, c.b.op("Shape", [x[0]])])


@rule("ReduceSum")
def _reduce_sum(c, x, y, dy):
    return [_expand_reduced(c, x, dy[0])] + [None] * (len(x) - 1)


@rule("ReduceMean")
def _reduce_mean(c, x, y, dy):
    count = c.b.op("Cast", [c.b.op("Div", [c.b.op("Size", [x[0]]), c.b.op("Size", [y[0]])])],
                   to=c.onnx_type(x[0]))
    return [c.b.op("Div", [_expand_reduced(c, x, dy[0]), count])] + [None] * (len(x) - 1)


@rule("GlobalAveragePool")
def _global_average_pool(c, x, y, dy):
    count = c.b.op("Cast", [c.b.op("Div", [c.b.op("Size", [x[0]]), c.b.op("Size", [y[0]])])],
                   to=c.onnx_type(x[0]))
    return [c.b.op("Div", [c.b.op("Expand", [dy[0], c.b.op("Shape", [x[0]])]), count])]


# ---- neural-network ops -------------------------------------------------------------------------------------

@rule("Softmax")
def _softmax(c, x, y, dy):
    if c.opset < 13:
        raise NotImplementedError(f"{c.where()}: the Softmax gradient needs opset >= 13")
    return [c.b.op("SoftmaxGrad_13", [dy[0], y[0]], domain=MS, axis=c.node.attr("axis", -1))]


@rule("LogSoftmax")
def _log_softmax(c, x, y, dy):
    if c.opset < 13:
        raise NotImplementedError(f"{c.where()}: the LogSoftmax gradient needs opset >= 13")
    return [c.b.op("LogSoftmaxGrad_13", [dy[0], y[0]], domain=MS, axis=c.node.attr("axis", -1))]


def _copy_attrs(node, *names):
    return {k: node.attr(k) for k in names if k in node.attributes}


@rule("Conv")
def _conv(c, x, y, dy):
    n = c.node
    attrs = _copy_attrs(n, "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
    want = [c.wants(0), c.wants(1), len(x) > 2 and bool(x[2]) and c.wants(2)]
    names = [c.b.fresh(f"{x[i]}_grad_conv") if want[i] else "" for i in range(3)]
    c.b.op("ConvGrad", [dy[0], x[0], x[1]], n_outputs=3, domain=MS, outputs=names, **attrs)
    return [names[0] or None, names[1] or None, names[2] or None][:len(x)]


@rule("MaxPool")
def _max_pool(c, x, y, dy):
    indices = c.extra_output(1, "indices")
    if c.opset < 16:  # ORT's MaxPoolGrad (default domain; onnx.checker does not know it)
        attrs = _copy_attrs(c.node, "kernel_shape", "pads", "strides", "dilations", "ceil_mode", "storage_order")
        dx = c.b.op("MaxPoolGrad", [dy[0], indices], **attrs)
        c.declare_like(dx, x[0])
        return [dx]
    # scatter-add dY at the flat input positions MaxPool's Indices name
    flat = c.b.ints([-1], "flat")
    zeros = c.b.op("ConstantOfShape", [c.b.op("Reshape", [c.b.op("Size", [x[0]]), flat])],
                   value=np.zeros(1, dtype=c.dtype(x[0])))
    scattered = c.b.op("ScatterElements", [zeros, c.b.op("Reshape", [indices, flat]),
                                           c.b.op("Reshape", [dy[0], flat])], axis=0, reduction="add")
    return [c.b.op("Reshape", [scattered, c.b.op("Shape", [x[0]])])]


@rule("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(c, x, y, dy):
    log_prob = c.extra_output(1, "log_prob")
    attrs = _copy_attrs(c.node, "ignore_index", "reduction")
    inputs = [dy[0], log_prob, x[1]] + ([x[2]] if len(x) > 2 and x[2] else [])
    return [c.b.op("SoftmaxCrossEntropyLossGrad", inputs, domain=MS, **attrs)] + [None] * (len(x) - 1)


@rule("Dropout")
def _dropout(c, x, y, dy):
    mask = c.extra_output(1, "mask")
    inputs = [dy[0], mask] + [v or "" for v in x[1:3]]
    while inputs and not inputs[-1]:
        inputs.pop()
    return [c.b.op("DropoutGrad", inputs, domain=MS)] + [None] * (len(x) - 1)


@rule("Gather")
def _gather(c, x, y, dy):
    return [c.b.op("GatherGrad", [c.b.op("Shape", [x[0]]), x[1], dy[0]], domain=MS,
                   axis=c.node.attr("axis", 0)), None]


@rule("Concat")
def _concat(c, x, y, dy):
    axis = c.node.attr("axis")
    sizes = [c.shape(v)[axis] for v in x]
    if not all(isinstance(s, int) for s in sizes):
        raise NotImplementedError(f"{c.where()}: the Concat gradient needs static sizes along axis {axis}")
    if c.opset >= 13:
        return c.b.op("Split", [dy[0], c.b.ints(sizes)], n_outputs=len(x), axis=axis) if len(x) > 1 else [dy[0]]
    return c.b.op("Split", [dy[0]], n_outputs=len(x), axis=axis, split=sizes) if len(x) > 1 else [dy[0]]


# ---- more activations -------------------------------------------------------------------------------------

@rule("Elu")
def _elu(c, x, y, dy):  # x > 0: 1, else y + alpha
    alpha = scalar(c, c.node.attr("alpha", 1.0), x[0])
    slope = c.b.op("Where", [c.b.op("Greater", [x[0], scalar(c, 0.0, x[0])]), scalar(c, 1.0, x[0]),
                             c.b.op("Add", [y[0], alpha])])
    return [c.b.op("Mul", [dy[0], slope])]


@rule("Atan")
def _atan(c, x, y, dy):
    return [c.b.op("Div", [dy[0], c.b.op("Add", [scalar(c, 1.0, x[0]), c.b.op("Mul", [x[0], x[0]])])])]


@rule("Gelu")
def _gelu(c, x, y, dy):
    v, one, half = x[0], scalar(c, 1.0, x[0]), scalar(c, 0.5, x[0])
    if c.node.attr("approximate", b"none") in (b"tanh", "tanh"):
        k, a = np.sqrt(2 / np.pi), 0.044715
        x2 = c.b.op("Mul", [v, v])
        inner = c.b.op("Mul", [c.b.op("Mul", [v, c.b.op("Add", [one, c.b.op("Mul", [x2, scalar(c, a, v)])])]),
                               scalar(c, k, v)])
        t = c.b.op("Tanh", [inner])
        d_inner = c.b.op("Mul", [c.b.op("Add", [one, c.b.op("Mul", [x2, scalar(c, 3 * a, v)])]), scalar(c, k, v)])
        slope = c.b.op("Add", [c.b.op("Mul", [half, c.b.op("Add", [one, t])]),
                               c.b.op("Mul", [c.b.op("Mul", [c.b.op("Mul", [half, v]),
                                                             c.b.op("Sub", [one, c.b.op("Mul", [t, t])])]),
                                              d_inner])])
    else:  # 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
        cdf = c.b.op("Mul", [half, c.b.op("Add", [one, c.b.op("Erf", [c.b.op("Mul", [v, scalar(c, 2 ** -0.5, v)])])])])
        pdf = c.b.op("Mul", [c.b.op("Exp", [c.b.op("Mul", [c.b.op("Mul", [v, v]), scalar(c, -0.5, v)])]),
                             scalar(c, (2 * np.pi) ** -0.5, v)])
        slope = c.b.op("Add", [cdf, c.b.op("Mul", [v, pdf])])
    return [c.b.op("Mul", [dy[0], slope])]


@rule("Clip")
def _clip(c, x, y, dy):
    if c.opset < 11:
        raise NotImplementedError(f"{c.where()}: the Clip gradient needs opset >= 11")
    mask = None
    for bound, op in ((x[1] if len(x) > 1 else "", "GreaterOrEqual"), (x[2] if len(x) > 2 else "", "LessOrEqual")):
        if bound:
            m = c.b.op(op, [x[0], bound])
            mask = m if mask is None else c.b.op("And", [mask, m])
    grad = dy[0] if mask is None else c.b.op("Where", [mask, dy[0], scalar(c, 0.0, x[0])])
    return [grad] + [None] * (len(x) - 1)


@rule("Mean")
def _mean(c, x, y, dy):
    scaled = c.b.op("Div", [dy[0], scalar(c, float(len(x)), y[0])])
    return [unbroadcast(c, scaled, c.shape(y[0]), xi) for xi in x]


# ---- more shape ops ---------------------------------------------------------------------------------------

@rule("Slice")
def _slice(c, x, y, dy):
    if c.opset < 10:
        raise NotImplementedError(f"{c.where()}: the Slice gradient needs opset >= 10")
    return [c.b.op("SliceGrad", [dy[0], c.b.op("Shape", [x[0]])] + [v or "" for v in x[1:]], domain=MS)] + \
        [None] * (len(x) - 1)


@rule("Split")
def _split(c, x, y, dy):
    parts = [d if d is not None else c.b.op("ConstantOfShape", [c.b.op("Shape", [o])],
                                             value=np.zeros(1, dtype=c.dtype(o)))
             for d, o in zip(dy, y)]
    return [c.b.op("Concat", parts, axis=c.node.attr("axis", 0))] + [None] * (len(x) - 1)


@rule("Pad")
def _pad(c, x, y, dy):
    mode = c.node.attr("mode", b"constant")
    pads = c.constant(x[1]) if c.opset >= 11 else np.asarray(c.node.attr("pads"))
    if mode not in (b"constant", "constant") or pads is None or (c.opset >= 18 and len(x) > 3 and x[3]):
        raise NotImplementedError(f"{c.where()}: the Pad gradient needs constant mode and constant pads")
    pads = [int(p) for p in np.asarray(pads).ravel()]
    n = len(pads) // 2
    if any(p < 0 for p in pads):
        raise NotImplementedError(f"{c.where()}: the Pad gradient needs non-negative pads")
    big = np.iinfo(np.int64).max
    starts = c.b.ints(pads[:n], "starts")
    ends = c.b.ints([-p if p else big for p in pads[n:]], "ends")
    return [c.b.op("Slice", [dy[0], starts, ends])] + [None] * (len(x) - 1)


@rule("Tile")
def _tile(c, x, y, dy):
    repeats, shape = c.constant(x[1]), c.shape(x[0])
    if repeats is None or not all(isinstance(d, int) for d in shape):
        raise NotImplementedError(f"{c.where()}: the Tile gradient needs constant repeats and a static input shape")
    split = [v for r, d in zip(repeats.ravel(), shape) for v in (int(r), d)]
    folded = c.b.op("Reshape", [dy[0], c.b.ints(split, "shape")])
    return [reduce_sum(c, folded, list(range(0, 2 * len(shape), 2)), keepdims=0), None]


@rule("ReduceMax", "ReduceMin")
def _reduce_extreme(c, x, y, dy):
    """dY shared equally among the elements equal to the extreme (as torch does for ties)."""
    rank = len(c.shape(x[0]))
    axes = _reduce_axes(c, x, rank)
    shape = c.b.op("Shape", [x[0]])
    keep = (lambda v: v) if c.node.attr("keepdims", 1) else (lambda v: unsqueeze(c, v, axes))
    hit = c.b.op("Cast", [c.b.op("Equal", [x[0], c.b.op("Expand", [keep(y[0]), shape])])], to=c.onnx_type(x[0]))
    share = c.b.op("Div", [keep(dy[0]), reduce_sum(c, hit, axes, keepdims=1)])
    return [c.b.op("Mul", [hit, c.b.op("Expand", [share, shape])])] + [None] * (len(x) - 1)


# ---- normalization ------------------------------------------------------------------------------------

def reduce_mean(c, x: str, axes: list) -> str:
    if c.opset >= 18:
        return c.b.op("ReduceMean", [x, c.b.ints(axes)], keepdims=1)
    return c.b.op("ReduceMean", [x], axes=list(axes), keepdims=1)


def _standardized(c, x, axes, eps, like):
    """(x_hat, 1/std) of ``x`` (of the type of ``like``) over ``axes``."""
    centered = c.b.op("Sub", [x, reduce_mean(c, x, axes)])
    inv = c.b.op("Reciprocal", [c.b.op("Sqrt", [c.b.op("Add", [reduce_mean(c, c.b.op("Mul", [centered, centered]),
                                                                             axes), scalar(c, eps, like)])])])
    return c.b.op("Mul", [centered, inv]), inv


def _standardized_grad(c, dx_hat, x_hat, inv, axes):
    """d x from d x_hat: (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / std."""
    return c.b.op("Mul", [inv, c.b.op("Sub", [c.b.op("Sub", [dx_hat, reduce_mean(c, dx_hat, axes)]), c.b.op(
        "Mul", [x_hat, reduce_mean(c, c.b.op("Mul", [dx_hat, x_hat]), axes)])])])


def _normalized_grads(c, x, dy, scale, axes, eps):
    """(dx, dy * x_hat) for y = x_hat * scale + bias, x_hat normalized over ``axes`` with batch statistics;
    ``scale`` already broadcastable to x."""
    x_hat, inv = _standardized(c, x, axes, eps, x)
    return _standardized_grad(c, c.b.op("Mul", [dy, scale]), x_hat, inv, axes), c.b.op("Mul", [dy, x_hat])


@rule("BatchNormalization")
def _batch_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    channel = lambda v: c.b.op("Reshape", [v, c.b.ints([1, -1] + [1] * (rank - 2), "shape")])  # noqa: E731
    eps = c.node.attr("epsilon", 1e-5)
    stat_axes = [0] + list(range(2, rank))
    training = c.node.attr("training_mode", 0) or (c.opset < 14 and len([o for o in y if o]) > 1)
    if training:
        dx, dy_xhat = _normalized_grads(c, x[0], dy[0], channel(x[1]), stat_axes, eps)
    else:
        inv = c.b.op("Reciprocal", [c.b.op("Sqrt", [c.b.op("Add", [x[4], scalar(c, eps, x[0])])])])
        dx = c.b.op("Mul", [dy[0], channel(c.b.op("Mul", [x[1], inv]))])
        dy_xhat = c.b.op("Mul", [dy[0], c.b.op("Mul", [c.b.op("Sub", [x[0], channel(x[3])]), channel(inv)])])
    dscale = reduce_sum(c, dy_xhat, stat_axes, keepdims=0) if c.wants(1) else None
    dbias = reduce_sum(c, dy[0], stat_axes, keepdims=0) if c.wants(2) else None
    return [dx if c.wants(0) else None, dscale, dbias, None, None]


@rule("LayerNormalization")
def _layer_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    axis = c.node.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    axes = list(range(axis, rank))
    dx, dy_xhat = _normalized_grads(c, x[0], dy[0], x[1], axes, c.node.attr("epsilon", 1e-5))
    outer = list(range(axis))
    dscale = reduce_sum(c, dy_xhat, outer, keepdims=0) if c.wants(1) and outer else dy_xhat if c.wants(1) else None
    dbias = None
    if len(x) > 2 and x[2] and c.wants(2):
        dbias = reduce_sum(c, dy[0], outer, keepdims=0) if outer else dy[0]
    return [dx if c.wants(0) else None, dscale, dbias]


@rule("ConvTranspose")
def _conv_transpose(c, x, y, dy):
    """ConvTranspose(x, W) is the input gradient of a Conv with weight W, so its gradients are a Conv and
    ConvGrad's weight gradient with the roles of x and dY exchanged."""
    n = c.node
    if n.attr("output_shape") is not None or n.attr("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError(f"{c.where()}: the ConvTranspose gradient needs explicit pads")
    attrs = _copy_attrs(n, "dilations", "group", "kernel_shape", "pads", "strides")
    dx = c.b.op("Conv", [dy[0], x[1]], **attrs) if c.wants(0) else None
    dw = None
    if c.wants(1):
        dw = c.b.fresh(f"{x[1]}_grad_convT")
        c.b.op("ConvGrad", [x[0], dy[0], x[1]], n_outputs=3, domain=MS, outputs=["", dw, ""], **attrs)
    db = None
    if len(x) > 2 and x[2] and c.wants(2):
        db = reduce_sum(c, dy[0], [0] + list(range(2, len(c.shape(y[0])))), keepdims=0)
    return [dx, dw, db][:len(x)]


@rule("AveragePool")
def _average_pool(c, x, y, dy):
    """dY spread evenly over each window: a ConvTranspose of every channel with a constant kernel."""
    n = c.node
    kernel = list(n.attr("kernel_shape"))
    nd = len(kernel)
    pads = list(n.attr("pads") or [0] * (2 * nd))
    strides = list(n.attr("strides") or [1] * nd)
    x_shape, y_shape = c.shape(x[0]), c.shape(y[0])
    if n.attr("ceil_mode", 0) or n.attr("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or \
            (any(pads) and not n.attr("count_include_pad", 0)) or n.attr("dilations") not in (None, [1] * nd) or \
            not all(isinstance(d, int) for d in x_shape[2:] + y_shape[2:]):
        raise NotImplementedError(f"{c.where()}: the AveragePool gradient needs static spatial sizes, no ceil_mode "
                                  f"or auto_pad, and count_include_pad=1 when padded")
    out_pad = [x_shape[2 + i] - ((y_shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + nd] + kernel[i])
               for i in range(nd)]
    weight = c.b.const(np.full([1, 1] + kernel, 1.0 / np.prod(kernel), dtype=c.dtype(x[0])), "avgpool_kernel")
    flat = c.b.op("Reshape", [dy[0], c.b.ints([-1, 1] + [0] * nd, "shape")])
    spread = c.b.op("ConvTranspose", [flat, weight], kernel_shape=kernel, strides=strides, pads=pads,
                    output_padding=out_pad)
    return [c.b.op("Reshape", [spread, c.b.op("Shape", [x[0]])])]


@rule("NegativeLogLikelihoodLoss")
def _nll(c, x, y, dy):
    """d input = -w[target] / denominator * dY at the target class, 0 elsewhere (ignored targets: 0)."""
    n = c.node
    scores, target = x[0], x[1]
    rank = len(c.shape(scores))
    reduction = n.attr("reduction", b"mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    classes = c.b.op("Gather", [c.b.op("Shape", [scores]), c.b.ints([1], "axis1")])
    class_ids = c.b.op("Range", [c.b.const(np.array(0, np.int64), "zero"), c.b.op("Squeeze", [classes]),
                                 c.b.const(np.array(1, np.int64), "one")])
    class_ids = c.b.op("Reshape", [class_ids, c.b.ints([1, -1] + [1] * (rank - 2), "shape")])
    hit = c.b.op("Cast", [c.b.op("Equal", [unsqueeze(c, target, [1]), class_ids])], to=c.onnx_type(scores))
    weight = c.b.op("Cast", [c.b.op("Not", [c.b.op("Equal", [target, c.b.const(
        np.array(n.attr("ignore_index", -(2 ** 62)), np.int64), "ignore")])])], to=c.onnx_type(scores))
    if len(x) > 2 and x[2]:
        safe = c.b.op("Where", [c.b.op("Cast", [weight], to=9), target, c.b.const(np.array(0, np.int64), "zero")])
        weight = c.b.op("Mul", [weight, c.b.op("Gather", [x[2], safe])])
    if reduction == "mean":
        g = c.b.op("Div", [dy[0], c.b.op("ReduceSum", [weight], keepdims=0)])
        per_item = c.b.op("Mul", [weight, g])
    elif reduction == "sum":
        per_item = c.b.op("Mul", [weight, dy[0]])
    else:
        per_item = c.b.op("Mul", [weight, dy[0]])
    grad = c.b.op("Neg", [c.b.op("Mul", [hit, unsqueeze(c, per_item, [1])])])
    return [grad] + [None] * (len(x) - 1)


@rule("Resize")
def _resize(c, x, y, dy):
    """Resize is one interpolation matrix M per resized axis; its gradient multiplies by M transposed."""
    n = c.node
    scales = c.constant(x[2]) if len(x) > 2 and x[2] else None
    sizes = c.constant(x[3]) if len(x) > 3 and x[3] else None
    shape = c.shape(x[0])
    if (scales is None and sizes is None) or n.attr("antialias", 0) or n.attr("axes") is not None:
        raise NotImplementedError(f"{c.where()}: the Resize gradient needs constant scales or sizes")
    dims = [d if isinstance(d, int) else 1 for d in shape]
    plan = resize_plan(dims, scales, sizes)
    if any(not isinstance(shape[axis], int) for axis, *_ in plan):
        raise NotImplementedError(f"{c.where()}: the Resize gradient needs static sizes on the resized axes")
    text = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    mode = text(n.attr("mode", "nearest"))
    coordinates = text(n.attr("coordinate_transformation_mode", "half_pixel"))
    nearest = text(n.attr("nearest_mode", "round_prefer_floor"))
    grad, rank = dy[0], len(shape)
    for axis, in_len, out_len, scale in reversed(plan):
        m = c.b.const(resize_matrix(in_len, out_len, scale, mode, coordinates, nearest).astype(c.dtype(x[0])),
                      "resize_matrix")
        perm = [i for i in range(rank) if i != axis] + [axis]
        moved = c.b.op("MatMul", [c.b.op("Transpose", [grad], perm=perm), m])
        grad = c.b.op("Transpose", [moved], perm=[int(i) for i in np.argsort(perm)])
    return [grad] + [None] * (len(x) - 1)


# ---- the activations PyTorch's exporter emits for common layers -------------------------------------------

def _times(c, dy, slope):
    return [c.b.op("Mul", [dy[0], slope])]


def _where_positive(c, x, positive, otherwise):
    return c.b.op("Where", [c.b.op("Greater", [x, scalar(c, 0.0, x)]), positive, otherwise])


@rule("Softplus")
def _softplus(c, x, y, dy):  # sigmoid(x)
    return _times(c, dy, c.b.op("Sigmoid", [x[0]]))


@rule("Softsign")
def _softsign(c, x, y, dy):  # 1 / (1 + |x|)^2
    d = c.b.op("Add", [scalar(c, 1.0, x[0]), c.b.op("Abs", [x[0]])])
    return [c.b.op("Div", [dy[0], c.b.op("Mul", [d, d])])]


@rule("HardSigmoid")
def _hard_sigmoid(c, x, y, dy):  # alpha inside (0, 1), else 0
    alpha = c.node.attr("alpha", 0.2)
    inside = c.b.op("And", [c.b.op("Greater", [y[0], scalar(c, 0.0, y[0])]),
                            c.b.op("Less", [y[0], scalar(c, 1.0, y[0])])])
    return _times(c, dy, c.b.op("Where", [inside, scalar(c, alpha, x[0]), scalar(c, 0.0, x[0])]))


@rule("HardSwish")
def _hard_swish(c, x, y, dy):  # 0 below -3, 1 above 3, x / 3 + 1/2 between
    between = c.b.op("Add", [c.b.op("Div", [x[0], scalar(c, 3.0, x[0])]), scalar(c, 0.5, x[0])])
    upper = c.b.op("Where", [c.b.op("Greater", [x[0], scalar(c, 3.0, x[0])]), scalar(c, 1.0, x[0]), between])
    return _times(c, dy, c.b.op("Where", [c.b.op("Less", [x[0], scalar(c, -3.0, x[0])]), scalar(c, 0.0, x[0]), upper]))


@rule("Selu")
def _selu(c, x, y, dy):  # gamma for x > 0, else y + gamma * alpha
    gamma = c.node.attr("gamma", 1.05070102214813232421875)
    alpha = c.node.attr("alpha", 1.67326319217681884765625)
    return _times(c, dy, _where_positive(c, x[0], scalar(c, gamma, x[0]),
                                         c.b.op("Add", [y[0], scalar(c, gamma * alpha, x[0])])))


@rule("Celu")
def _celu(c, x, y, dy):  # 1 for x > 0, else exp(x / alpha)
    alpha = scalar(c, c.node.attr("alpha", 1.0), x[0])
    return _times(c, dy, _where_positive(c, x[0], scalar(c, 1.0, x[0]), c.b.op("Exp", [c.b.op("Div", [x[0], alpha])])))


@rule("ThresholdedRelu")
def _thresholded_relu(c, x, y, dy):  # 1 above alpha, else 0
    above = c.b.op("Greater", [x[0], scalar(c, c.node.attr("alpha", 1.0), x[0])])
    return _times(c, dy, c.b.op("Cast", [above], to=c.onnx_type(x[0])))


@rule("PRelu")
def _prelu(c, x, y, dy):  # dx: 1 or slope; dslope: 0 or x, summed over the axes slope was broadcast along
    zero = scalar(c, 0.0, x[0])
    negative = c.b.op("Less", [x[0], zero])
    dx = c.b.op("Mul", [dy[0], c.b.op("Where", [negative, x[1], scalar(c, 1.0, x[0])])]) if c.wants(0) else None
    dslope = unbroadcast(c, c.b.op("Mul", [dy[0], c.b.op("Where", [negative, x[0], zero])]), c.shape(y[0]),
                         x[1]) if c.wants(1) else None
    if dx is not None and c.shape(x[0]) != c.shape(y[0]):
        dx = unbroadcast(c, dx, c.shape(y[0]), x[0])
    return [dx, dslope]


@rule("Mish")
def _mish(c, x, y, dy):  # tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2), sp = softplus(x)
    t = c.b.op("Tanh", [c.b.op("Softplus", [x[0]])])
    sech2 = c.b.op("Sub", [scalar(c, 1.0, x[0]), c.b.op("Mul", [t, t])])
    return _times(c, dy, c.b.op("Add", [t, c.b.op("Mul", [c.b.op("Mul", [x[0], c.b.op("Sigmoid", [x[0]])]), sech2])]))


@rule("Sin")
def _sin(c, x, y, dy):
    return _times(c, dy, c.b.op("Cos", [x[0]]))


@rule("Cos")
def _cos(c, x, y, dy):
    return _times(c, dy, c.b.op("Neg", [c.b.op("Sin", [x[0]])]))


# ---- the gradient tail: selection, indexing, normalization, reductions, einsum ------------------------------

@rule("Max", "Min")
def _max_min(c, x, y, dy):
    """dY goes to the inputs equal to the result, shared equally among ties (as torch.maximum/minimum do;
    onnxruntime's own rule gives every tied input the whole dY)."""
    hits = [c.b.op("Cast", [c.b.op("Equal", [xi, y[0]])], to=c.onnx_type(y[0])) for xi in x]
    share = c.b.op("Div", [dy[0], c.b.op("Sum", hits) if len(hits) > 1 else hits[0]])
    return [unbroadcast(c, c.b.op("Mul", [share, hit]), c.shape(y[0]), xi) if c.wants(i) else None
            for i, (xi, hit) in enumerate(zip(x, hits))]


@rule("GatherElements")
def _gather_elements(c, x, y, dy):
    return [c.b.op("GatherElementsGrad", [dy[0], c.b.op("Shape", [x[0]]), x[1]], domain=MS,
                   axis=c.node.attr("axis", 0)), None]


@rule("ScatterElements")
def _scatter_elements(c, x, y, dy):
    """data: dY with the written positions cleared; updates: dY read back at those positions."""
    reduction = c.node.attr("reduction", b"none")
    if reduction not in (b"none", "none"):
        raise NotImplementedError(f"{c.where()}: the ScatterElements gradient needs reduction 'none'")
    axis = c.node.attr("axis", 0)
    ddata = None
    if c.wants(0):
        zeros = c.b.op("ConstantOfShape", [c.b.op("Shape", [x[2]])], value=np.zeros(1, dtype=c.dtype(x[2])))
        ddata = c.b.op("ScatterElements", [dy[0], x[1], zeros], axis=axis)
    dupdates = c.b.op("GatherElements", [dy[0], x[1]], axis=axis) if c.wants(2) else None
    return [ddata, None, dupdates]


@rule("InstanceNormalization")
def _instance_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    channel = c.b.ints([1, -1] + [1] * (rank - 2), "shape")
    dx, dy_xhat = _normalized_grads(c, x[0], dy[0], c.b.op("Reshape", [x[1], channel]), list(range(2, rank)),
                                    c.node.attr("epsilon", 1e-5))
    outer = [0] + list(range(2, rank))
    return [dx if c.wants(0) else None, reduce_sum(c, dy_xhat, outer, keepdims=0) if c.wants(1) else None,
            reduce_sum(c, dy[0], outer, keepdims=0) if c.wants(2) else None]


@rule("GroupNormalization")
def _group_norm(c, x, y, dy):
    """Standardized per (sample, group) on [N, G, -1]; opset 18 scales per group, opset 21 per channel."""
    rank, groups = len(c.shape(x[0])), c.node.attr("num_groups")
    grouped = lambda v: c.b.op("Reshape", [v, c.b.ints([0, groups, -1], "grouped")])  # noqa: E731
    x_hat, inv = _standardized(c, grouped(x[0]), [2], c.node.attr("epsilon", 1e-5), x[0])
    if c.opset >= 21:
        per_channel = lambda v: c.b.op("Reshape", [v, c.b.ints([1, -1] + [1] * (rank - 2), "shape")])  # noqa: E731
        dx_hat = grouped(c.b.op("Mul", [dy[0], per_channel(x[1])]))
        dy_xhat = c.b.op("Mul", [dy[0], c.b.op("Reshape", [x_hat, c.b.op("Shape", [x[0]])])])
        dscale = reduce_sum(c, dy_xhat, [0] + list(range(2, rank)), keepdims=0) if c.wants(1) else None
        dbias = reduce_sum(c, dy[0], [0] + list(range(2, rank)), keepdims=0) if c.wants(2) else None
    else:
        dy_g = grouped(dy[0])
        dx_hat = c.b.op("Mul", [dy_g, c.b.op("Reshape", [x[1], c.b.ints([-1, 1], "shape")])])
        dscale = reduce_sum(c, c.b.op("Mul", [dy_g, x_hat]), [0, 2], keepdims=0) if c.wants(1) else None
        dbias = reduce_sum(c, dy_g, [0, 2], keepdims=0) if c.wants(2) else None
    dx = c.b.op("Reshape", [_standardized_grad(c, dx_hat, x_hat, inv, [2]), c.b.op("Shape", [x[0]])]) \
        if c.wants(0) else None
    return [dx, dscale, dbias]


@rule("SpaceToDepth")
def _space_to_depth(c, x, y, dy):
    return [c.b.op("DepthToSpace", [dy[0]], blocksize=c.node.attr("blocksize"), mode="DCR")]


@rule("DepthToSpace")
def _depth_to_space(c, x, y, dy):
    """SpaceToDepth undoes DCR; for CRD its channels (block row, block column, channel) are put back in
    (channel, block row, block column) order."""
    bs = c.node.attr("blocksize")
    dx = c.b.op("SpaceToDepth", [dy[0]], blocksize=bs)
    if c.node.attr("mode", b"DCR") in (b"CRD", "CRD"):
        channels = c.shape(x[0])[1]
        if not isinstance(channels, int):
            raise NotImplementedError(f"{c.where()}: the CRD DepthToSpace gradient needs a static channel count")
        crd = np.arange(channels).reshape(bs * bs, channels // (bs * bs)).T.ravel()
        dx = c.b.op("Gather", [dx, c.b.ints(crd, "crd_order")], axis=1)
    return [dx]


@rule("CumSum")
def _cumsum(c, x, y, dy):  # the transpose of a running sum is the running sum the other way
    return [c.b.op("CumSum", [dy[0], x[1]], exclusive=c.node.attr("exclusive", 0),
                   reverse=1 - c.node.attr("reverse", 0)), None]


def _reduction_is_identity(c, x) -> bool:
    """noop_with_empty_axes=1 without axes: the reduction returns its input."""
    no_axes = not (len(x) > 1 and x[1]) or c.constant(x[1]) is not None and c.constant(x[1]).size == 0
    return bool(c.node.attr("noop_with_empty_axes", 0)) and no_axes and not c.node.attr("axes")


@rule("ReduceLogSumExp")
def _reduce_log_sum_exp(c, x, y, dy):  # softmax over the reduced axes
    if _reduction_is_identity(c, x):
        return [dy[0]] + [None] * (len(x) - 1)
    weights = c.b.op("Exp", [c.b.op("Sub", [x[0], _expand_reduced(c, x, y[0])])])
    return [c.b.op("Mul", [_expand_reduced(c, x, dy[0]), weights])] + [None] * (len(x) - 1)


@rule("ReduceL2")
def _reduce_l2(c, x, y, dy):  # x / ||x||, 0 where the norm is 0 (torch's choice)
    if _reduction_is_identity(c, x):
        return [dy[0]] + [None] * (len(x) - 1)
    norm = _expand_reduced(c, x, y[0])
    zero = scalar(c, 0.0, x[0])
    safe = c.b.op("Where", [c.b.op("Equal", [norm, zero]), scalar(c, 1.0, x[0]), norm])
    return [c.b.op("Mul", [_expand_reduced(c, x, dy[0]), c.b.op("Div", [x[0], safe])])] + [None] * (len(x) - 1)


@rule("ReduceSumSquare")
def _reduce_sum_square(c, x, y, dy):
    if _reduction_is_identity(c, x):
        raise NotImplementedError(f"{c.where()}: noop_with_empty_axes without axes has no gradient rule")
    return [c.b.op("Mul", [_expand_reduced(c, x, dy[0]), c.b.op("Add", [x[0], x[0]])])] + [None] * (len(x) - 1)


@rule("LpNormalization")
def _lp_normalization(c, x, y, dy):
    """y = x / n: dx = (dy - s * sum(dy * y)) / n, s = y for p = 2 and sign(x) for p = 1."""
    axis, p = c.node.attr("axis", -1), c.node.attr("p", 2)
    if p not in (1, 2):
        raise NotImplementedError(f"{c.where()}: the LpNormalization gradient needs p = 1 or 2")
    op = "ReduceL2" if p == 2 else "ReduceL1"
    norm = c.b.op(op, [x[0], c.b.ints([axis])], keepdims=1) if c.opset >= 18 else \
        c.b.op(op, [x[0]], axes=[axis], keepdims=1)
    s = y[0] if p == 2 else c.b.op("Sign", [x[0]])
    along = reduce_sum(c, c.b.op("Mul", [dy[0], y[0]]), [axis], keepdims=1)
    return [c.b.op("Div", [c.b.op("Sub", [dy[0], c.b.op("Mul", [s, along])]), norm])]


def _einsum_terms(c, x, y):
    """The equation's input and output subscripts, '...' spelled out in unused letters from the static ranks."""
    equation = c.node.attr("equation")
    equation = (equation.decode() if isinstance(equation, bytes) else equation).replace(" ", "")
    inputs, _, output = equation.partition("->")
    terms = inputs.split(",")
    if "->" not in equation:
        letters = [ch for t in terms for ch in t if ch.isalpha()]
        output = ("..." if any("..." in t for t in terms) else "") + \
            "".join(sorted(ch for ch in set(letters) if letters.count(ch) == 1))
    spare = iter(ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if ch not in equation)
    ellipsis_rank = max(len(c.shape(v)) - len(t.replace("...", "")) for t, v in zip(terms, x) if "..." in t) \
        if "..." in equation else 0
    batch = "".join(next(spare) for _ in range(ellipsis_rank))
    sizes = {}
    for t, v in zip(terms, x):
        if "..." in t:
            t_rank = len(c.shape(v)) - len(t.replace("...", ""))
            dims = c.shape(v)[t.index("..."):t.index("...") + t_rank]
            for letter, d in zip(batch[ellipsis_rank - t_rank:], dims):
                if sizes.setdefault(letter, d) != d:
                    raise NotImplementedError(f"{c.where()}: the Einsum gradient does not broadcast size-1 dimensions of '...'")
    spell = lambda t, rank: t.replace("...", batch[len(batch) - rank:])  # noqa: E731
    terms = [spell(t, len(c.shape(v)) - len(t.replace("...", ""))) for t, v in zip(terms, x)]
    return terms, spell(output, ellipsis_rank)


@rule("Einsum")
def _einsum(c, x, y, dy):
    """d input k = einsum(dY and the other inputs -> input k's subscripts), broadcast along the letters only
    input k has (summed away in the forward pass)."""
    terms, output = _einsum_terms(c, x, y)
    grads = []
    for k, term in enumerate(terms):
        if not c.wants(k):
            grads.append(None)
            continue
        if len(set(term)) != len(term):
            raise NotImplementedError(f"{c.where()}: the Einsum gradient does not take diagonals ('{term}')")
        others = [t for i, t in enumerate(terms) if i != k]
        known = set(output).union(*others)
        kept = "".join(ch for ch in term if ch in known)
        operands = [v for i, v in enumerate(x) if i != k]
        if output:
            grad = c.b.op("Einsum", [dy[0]] + operands, equation=",".join([output] + others) + "->" + kept)
        elif operands:
            grad = c.b.op("Mul", [dy[0], c.b.op("Einsum", operands, equation=",".join(others) + "->" + kept)])
        else:
            grad = dy[0]
        if kept != term:
            grad = c.b.op("Expand", [unsqueeze(c, grad, [i for i, ch in enumerate(term) if ch not in known]),
                                     c.b.op("Shape", [x[k]])])
        grads.append(grad)
    return grads


@rule("TopK")
def _top_k(c, x, y, dy):  # dValues back to where Indices took them from
    axis = c.node.attr("axis", -1)
    return [c.b.op("GatherElementsGrad", [dy[0], c.b.op("Shape", [x[0]]), c.extra_output(1, "indices")],
                   domain=MS, axis=axis), None]


@rule("GlobalMaxPool")
def _global_max_pool(c, x, y, dy):
    """dY shared equally among the elements equal to the maximum, as ReduceMax's rule does."""
    axes = list(range(2, len(c.shape(x[0]))))
    shape = c.b.op("Shape", [x[0]])
    hit = c.b.op("Cast", [c.b.op("Equal", [x[0], c.b.op("Expand", [y[0], shape])])], to=c.onnx_type(x[0]))
    return [c.b.op("Mul", [hit, c.b.op("Expand", [c.b.op("Div", [dy[0], reduce_sum(c, hit, axes, keepdims=1)]),
                                                   shape])])]


@rule("ReduceL1")
def _reduce_l1(c, x, y, dy):
    if _reduction_is_identity(c, x):
        raise NotImplementedError(f"{c.where()}: noop_with_empty_axes without axes has no gradient rule")
    return [c.b.op("Mul", [_expand_reduced(c, x, dy[0]), c.b.op("Sign", [x[0]])])] + [None] * (len(x) - 1)
