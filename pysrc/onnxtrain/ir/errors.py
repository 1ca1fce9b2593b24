class ModelDecodeError(ValueError):
    """The bytes are not a well-formed ONNX model; the message names the message type, field and offset."""
