"""Bit-pattern types (bfloat16, float8, int4), Cast and CastLike, Resize, ConvTranspose, empty reductions, and
old-opset, pooling and bitwise kernels, checked against onnx's helpers, onnx's backend node data and onnxruntime."""
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
from opref import assert_same


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


@pytest.mark.slow
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
    unpacked = dtypes.unpack_4bit(packed, 16, code)        # tagged: kernels can tell int4 from uint8
    assert dtypes.from_numpy(unpacked.dtype) == code and dtypes.from_numpy(np.uint8) == dtypes.UINT8
    np.testing.assert_array_equal(dtypes.from_bits(code, unpacked), nh.unpack_int4(packed, (16,), signed))


# ---- running models in both runtimes ------------------------------------------------------------------

def _model(nodes, inputs, outputs, initializers=(), opset=21):
    """A model from (name, elem_type, shape) inputs and outputs."""
    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [oh.make_tensor_value_info(n, t, s) for n, t, s in outputs], list(initializers))
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    return model


def _ours(model, *feeds):
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    session = Session(ir.load(model.SerializeToString()))
    return session.run(dict(zip(session.input_names, feeds)))


def _ort(model, *feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: f for i, f in zip(sess.get_inputs(), feeds)})


def _close(got, ref, rtol=1e-6, atol=0.0):
    for g, r in zip(got, ref):
        assert g.shape == r.shape and g.dtype == r.dtype, (g.shape, g.dtype, r.shape, r.dtype)
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)


# ---- Cast and CastLike ---------------------------------------------------------------------------------

def _cast_probe(np_type) -> np.ndarray:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-9, 6, 300),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 448, 464, 480, 57344, 61440, 1e6, 240, 1e-7, -1e-7,
                         65504, 2 ** -9, 2 ** -10, 3 * 2 ** -11, 2 ** -17, 1 / 3]])
    with np.errstate(over="ignore"):
        return x.astype(np_type)


_FLOATS = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64}


@pytest.mark.parametrize("src,dst", [(T.FLOAT, T.FLOAT), (T.FLOAT16, T.DOUBLE), (T.DOUBLE, T.FLOAT16)])
@pytest.mark.parametrize("via,saturate", [(T.BFLOAT16, None)] + [(t, s) for t in _FLOAT8 for s in (None, 0)])
def test_cast_through_narrow_floats_as_onnxruntime(via, src, dst, saturate):
    attrs = {} if saturate is None else {"saturate": saturate}
    model = _model([oh.make_node("Cast", ["x"], ["m"], to=via, **attrs), oh.make_node("Cast", ["m"], ["y"], to=dst)],
                   [("x", src, [None])], [("y", dst, [None])])
    x = _cast_probe(_FLOATS[src])
    if via in (T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2FNUZ):   # onnxruntime's -0 as NaN, see above
        x = x[~((x < 0) & (x > -dtypes.from_bits(via, np.uint8(1))))]
    _close(_ours(model, x), _ort(model, x), rtol=0)


@pytest.mark.parametrize("to", [T.INT4, T.UINT4])
@pytest.mark.parametrize("src", [T.FLOAT, T.INT32, T.FLOAT16])
def test_cast_to_4bit_as_onnx_reference(src, to):
    from onnx.reference import ReferenceEvaluator
    np_type = {T.FLOAT: np.float32, T.INT32: np.int32, T.FLOAT16: np.float16}[src]
    model = _model([oh.make_node("Cast", ["x"], ["m"], to=to), oh.make_node("Cast", ["m"], ["y"], to=T.INT32)],
                   [("x", src, [None])], [("y", T.INT32, [None])])
    x = np.concatenate([np.arange(-20, 21), [-8.5, -7.5, 7.5, 15.5, 2.5, 3.5]]).astype(np_type)
    ref = ReferenceEvaluator(model).run(None, {"x": x})
    _close(_ours(model, x), ref, rtol=0)


