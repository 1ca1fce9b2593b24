"""The shape-rule table: (domain, op_type) -> rule, and the error every rule raises.

A rule takes the node's context ``c`` (_context.py) and returns one ``Out`` per output of the node (a list, or a
single Out for a one-output op): the element type, the dims (ints and symbols, from ``c.shape``, ``c.fresh()``),
and, for small tensors known while inferring (shapes, axes, constants), their value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

SHAPE_RULES: dict = {}  # (domain, op_type) -> rule


class ShapeInferenceError(ValueError):
    """A model whose shapes cannot be inferred: a true conflict between dims, or an op whose output shapes
    cannot be known without running it on real data (the message names the node, its inputs and why)."""


@dataclass(slots=True)
class Out:
    """What inference knows about one value.  ``shape``: None when the rank is unknown, else one dim per axis
    (an int, or a symbol: a str).  ``value``: a numpy array when the value itself is known, or a list of dims
    for a 0-D or 1-D int tensor whose elements are dims (a shape vector with symbols).  ``type``: the ir Type
    of a value that is not a tensor (a sequence, an optional, a map)."""
    elem: Optional[int]
    shape: Optional[list]
    value: Any = None
    type: Any = None


def rule(*op_types: str, domain: str = ""):
    """Register ``fn`` as the shape rule of ``op_types`` in ``domain``."""
    def register(fn):
        for op in op_types:
            if (domain, op) in SHAPE_RULES:
                raise ValueError(f"shape rule for {domain or 'ai.onnx'}::{op} registered twice")
            SHAPE_RULES[(domain, op)] = fn
        return fn
    return register
