"""One gradient rule per op, written as arithmetic on graph values.

A rule gets the context ``c``, the node's inputs ``x`` and outputs ``y`` and the gradient of each output
``dy`` (None where no gradient flows), all as Values (values.py): ``dy[0] * (1 - y[0] * y[0])`` appends the
nodes that compute it.  It returns one gradient per input, or fewer (the rest are None).  The driver
(gradient.py) keeps the gradients of the inputs that need one; for rules registered with
``broadcasts=True`` it also sums each gradient over the axes its input was broadcast along.  A gradient
nobody needs is left unread, and the runtime's plan drops it; rules ask ``c.wants(i)`` only where that
gradient would be costly (matrix products, convolutions).  Rules emit standard ONNX ops, or com.microsoft
gradient ops that both onnxruntime-training 1.19.2 and onnxtrain execute.
"""
from __future__ import annotations

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from ..ops.resize import _axis_plan, _roi_pairs, interpolation

GRADIENT_RULES: dict = {}

#: Ops whose outputs carry no gradient to their inputs.
NO_GRADIENT = {"Shape", "Size", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or",
               "Xor", "ArgMax", "ArgMin", "Floor", "Ceil", "Round", "Sign", "ConstantOfShape", "Range", "NonZero",
               "IsNaN", "IsInf", "OneHot", "EyeLike", "RandomNormalLike", "RandomUniformLike"}


def rule(*op_types, broadcasts: bool = False):
    """Register ``fn`` as the gradient rule of ``op_types``.  With ``broadcasts``, the driver sums each input's
    gradient (shaped like output 0) over the axes along which that input was broadcast."""
    def register(fn):
        fn.broadcasts = broadcasts
        for op in op_types:
            GRADIENT_RULES[op] = fn
        return fn
    return register


# ---- helpers ------------------------------------------------------------------------------------------

def reduce_sum(c, x, axes: list, keepdims: int):
    if c.opset >= 13:
        return c.op("ReduceSum", x, c.b.ints(axes), keepdims=keepdims)
    return c.op("ReduceSum", x, axes=list(axes), keepdims=keepdims)


def reduce_mean(c, x, axes: list):
    if c.opset >= 18:
        return c.op("ReduceMean", x, c.b.ints(axes), keepdims=1)
    return c.op("ReduceMean", x, axes=list(axes), keepdims=1)


def unsqueeze(c, x, axes: list):
    if c.opset >= 13:
        return c.op("Unsqueeze", x, c.b.ints(axes))
    return c.op("Unsqueeze", x, axes=list(axes))


def shape_of(c, x):
    return c.op("Shape", x)


def expand_like(c, v, like):
    """``v`` (of ``like``'s rank, sizes 1 or equal) broadcast to ``like``'s shape; Tile before opset 8's Expand."""
    if c.opset >= 8:
        return c.op("Expand", v, shape_of(c, like))
    return c.op("Tile", v, shape_of(c, like) / shape_of(c, v))


def reshape_like(c, v, like):
    return c.op("Reshape", v, shape_of(c, like))


def reshape(c, v, dims: list, base: str = "shape"):
    return c.op("Reshape", v, c.b.ints(dims, base))


def legacy_broadcast(c) -> dict:
    """The ``broadcast``/``axis`` attributes of an opset-1/6 binary op that broadcasts its second input
    (aligned at ``axis``, the trailing axes when unset), to pass on to the ops a rule emits; else {}."""
    if c.opset >= 7 or not c.node.attr("broadcast", 0):
        return {}
    return {"broadcast": 1, **_copy_attrs(c.node, "axis")}


def unbroadcast(c, grad, grad_shape, x):
    """``grad`` (of shape ``grad_shape``) summed over the axes along which ``x`` was broadcast."""
    x_shape = c.shape(x)
    if grad_shape is None or x_shape is None:
        raise NotImplementedError(f"{c.where()}: the shapes of '{x}' and its gradient must be known")
    lead = len(grad_shape) - len(x_shape)
    legacy = legacy_broadcast(c) if c.node is not None and x == c.node.inputs[-1] else {}
    if "axis" in legacy and x_shape != [1]:  # x occupies grad's axes start .. start + rank(x)
        start = legacy["axis"] + len(grad_shape) if legacy["axis"] < 0 else legacy["axis"]
        outside = list(range(start)) + list(range(start + len(x_shape), len(grad_shape)))
    else:
        start, outside = lead, list(range(lead))
    axes = outside + [start + i for i, d in enumerate(x_shape) if d == 1 and grad_shape[start + i] != 1]
    if not axes:
        return grad
    summed = reduce_sum(c, grad, sorted(axes), keepdims=1)
    if not outside:
        return summed
    return c.op("Reshape", summed, shape=x_shape) if c.opset < 5 else reshape_like(c, summed, x)


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def _copy_attrs(node, *names):
    return {k: node.attr(k) for k in names if k in node.attributes}


# ---- elementwise ----------------------------------------------------------------------------------------

@rule("Identity")
def _identity(c, x, y, dy):
    return [dy[0]]


@rule("Add", "Sum", broadcasts=True)
def _add(c, x, y, dy):
    return [dy[0]] * len(x)


@rule("Sub", broadcasts=True)
def _sub(c, x, y, dy):
    return [dy[0], -dy[0]]


@rule("Mul", broadcasts=True)
def _mul(c, x, y, dy):
    return [c.op("Mul", dy[0], x[1], **legacy_broadcast(c)), dy[0] * x[0]]


@rule("Div", broadcasts=True)
def _div(c, x, y, dy):  # d(a/b)/db = -y/b
    legacy = legacy_broadcast(c)
    return [c.op("Div", dy[0], x[1], **legacy), -(dy[0] * c.op("Div", y[0], x[1], **legacy))]


@rule("Mean", broadcasts=True)
def _mean(c, x, y, dy):
    return [dy[0] / float(len(x))] * len(x)


@rule("Neg")
def _neg(c, x, y, dy):
    return [-dy[0]]


@rule("Abs")
def _abs(c, x, y, dy):
    return [dy[0] * x[0].sign()]


@rule("Exp")
def _exp(c, x, y, dy):
    return [dy[0] * y[0]]


@rule("Log")
def _log(c, x, y, dy):
    return [dy[0] / x[0]]