def test_cast_string_both_ways():
    """To string as onnx's reference (the text reads back to the same float), from string as
    onnxruntime."""
    from onnx.reference import ReferenceEvaluator
    x = _cast_probe(np.float32)
    to_text = _model([oh.make_node("Cast", ["x"], ["y"], to=T.STRING)], [("x", T.FLOAT, [None])],
                     [("y", T.STRING, [None])])
    ref = ReferenceEvaluator(to_text).run(None, {"x": x})[0]
    got = _ours(to_text, x)[0]
    assert [g.decode() for g in got.tolist()] == ref.tolist()
    from_text = _model([oh.make_node("Cast", ["x"], ["y"], to=T.FLOAT)], [("x", T.STRING, [None])],
                       [("y", T.FLOAT, [None])])
    words = np.array(ref.tolist() + ["NaN", "INF", "+INF", "-INF", "-inf", "1e-5", "1E8", "  3.25 "], dtype=object)
    ref_back = _ort(from_text, words)[0]
    np.testing.assert_array_equal(_ours(from_text, np.array([w.encode() for w in words], dtype=object))[0], ref_back)
    np.testing.assert_array_equal(ref_back[:x.size], x)


@pytest.mark.parametrize("like", [T.FLOAT8E4M3FN, T.FLOAT8E5M2, T.BFLOAT16, T.FLOAT16, T.INT8])
def test_castlike_takes_the_onnx_type_of_target(like):
    """The target is an initializer of the narrow type (uint8 bit patterns in numpy): CastLike must cast
    to that type, not to uint8."""
    target = oh.make_tensor("like", like, [1], [1.0] if like != T.INT8 else [1])
    model = _model([oh.make_node("CastLike", ["x", "like"], ["m"]), oh.make_node("Cast", ["m"], ["y"], to=T.FLOAT)],
                   [("x", T.FLOAT, [None])], [("y", T.FLOAT, [None])], [target])
    x = _cast_probe(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) < 100)] if like == T.INT8 else x
    if like == T.FLOAT8E4M3FNUZ:
        x = x[~((x < 0) & (x > -dtypes.from_bits(like, np.uint8(1))))]
    _close(_ours(model, x), _ort(model, x), rtol=0)


# ---- Resize -----------------------------------------------------------------------------------------

_RESIZE_COMBOS = [(mode, ctm, nearest, aa, ex)
                  for mode in ("nearest", "linear", "cubic")
                  for ctm in ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                              "asymmetric", "tf_crop_and_resize")
                  for nearest in (("round_prefer_floor", "round_prefer_ceil", "floor", "ceil") if mode == "nearest"
                                  else ("round_prefer_floor",))
                  for aa in ((0,) if mode == "nearest" else (0, 1))
                  for ex in ((0, 1) if mode == "cubic" else (0,))]


def _resize_model(x_shape, mode, ctm, nearest, aa, ex, scales=None, sizes=None, axes=None, policy=None):
    n = len(axes) if axes is not None else len(x_shape)
    inits, names = [], ["x", "", ""]
    if ctm == "tf_crop_and_resize":
        starts, ends = [0.0, 0.0, 0.23, 0.13][-n:], [1.0, 1.0, 0.87, 1.17][-n:]
        inits.append(oh.make_tensor("roi", T.FLOAT, [2 * n], starts + ends))
        names[1] = "roi"
    if sizes is not None:
        inits.append(oh.make_tensor("sizes", T.INT64, [n], sizes))
        names.append("sizes")
    else:
        inits.append(oh.make_tensor("scales", T.FLOAT, [n], scales))
        names[2] = "scales"
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm, nearest_mode=nearest, antialias=aa,
                 exclude_outside=ex, cubic_coeff_a=-0.5, extrapolation_value=-7.0)
    if axes is not None:
        attrs["axes"] = axes
    if policy is not None:
        attrs["keep_aspect_ratio_policy"] = policy
    node = oh.make_node("Resize", names, ["y"], **attrs)
    return _model([node], [("x", T.FLOAT, list(x_shape))], [("y", T.FLOAT, None)], inits, opset=19)


