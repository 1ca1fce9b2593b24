"""Gradient rules of the matrix products: Gemm, MatMul, Einsum."""
from __future__ import annotations

from ._emit import broadcast_axes, expand_like, reduce_sum, reshape_like, sum_where_one, text, unbroadcast, unsqueeze
from ._registry import rule


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
    sure, maybe = broadcast_axes(matrix_shape[:-2], grad_shape, lead)
    axes = list(range(lead)) + sure
    if axes:
        grad = reduce_sum(c, grad, axes, keepdims=1)
    grad = sum_where_one(c, grad, x, maybe) if len(matrix_shape) == len(c.shape(x)) else grad
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
