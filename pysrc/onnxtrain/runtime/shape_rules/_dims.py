"""Arithmetic on dims (ints and symbols): a result that cannot be named is an invented symbol."""
from __future__ import annotations


def product(c, dims: list):
    """The product of ``dims``: an int, the one symbol when the rest multiply to 1, else invented."""
    size, symbols = 1, []
    for d in dims:
        if isinstance(d, int):
            size *= d
        else:
            symbols.append(d)
    if not symbols:
        return size
    if size == 0:
        return 0
    return symbols[0] if len(symbols) == 1 and size == 1 else c.fresh()


def add(c, d, k: int):
    """``d + k`` for an int ``k``."""
    return d + k if isinstance(d, int) else d if k == 0 else c.fresh()


def times(c, d, k):
    """``d * k``."""
    if isinstance(d, int) and isinstance(k, int):
        return d * k
    return d if k == 1 else k if d == 1 else c.fresh()


def divide(c, d, k: int, what: str):
    """``d / k``, which must be exact where ``d`` is known."""
    if isinstance(d, int):
        if k == 0 or d % k:
            c.fail(f"{what}: {d} is not divisible by {k}")
        return d // k
    return d if k == 1 else c.fresh()


def quotient(c, total: list, part: list):
    """product(total) / product(part), cancelling symbols: Reshape's -1."""
    rest = list(total)
    ints = 1
    for d in part:
        if isinstance(d, int):
            ints *= d
        elif d in rest:
            rest.remove(d)
        else:
            return c.fresh()
    size, symbols = 1, []
    for d in rest:
        if isinstance(d, int):
            size *= d
        else:
            symbols.append(d)
    if not symbols:
        if ints == 0 or size % ints:
            c.fail(f"a tensor of {product(c, total)} elements cannot be reshaped to {part} and -1")
        return size // ints
    return symbols[0] if len(symbols) == 1 and size == ints else c.fresh()
