"""The shape rules, one per op, in one table keyed by (domain, op type), one module per op family as in ops/.

A rule takes the node's view (``shapes._Node``: ``shape(i)``, ``elem(i)``, ``value(i)``, ``dims(i)``,
``attr``, ``unify``) and returns, per output, ``(elem type, dims)`` (dims None: rank unknown; a dim None:
unknown), or None for an output it cannot type. Setting ``ctx.out_dims[k]`` gives output k's value as dims.
"""
from __future__ import annotations

from ._registry import SHAPE_RULES, ShapeConflictError, ShapeInferenceError, shape_rule
from . import elementwise, nn, tensor, training  # noqa: F401  (they fill the table)

__all__ = ["SHAPE_RULES", "ShapeConflictError", "ShapeInferenceError", "shape_rule"]
