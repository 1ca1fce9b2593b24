"""Checks for the values fed to a graph input, built once per input from its declared type."""
from __future__ import annotations

from operator import itemgetter

import numpy as np

from ..ir import dtypes
from ..ir.model import SequenceType, TensorType
from .plan import GraphError


class FeedError(ValueError):
    """A fed value does not match the graph input (name, dtype or shape)."""


def _shape_text(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def as_bit_patterns(name: str, code: int):
    """A function that takes a uint8/uint16 array fed for input ``name`` of bit-pattern type ``code`` as
    those bits (tagged with the type, as ir.dtypes holds them), so that no kernel computes on them as
    integers; it refuses bits of another bit-pattern type, and a 4-bit value above 15."""
    dtype = dtypes.to_numpy(code)

    def tag(value):
        fed = dtypes.from_numpy(value.dtype)
        if fed != code and fed in dtypes.BIT_PATTERN_TYPES:
            raise FeedError(f"input '{name}' is {dtypes.name(code)}, got {dtypes.name(fed)} bit patterns")
        if code in dtypes.PACKED_4BIT and value.size and value.max() > 15:
            raise FeedError(f"input '{name}' is {dtypes.name(code)}: feed one 4-bit pattern (0..15) per uint8 "
                            f"element, got {int(value.max())}")
        return value.view(dtype)
    return tag


def _as_array(name: str, value) -> np.ndarray:
    """A fed value that is not a numpy array as one: a list, tuple or scalar, or what its ``numpy()`` gives (an
    onnxruntime OrtValue, a CPU torch tensor)."""
    if isinstance(value, (list, tuple, int, float, bool, np.generic)):
        return np.asarray(value)
    numpy = getattr(value, "numpy", None)
    if callable(numpy):
        array = numpy()
        if isinstance(array, np.ndarray):
            return array
    raise FeedError(f"input '{name}' must be a numpy array, got {type(value).__name__} (feed an array, or a value "
                    f"whose numpy() gives one, such as an onnxruntime OrtValue)")


def check_feed(value_info):
    """A function that validates one fed value for ``value_info`` and returns it."""
    name, typ = value_info.name, value_info.type
    if isinstance(typ, SequenceType):
        elem = typ.elem_type
        dtype = (dtypes.to_numpy(elem.elem_type) if isinstance(elem, TensorType) and elem.elem_type in dtypes.NAMES
                 else None)

        def check_sequence(value):
            if not isinstance(value, (list, tuple)):
                raise FeedError(f"input '{name}' is a sequence: feed a list of arrays, not {type(value).__name__}")
            if dtype is not None:
                for i, v in enumerate(value):
                    if not isinstance(v, np.ndarray) or v.dtype != dtype:
                        got = v.dtype.name if isinstance(v, np.ndarray) else type(v).__name__
                        raise FeedError(f"input '{name}' is a sequence of {dtype.name} arrays, but element {i} is "
                                        f"{got}")
            return list(value)
        return check_sequence
    if not isinstance(typ, TensorType):
        return lambda value: value
    if typ.elem_type not in dtypes.NAMES:
        raise GraphError(f"graph input '{name}' declares element type {typ.elem_type}, which onnxtrain cannot "
                         f"feed" if typ.elem_type is not None else f"graph input '{name}' declares no element type")
    dtype = dtypes.to_numpy(typ.elem_type)
    shape = typ.shape
    rank = None if shape is None else len(shape)
    fixed = [] if shape is None else [i for i, d in enumerate(shape) if isinstance(d, int)]
    fixed_dims = itemgetter(*fixed) if fixed else None   # a tuple of the fixed dims (one int if one)
    want = fixed_dims(shape) if fixed else None
    bits = as_bit_patterns(name, typ.elem_type) if typ.elem_type in dtypes.BIT_PATTERN_TYPES else None

    def check_tensor(value):
        if not isinstance(value, np.ndarray):
            value = _as_array(name, value)
        if value.dtype != dtype:
            if dtype == object and value.dtype.kind in "US":   # numpy's str arrays, as onnxruntime takes them
                return check_tensor(value.astype(object))
            raise FeedError(f"input '{name}' must have dtype {dtype.name}, got {value.dtype.name} "
                            f"(shape {list(value.shape)})")
        if bits is not None:
            value = bits(value)
        if rank is not None and (value.ndim != rank or (fixed_dims is not None and fixed_dims(value.shape) != want)):
            raise FeedError(f"input '{name}' must have shape {_shape_text(shape)}, got {list(value.shape)}")
        return value
    return check_tensor
