"""Plan a graph once, run it many times."""
from .feeds import FeedError
from .execute import RunError
from .plan import GraphError, Plan
from .session import Session
from .shape_rules import ShapeInferenceError

__all__ = ["FeedError", "GraphError", "Plan", "RunError", "Session", "ShapeInferenceError"]
