"""The in-memory ONNX model and its protobuf codec (no dependency on the onnx package)."""
from __future__ import annotations

import os

from .._files import atomic_write
from . import dtypes, ort_names
from .decode import decode_model
from .encode import encode_model
from .errors import DataTypeError, ModelDecodeError
from .model import (Attribute, AttrType, Function, Graph, MapType, Model, Node, OptionalType, SequenceType,
                    SparseTensorType, Tensor, TensorType, ValueInfo)
from .ort_names import MS_DOMAIN

__all__ = ["Attribute", "AttrType", "DataTypeError", "Function", "Graph", "MapType", "Model", "ModelDecodeError", "MS_DOMAIN", "Node",
           "OptionalType", "SequenceType", "SparseTensorType", "Tensor", "TensorType", "ValueInfo",
           "decode_model", "dtypes", "encode_model", "load", "ort_names", "save", "to_bytes"]


def load(source) -> Model:
    """A Model from a file path (str or PathLike; external data is read relative to its folder) or
    from the model's bytes (bytes, bytearray, memoryview).  Tensor data may be read-only views of
    the bytes (see decode.py)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return decode_model(source)
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OSError(f"cannot read ONNX model {path}: {e.strerror or e}") from None
    try:
        return decode_model(data, base_dir=os.path.dirname(os.path.abspath(path)))
    except ModelDecodeError as e:
        raise ModelDecodeError(f"{path}: {e}") from None


def to_bytes(model: Model) -> bytes:
    """The model as ModelProto bytes."""
    return encode_model(model)


def save(model: Model, path) -> None:
    """Write ``model`` to ``path`` atomically (a temporary file in the same folder, then a rename)."""
    atomic_write(path, encode_model(model))