@rule("Sqrt")
def _sqrt(c, x, y, dy):
    return [dy[0] / (y[0] * 2.0)]


@rule("Reciprocal")
def _reciprocal(c, x, y, dy):
    return [-(dy[0] * (y[0] * y[0]))]


@rule("Pow", broadcasts=True)
def _pow(c, x, y, dy):  # e * x^(e-1); y * log(x)
    base, exponent = x
    e = exponent if c.dtype(exponent) == c.dtype(base) else exponent.cast(base)
    return [dy[0] * e * base ** (e - 1.0), dy[0] * (y[0] * base.log())]


@rule("Where", broadcasts=True)
def _where(c, x, y, dy):
    return [None, x[0].where(dy[0], 0.0), x[0].where(0.0, dy[0])]


@rule("Cast")
def _cast(c, x, y, dy):
    return [dy[0].cast(x[0])]


@rule("Relu")
def _relu(c, x, y, dy):
    return [c.op("ReluGrad", dy[0], y[0], domain=MS_DOMAIN)]


@rule("Sigmoid")
def _sigmoid(c, x, y, dy):
    return [c.op("SigmoidGrad", dy[0], y[0], domain=MS_DOMAIN)]


@rule("Tanh")
def _tanh(c, x, y, dy):
    return [c.op("TanhGrad", dy[0], y[0], domain=MS_DOMAIN)]


@rule("LeakyRelu")
def _leaky_relu(c, x, y, dy):
    return [c.op("LeakyReluGrad", dy[0], y[0], domain=MS_DOMAIN, alpha=c.node.attr("alpha", 0.01))]


@rule("Erf")
def _erf(c, x, y, dy):  # 2/sqrt(pi) * exp(-x^2)
    return [dy[0] * ((-(x[0] * x[0])).exp() * (2 / np.sqrt(np.pi)))]


@rule("Atan")
def _atan(c, x, y, dy):
    return [dy[0] / (1.0 + x[0] * x[0])]


@rule("Sin")
def _sin(c, x, y, dy):
    return [dy[0] * x[0].cos()]


@rule("Cos")
def _cos(c, x, y, dy):
    return [dy[0] * -x[0].sin()]


@rule("Clip")
def _clip(c, x, y, dy):
    low, high = (x + ["", ""])[1:3]
    if c.opset < 11:  # bounds are attributes
        low, high = (c.scalar(c.node.attr(k, v), x[0]) for k, v in (("min", -np.inf), ("max", np.inf)))
    masks = ([c.op("Not", x[0].lt(low))] if low else []) + ([c.op("Not", x[0].gt(high))] if high else [])
    inside = masks[0] & masks[1] if len(masks) == 2 else masks[0] if masks else None
    return [dy[0] if inside is None else dy[0] * inside.cast(dy[0])]


# ---- activations ------------------------------------------------------------------------------------------

@rule("Elu")
def _elu(c, x, y, dy):  # x > 0: 1, else y + alpha
    return [dy[0] * x[0].gt(0.0).where(1.0, y[0] + c.node.attr("alpha", 1.0))]


@rule("Gelu")
def _gelu(c, x, y, dy):
    v = x[0]
    if text(c.node.attr("approximate", b"none")) == "tanh":  # t = tanh(k (v + a v^3))
        k, a = np.sqrt(2 / np.pi), 0.044715
        t = (v * (1.0 + v * v * a) * k).tanh()
        slope = (1.0 + t) * 0.5 + v * 0.5 * (1.0 - t * t) * ((1.0 + v * v * (3 * a)) * k)
    else:  # 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
        slope = (1.0 + (v * 2 ** -0.5).erf()) * 0.5 + v * ((v * v * -0.5).exp() * (2 * np.pi) ** -0.5)
    return [dy[0] * slope]


@rule("Softplus")
def _softplus(c, x, y, dy):
    return [dy[0] * x[0].sigmoid()]


@rule("Softsign")
def _softsign(c, x, y, dy):  # 1 / (1 + |x|)^2
    d = 1.0 + abs(x[0])
    return [dy[0] / (d * d)]


@rule("HardSigmoid")
def _hard_sigmoid(c, x, y, dy):  # alpha inside (0, 1), else 0
    inside = y[0].gt(0.0) & y[0].lt(1.0)
    return [dy[0] * inside.where(c.scalar(c.node.attr("alpha", 0.2), x[0]), 0.0)]


@rule("HardSwish")
def _hard_swish(c, x, y, dy):  # 0 below -3, 1 above 3, x / 3 + 1/2 between
    return [dy[0] * x[0].lt(-3.0).where(0.0, x[0].gt(3.0).where(1.0, x[0] / 3.0 + 0.5))]


@rule("Selu")
def _selu(c, x, y, dy):  # gamma for x > 0, else y + gamma * alpha
    gamma = c.node.attr("gamma", 1.05070102214813232421875)
    alpha = c.node.attr("alpha", 1.67326319217681884765625)
    return [dy[0] * x[0].gt(0.0).where(c.scalar(gamma, x[0]), y[0] + gamma * alpha)]


@rule("Celu")
def _celu(c, x, y, dy):  # 1 for x > 0, else exp(x / alpha)
    return [dy[0] * x[0].gt(0.0).where(1.0, (x[0] / c.node.attr("alpha", 1.0)).exp())]


@rule("ThresholdedRelu")
def _thresholded_relu(c, x, y, dy):  # 1 above alpha, else 0
    return [dy[0] * x[0].gt(c.node.attr("alpha", 1.0)).cast(x[0])]


@rule("PRelu", broadcasts=True)
def _prelu(c, x, y, dy):  # dx: 1 or slope; dslope: 0 or x
    x_shape, slope_shape = c.shape(x[0]), c.shape(x[1])
    if c.opset < 7 and (x_shape is None or slope_shape is None or len(slope_shape) == 1 and len(x_shape) > 2
                        and slope_shape[0] == x_shape[1] != 1):
        raise NotImplementedError(f"{c.where()}: no gradient for PRelu-1/6's per-channel slope (one value per "
                                  f"channel along axis 1); opset 7's PRelu broadcasts a slope of shape [C, 1, ...]")
    negative = x[0].lt(0.0)
    return [dy[0] * negative.where(x[1], 1.0), dy[0] * negative.where(x[0], 0.0)]


