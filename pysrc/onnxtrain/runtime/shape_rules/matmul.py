"""Matrix products: Gemm, MatMul (numpy's rules for 1-D and batch axes), their integer and fused forms,
Einsum.  The contracted axes are one dim: a weight's size pins the input's symbol."""
from __future__ import annotations

from ._context import broadcast
from ._registry import rule

MS = "com.microsoft"


@rule("Gemm")
def gemm(c):
    a, b = c.shape(0), c.shape(1)
    if len(a) != 2 or len(b) != 2:
        c.fail(f"A and B must be 2-D, got ranks {len(a)} and {len(b)}")
    ta, tb = c.attr("transA", 0), c.attr("transB", 0)
    c.same(0, 0 if ta else 1, 1, 1 if tb else 0)
    a, b = c.shape(0), c.shape(1)
    out = [a[1 if ta else 0], b[0 if tb else 1]]
    if c.has(2):
        bias = c.shape(2)
        if len(bias) > 2:
            c.fail(f"C has rank {len(bias)}, more than 2")
        for k, d in enumerate(bias):
            axis = 2 - len(bias) + k
            if d != 1 and not (isinstance(d, str) and isinstance(c.symbols.find(out[axis]), int)):
                out[axis] = c.unify(out[axis], d, f"axis {k} of C '{c.node.inputs[2]}' and axis {axis} of A @ B")
    return c.out(c.elem(0), [c.symbols.find(d) for d in out])


def matmul_shape(c, i: int, j: int, ta: bool = False, tb: bool = False) -> list:
    a, b = c.shape(i), c.shape(j)
    if not a or not b:
        c.fail("MatMul's inputs must have rank 1 or more")
    a2 = [1] + a if len(a) == 1 else a[:-2] + ([a[-1], a[-2]] if ta else a[-2:])
    b2 = b + [1] if len(b) == 1 else b[:-2] + ([b[-1], b[-2]] if tb else b[-2:])
    ka = len(a) - 1 if len(a) == 1 or not ta else len(a) - 2
    kb = 0 if len(b) == 1 else len(b) - 1 if tb else len(b) - 2
    c.same(i, ka, j, kb)
    find = c.symbols.find
    lead = broadcast(c, [(c.node.inputs[i], [find(d) for d in a2[:-2]]),
                         (c.node.inputs[j], [find(d) for d in b2[:-2]])])
    return lead + [find(a2[-2])] * (len(a) > 1) + [find(b2[-1])] * (len(b) > 1)


@rule("MatMul")
def matmul(c):
    return c.out(c.elem(0), matmul_shape(c, 0, 1))


@rule("MatMulInteger")
def matmul_integer(c):
    return c.out(6, matmul_shape(c, 0, 1))


@rule("QLinearMatMul")
def qlinear_matmul(c):
    return c.out(c.elem(7), matmul_shape(c, 0, 3))


@rule("FusedMatMul", domain=MS)
def fused_matmul(c):
    if c.attr("transBatchA", 0) or c.attr("transBatchB", 0):
        c.unsupported("transBatchA and transBatchB")
    return c.out(c.elem(0), matmul_shape(c, 0, 1, bool(c.attr("transA", 0)), bool(c.attr("transB", 0))))


@rule("Einsum")
def einsum(c):
    equation = c.attr("equation").replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(c.present()):
        c.fail(f"the equation '{equation}' has {len(terms)} operands for {len(c.present())} inputs")
    letters, ellipses, counts = {}, [], {}
    explicit = bool(_)
    for i, term in enumerate(terms):
        shape = c.shape(i)
        named = term.replace("...", "")
        lead = len(shape) - len(named)
        if lead < 0 or (lead and "..." not in term):
            c.fail(f"operand {i} '{term}' does not match the rank {len(shape)} of '{c.node.inputs[i]}'")
        start = term.index("...") if "..." in term else len(named)
        ellipses.append((c.node.inputs[i], shape[start:start + lead]))
        for k, letter in enumerate(named):
            axis = k if k < start else k + lead
            counts[letter] = counts.get(letter, 0) + 1
            d = shape[axis]
            if letter in letters and d != 1 and letters[letter] != 1:
                letters[letter] = c.unify(letters[letter], d, f"the axes labelled '{letter}'")
            elif letter not in letters or letters[letter] == 1:
                letters[letter] = d
    spread = broadcast(c, ellipses)
    if not explicit:
        rhs = ("..." if any(s for _n, s in ellipses) else "") + "".join(sorted(k for k, n in counts.items() if n == 1))
    if "..." not in rhs:
        return c.out(c.elem(0), [c.symbols.find(letters[x]) for x in rhs])
    return c.out(c.elem(0), _place(c, rhs, letters, spread))


def _place(c, rhs: str, letters: dict, spread: list) -> list:
    before, after = rhs.split("...")
    find = c.symbols.find
    return [find(letters[x]) for x in before] + spread + [find(letters[x]) for x in after]
