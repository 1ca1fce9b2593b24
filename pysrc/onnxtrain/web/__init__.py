"""The bridge the browser worker calls: bytes and typed arrays in, bytes and plain values out."""
from .bridge import TrainingSession, as_array, describe_model, new_array, signature

__all__ = ["TrainingSession", "as_array", "describe_model", "new_array", "signature"]
