"""The bridge the browser worker calls: bytes and typed arrays in, bytes and plain values out."""
from .bridge import describe_model, new_array, plain, signature

__all__ = ["describe_model", "new_array", "plain", "signature"]
