"""Gradient graphs over ONNX: one rule per op, ORT's error text for a missing rule."""
from ..runtime.shapes import infer_types
from .gradient import GradientNotRegisteredError, build_gradient_graph
from .rules import GRADIENT_RULES, NO_GRADIENT
from . import recurrent_rules  # noqa: F401  (registers the LSTM and GRU rules)

__all__ = ["GRADIENT_RULES", "GradientNotRegisteredError", "NO_GRADIENT", "build_gradient_graph", "infer_types"]
