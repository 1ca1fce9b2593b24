"""A model from an ONNX or an ORT format file, told apart by the ORT format's file identifier ("ORTM" at
bytes 4..8), not by the file's name: what the api and the command line load models through."""
from __future__ import annotations

import os

from .. import ir
from ..ir.model import Model
from . import schema as S
from .errors import OrtFormatError
from .reader import decode_ort_model


def is_ort_format(data) -> bool:
    """Whether ``data`` (bytes) carries the ORT format's file identifier."""
    return len(data) >= 8 and bytes(data[4:8]) == S.FILE_IDENTIFIER


def load_model(source) -> Model:
    """A Model from a path or bytes of an ONNX model (ir.load) or of an ORT format model."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return decode_ort_model(source) if is_ort_format(source) else ir.load(source)
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise OSError(f"cannot read model {path}: {e.strerror or e}") from None
    if not is_ort_format(head):
        return ir.load(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        return decode_ort_model(data)
    except OrtFormatError as e:
        raise OrtFormatError(f"{path}: {e}") from None