@pytest.mark.parametrize("mode,ctm,nearest,aa,ex", _RESIZE_COMBOS)
def test_resize_as_onnxruntime(mode, ctm, nearest, aa, ex):
    """Scales whose products with the lengths are whole and exact in binary: onnxruntime computes
    coordinates in float32 and with the integer output length, onnx's reference in float64 with
    scale * length, and these agree only there."""
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 8)).astype(np.float32)
    for scales in ([1, 1, 2.0, 0.25], [1, 1, 0.5, 1.5], [1, 1, 0.5, 0.5]):
        model = _resize_model(x.shape, mode, ctm, nearest, aa, ex, scales=scales)
        _close(_ours(model, x), _ort(model, x), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("mode,ctm,nearest,aa,ex", [c for c in _RESIZE_COMBOS if c[1] != "half_pixel_symmetric"])
def test_resize_as_onnx_reference(mode, ctm, nearest, aa, ex):
    """Fractional scales and sizes, as onnx's reference (which makes the backend data).  Not
    half_pixel_symmetric: the reference reads the sample left of one it lands on within rounding there
    (onnxruntime and onnxtrain take that sample)."""
    from onnx.reference import ReferenceEvaluator
    x = np.random.default_rng(2).standard_normal((1, 1, 5, 7)).astype(np.float32)
    for scales, sizes in (([1, 1, 0.6, 1.7], None), ([1, 1, 2.0, 0.3], None), (None, [1, 1, 3, 12]),
                          (None, [1, 1, 1, 4])):
        model = _resize_model(x.shape, mode, ctm, nearest, aa, ex, scales=scales, sizes=sizes)
        ref = ReferenceEvaluator(model).run(None, {"x": x})
        _close(_ours(model, x), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("axes", [None, [2, 3], [3, 2], [3]])
def test_resize_axes_and_aspect_policy_as_onnxruntime(axes, policy):
    x = np.random.default_rng(3).standard_normal((1, 2, 6, 8)).astype(np.float32)
    # a policy over all axes scales N and C too, which onnxruntime's linear and cubic refuse
    for mode in ("nearest",) if axes is None and policy != "stretch" else ("nearest", "linear", "cubic"):
        sizes = {None: [1, 2, 12, 4], (2, 3): [12, 4], (3, 2): [4, 12], (3,): [16]}[None if axes is None else tuple(axes)]
        model = _resize_model(x.shape, mode, "asymmetric", "floor", 0, 0, sizes=sizes, axes=axes, policy=policy)
        _close(_ours(model, x), _ort(model, x), rtol=1e-5, atol=1e-5)
        if policy == "stretch":
            scales = {None: [1, 1, 2.0, 0.5], (2, 3): [2.0, 0.5], (3, 2): [0.5, 2.0], (3,): [1.5]}[
                None if axes is None else tuple(axes)]
            model = _resize_model(x.shape, mode, "half_pixel", "round_prefer_floor", 0, 0, scales=scales, axes=axes)
            _close(_ours(model, x), _ort(model, x), rtol=1e-5, atol=1e-5)


def test_resize_unsupported_values_are_named():
    x = np.zeros((1, 1, 2, 2), np.float32)
    for attrs, word in (({"mode": "bicubic"}, "mode"), ({"coordinate_transformation_mode": "corners"},
                                                         "coordinate_transformation_mode"),
                        ({"nearest_mode": "up"}, "nearest_mode"), ({"keep_aspect_ratio_policy": "fit"},
                                                                   "keep_aspect_ratio_policy"),
                        ({"mode": "nearest", "antialias": 1}, "antialias")):
        node = oh.make_node("Resize", ["x", "", "s"], ["y"], **attrs)
        model = _model([node], [("x", T.FLOAT, [1, 1, 2, 2])], [("y", T.FLOAT, None)],
                       [oh.make_tensor("s", T.FLOAT, [4], [1, 1, 2, 2])], opset=19)
        with pytest.raises(Exception, match=word):
            _ours(model, x)


def test_resize_integers_as_onnx_reference():
    """uint8 images: results truncate like onnx's reference; cubic's overshoot is clamped to 0..255 where
    the reference wraps it around (onnxruntime has no integer cubic)."""
    from onnx.reference import ReferenceEvaluator
    x = np.random.default_rng(15).integers(0, 256, (1, 1, 5, 5)).astype(np.uint8)
    x[0, 0, 2, 2], x[0, 0, 2, 3] = 255, 0
    for mode in ("nearest", "linear", "cubic"):
        model = _model([oh.make_node("Resize", ["x", "", "s"], ["y"], mode=mode)], [("x", T.UINT8, [1, 1, 5, 5])],
                       [("y", T.UINT8, None)], [oh.make_tensor("s", T.FLOAT, [4], [1, 1, 1.6, 2.0])], opset=19)
        got = _ours(model, x)[0]
        float_model = _model([oh.make_node("Resize", ["x", "", "s"], ["y"], mode=mode)],
                             [("x", T.DOUBLE, [1, 1, 5, 5])], [("y", T.DOUBLE, None)],
                             [oh.make_tensor("s", T.FLOAT, [4], [1, 1, 1.6, 2.0])], opset=19)
        ref = ReferenceEvaluator(float_model).run(None, {"x": x.astype(np.float64)})[0]
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, np.clip(ref, 0, 255).astype(np.uint8))
        if mode == "cubic":
            assert ref.max() > 255 or ref.min() < 0      # the case the clamp is for


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("op,opset", [("Upsample", 9), ("Resize", 10)])
def test_upsample_and_resize10_as_onnxruntime(op, opset, mode):
    x = np.random.default_rng(4).standard_normal((1, 2, 4, 6)).astype(np.float32)
    for scales in ([1, 1, 2, 3], [1, 1, 1.5, 1.75]) + (([1, 1, 0.5, 1.5], [1, 1, 1.75, 0.5]) if op == "Resize" else ()):
        model = _model([oh.make_node(op, ["x", "s"], ["y"], mode=mode)], [("x", T.FLOAT, [1, 2, 4, 6])],
                       [("y", T.FLOAT, None)], [oh.make_tensor("s", T.FLOAT, [4], scales)], opset=opset)
        _close(_ours(model, x), _ort(model, x), rtol=1e-5, atol=1e-6)


# ---- ConvTranspose ----------------------------------------------------------------------------------

def _convtranspose(x, w, opset=17, **attrs):
    node = oh.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)
    return _model([node], [("x", T.FLOAT, list(x.shape)), ("w", T.FLOAT, list(w.shape))], [("y", T.FLOAT, None)],
                  opset=opset)


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("group", [1, 2])
def test_convtranspose_output_shape_as_onnxruntime(group, auto_pad):
    """output_shape at and below the full output (cropped per the spec's split of the padding) and one
    above it; auto_pad SAME without output_shape."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 4, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 2)).astype(np.float32)
    full = [(4 - 1) * 2 + 3, (5 - 1) * 3 + 2]           # strides [2, 3]
    for dh, dw in [(0, 0), (1, 0), (2, 3), (3, 1), (-1, -1), (0, -1), (5, 4), (-1, 2)]:
        model = _convtranspose(x, w, strides=[2, 3], group=group, auto_pad=auto_pad,
                               output_shape=[full[0] - dh, full[1] - dw])
        _close(_ours(model, x, w), _ort(model, x, w), rtol=1e-5, atol=1e-5)
    if auto_pad != "NOTSET":
        for dil in ([1, 2], [2, 3]):
            model = _convtranspose(x, w, strides=[2, 3], group=group, auto_pad=auto_pad, dilations=dil)
            _close(_ours(model, x, w), _ort(model, x, w), rtol=1e-5, atol=1e-5)
        model = _convtranspose(x, w, strides=[2, 3], group=group, auto_pad=auto_pad)
        with pytest.raises(Exception, match="auto_pad"):       # kernel width 2 < stride 3
            _ours(model, x, w)


def test_convtranspose_output_shape_far_beyond_is_refused():
    """Two or more positions beyond the full output: onnx's reference refuses it and onnxruntime 1.19
    returns misplaced values, so onnxtrain says it does not support it."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    model = _convtranspose(x, w, strides=[2, 1], output_shape=[9, 7])     # full: [7, 6]
    with pytest.raises(Exception, match="output_shape"):
        _ours(model, x, w)


