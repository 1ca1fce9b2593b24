class ModelDecodeError(ValueError):
    """The bytes are not a well-formed ONNX model; the message names the message type, field and offset."""


class DataTypeError(ValueError):
    """A tensor data type code (or numpy dtype) that has no counterpart; the message names it."""