@rule("Mish")
def _mish(c, x, y, dy):  # tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2), sp = softplus(x)
    t = x[0].softplus().tanh()
    return [dy[0] * (t + x[0] * x[0].sigmoid() * (1.0 - t * t))]


@rule("Max", "Min", broadcasts=True)
def _max_min(c, x, y, dy):
    """dY goes to the inputs equal to the result, shared equally among ties (as torch.maximum/minimum do;
    onnxruntime's own rule gives every tied input the whole dY)."""
    hits = [xi.eq(y[0]).cast(y[0]) for xi in x]
    share = dy[0] / c.op("Sum", *hits)
    return [share * hit for hit in hits]


# ---- matrix products --------------------------------------------------------------------------------------

@rule("Gemm")
def _gemm(c, x, y, dy):
    n = c.node
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    ta, tb = n.attr("transA", 0), n.attr("transB", 0)
    a, b, g = x[0], x[1], dy[0]

    def gemm(p, q, **attrs):
        if c.opset >= 11:
            return c.op("Gemm", p, q, **attrs)
        # C is required before opset 11 (and broadcast only with the attribute before opset 7)
        return c.op("Gemm", p, q, c.scalar(0.0, g), beta=0.0, **attrs, **({"broadcast": 1} if c.opset < 7 else {}))

    da = None if not c.wants(0) else gemm(b, g, transA=tb, transB=1, alpha=alpha) if ta else \
        gemm(g, b, transA=0, transB=1 - tb, alpha=alpha)
    db = None if not c.wants(1) else gemm(g, a, transA=1, transB=ta, alpha=alpha) if tb else \
        gemm(a, g, transA=1 - ta, transB=0, alpha=alpha)
    if len(x) < 3 or not x[2] or beta == 0.0 or not c.wants(2):
        return [da, db]
    scaled = g if beta == 1.0 else c.op("Mul", g, c.scalar(beta, g), **({"broadcast": 1} if c.opset < 7 else {}))
    return [da, db, unbroadcast(c, scaled, c.shape(y[0]), x[2])]


@rule("MatMul")
def _matmul(c, x, y, dy):
    """1-D operands are treated as [1, k] and [k, 1] matrices, as MatMul itself does."""
    a, b = x
    a_shape, b_shape = c.shape(a), c.shape(b)
    g, g_shape = dy[0], list(c.shape(y[0]))
    if len(a_shape) == 1:
        a_shape = [1] + a_shape
        at = len(g_shape) - (0 if len(b_shape) == 1 else 1)
        g, g_shape = unsqueeze(c, g, [at]), g_shape[:at] + [1] + g_shape[at:]
    if len(b_shape) == 1:
        b_shape = b_shape + [1]
        g, g_shape = unsqueeze(c, g, [len(g_shape)]), g_shape + [1]
    a2 = a if len(c.shape(a)) > 1 else unsqueeze(c, a, [0])
    b2 = b if len(c.shape(b)) > 1 else unsqueeze(c, b, [1])
    da = _unbroadcast_to(c, c.op("MatMul", g, _swap_last(c, b2, len(b_shape))), g_shape[:-1] + [a_shape[-1]], a,
                         a_shape) if c.wants(0) else None
    db = _unbroadcast_to(c, c.op("MatMul", _swap_last(c, a2, len(a_shape)), g),
                         g_shape[:-2] + [b_shape[-2], g_shape[-1]], b, b_shape) if c.wants(1) else None
    return [da, db]


def _swap_last(c, v, rank: int):
    return c.op("Transpose", v, perm=list(range(rank - 2)) + [rank - 1, rank - 2])


def _unbroadcast_to(c, grad, grad_shape, x, matrix_shape):
    """Sum ``grad`` over broadcast batch axes down to ``matrix_shape``, then reshape to x's own shape."""
    lead = len(grad_shape) - len(matrix_shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(matrix_shape[:-2])
                                if d == 1 and grad_shape[lead + i] != 1]
    if axes:
        grad = reduce_sum(c, grad, axes, keepdims=1)
    if axes and lead or len(matrix_shape) != len(c.shape(x)):
        grad = reshape_like(c, grad, x)
    return grad


def _einsum_terms(c, x, y):
    """The equation's input and output subscripts, '...' spelled out in unused letters from the static ranks."""
    equation = text(c.node.attr("equation")).replace(" ", "")
    inputs, _, output = equation.partition("->")
    terms = inputs.split(",")
    if "->" not in equation:
        letters = [ch for t in terms for ch in t if ch.isalpha()]
        output = ("..." if any("..." in t for t in terms) else "") + \
            "".join(sorted(ch for ch in set(letters) if letters.count(ch) == 1))
    spare = iter(ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if ch not in equation)
    ranks = [len(c.shape(v)) - len(t.replace("...", "")) for t, v in zip(terms, x)]
    ellipsis_rank = max(r for t, r in zip(terms, ranks) if "..." in t) if "..." in equation else 0
    batch = "".join(next(spare) for _ in range(ellipsis_rank))
    sizes = {}
    for t, v, rank in zip(terms, x, ranks):
        if "..." in t:
            dims = c.shape(v)[t.index("..."):t.index("...") + rank]
            for letter, d in zip(batch[ellipsis_rank - rank:], dims):
                if sizes.setdefault(letter, d) != d:
                    raise NotImplementedError(
                        f"{c.where()}: the Einsum gradient does not broadcast size-1 dimensions of '...'")
    spell = lambda t, rank: t.replace("...", batch[len(batch) - rank:])  # noqa: E731
    return [spell(t, r) for t, r in zip(terms, ranks)], spell(output, ellipsis_rank)


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
            grad = c.op("Einsum", dy[0], *operands, equation=",".join([output] + others) + "->" + kept)
        elif operands:
            grad = dy[0] * c.op("Einsum", *operands, equation=",".join(others) + "->" + kept)
        else:
            grad = dy[0]
        if kept != term:
            grad = expand_like(c, unsqueeze(c, grad, [i for i, ch in enumerate(term) if ch not in known]), x[k])
        grads.append(grad)
    return grads


# ---- shapes -----------------------------------------------------------------------------------------------