# ---- reductions --------------------------------------------------------------------------------------

_REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum"]


def _reduce_model(op, elem, shape, axes, opset, keepdims=1, noop=None):
    attrs = {"keepdims": keepdims}
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    inits, names = [], ["x"]
    if axes is not None and (opset >= 18 or (op == "ReduceSum" and opset >= 13)):
        inits.append(oh.make_tensor("axes", T.INT64, [len(axes)], axes))
        names.append("axes")
    elif axes:
        attrs["axes"] = axes
    return _model([oh.make_node(op, names, ["y"], **attrs)], [("x", elem, list(shape))], [("y", elem, None)],
                  inits, opset=opset)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("op", _REDUCE_OPS)
def test_reductions_as_onnxruntime(op, opset):
    rng = np.random.default_rng(7)
    x = (rng.random((2, 3, 4)) + 0.5).astype(np.float32)
    for axes, keepdims in ((None, 1), ([1], 0), ([0, -1], 1), ([], 1)):
        model = _reduce_model(op, T.FLOAT, x.shape, axes, opset, keepdims)
        _close(_ours(model, x), _ort(model, x), rtol=1e-5)
    if opset >= 18 or op == "ReduceSum":
        model = _reduce_model(op, T.FLOAT, x.shape, [], opset, noop=1)
        _close(_ours(model, x), _ort(model, x), rtol=1e-5)


