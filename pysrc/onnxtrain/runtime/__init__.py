"""Plan a graph once, run it many times."""
from .feeds import FeedError
from .plan import GraphError, Plan
from .session import RunError, Session

__all__ = ["FeedError", "GraphError", "Plan", "RunError", "Session"]
