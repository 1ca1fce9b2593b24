"""Matrix products, convolution and pooling, normalization, reductions, losses and recurrent layers."""
from __future__ import annotations

import math

from ...ir.dtypes import DataType
from ._registry import ShapeConflictError, axis_of, broadcast, shape_rule


@shape_rule("Gemm")
def gemm(ctx):
    a, b = ctx.shape(0), ctx.shape(1)
    if a is None or b is None:
        return [(ctx.elem(0), [None, None])]
    if len(a) != 2 or len(b) != 2:
        raise ShapeConflictError(f"{ctx.where()}: Gemm takes 2-D inputs")
    m, ka = (a[1], a[0]) if ctx.attr("transA", 0) else (a[0], a[1])
    kb, n = (b[1], b[0]) if ctx.attr("transB", 0) else (b[0], b[1])
    ctx.unify(ka, kb, f"the inner axes (axis {0 if ctx.attr('transA', 0) else 1} of A and axis "
                      f"{1 if ctx.attr('transB', 0) else 0} of B)")
    out = [ctx.symbols.find(m), ctx.symbols.find(n)]
    if ctx.has(2) and ctx.shape(2) is not None:
        broadcast(ctx, [out, ctx.shape(2)])
    return [(ctx.elem(0), out)]


@shape_rule("MatMul", "MatMulInteger")
def matmul(ctx):
    a, b = ctx.shape(0), ctx.shape(1)
    elem = DataType.INT32 if ctx.node.op_type == "MatMulInteger" else ctx.elem(0)
    if a is None or b is None:
        return [(elem, None)]
    a2 = [1] + a if len(a) == 1 else a
    b2 = b + [1] if len(b) == 1 else b
    ctx.unify(a2[-1], b2[-2], f"axis {len(a) - 1} of A and axis {max(len(b) - 2, 0)} of B")
    batch = broadcast(ctx, [a2[:-2], b2[:-2]])
    rows = [ctx.symbols.find(a2[-2])] if len(a) > 1 else []
    columns = [ctx.symbols.find(b2[-1])] if len(b) > 1 else []
    out = batch + rows + columns
    return [(elem, out)]


@shape_rule("FusedMatMul", domain="com.microsoft")
def fused_matmul(ctx):
    a, b = ctx.shape(0), ctx.shape(1)
    if a is None or b is None:
        return [(ctx.elem(0), None)]
    if ctx.attr("transA", 0):
        a = a[:-2] + [a[-1], a[-2]]
    if ctx.attr("transB", 0):
        b = b[:-2] + [b[-1], b[-2]]
    ctx.unify(a[-1], b[-2], "the inner axes of A and B")
    return [(ctx.elem(0), broadcast(ctx, [a[:-2], b[:-2]]) + [a[-2], b[-1]])]