@pytest.mark.parametrize("elem,np_type", [(T.FLOAT, np.float32), (T.INT32, np.int32), (T.INT64, np.int64)])
@pytest.mark.parametrize("op", _REDUCE_OPS)
def test_reductions_over_an_empty_set_as_onnx_reference(op, elem, np_type):
    """The identity element: 0 for sums and norms, 1 for products, the lowest (highest) value for max
    (min), -inf for the logarithms, nan for the mean.  onnxruntime agrees on floats except ReduceMax
    (it fails) and ReduceMean (it returns 0); for integers the mean and logarithms have no value, and
    onnxtrain says so where the reference returns the cast of nan or -inf."""
    from onnx.reference import ReferenceEvaluator
    x = np.zeros((2, 0, 3), np_type)
    for axes in ([1], [0, 1], None):
        model = _reduce_model(op, elem, x.shape, axes, 18)
        if elem != T.FLOAT and op in ("ReduceMean", "ReduceLogSum", "ReduceLogSumExp"):
            with pytest.raises(Exception, match=f"{op} over an empty set"):
                _ours(model, x)
            continue
        ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
        got = _ours(model, x)[0]
        assert got.dtype == np_type       # the reference widens some integer results to int64
        np.testing.assert_array_equal(got, ref)
    model = _reduce_model(op, elem, x.shape, [2], 18)        # a non-empty axis of an empty input
    got, ref = _ours(model, x)[0], ReferenceEvaluator(model).run(None, {"x": x})[0]
    assert got.shape == ref.shape == (2, 0, 1) and got.dtype == np_type


# ---- old opsets, pools and bit operations -------------------------------------------------------------

