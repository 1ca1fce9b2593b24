"""Gradient graphs over ONNX: one rule per op, ORT's error text for a missing rule."""
from .gradient import GradientNotRegisteredError, build_gradient_graph
from .rules import GRADIENT_RULES, NO_GRADIENT

__all__ = ["GRADIENT_RULES", "GradientNotRegisteredError", "NO_GRADIENT", "build_gradient_graph"]