def _window(ctx, x, kernel, dilate=True):
    """Output spatial dims of a convolution or pooling window over ``x``'s spatial dims."""
    n = len(kernel)
    strides = ctx.attr("strides") or [1] * n
    dilations = (ctx.attr("dilations") or [1] * n) if dilate else [1] * n
    pads = ctx.attr("pads") or [0] * (2 * n)
    auto = ctx.attr("auto_pad", "NOTSET")
    ceil = ctx.attr("ceil_mode", 0)
    out = []
    for k in range(n):
        d = x[k]
        if not isinstance(d, int) or not isinstance(kernel[k], int):
            out.append(None)
            continue
        span = dilations[k] * (kernel[k] - 1) + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-d // strides[k]))
        elif auto == "VALID":
            out.append((d - span) // strides[k] + 1)
        else:
            total = d + pads[k] + pads[k + n] - span
            size = (math.ceil if ceil else math.floor)(total / strides[k]) + 1
            if ceil and (size - 1) * strides[k] >= d + pads[k]:
                size -= 1
            out.append(size)
    return out


@shape_rule("Conv", "ConvInteger", "QLinearConv")
def conv(ctx):
    x, w = ctx.shape(0), ctx.shape(3 if ctx.node.op_type == "QLinearConv" else 1)
    if x is None or w is None:
        return [(ctx.elem(0), None)]
    group = ctx.attr("group", 1)
    if isinstance(w[1], int):
        ctx.unify(x[1], w[1] * group, f"axis 1 of X and axis 1 of W times group {group}")
    kernel = ctx.attr("kernel_shape") or w[2:]
    elem = DataType.INT32 if ctx.node.op_type == "ConvInteger" else ctx.elem(0)
    return [(elem, [x[0], w[0]] + _window(ctx, x[2:], kernel))]


@shape_rule("ConvTranspose")
def conv_transpose(ctx):
    x, w = ctx.shape(0), ctx.shape(1)
    if x is None or w is None:
        return [(ctx.elem(0), None)]
    group = ctx.attr("group", 1)
    ctx.unify(x[1], w[0], "axis 1 of X and axis 0 of W")
    channels = w[1] * group if isinstance(w[1], int) else None
    n = len(x) - 2
    if ctx.attr("output_shape"):
        return [(ctx.elem(0), [x[0], channels] + list(ctx.attr("output_shape"))[-n:])]
    kernel = ctx.attr("kernel_shape") or w[2:]
    strides = ctx.attr("strides") or [1] * n
    dilations = ctx.attr("dilations") or [1] * n
    pads = ctx.attr("pads") or [0] * (2 * n)
    extra = ctx.attr("output_padding") or [0] * n
    auto = ctx.attr("auto_pad", "NOTSET")
    out = []
    for k in range(n):
        d = x[k + 2]
        if not isinstance(d, int):
            out.append(None)
        elif auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(d * strides[k])
        else:
            out.append(strides[k] * (d - 1) + extra[k] + (kernel[k] - 1) * dilations[k] + 1 - pads[k] - pads[k + n])
    return [(ctx.elem(0), [x[0], channels] + out)]


@shape_rule("MaxPool", "AveragePool", "LpPool")
def pool(ctx):
    x = ctx.shape(0)
    if x is None:
        return [(ctx.elem(0), None), (DataType.INT64, None)]
    out = x[:2] + _window(ctx, x[2:], ctx.attr("kernel_shape"), dilate=ctx.node.op_type == "MaxPool")
    return [(ctx.elem(0), out), (DataType.INT64, out)]


@shape_rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(ctx):
    x = ctx.shape(0)
    return [(ctx.elem(0), None if x is None else x[:2] + [1] * (len(x) - 2))]


@shape_rule("BatchNormalization")
def batch_norm(ctx):
    x = ctx.shape(0)
    if x is not None and len(x) > 1:
        for i in range(1, 5):
            s = ctx.shape(i)
            if s is not None and len(s) == 1:
                ctx.unify(x[1], s[0], f"axis 1 of X and input {i}'s length")
    c = [x[1]] if x is not None and len(x) > 1 else None
    return [(ctx.elem(0), x)] + [(ctx.elem(3), c)] * 4


@shape_rule("BatchNormInternal", domain="com.microsoft")
def batch_norm_internal(ctx):
    x = ctx.shape(0)
    c = [x[1]] if x is not None and len(x) > 1 else None
    return [(ctx.elem(0), x)] + [(ctx.elem(3), c)] * 4


@shape_rule("LayerNormalization", "SimplifiedLayerNormalization")
def layer_norm(ctx):
    x = ctx.shape(0)
    if x is None:
        return [(ctx.elem(0), None)] * 3
    axis = axis_of(ctx.attr("axis", -1), len(x))
    scale = ctx.shape(1)
    if scale is not None:
        for a, b in zip(x[len(x) - len(scale):], scale):
            if len(scale) <= len(x) - axis:
                ctx.unify(a, b, "the normalized axes of X and the scale")
    stats = x[:axis] + [1] * (len(x) - axis)
    stash = ctx.attr("stash_type", 1)
    return [(ctx.elem(0), [ctx.symbols.find(d) for d in x]), (stash, stats), (stash, stats)]


REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


@shape_rule(*REDUCE)
def reduce(ctx):
    x = ctx.shape(0)
    keep = ctx.attr("keepdims", 1)
    axes = ctx.attr("axes")
    if axes is None and ctx.has(1):
        axes = ctx.ints(1)
        if axes is None:
            return [(ctx.elem(0), None if x is None or not keep else [None] * len(x))]
    if x is None:
        return [(ctx.elem(0), None)]
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            return [(ctx.elem(0), x)]
        axes = range(len(x))
    axes = {axis_of(a, len(x)) for a in axes}
    return [(ctx.elem(0), [1 if k in axes else d for k, d in enumerate(x) if keep or k not in axes])]


@shape_rule("ArgMax", "ArgMin")
def arg_reduce(ctx):
    x = ctx.shape(0)
    if x is None:
        return [(DataType.INT64, None)]
    axis = axis_of(ctx.attr("axis", 0), len(x))
    keep = ctx.attr("keepdims", 1)
    return [(DataType.INT64, [1 if k == axis else d for k, d in enumerate(x) if keep or k != axis])]


def _loss(ctx, scores, labels):
    """The per-sample shape of a loss over scores [N, C, d...] and labels [N, d...], unifying N and d."""
    if scores is None:
        return None
    if labels is not None:
        if len(labels) != len(scores) - 1:
            raise ShapeConflictError(f"{ctx.where()}: the labels have rank {len(labels)}, the scores "
                                     f"{len(scores)}; the labels must have the scores' shape without axis 1")
        for k, (a, b) in enumerate(zip([scores[0]] + scores[2:], labels)):
            ctx.unify(a, b, f"axis {k if k == 0 else k + 1} of the scores and axis {k} of the labels")
    if ctx.has(2) and ctx.shape(2) is not None and len(ctx.shape(2)) == 1:
        ctx.unify(scores[1], ctx.shape(2)[0], "axis 1 of the scores and the weights' length")
    return [ctx.symbols.find(d) for d in [scores[0]] + scores[2:]]


@shape_rule("SoftmaxCrossEntropyLoss")
@shape_rule("SoftmaxCrossEntropyLossInternal", domain="com.microsoft")
def softmax_cross_entropy(ctx):
    scores = ctx.shape(0)
    per_sample = _loss(ctx, scores, ctx.shape(1))
    loss = per_sample if ctx.attr("reduction", "mean") == "none" else []
    scores = None if scores is None else [ctx.symbols.find(d) for d in scores]
    return [(ctx.elem(0), loss), (ctx.elem(0), scores)]


@shape_rule("NegativeLogLikelihoodLoss")
@shape_rule("NegativeLogLikelihoodLossInternal", "NegativeLogLikelihoodLossInternal2", domain="com.microsoft")
def nll(ctx):
    per_sample = _loss(ctx, ctx.shape(0), ctx.shape(1))
    return [(ctx.elem(0), per_sample if ctx.attr("reduction", "mean") == "none" else [])]


@shape_rule("LSTM", "GRU", "RNN")
def recurrent(ctx):
    x = ctx.shape(0)
    hidden = ctx.attr("hidden_size")
    dirs = 2 if ctx.attr("direction", "forward") == "bidirectional" else 1
    if x is None:
        return [(ctx.elem(0), None)] * 3
    seq, batch = (x[1], x[0]) if ctx.attr("layout", 0) else (x[0], x[1])
    w = ctx.shape(1)
    if w is not None:
        ctx.unify(x[2], w[2], "axis 2 of X and axis 2 of W")
    if ctx.attr("layout", 0):
        y, state = [batch, seq, dirs, hidden], [batch, dirs, hidden]
    else:
        y, state = [seq, dirs, batch, hidden], [dirs, batch, hidden]
    return [(ctx.elem(0), y), (ctx.elem(0), state), (ctx.elem(0), state)]


@shape_rule("Einsum")
def einsum(ctx):
    equation = ctx.attr("equation").replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    letters, ellipses = {}, []
    for i, term in enumerate(terms):
        s = ctx.shape(i)
        if s is None:
            return [(ctx.elem(0), None)]
        named = term.replace("...", "")
        n_ellipsis = len(s) - len(named)
        head, _, tail = term.partition("...")
        if "..." in term:
            ellipses.append(s[len(head):len(head) + n_ellipsis])
            dims = dict(zip(head, s[:len(head)])) | dict(zip(tail, s[len(head) + n_ellipsis:]))
        else:
            dims = dict(zip(term, s))
        for letter, d in dims.items():
            letters[letter] = ctx.unify(letters[letter], d, f"the axes labelled '{letter}'") \
                if letter in letters else d
    batch = broadcast(ctx, ellipses) if ellipses else []
    if not arrow:
        counts = {c: lhs.count(c) for c in letters}
        rhs = ("..." if ellipses else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    head, _, tail = rhs.partition("...")
    out = [letters[c] for c in head] + (batch if "..." in rhs else []) + [letters[c] for c in tail]
    return [(ctx.elem(0), [ctx.symbols.find(d) for d in out])]