def _run_both(model, *feeds, reference=False, rtol=1e-5, atol=1e-6):
    """Our result against onnxruntime's (or onnx's reference, where onnxruntime lacks the kernel)."""
    if reference:
        from onnx.reference import ReferenceEvaluator
        names = [i.name for i in model.graph.input]
        ref = ReferenceEvaluator(model).run(None, dict(zip(names, feeds)))
    else:
        ref = _ort(model, *feeds)
    _close(_ours(model, *feeds), ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("opset", [6, 7, 9, 16])
def test_prelu_per_channel_and_broadcast(opset):
    """Before opset 7 a slope [C] applies per channel (axis 1); from 7 on it broadcasts as numpy."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for slope_shape in ([3], [1]) if opset < 7 else ([1], [5], [3, 1, 1], [4, 5]):
        slope = rng.random(slope_shape).astype(np.float32)
        model = _model([oh.make_node("PRelu", ["x", "s"], ["y"])], [("x", T.FLOAT, [2, 3, 4, 5]),
                                                                   ("s", T.FLOAT, slope_shape)],
                       [("y", T.FLOAT, None)], opset=opset)
        if opset < 7:      # onnxruntime has no PRelu-6: PyTorch's per-channel slope is the reference
            import torch
            ref = torch.nn.functional.prelu(torch.from_numpy(x), torch.from_numpy(slope)).numpy()
            _close(_ours(model, x, slope), [ref])
        else:
            _run_both(model, x, slope)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_opset6_broadcast_and_axis_as_onnx_reference(op):
    from onnx.reference import ReferenceEvaluator
    rng = np.random.default_rng(9)
    a = rng.random((2, 3, 4, 5)).astype(np.float32) + 1
    for b_shape, attrs in (([5], {"broadcast": 1}), ([4, 5], {"broadcast": 1}), ([3], {"broadcast": 1, "axis": 1}),
                           ([3, 4], {"broadcast": 1, "axis": 1}), ([2, 3, 4, 5], {}), ([1], {"broadcast": 1})):
        b = rng.random(b_shape).astype(np.float32) + 1
        model = _model([oh.make_node(op, ["a", "b"], ["y"], **attrs)], [("a", T.FLOAT, [2, 3, 4, 5]),
                                                                       ("b", T.FLOAT, b_shape)],
                       [("y", T.FLOAT, None)], opset=6)
        expect = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op](
            a, b.reshape(b.shape + (1,) * (4 - attrs.get("axis", 4 - b.ndim) - b.ndim)))
        np.testing.assert_allclose(_ours(model, a, b)[0], expect, rtol=1e-6)
        if "axis" not in attrs:     # onnx's reference broadcasts as numpy and ignores axis
            _close(_ours(model, a, b), ReferenceEvaluator(model).run(None, {"a": a, "b": b}))
    model = _model([oh.make_node(op, ["a", "b"], ["y"])], [("a", T.FLOAT, [2, 3, 4, 5]), ("b", T.FLOAT, [5])],
                   [("y", T.FLOAT, None)], opset=6)
    b = rng.random(5).astype(np.float32)
    with pytest.raises(Exception, match="broadcast is not set"):
        _ours(model, a, b)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_opset1_pools_as_onnxruntime(op):
    x = np.random.default_rng(10).standard_normal((2, 3, 7, 6)).astype(np.float32)
    for attrs in ({"kernel_shape": [3, 2]}, {"kernel_shape": [2, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]},
                  {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}):
        model = _model([oh.make_node(op, ["x"], ["y"], **attrs)], [("x", T.FLOAT, list(x.shape))],
                       [("y", T.FLOAT, None)], opset=6 if op == "MaxPool" else 7)
        _run_both(model, x)


@pytest.mark.parametrize("opset", [1, 11, 18])
def test_lppool_as_onnxruntime(opset):
    """Opset 1 (p a float) against onnx's reference: onnxruntime starts at LpPool-2."""
    x = np.random.default_rng(11).standard_normal((2, 3, 7, 6)).astype(np.float32)
    p = (lambda v: float(v)) if opset == 1 else int
    cases = [{"kernel_shape": [3, 2], "p": p(3)}, {"kernel_shape": [2, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]},
             {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER", "p": p(1)}]
    if opset >= 18:
        cases += [{"kernel_shape": [2, 2], "dilations": [2, 1]}, {"kernel_shape": [2, 3], "strides": [2, 2],
                                                                  "ceil_mode": 1}]
    for attrs in cases:
        model = _model([oh.make_node("LpPool", ["x"], ["y"], **attrs)], [("x", T.FLOAT, list(x.shape))],
                       [("y", T.FLOAT, None)], opset=opset)
        _run_both(model, x, reference=opset == 1)
    for v in (1, 2, 3):
        model = _model([oh.make_node("GlobalLpPool", ["x"], ["y"], p=p(v))], [("x", T.FLOAT, list(x.shape))],
                       [("y", T.FLOAT, None)], opset=opset)
        # GlobalLpPool-1 (p a float) against onnxruntime's GlobalLpPool-2 with the same p
        ort_model = model if opset > 1 else _model([oh.make_node("GlobalLpPool", ["x"], ["y"], p=v)],
                                                   [("x", T.FLOAT, list(x.shape))], [("y", T.FLOAT, None)], opset=2)
        _close(_ours(model, x), _ort(ort_model, x), rtol=1e-5, atol=1e-6)


def test_maxunpool_inverts_maxpool_as_onnxruntime():
    """MaxPool's indices unpooled, with and without output_shape (the pooled input's odd shape)."""
    pool = oh.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2])
    for with_shape in (False, True):
        x = np.random.default_rng(12).standard_normal((2, 3, 7, 5) if with_shape else (2, 3, 6, 4)).astype(np.float32)
        inits = [oh.make_tensor("shape", T.INT64, [4], [2, 3, 7, 5])] if with_shape else []
        unpool = oh.make_node("MaxUnpool", ["p", "i"] + (["shape"] if with_shape else []), ["y"],
                              kernel_shape=[2, 2], strides=[2, 2])
        model = _model([pool, unpool], [("x", T.FLOAT, list(x.shape))], [("y", T.FLOAT, None)], inits, opset=11)
        _run_both(model, x)


def test_bitshift_and_bitwise_as_onnxruntime():
    rng = np.random.default_rng(13)
    for np_type, elem in ((np.uint8, T.UINT8), (np.uint32, T.UINT32), (np.uint64, T.UINT64)):
        bits = np.iinfo(np_type).bits
        x = rng.integers(0, np.iinfo(np_type).max, (3, 4), dtype=np_type, endpoint=True)
        y = rng.integers(0, bits - 1, (4,), dtype=np_type, endpoint=True)
        for direction in ("LEFT", "RIGHT"):
            model = _model([oh.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
                           [("x", elem, [3, 4]), ("y", elem, [4])], [("z", elem, None)], opset=11)
            _run_both(model, x, y, rtol=0, atol=0)
    for np_type, elem in ((np.int8, T.INT8), (np.uint16, T.UINT16), (np.int32, T.INT32), (np.uint64, T.UINT64)):
        info = np.iinfo(np_type)
        a = rng.integers(info.min, info.max, (2, 3, 4), dtype=np_type, endpoint=True)
        b = rng.integers(info.min, info.max, (3, 4), dtype=np_type, endpoint=True)
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            model = _model([oh.make_node(op, ["a", "b"], ["c"])], [("a", elem, [2, 3, 4]), ("b", elem, [3, 4])],
                           [("c", elem, None)], opset=18)
            _run_both(model, a, b, rtol=0, atol=0)
        model = _model([oh.make_node("BitwiseNot", ["a"], ["c"])], [("a", elem, [2, 3, 4])], [("c", elem, None)],
                       opset=18)
        _run_both(model, a, rtol=0, atol=0)


def test_shrink_as_onnxruntime():
    x = np.random.default_rng(14).standard_normal((3, 5)).astype(np.float32) * 2
    for attrs in ({}, {"lambd": 1.5}, {"lambd": 0.7, "bias": 0.3}):
        model = _model([oh.make_node("Shrink", ["x"], ["y"], **attrs)], [("x", T.FLOAT, [3, 5])],
                       [("y", T.FLOAT, None)], opset=9)
        _run_both(model, x)


def test_mod_as_onnxruntime():
    """fmod=1 on floats (with infinities and zeros) and both modes on integers of mixed signs; fmod=0 on
    floats is refused, as onnxruntime refuses it."""
    a = np.array([-4.5, 4.5, 3, -3, 0.0, np.inf, 5, -7.25], np.float32)
    b = np.array([2, -2, -2, 2, 3, 2, np.inf, 0.5], np.float32)
    for fmod in (0, 1):
        model = _model([oh.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], [("a", T.FLOAT, [8]), ("b", T.FLOAT, [8])],
                       [("y", T.FLOAT, None)], opset=13)
        if fmod:
            _run_both(model, a, b)
        else:
            with pytest.raises(Exception, match="fmod"):
                _ours(model, a, b)
    ia = np.array([-7, 7, -7, 7, 0, 5, -128, 127], np.int8)
    ib = np.array([3, -3, -3, 3, 5, 7, 3, -2], np.int8)
    for fmod in (0, 1):
        model = _model([oh.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], [("a", T.INT8, [8]), ("b", T.INT8, [8])],
                       [("y", T.INT8, None)], opset=13)
        _run_both(model, ia, ib, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("opset", [7, 8])
def test_upsample_7_scales_attribute(mode, opset):
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 4)).astype(np.float32)
    assert_same("Upsample", [x], {"scales": [1.0, 1.0, 2.0, 3.0], "mode": mode}, opset=opset)


# ---- Slice with a negative step clamps its start to [0, dim-1] ------------------------------------------------

@pytest.mark.parametrize("start,end", [(-10, -20), (-6, -7), (2, -10), (10, 0), (-1, -6)])
def test_slice_negative_step_clamps_start_as_onnxruntime(start, end):
    from onnxtrain.ops.shape import Slice_10
    x = np.arange(5, dtype=np.float32)
    node = oh.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", T.FLOAT, [5])],
                          [oh.make_tensor_value_info("y", T.FLOAT, None)],
                          [nh.from_array(np.array([v], np.int64), n) for n, v in
                           (("s", start), ("e", end), ("a", 0), ("t", -1))])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = Slice_10(x, np.array([start]), np.array([end]), np.array([0]), np.array([-1]))
    np.testing.assert_array_equal(got, want)
