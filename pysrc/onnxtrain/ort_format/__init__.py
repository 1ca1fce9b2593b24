"""onnxruntime's ORT model format (.ort): its field slots, the writer from an ir Model, the reader back."""
from .errors import OrtFormatError
from .loading import is_ort_format, load_model
from .reader import OrtFile, decode_ort_model, read_ort
from .writer import encode_ort_model, required_operators_config

__all__ = ["OrtFile", "OrtFormatError", "decode_ort_model", "encode_ort_model", "is_ort_format",
           "load_model", "read_ort", "required_operators_config"]
