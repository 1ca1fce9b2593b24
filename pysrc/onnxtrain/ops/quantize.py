"""Kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger,
ConvInteger.

bfloat16, float8 and 4-bit tensors are bit patterns whose numpy dtype carries the ONNX type
(ir.dtypes.to_numpy); ``dtypes.from_bits``/``to_bits`` convert them to and from values.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from .conv import Conv
from .registry import kernel

_INT_RANGES = {dtypes.UINT8: (0, 255), dtypes.INT8: (-128, 127), dtypes.UINT16: (0, 65535),
               dtypes.INT16: (-32768, 32767), dtypes.UINT4: (0, 15), dtypes.INT4: (-8, 7)}


def _code(x) -> int:
    return dtypes.from_numpy(x.dtype)


def _values(x):
    """Numeric values of ``x`` (bit-pattern types decoded)."""
    code = _code(x)
    return dtypes.from_bits(code, x) if code in dtypes.BIT_PATTERN_TYPES else x


def _per_axis(op: str, param, x_shape, axis: int, block_size: int):
    """``param`` (a scale or zero point) shaped to broadcast against an input of ``x_shape``."""
    rank = len(x_shape)
    if param.ndim == 0 or (param.ndim == 1 and param.size == 1 and block_size == 0):
        return param.reshape(())
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    if block_size == 0:
        if param.ndim != 1 or param.shape[0] != x_shape[axis]:
            raise ValueError(f"{op}: a per-axis scale or zero point of shape {list(param.shape)} does not fit axis "
                             f"{axis} of an input of shape {list(x_shape)}")
        return param.reshape([-1 if i == axis else 1 for i in range(rank)])
    if block_size < 0:
        raise ValueError(f"{op}: block_size {block_size} is negative")
    blocks = -(-x_shape[axis] // block_size)
    expected = tuple(blocks if i == axis else d for i, d in enumerate(x_shape))
    if param.shape != expected:
        raise ValueError(f"{op}: a blocked scale or zero point of shape {list(param.shape)} does not fit input "
                         f"{list(x_shape)} with block_size {block_size} on axis {axis} (expected {list(expected)})")
    return np.repeat(param, block_size, axis=axis)[tuple(slice(0, d) for d in x_shape)]


def _quantize(x, y_scale, y_zero_point, axis, saturate, block_size, output_dtype, op="QuantizeLinear"):
    if y_zero_point is not None:
        code = _code(y_zero_point)
        if output_dtype and output_dtype != code:
            raise ValueError(f"{op}: output_dtype {dtypes.name(output_dtype)} differs from the zero point's "
                             f"type {dtypes.name(code)}")
    else:
        code = output_dtype or dtypes.UINT8
    xv = _values(x)
    scale = _per_axis(op, _values(y_scale), x.shape, axis, block_size)
    scaled = xv / scale
    if code in dtypes.FLOAT8_TYPES:
        if y_zero_point is not None and np.any(_values(y_zero_point) != 0):
            raise ValueError(f"{op}: a float8 zero point must be 0")
        return dtypes.to_bits(code, scaled.astype(np.float32), saturate=bool(saturate))
    if code not in _INT_RANGES:
        raise ValueError(f"{op}: quantizing to {dtypes.name(code)} is not supported")
    zp = 0 if y_zero_point is None else _per_axis(op, _values(y_zero_point), x.shape, axis, block_size)
    lo, hi = _INT_RANGES[code]
    q = np.clip(np.rint(scaled) + zp, lo, hi)
    if code in (dtypes.INT4, dtypes.UINT4):
        return dtypes.to_bits(code, q.astype(np.int64))
    return q.astype(dtypes.to_numpy(code))


def _dequantize(x, x_scale, x_zero_point, axis, block_size, op="DequantizeLinear"):
    scale_values = _values(x_scale)
    scale = _per_axis(op, scale_values, x.shape, axis, block_size)
    xv = _values(x)
    if _code(x) in dtypes.FLOAT8_TYPES:
        if x_zero_point is not None and np.any(_values(x_zero_point) != 0):
            raise ValueError(f"{op}: a float8 zero point must be 0")
        y = xv.astype(np.float32) * scale
    else:
        zp = 0 if x_zero_point is None else _per_axis(op, _values(x_zero_point), x.shape, axis, block_size)
        y = (xv.astype(np.int64) - np.asarray(zp, np.int64)).astype(np.float32) * scale
    out_code = _code(x_scale)
    if out_code in dtypes.BIT_PATTERN_TYPES:
        return dtypes.to_bits(out_code, y.astype(np.float32))
    return y.astype(x_scale.dtype)


@kernel("QuantizeLinear", since=10)
def QuantizeLinear_10(x, y_scale, y_zero_point=None):
    if np.asarray(y_scale).size != 1:
        raise ValueError("QuantizeLinear (opset 10): the scale must be a scalar")
    return _quantize(x, y_scale, y_zero_point, 1, 1, 0, 0)


@kernel("QuantizeLinear", since=13)
def QuantizeLinear_13(x, y_scale, y_zero_point=None, *, axis=1):
    return _quantize(x, y_scale, y_zero_point, axis, 1, 0, 0)


@kernel("QuantizeLinear", since=19)
def QuantizeLinear_19(x, y_scale, y_zero_point=None, *, axis=1, saturate=1):
    return _quantize(x, y_scale, y_zero_point, axis, saturate, 0, 0)


@kernel("QuantizeLinear", since=21)
def QuantizeLinear_21(x, y_scale, y_zero_point=None, *, axis=1, block_size=0, output_dtype=0, saturate=1):
    return _quantize(x, y_scale, y_zero_point, axis, saturate, block_size, output_dtype)


@kernel("DequantizeLinear", since=10)
def DequantizeLinear_10(x, x_scale, x_zero_point=None):
    if np.asarray(x_scale).size != 1:
        raise ValueError("DequantizeLinear (opset 10): the scale must be a scalar")
    return _dequantize(x, x_scale, x_zero_point, 1, 0)


@kernel("DequantizeLinear", since=13)
def DequantizeLinear_13(x, x_scale, x_zero_point=None, *, axis=1):
    return _dequantize(x, x_scale, x_zero_point, axis, 0)


@kernel("DequantizeLinear", since=21)
def DequantizeLinear_21(x, x_scale, x_zero_point=None, *, axis=1, block_size=0):
    return _dequantize(x, x_scale, x_zero_point, axis, block_size)


@kernel("DynamicQuantizeLinear", since=11)
def DynamicQuantizeLinear(x):
    hi = np.float32(max(0.0, float(np.max(x)) if x.size else 0.0))
    lo = np.float32(min(0.0, float(np.min(x)) if x.size else 0.0))
    # All zeros: scale 1, as onnxruntime gives (onnx's reference gives 1/255; the spec divides by zero).
    scale = np.float32(1.0) if hi == lo else np.float32(hi - lo) / np.float32(255)
    zp = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x / scale) + zp, 0, 255)
    return y.astype(np.uint8), np.array(scale, np.float32), np.array(zp, np.uint8)


def _centred(x, zero_point, axis=None):
    """``x - zero_point`` as int64; a zero point of several values applies along ``axis``."""
    v = np.asarray(x, np.int64)
    if zero_point is None:
        return v
    zp = np.asarray(zero_point, np.int64)
    if zp.size > 1:
        zp = zp.reshape([-1 if i == axis % v.ndim else 1 for i in range(v.ndim)])
    return v - zp


def _requantize(acc, scale, y_zero_point):
    code = _code(y_zero_point) if y_zero_point is not None else dtypes.UINT8
    lo, hi = _INT_RANGES[code]
    zp = 0 if y_zero_point is None else np.asarray(y_zero_point, np.int64)
    return np.clip(np.rint(acc * scale) + zp, lo, hi).astype(dtypes.to_numpy(code))


@kernel("MatMulInteger", since=10)
def MatMulInteger(A, B, a_zero_point=None, b_zero_point=None):
    """A's zero point may hold one value per row, B's one per column."""
    return np.matmul(_centred(A, a_zero_point, -2), _centred(B, b_zero_point, -1)).astype(np.int32)


@kernel("QLinearMatMul", since=10)
def QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    acc = MatMulInteger(a, b, a_zero_point, b_zero_point).astype(np.float64)
    scale = (np.asarray(a_scale, np.float64) * np.asarray(b_scale, np.float64) / np.asarray(y_scale, np.float64))
    return _requantize(acc, scale.astype(np.float32).astype(np.float64), y_zero_point)


def _int_conv(x, w, x_zero_point, w_zero_point, conv_attrs):
    xc = _centred(x, x_zero_point).astype(np.float64)
    wc = _centred(w, w_zero_point, 0).astype(np.float64)
    return np.rint(Conv(xc, wc, **conv_attrs)).astype(np.int64)


@kernel("ConvInteger", since=10)
def ConvInteger(x, w, x_zero_point=None, w_zero_point=None, *, auto_pad="NOTSET", dilations=None, group=1,
                kernel_shape=None, pads=None, strides=None):
    attrs = dict(auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape, pads=pads,
                 strides=strides)
    return _int_conv(x, w, x_zero_point, w_zero_point, attrs).astype(np.int32)


@kernel("QLinearConv", since=10)
def QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, *,
                auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None):
    attrs = dict(auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape, pads=pads,
                 strides=strides)
    acc = _int_conv(x, w, x_zero_point, w_zero_point, attrs)
    if B is not None:
        acc = acc + np.asarray(B, np.int64).reshape([-1] + [1] * (acc.ndim - 2))
    ws = np.asarray(w_scale, np.float32)
    if ws.size > 1:
        ws = ws.reshape([-1] + [1] * (acc.ndim - 2))
    scale = (np.asarray(x_scale, np.float32) * ws / np.asarray(y_scale, np.float32)).astype(np.float64)
    return _requantize(acc.astype(np.float64), scale, y_zero_point)
