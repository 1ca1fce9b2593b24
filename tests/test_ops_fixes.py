"""Kernel fixes of issue 11 checked against onnx's helpers, onnx's backend node data and onnxruntime:
bit-pattern types (bfloat16, float8, int4), Cast and CastLike, Resize, ConvTranspose, empty reductions,
old-opset and added elementwise and pooling kernels."""
from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import subbyte

from onnxtrain.ir import dtypes


# ---- bit-pattern types ------------------------------------------------------------------------------------

def _float32_probe(exponents) -> np.ndarray:
    """float32 values with the given biased exponents: every sign and top-8 mantissa bits, and low bits
    at and around the rounding points (ties, just above, just below), plus zeros, subnormals, inf and
    quiet NaN."""
    hi = np.array([(s << 31) | (e << 23) | (m << 15) for s in (0, 1) for e in exponents for m in range(256)],
                  np.uint32)
    lows = np.array([0, 1, 0x3FFF, 0x4000, 0x4001, 0x7FFF], np.uint32)
    bits = (hi[:, None] | lows[None, :]).ravel()
    x = bits.view(np.float32)
    return x[~np.isnan(x) | ((bits & 0x7FC00000) == 0x7FC00000)]   # onnx's helpers see only quiet NaNs


_FLOAT8 = {
    dtypes.FLOAT8E4M3FN: (lambda v, s: oh.float32_to_float8e4m3(v, saturate=s),
                          lambda b: nh.float8e4m3_to_float32(b)),
    dtypes.FLOAT8E4M3FNUZ: (lambda v, s: oh.float32_to_float8e4m3(v, uz=True, saturate=s),
                            lambda b: nh.float8e4m3_to_float32(b, uz=True)),
    dtypes.FLOAT8E5M2: (lambda v, s: oh.float32_to_float8e5m2(v, saturate=s),
                        lambda b: nh.float8e5m2_to_float32(b)),
    dtypes.FLOAT8E5M2FNUZ: (lambda v, s: oh.float32_to_float8e5m2(v, fn=True, uz=True, saturate=s),
                            lambda b: nh.float8e5m2_to_float32(b, fn=True, uz=True)),
}


@pytest.mark.parametrize("code", list(_FLOAT8))
def test_float8_decode_all_patterns_as_onnx(code):
    bits = np.arange(256, dtype=np.uint8)
    ref = _FLOAT8[code][1](bits.astype(np.int32)).astype(np.float32)
    got = dtypes.from_bits(code, bits)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, ref)
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(ref[~np.isnan(ref)]))


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("code", list(_FLOAT8))
def test_float8_encode_as_onnx_helper(code, saturate):
    x = _float32_probe([0, 1, 2, *range(100, 150), 200, 254, 255])
    ref = np.array([_FLOAT8[code][0](v, saturate) for v in x], np.uint8)
    got = dtypes.to_bits(code, x, saturate=saturate)
    bad = np.nonzero(got != ref)[0]
    assert bad.size == 0, [(float(x[i]), hex(ref[i]), hex(got[i])) for i in bad[:5]]


def test_bfloat16_as_onnx_helper():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    np.testing.assert_array_equal(dtypes.from_bits(dtypes.BFLOAT16, bits), nh.bfloat16_to_float32(bits))
    x = _float32_probe([0, 1, 2, 60, 100, 126, 127, 128, 200, 253, 254, 255])
    ref = np.array([oh.float32_to_bfloat16(float(v)) for v in x], np.uint16)
    np.testing.assert_array_equal(dtypes.to_bits(dtypes.BFLOAT16, x), ref)


def _ort_roundtrip(x: np.ndarray, via: int, saturate=None) -> np.ndarray:
    """onnxruntime's Cast float -> ``via`` -> float (its Python API cannot return the narrow types)."""
    attrs = {} if saturate is None else {"saturate": int(saturate)}
    graph = oh.make_graph([oh.make_node("Cast", ["x"], ["m"], to=via, **attrs),
                           oh.make_node("Cast", ["m"], ["y"], to=T.FLOAT)], "g",
                          [oh.make_tensor_value_info("x", T.FLOAT, None)],
                          [oh.make_tensor_value_info("y", T.FLOAT, None)])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("code,saturate", [(c, s) for c in _FLOAT8 for s in (True, False)]
                         + [(dtypes.BFLOAT16, None)])    # onnxruntime refuses saturate for bfloat16
def test_bit_patterns_as_onnxruntime_cast(code, saturate):
    """Every sign/exponent/top-16-bit pattern with low bits at the rounding points, signalling NaNs too."""
    hi = np.arange(1 << 16, dtype=np.uint32) << 16
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)
    x = (hi[:, None] | lows[None, :]).ravel().view(np.float32)
    if code in (dtypes.FLOAT8E4M3FNUZ, dtypes.FLOAT8E5M2FNUZ):
        # onnxruntime turns a negative value that rounds to zero into the NaN code 0x80; the spec and
        # onnx's helper (checked above) give +0, since these types have no -0.
        smallest = dtypes.from_bits(code, np.uint8(1))
        x = x[~((x < 0) & (x > -smallest))]
    ref = _ort_roundtrip(x, code, saturate)
    got = dtypes.from_bits(code, dtypes.to_bits(code, x, saturate=saturate is not False))
    np.testing.assert_array_equal(got, ref)
    finite = ~np.isnan(ref)
    assert np.array_equal(np.signbit(got[finite]), np.signbit(ref[finite]))


@pytest.mark.parametrize("code,signed", [(dtypes.INT4, True), (dtypes.UINT4, False)])
def test_4bit_as_onnx(code, signed):
    x = np.concatenate([np.arange(-20, 20, 0.25), [-8.5, -7.5, 7.5, 15.5, 16.5, 1e9, -1e9]]).astype(np.float32)
    ref = subbyte.float32_to_4bit_unpacked(x, signed)
    got = dtypes.from_bits(code, dtypes.to_bits(code, x))
    assert got.dtype == (np.int8 if signed else np.uint8)
    np.testing.assert_array_equal(got, ref)
    bits = np.arange(16, dtype=np.uint8)
    packed = dtypes.pack_4bit(bits)
    np.testing.assert_array_equal(dtypes.from_bits(code, bits),
                                  nh.unpack_int4(packed, (16,), signed).astype(got.dtype))