@rule("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def _reshape(c, x, y, dy):
    return [reshape_like(c, dy[0], x[0])]


@rule("Expand", broadcasts=True)
def _expand(c, x, y, dy):
    return [dy[0]]


@rule("Transpose")
def _transpose(c, x, y, dy):
    perm = c.node.attr("perm") or list(range(len(c.shape(x[0]))))[::-1]
    return [c.op("Transpose", dy[0], perm=[int(i) for i in np.argsort(perm)])]


@rule("Concat")
def _concat(c, x, y, dy):
    axis = c.node.attr("axis")
    sizes = [c.shape(v)[axis] for v in x]
    if not all(isinstance(s, int) for s in sizes):
        raise NotImplementedError(f"{c.where()}: the Concat gradient needs static sizes along axis {axis}")
    if len(x) == 1:
        return [dy[0]]
    if c.opset >= 13:
        return c.op("Split", dy[0], c.b.ints(sizes), n_outputs=len(x), axis=axis)
    return c.op("Split", dy[0], n_outputs=len(x), axis=axis, split=sizes)


@rule("Split")
def _split(c, x, y, dy):
    parts = [d if d is not None else c.op("ConstantOfShape", shape_of(c, o), value=np.zeros(1, dtype=c.dtype(o)))
             for d, o in zip(dy, y)]
    return [c.op("Concat", *parts, axis=c.node.attr("axis", 0))]


@rule("Slice")
def _slice(c, x, y, dy):
    if c.opset < 10:  # starts, ends and axes are attributes
        bounds = [c.b.ints(c.node.attr(k), k) for k in ("starts", "ends") + (("axes",) if c.node.attr("axes") else ())]
        return [c.op("SliceGrad", dy[0], shape_of(c, x[0]), *bounds, domain=MS_DOMAIN)]
    return [c.op("SliceGrad", dy[0], shape_of(c, x[0]), *x[1:], domain=MS_DOMAIN)]


def _matmul_along(c, grad, axis: int, rank: int, m: np.ndarray):
    """``grad`` times the constant matrix ``m`` along ``axis`` (m: [grad's length, result's length])."""
    perm = [i for i in range(rank) if i != axis] + [axis]
    moved = c.op("MatMul", c.op("Transpose", grad, perm=perm), c.b.const(m, "along_axis"))
    return c.op("Transpose", moved, perm=[int(i) for i in np.argsort(perm)])


@rule("Pad")
def _pad(c, x, y, dy):
    """Constant mode with non-negative pads: a Slice of dY.  Otherwise (reflect, edge, wrap, cropping) each padded
    axis is a 0/1 matrix from input to output positions, and dY goes back through its transpose."""
    mode = text(c.node.attr("mode", b"constant"))
    pads = c.constant(x[1]) if c.opset >= 11 else np.asarray(c.node.attr("pads"))
    axes = c.constant(x[3]) if c.opset >= 18 and len(x) > 3 and x[3] else None
    shape = c.shape(x[0])
    if pads is None or (c.opset >= 18 and len(x) > 3 and x[3] and axes is None):
        raise NotImplementedError(f"{c.where()}: the Pad gradient needs constant pads and axes")
    pads = [int(p) for p in np.asarray(pads).ravel()]
    rank, n = len(shape), len(pads) // 2
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes.ravel()]
    begin, end = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        begin[axis], end[axis] = pads[i], pads[i + n]
    if mode == "constant" and min(pads) >= 0:
        big = np.iinfo(np.int64).max
        return [c.op("Slice", dy[0], c.b.ints(begin, "starts"), c.b.ints([-p if p else big for p in end], "ends"))]
    if mode != "constant" and min(pads) < 0:
        raise NotImplementedError(f"{c.where()}: the Pad gradient in {mode} mode needs non-negative pads")
    grad = dy[0]
    for axis in range(rank):
        if begin[axis] or end[axis]:
            if not isinstance(shape[axis], int):
                raise NotImplementedError(f"{c.where()}: the Pad gradient needs a static size on padded axis {axis}")
            length = shape[axis]
            if mode == "constant":
                source = np.arange(-begin[axis], length + end[axis])
            else:
                source = np.pad(np.arange(length), (begin[axis], end[axis]), mode=mode)
            m = np.zeros((len(source), length), dtype=c.dtype(x[0]))
            inside = (source >= 0) & (source < length)
            np.add.at(m, (np.nonzero(inside)[0], source[inside]), 1)
            grad = _matmul_along(c, grad, axis, rank, m)
    return [grad]


@rule("Tile")
def _tile(c, x, y, dy):
    repeats, shape = c.constant(x[1]), c.shape(x[0])
    if repeats is None or not all(isinstance(d, int) for d in shape):
        raise NotImplementedError(f"{c.where()}: the Tile gradient needs constant repeats and a static input shape")
    folded = reshape(c, dy[0], [v for r, d in zip(repeats.ravel(), shape) for v in (int(r), d)])
    return [reduce_sum(c, folded, list(range(0, 2 * len(shape), 2)), keepdims=0)]


@rule("SpaceToDepth")
def _space_to_depth(c, x, y, dy):
    return [c.op("DepthToSpace", dy[0], blocksize=c.node.attr("blocksize"), mode="DCR")]


