"""The table of shape rules, the errors inference raises, and the helpers rules share."""
from __future__ import annotations

SHAPE_RULES = {}


class ShapeInferenceError(ValueError):
    """A value's type cannot be known before running the graph; the message names the node and why."""


class ShapeConflictError(ShapeInferenceError):
    """Two dims that must agree are different ints; the message names the node, its inputs and the axis."""


def shape_rule(*op_types: str, domain: str = ""):
    def register(fn):
        for op in op_types:
            SHAPE_RULES[(domain, op)] = fn
        return fn
    return register


def broadcast(ctx, shapes: list):
    """onnx's multidirectional broadcasting: 1 gives way; a symbol meeting an int gives the int (the symbol
    might be 1, so it is not pinned); two symbols stay the first unless they are the same."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        ints = {d for d in dims if isinstance(d, int) and d != 1}
        if len(ints) > 1:
            raise ShapeConflictError(f"{ctx.where()}: axis {axis} of the broadcast shapes is {sorted(ints)}")
        if ints:
            out.append(ints.pop())
            continue
        syms = list(dict.fromkeys(d for d in dims if d != 1))
        if not syms:
            out.append(1)
        elif len(syms) == 1:
            out.append(syms[0])
        else:
            out.append(None)
    return out


def product(dims):
    """The product of dims when it is an int or one symbol times 1s, else None."""
    total, syms = 1, []
    for d in dims:
        if d is None:
            return None
        if isinstance(d, int):
            total *= d
        else:
            syms.append(d)
    if not syms:
        return total
    return syms[0] if len(syms) == 1 and total == 1 else None


def axis_of(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis
