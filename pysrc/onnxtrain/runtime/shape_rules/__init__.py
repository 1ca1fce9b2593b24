"""One shape rule per op, in one table keyed by (domain, op_type), one module per family as in ops/.
The driver is runtime/shapes.py."""
from . import (control, conv, elementwise, indexing, loss, matmul, ml, nn, norm, pool, reduce,  # noqa: F401
               random, resize, rnn, shape, strings, training)
from ._registry import SHAPE_RULES, Out, ShapeInferenceError, rule

__all__ = ["SHAPE_RULES", "Out", "ShapeInferenceError", "rule"]