@rule("DepthToSpace")
def _depth_to_space(c, x, y, dy):
    """SpaceToDepth undoes DCR; for CRD its channels (block row, block column, channel) are put back in
    (channel, block row, block column) order."""
    bs = c.node.attr("blocksize")
    dx = c.op("SpaceToDepth", dy[0], blocksize=bs)
    if text(c.node.attr("mode", b"DCR")) == "CRD":
        channels = c.shape(x[0])[1]
        if not isinstance(channels, int):
            raise NotImplementedError(f"{c.where()}: the CRD DepthToSpace gradient needs a static channel count")
        crd = np.arange(channels).reshape(bs * bs, channels // (bs * bs)).T.ravel()
        dx = c.op("Gather", dx, c.b.ints(crd, "crd_order"), axis=1)
    return [dx]


# ---- indexing -----------------------------------------------------------------------------------------------

@rule("Gather")
def _gather(c, x, y, dy):
    return [c.op("GatherGrad", shape_of(c, x[0]), x[1], dy[0], domain=MS_DOMAIN, axis=c.node.attr("axis", 0))]


@rule("GatherElements")
def _gather_elements(c, x, y, dy):
    return [c.op("GatherElementsGrad", dy[0], shape_of(c, x[0]), x[1], domain=MS_DOMAIN, axis=c.node.attr("axis", 0))]


@rule("ScatterElements")
def _scatter_elements(c, x, y, dy):
    """data: dY with the written positions cleared; updates: dY read back at those positions."""
    if text(c.node.attr("reduction", b"none")) != "none":
        raise NotImplementedError(f"{c.where()}: the ScatterElements gradient needs reduction 'none'")
    axis = c.node.attr("axis", 0)
    zeros = c.op("ConstantOfShape", shape_of(c, x[2]), value=np.zeros(1, dtype=c.dtype(x[2])))
    return [c.op("ScatterElements", dy[0], x[1], zeros, axis=axis), None,
            c.op("GatherElements", dy[0], x[1], axis=axis)]


@rule("TopK")
def _top_k(c, x, y, dy):  # dValues back to where Indices took them from
    return [c.op("GatherElementsGrad", dy[0], shape_of(c, x[0]), c.extra_output(1, "indices"), domain=MS_DOMAIN,
                 axis=c.node.attr("axis", -1))]


@rule("Trilu")
def _trilu(c, x, y, dy):
    return [c.op("Trilu", dy[0], *x[1:], upper=c.node.attr("upper", 1))]


@rule("CumSum")
def _cumsum(c, x, y, dy):  # the transpose of a running sum is the running sum the other way
    return [c.op("CumSum", dy[0], x[1], exclusive=c.node.attr("exclusive", 0), reverse=1 - c.node.attr("reverse", 0))]


# ---- reductions ---------------------------------------------------------------------------------------------

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


def _reduction_is_identity(c, x) -> bool:
    """noop_with_empty_axes=1 without axes: the reduction returns its input."""
    no_axes = not (len(x) > 1 and x[1]) or c.constant(x[1]) is not None and c.constant(x[1]).size == 0
    return bool(c.node.attr("noop_with_empty_axes", 0)) and no_axes and not c.node.attr("axes")


def _expand_reduced(c, x, v):
    """A reduction's output-shaped ``v`` broadcast back to the input's shape."""
    axes = _reduce_axes(c, x, len(c.shape(x[0])))
    return expand_like(c, v if c.node.attr("keepdims", 1) else unsqueeze(c, v, axes), x[0])


def _count(c, x, y):
    """How many input elements each output element sums, in x's type."""
    return (c.op("Size", x) / c.op("Size", y)).cast(x)


def _unless_identity(fn):
    """A reduction rule that, under noop_with_empty_axes without axes, passes dY through (the op is Identity)."""
    def wrapped(c, x, y, dy):
        return [dy[0]] if _reduction_is_identity(c, x) else fn(c, x, y, dy)
    wrapped.__name__ = fn.__name__
    return wrapped


@rule("ReduceSum")
@_unless_identity
def _reduce_sum(c, x, y, dy):
    return [_expand_reduced(c, x, dy[0])]


@rule("ReduceMean")
@_unless_identity
def _reduce_mean(c, x, y, dy):
    return [_expand_reduced(c, x, dy[0]) / _count(c, x[0], y[0])]


@rule("GlobalAveragePool")
def _global_average_pool(c, x, y, dy):
    return [expand_like(c, dy[0], x[0]) / _count(c, x[0], y[0])]


def _share_among_extremes(c, x, extreme, dy, axes):
    """dY shared equally among the elements of ``x`` equal to the (broadcastable) ``extreme``, as torch does."""
    hit = x.eq(expand_like(c, extreme, x)).cast(x)
    return [hit * expand_like(c, dy / reduce_sum(c, hit, axes, keepdims=1), x)]


@rule("ReduceMax", "ReduceMin")
@_unless_identity
def _reduce_extreme(c, x, y, dy):
    axes = _reduce_axes(c, x, len(c.shape(x[0])))
    keep = (lambda v: v) if c.node.attr("keepdims", 1) else (lambda v: unsqueeze(c, v, axes))
    return _share_among_extremes(c, x[0], keep(y[0]), keep(dy[0]), axes)


@rule("GlobalMaxPool")
def _global_max_pool(c, x, y, dy):
    return _share_among_extremes(c, x[0], y[0], dy[0], list(range(2, len(c.shape(x[0])))))


@rule("ReduceLogSumExp")
@_unless_identity
def _reduce_log_sum_exp(c, x, y, dy):  # softmax over the reduced axes
    return [_expand_reduced(c, x, dy[0]) * (x[0] - _expand_reduced(c, x, y[0])).exp()]


@rule("ReduceL2")
@_unless_identity
def _reduce_l2(c, x, y, dy):  # x / ||x||, 0 where the norm is 0 (torch's choice)
    norm = _expand_reduced(c, x, y[0])
    return [_expand_reduced(c, x, dy[0]) * (x[0] / norm.eq(0.0).where(1.0, norm))]


@rule("ReduceProd")
@_unless_identity
def _reduce_prod(c, x, y, dy):
    """The product of the other elements: y / x without zeros; with one zero, the product of the rest at the
    zero and 0 elsewhere; with more, 0."""
    axes = _reduce_axes(c, x, len(c.shape(x[0])))
    zero = x[0].eq(0.0)
    nonzero = zero.where(1.0, x[0])
    rest = c.op("ReduceProd", nonzero, c.b.ints(axes), keepdims=1) if c.opset >= 18 else \
        c.op("ReduceProd", nonzero, axes=axes, keepdims=1)
    zeros = reduce_sum(c, zero.cast(x[0]), axes, keepdims=1)
    others = zeros.eq(0.0).where(rest / nonzero, (zeros.eq(1.0) & zero).where(rest, 0.0))
    return [_expand_reduced(c, x, dy[0]) * others]


@rule("ReduceSumSquare")
def _reduce_sum_square(c, x, y, dy):
    if _reduction_is_identity(c, x):
        raise NotImplementedError(f"{c.where()}: noop_with_empty_axes without axes has no gradient rule")
    return [_expand_reduced(c, x, dy[0]) * (x[0] + x[0])]


@rule("ReduceL1")
def _reduce_l1(c, x, y, dy):
    if _reduction_is_identity(c, x):
        raise NotImplementedError(f"{c.where()}: noop_with_empty_axes without axes has no gradient rule")
    return [_expand_reduced(c, x, dy[0]) * x[0].sign()]


# ---- neural-network ops -------------------------------------------------------------------------------------

def _from_axis(c, x):
    """Softmax and LogSoftmax before opset 13 normalize over all axes from ``axis`` on."""
    rank = len(c.shape(x))
    axis = c.node.attr("axis", 1)
    return list(range(axis + rank if axis < 0 else axis, rank))


@rule("Softmax")
def _softmax(c, x, y, dy):
    if c.opset < 13:  # y * (dy - sum(dy * y))
        return [y[0] * (dy[0] - reduce_sum(c, dy[0] * y[0], _from_axis(c, x[0]), keepdims=1))]
    return [c.op("SoftmaxGrad_13", dy[0], y[0], domain=MS_DOMAIN, axis=c.node.attr("axis", -1))]


@rule("LogSoftmax")
def _log_softmax(c, x, y, dy):
    if c.opset < 13:  # dy - exp(y) * sum(dy)
        return [dy[0] - y[0].exp() * reduce_sum(c, dy[0], _from_axis(c, x[0]), keepdims=1)]
    return [c.op("LogSoftmaxGrad_13", dy[0], y[0], domain=MS_DOMAIN, axis=c.node.attr("axis", -1))]


@rule("Conv")
def _conv(c, x, y, dy):
    attrs = _copy_attrs(c.node, "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
    want = [c.wants(0), c.wants(1), len(x) > 2 and bool(x[2]) and c.wants(2)]
    names = [c.b.fresh(f"{x[i]}_grad_conv") if want[i] else "" for i in range(3)]
    c.op("ConvGrad", dy[0], x[0], x[1], n_outputs=3, domain=MS_DOMAIN, outputs=names, **attrs)
    return [name or None for name in names[:len(x)]]


@rule("ConvTranspose")
def _conv_transpose(c, x, y, dy):
    """ConvTranspose(x, W) is the input gradient of a Conv with weight W, so its gradients are a Conv and
    ConvGrad's weight gradient with the roles of x and dY exchanged."""
    n = c.node
    if n.attr("output_shape") is not None or text(n.attr("auto_pad", b"NOTSET")) != "NOTSET":
        raise NotImplementedError(f"{c.where()}: the ConvTranspose gradient needs explicit pads")
    attrs = _copy_attrs(n, "dilations", "group", "kernel_shape", "pads", "strides")
    dw = None
    if c.wants(1):
        dw = c.b.fresh(f"{x[1]}_grad_convT")
        c.op("ConvGrad", x[0], dy[0], x[1], n_outputs=3, domain=MS_DOMAIN, outputs=["", dw, ""], **attrs)
    grads = [c.op("Conv", dy[0], x[1], **attrs) if c.wants(0) else None, dw]
    if len(x) > 2 and x[2]:
        grads.append(reduce_sum(c, dy[0], [0] + list(range(2, len(c.shape(y[0])))), keepdims=0))
    return grads


@rule("MaxPool")
def _max_pool(c, x, y, dy):
    indices = c.extra_output(1, "indices")
    if c.opset < 16:  # ORT's MaxPoolGrad (default domain; onnx.checker does not know it)
        attrs = _copy_attrs(c.node, "kernel_shape", "pads", "strides", "dilations", "ceil_mode", "storage_order")
        dx = c.op("MaxPoolGrad", dy[0], indices, **attrs)
        c.declare_like(dx, x[0])
        return [dx]
    # scatter-add dY at the flat input positions MaxPool's Indices name
    flat = c.b.ints([-1], "flat")
    zeros = c.op("ConstantOfShape", c.op("Reshape", c.op("Size", x[0]), flat), value=np.zeros(1, dtype=c.dtype(x[0])))
    scattered = c.op("ScatterElements", zeros, c.op("Reshape", indices, flat), c.op("Reshape", dy[0], flat), axis=0,
                     reduction="add")
    return [reshape_like(c, scattered, x[0])]


def _pool_windows(c, x, y):
    """(kernel, pads, strides, per-window count of real input cells) of a pooling node, static sizes required."""
    n = c.node
    kernel = list(n.attr("kernel_shape"))
    nd = len(kernel)
    pads = list(n.attr("pads") or [0] * (2 * nd))
    strides = list(n.attr("strides") or [1] * nd)
    x_shape, y_shape = c.shape(x), c.shape(y)
    if text(n.attr("auto_pad", b"NOTSET")) != "NOTSET" or n.attr("dilations") not in (None, [1] * nd) or \
            not all(isinstance(d, int) for d in x_shape[2:] + y_shape[2:]):
        raise NotImplementedError(f"{c.where()}: the {n.op_type} gradient needs static spatial sizes, explicit "
                                  f"pads and no dilations")
    inside = np.ones([1, 1] + y_shape[2:])
    for i in range(nd):
        starts = np.arange(y_shape[2 + i]) * strides[i]
        count = np.minimum(starts + kernel[i], pads[i] + x_shape[2 + i]) - np.maximum(starts, pads[i])
        inside = inside * count.reshape([-1] + [1] * (nd - 1 - i))
    return kernel, pads, strides, inside


def _spread(c, v, x, y, kernel, pads, strides):
    """Each window's value of ``v`` (y's shape) added to every input cell of the window: a ConvTranspose of every
    channel with a kernel of ones; its pads cut what falls on padding, ceil_mode's overhang included."""
    nd = len(kernel)
    x_shape, y_shape = c.shape(x), c.shape(y)
    end_pads, out_pad = list(pads[nd:]), []
    for i in range(nd):
        overhang = x_shape[2 + i] - ((y_shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + nd] + kernel[i])
        out_pad.append(max(overhang, 0))
        end_pads[i] += max(-overhang, 0)
    ones = c.b.const(np.ones([1, 1] + kernel, dtype=c.dtype(x)), "window_ones")
    spread = c.op("ConvTranspose", reshape(c, v, [-1, 1] + [0] * nd), ones, kernel_shape=kernel, strides=strides,
                  pads=pads[:nd] + end_pads, output_padding=out_pad)
    return reshape_like(c, spread, x)


@rule("AveragePool")
def _average_pool(c, x, y, dy):
    """dY divided by each window's count (all its cells with count_include_pad), spread over the window."""
    kernel, pads, strides, inside = _pool_windows(c, x[0], y[0])
    divisor = np.full(inside.shape, np.prod(kernel)) if c.node.attr("count_include_pad", 0) else inside
    return [_spread(c, dy[0] * c.b.const((1 / divisor).astype(c.dtype(x[0])), "divisor"), x[0], y[0], kernel, pads,
                    strides)]


def _lp_slope(c, x, y, p):
    """d y / d x inside a window of y = (sum |x|^p)^(1/p): sign(x) |x|^(p-1) y^(1-p), as two factors."""
    return x.sign() * abs(x) ** (p - 1.0), y ** (1.0 - p)


@rule("LpPool")
def _lp_pool(c, x, y, dy):
    kernel, pads, strides, _ = _pool_windows(c, x[0], y[0])
    if c.node.attr("ceil_mode", 0):
        raise NotImplementedError(f"{c.where()}: the LpPool gradient does not take ceil_mode")
    local, per_window = _lp_slope(c, x[0], y[0], float(c.node.attr("p", 2)))
    return [local * _spread(c, dy[0] * per_window, x[0], y[0], kernel, pads, strides)]


@rule("GlobalLpPool")
def _global_lp_pool(c, x, y, dy):
    local, per_window = _lp_slope(c, x[0], y[0], float(c.node.attr("p", 2)))
    return [local * expand_like(c, dy[0] * per_window, x[0])]


@rule("Dropout")
def _dropout(c, x, y, dy):
    inputs = [dy[0], c.extra_output(1, "mask")] + [v or "" for v in x[1:3]]
    while not inputs[-1]:
        inputs.pop()
    return [c.op("DropoutGrad", *inputs, domain=MS_DOMAIN)]


@rule("Resize", "Upsample")
def _resize(c, x, y, dy):
    """Resize is one interpolation matrix M per resized axis (the forward kernel's own, from ops/resize.py);
    its gradient multiplies by M transposed.  Extrapolated positions (tf_crop_and_resize) pass no gradient."""
    n = c.node
    old = n.op_type == "Upsample" or c.opset < 11  # inputs (X, scales); asymmetric, onnxruntime's nearest
    if old:
        roi, scales, sizes = None, c.constant(x[1]), None
    else:
        roi, scales, sizes = (c.constant(v) if v else None for v in (x + ["", "", ""])[1:4])
    shape = c.shape(x[0])
    if (scales is None or not scales.size) and (sizes is None or not sizes.size) or (
            not old and len(x) > 1 and x[1] and roi is None):
        raise NotImplementedError(f"{c.where()}: the Resize gradient needs constant roi, scales or sizes")
    dims = [d if isinstance(d, int) else 1 for d in shape]
    axes = n.attr("axes")
    plan = _axis_plan(dims, scales, sizes, axes, text(n.attr("keep_aspect_ratio_policy", "stretch")))
    mode = text(n.attr("mode", "nearest"))
    coordinates = "asymmetric" if old else text(n.attr("coordinate_transformation_mode", "half_pixel"))
    rois = {} if old else _roi_pairs(roi, len(plan), plan, len(shape), coordinates)
    plan = [(axis, *rest) for axis, *rest in plan if rest[0] != rest[1] or rest[2] != 1.0 or axis in rois]
    if any(not isinstance(shape[axis], int) for axis, *_ in plan):
        raise NotImplementedError(f"{c.where()}: the Resize gradient needs static sizes on the resized axes")
    grad = dy[0]
    for axis, in_len, out_len, scale in reversed(plan):
        nearest = ("ceil" if scale < 1 else "floor") if old else text(n.attr("nearest_mode", "round_prefer_floor"))
        options = {} if old else {"cubic_coeff_a": n.attr("cubic_coeff_a", -0.75), "roi": rois.get(axis),
                                  "exclude_outside": bool(n.attr("exclude_outside", 0)),
                                  "antialias": bool(n.attr("antialias", 0))}
        m, _ = interpolation(in_len, out_len, scale, mode, coordinates, nearest, **options)
        grad = _matmul_along(c, grad, axis, len(shape), m.astype(c.dtype(x[0])))
    return [grad]


# ---- losses -------------------------------------------------------------------------------------------------

@rule("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(c, x, y, dy):
    attrs = _copy_attrs(c.node, "ignore_index", "reduction")
    inputs = [dy[0], c.extra_output(1, "log_prob")] + [v for v in x[1:] if v]
    return [c.op("SoftmaxCrossEntropyLossGrad", *inputs, domain=MS_DOMAIN, **attrs)]


@rule("NegativeLogLikelihoodLoss")
def _nll(c, x, y, dy):
    """d input = -w[target] / denominator * dY at the target class, 0 elsewhere (ignored targets: 0)."""
    n = c.node
    scores, target = x[0], x[1]
    rank = len(c.shape(scores))
    classes = c.op("Gather", shape_of(c, scores), c.b.ints([1], "axis1"))
    zero, one = c.b.const(np.array(0, np.int64), "zero"), c.b.const(np.array(1, np.int64), "one")
    class_ids = reshape(c, c.op("Range", zero, c.op("Squeeze", classes), one), [1, -1] + [1] * (rank - 2))
    hit = unsqueeze(c, target, [1]).eq(class_ids).cast(scores)
    ignore = c.b.const(np.array(n.attr("ignore_index", -(2 ** 62)), np.int64), "ignore")
    kept = c.op("Not", target.eq(ignore))
    weight = kept.cast(scores)
    if len(x) > 2 and x[2]:
        weight = weight * c.op("Gather", x[2], kept.where(target, zero))
    if text(n.attr("reduction", b"mean")) == "mean":
        weight = weight * (dy[0] / c.op("ReduceSum", weight, keepdims=0))
    else:
        weight = weight * dy[0]
    return [-(hit * unsqueeze(c, weight, [1]))]


# ---- normalization ------------------------------------------------------------------------------------

def _standardized(c, x, axes, eps):
    """(x_hat, 1/std) of ``x`` over ``axes``."""
    centered = x - reduce_mean(c, x, axes)
    inv = (reduce_mean(c, centered * centered, axes) + eps).sqrt().reciprocal()
    return centered * inv, inv


def _standardized_grad(c, dx_hat, x_hat, inv, axes):
    """d x from d x_hat: (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / std."""
    return inv * (dx_hat - reduce_mean(c, dx_hat, axes) - x_hat * reduce_mean(c, dx_hat * x_hat, axes))


def _normalized_grads(c, x, dy, scale, axes, eps):
    """(dx, dy * x_hat) for y = x_hat * scale + bias, x_hat normalized over ``axes`` with batch statistics;
    ``scale`` already broadcastable to x."""
    x_hat, inv = _standardized(c, x, axes, eps)
    return _standardized_grad(c, dy * scale, x_hat, inv, axes), dy * x_hat


def _per_channel(c, v, rank):
    return reshape(c, v, [1, -1] + [1] * (rank - 2))


@rule("BatchNormalization")
def _batch_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    eps = c.node.attr("epsilon", 1e-5)
    stat_axes = [0] + list(range(2, rank))
    if not c.node.attr("spatial", 1):
        raise NotImplementedError(f"{c.where()}: the BatchNormalization gradient needs spatial=1")
    training = c.node.attr("training_mode", 0) or (c.opset < 14 and len([o for o in y if o]) > 1)
    if training:
        dx, dy_xhat = _normalized_grads(c, x[0], dy[0], _per_channel(c, x[1], rank), stat_axes, eps)
    else:
        inv = (x[4] + eps).sqrt().reciprocal()
        dx = dy[0] * _per_channel(c, x[1] * inv, rank)
        dy_xhat = dy[0] * ((x[0] - _per_channel(c, x[3], rank)) * _per_channel(c, inv, rank))
    return [dx, reduce_sum(c, dy_xhat, stat_axes, keepdims=0), reduce_sum(c, dy[0], stat_axes, keepdims=0)]


@rule("LayerNormalization")
def _layer_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    axis = c.node.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    dx, dy_xhat = _normalized_grads(c, x[0], dy[0], x[1], list(range(axis, rank)), c.node.attr("epsilon", 1e-5))
    outer = list(range(axis))
    total = (lambda v: reduce_sum(c, v, outer, keepdims=0)) if outer else (lambda v: v)
    return [dx, total(dy_xhat), total(dy[0])][:len(x)]


@rule("InstanceNormalization")
def _instance_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    dx, dy_xhat = _normalized_grads(c, x[0], dy[0], _per_channel(c, x[1], rank), list(range(2, rank)),
                                    c.node.attr("epsilon", 1e-5))
    outer = [0] + list(range(2, rank))
    return [dx, reduce_sum(c, dy_xhat, outer, keepdims=0), reduce_sum(c, dy[0], outer, keepdims=0)]


@rule("GroupNormalization")
def _group_norm(c, x, y, dy):
    """Standardized per (sample, group) on [N, G, -1]; opset 18 scales per group, opset 21 per channel."""
    rank, groups = len(c.shape(x[0])), c.node.attr("num_groups")
    grouped = lambda v: reshape(c, v, [0, groups, -1], "grouped")  # noqa: E731
    x_hat, inv = _standardized(c, grouped(x[0]), [2], c.node.attr("epsilon", 1e-5))
    if c.opset >= 21:
        outer = [0] + list(range(2, rank))
        dx_hat = grouped(dy[0] * _per_channel(c, x[1], rank))
        dscale = reduce_sum(c, dy[0] * reshape_like(c, x_hat, x[0]), outer, keepdims=0)
        dbias = reduce_sum(c, dy[0], outer, keepdims=0)
    else:
        dy_g = grouped(dy[0])
        dx_hat = dy_g * reshape(c, x[1], [-1, 1])
        dscale, dbias = reduce_sum(c, dy_g * x_hat, [0, 2], keepdims=0), reduce_sum(c, dy_g, [0, 2], keepdims=0)
    return [reshape_like(c, _standardized_grad(c, dx_hat, x_hat, inv, [2]), x[0]), dscale, dbias]


@rule("LpNormalization")
def _lp_normalization(c, x, y, dy):
    """y = x / n: dx = (dy - s * sum(dy * y)) / n, s = y for p = 2 and sign(x) for p = 1."""
    axis, p = c.node.attr("axis", -1), c.node.attr("p", 2)
    if p not in (1, 2):
        raise NotImplementedError(f"{c.where()}: the LpNormalization gradient needs p = 1 or 2")
    op = "ReduceL2" if p == 2 else "ReduceL1"
    norm = c.op(op, x[0], c.b.ints([axis]), keepdims=1) if c.opset >= 18 else \
        c.op(op, x[0], axes=[axis], keepdims=1)
    s = y[0] if p == 2 else x[0].sign()
    return [(dy[0] - s * reduce_sum(c, dy[0] * y[0], [axis], keepdims=1)) / norm]


@rule("MeanVarianceNormalization")
def _mean_variance_normalization(c, x, y, dy):
    """y = u / d, u = x - mean, d = std + 1e-9: dx = (dy - mean(dy)) / d - u * mean(dy * u) / (d^2 std)."""
    axes = [int(a) for a in c.node.attr("axes") or (0, 2, 3)]
    u = x[0] - reduce_mean(c, x[0], axes)
    std = reduce_mean(c, u * u, axes).sqrt()
    d = std + 1e-9
    return [(dy[0] - reduce_mean(c, dy[0], axes)) / d - u * reduce_mean(c, dy[0] * u, axes) / (d * d * std)]


@rule("LRN")
def _lrn(c, x, y, dy):
    """y = x * s^-beta, s = bias + alpha / size * (window sum of x^2 over channels):
    dx = dy * s^-beta - 2 alpha beta / size * x * (window sum, transposed, of dy * x * s^(-beta - 1))."""
    n = c.node
    size, alpha, beta, bias = n.attr("size"), n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    channels, rank = c.shape(x[0])[1], len(c.shape(x[0]))
    if not isinstance(channels, int):
        raise NotImplementedError(f"{c.where()}: the LRN gradient needs a static channel count")
    before = (size - 1) // 2
    offset = np.arange(channels)[None, :] - np.arange(channels)[:, None]  # [source, target]: target - source
    band = ((offset >= -(size - 1 - before)) & (offset <= before)).astype(c.dtype(x[0]))
    s = _matmul_along(c, x[0] * x[0], 1, rank, band) * (alpha / size) + bias
    back = _matmul_along(c, dy[0] * x[0] * s ** (-beta - 1), 1, rank, band.T.copy())
    return [dy[0] * s ** -beta - x[0] * back * (2 * alpha * beta / size)]
