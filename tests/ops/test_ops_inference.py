"""The inference op families that exported detection, segmentation, RNN and classic-ML models use (indexing, vision,
quantization, recurrent, strings, ai.onnx.ml, random, ImageDecoder, signal processing), against onnxruntime and
onnx's backend node test data."""
import numpy as np
import pytest

from onnx_node_data import check_node_test, node_tests
from opref import assert_same, ort_run, ours_run

R = np.random.default_rng(0)


def f32(*shape):
    return R.standard_normal(shape).astype(np.float32)


def i64(*values):
    return np.array(values, np.int64)


# ---- indexing ------------------------------------------------------------------------------------

TIES = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 5, 5, 1, 1]], np.float32)


@pytest.mark.parametrize("x,k,attrs", [
    (TIES, 3, {}), (TIES, 4, {"largest": 0}), (TIES.T.copy(), 2, {"axis": 0}), (f32(2, 3, 5), 5, {"axis": -1}),
    (np.array([[7, 200, 3, 200]], np.int32), 2, {}), (i64(4, -1, 9, 9, 0).reshape(1, 5), 3, {"largest": 0}),
    (f32(3, 4), 0, {})], ids=["ties", "smallest-ties", "axis0", "all", "int32", "int64-smallest", "k0"])
def test_topk(x, k, attrs):
    assert_same("TopK", [x, i64(k)], attrs, n_outputs=2)


@pytest.mark.parametrize("data,indices,batch_dims", [
    (f32(3, 4, 5), i64([0, 1], [2, -1]), 0), (f32(3, 4, 5), i64([[1], [0]]), 0),
    (f32(2, 3, 4), i64([[1, 2], [0, 0]], [[2, 3], [1, 1]]), 1), (f32(2, 3, 4), i64([[1], [0]]).reshape(2, 1), 1)])
def test_gathernd(data, indices, batch_dims):
    assert_same("GatherND", [data, indices], {"batch_dims": batch_dims})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatternd(reduction):
    data = f32(4, 3)
    indices = i64([1], [3], [1]) if reduction != "none" else i64([1], [3])
    updates = f32(len(indices), 3)
    assert_same("ScatterND", [data, indices, updates], {"reduction": reduction}, opset=18)


def test_scatternd_single_elements():
    assert_same("ScatterND", [f32(2, 3, 2), i64([0, 1, 1], [1, -1, 0]), f32(2)])


def test_scatter_opset9():
    assert_same("Scatter", [f32(3, 4), np.array([[1, 0, 2, 1]], np.int64), f32(1, 4)], {"axis": 0}, opset=9)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis):
    cond = np.array([True, False, True], bool)
    attrs = {} if axis is None else {"axis": axis}
    assert_same("Compress", [f32(3, 3), cond], attrs)


@pytest.mark.parametrize("x,attrs", [
    (np.array([2, 1, 1, 3, 4, 3], np.float32), {}), (np.array([2, 1, 1, 3, 4, 3], np.float32), {"sorted": 0}),
    (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.int64), {"axis": 0}),
    (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.int64), {"axis": 1, "sorted": 0})])
def test_unique(x, attrs):
    assert_same("Unique", [x], attrs, n_outputs=4)


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis, time_axis):
    x = f32(4, 3, 2) if batch_axis == 1 else f32(3, 4, 2)
    assert_same("ReverseSequence", [x, i64(4, 1, 3)], {"batch_axis": batch_axis, "time_axis": time_axis})


# ---- vision --------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_gridsample(mode, padding_mode, align_corners):
    grid = (R.random((2, 5, 6, 2)).astype(np.float32) * 3 - 1.5)     # reaches well outside [-1, 1]
    assert_same("GridSample", [f32(2, 3, 4, 5), grid],
                {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}, opset=16, rtol=1e-4,
                atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_gridsample_volumetric_against_torch(mode, padding_mode):
    import torch
    x, grid = f32(2, 3, 4, 5, 3), (R.random((2, 3, 2, 4, 3)).astype(np.float32) * 3 - 1.5)
    want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), padding_mode=padding_mode,
                                           mode="bilinear" if mode == "linear" else mode, align_corners=False)
    got = ours_run("GridSample", [x, grid], {"mode": mode, "padding_mode": padding_mode}, opset=20)[0]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid(align_corners):
    assert_same("AffineGrid", [f32(2, 2, 3), i64(2, 3, 4, 5)], {"align_corners": align_corners}, opset=20)


@pytest.mark.parametrize("attrs", [{}, {"mode": "max"}, {"sampling_ratio": 2, "spatial_scale": 0.5},
                                   {"coordinate_transformation_mode": "output_half_pixel", "output_height": 3,
                                    "output_width": 2}])
def test_roialign(attrs):
    x = f32(2, 3, 10, 12)
    rois = np.array([[0, 0, 9, 9], [1.5, 2.2, 7.1, 8.4], [-2, 3, 14, 6], [4, 4, 4.5, 4.2]], np.float32)
    assert_same("RoiAlign", [x, rois, i64(0, 1, 1, 0)], {"output_height": 2, "output_width": 3, **attrs},
                opset=16, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("spatial_scale", [1.0, 0.5, 0.25])
def test_max_roi_pool(spatial_scale):
    rois = np.array([[0, 0, 0, 9, 9], [1, 1.5, 2.5, 7, 8.5], [1, -3, 2, 14, 6], [0, 4, 4, 4, 4], [0, 11, 1, 14, 3]],
                    np.float32)
    assert_same("MaxRoiPool", [f32(2, 3, 10, 12), rois], {"pooled_shape": [3, 2], "spatial_scale": spatial_scale})


@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize("score_threshold", [None, 0.3])
def test_nonmaxsuppression(center_point_box, score_threshold):
    corners = R.random((2, 30, 2)).astype(np.float32) * 10
    sizes = R.random((2, 30, 2)).astype(np.float32) * 4 + 0.5
    boxes = np.concatenate([corners, corners + sizes], axis=2)
    scores = R.random((2, 3, 30)).astype(np.float32)
    scores[0, 0, 5] = scores[0, 0, 6]                            # a tie
    inputs = [boxes, scores, i64(5), np.array([0.4], np.float32)]
    if score_threshold is not None:
        inputs.append(np.array([score_threshold], np.float32))
    assert_same("NonMaxSuppression", inputs, {"center_point_box": center_point_box})


def test_nonmaxsuppression_without_limits_selects_nothing():
    assert_same("NonMaxSuppression", [np.zeros((1, 2, 4), np.float32), np.ones((1, 1, 2), np.float32)])


@pytest.mark.parametrize("shape,axes", [((5, 4), None), ((2, 9), None), ((3,), [-1]), ((6, 2), [0, 2])])
def test_center_crop_pad(shape, axes):
    attrs = {} if axes is None else {"axes": axes}
    x = f32(4, 5, 3) if axes else f32(4, 5)
    assert_same("CenterCropPad", [x, i64(*shape)], attrs, opset=18)


# ---- quantization --------------------------------------------------------------------------------

SCALE = np.array(0.05, np.float32)


@pytest.mark.parametrize("zero_point,attrs,opset", [
    (np.array(128, np.uint8), {}, 13), (np.array(-3, np.int8), {}, 13), (None, {}, 10),
    (np.array([0, 10, 250], np.uint8), {"axis": 1}, 13), (np.array([-1, 2, 0, 5], np.int8), {"axis": -1}, 19),
    (np.array(0, np.uint16), {}, 21), (np.array(-2, np.int16), {}, 21)],
    ids=["uint8", "int8", "no-zero-point", "per-axis", "per-last-axis", "uint16", "int16"])
def test_quantize_linear(zero_point, attrs, opset):
    x = f32(2, 3, 4) * 5
    scale = SCALE if "axis" not in attrs else np.abs(f32(x.shape[attrs["axis"]])) * 0.1 + 0.01
    inputs = [x, scale] + ([] if zero_point is None else [zero_point])
    assert_same("QuantizeLinear", inputs, attrs, opset=opset)
    q = ours_run("QuantizeLinear", inputs, attrs, opset=opset)[0]
    assert_same("DequantizeLinear", [q, scale] + ([] if zero_point is None else [zero_point]), attrs, opset=opset)


def test_quantize_linear_blocked_matches_the_per_block_definition():
    x, scale = f32(2, 6), np.abs(f32(2, 3)) + 0.05
    zero_point = np.array([[0, 5, -5], [1, 2, 3]], np.int8)
    got = ours_run("QuantizeLinear", [x, scale, zero_point], {"axis": 1, "block_size": 2}, opset=21)[0]
    full_scale, full_zp = np.repeat(scale, 2, axis=1), np.repeat(zero_point, 2, axis=1).astype(np.float32)
    np.testing.assert_array_equal(got, np.clip(np.rint(x / full_scale) + full_zp, -128, 127).astype(np.int8))
    back = ours_run("DequantizeLinear", [got, scale, zero_point], {"axis": 1, "block_size": 2}, opset=21)[0]
    np.testing.assert_allclose(back, (got.astype(np.float32) - full_zp) * full_scale, rtol=1e-6)


def test_dynamic_quantize_linear():
    for x in (f32(3, 4), np.abs(f32(5)), -np.abs(f32(2, 2)), np.zeros(3, np.float32)):
        assert_same("DynamicQuantizeLinear", [x], n_outputs=3)


def test_matmul_integer_with_per_row_and_per_column_zero_points():
    a = R.integers(0, 255, (3, 4)).astype(np.uint8)
    b = R.integers(-128, 127, (4, 5)).astype(np.int8)
    assert_same("MatMulInteger", [a, b, np.array(1, np.uint8), np.array(-3, np.int8)])
    assert_same("MatMulInteger", [a[None].repeat(2, 0), b, np.array(7, np.uint8)])
    # Per-row and per-column zero points (the spec allows them; onnxruntime 1.19 takes scalars only).
    a_zp, b_zp = np.array([1, 128, 3], np.uint8), R.integers(-5, 5, 5).astype(np.int8)
    got = ours_run("MatMulInteger", [a, b, a_zp, b_zp])[0]
    want = (a.astype(np.int64) - a_zp[:, None].astype(np.int64)) @ (b.astype(np.int64) - b_zp.astype(np.int64))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul_saturates(dtype):
    """Results beyond the output type's range are clamped, as in onnxruntime (not wrapped around)."""
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = R.integers(lo, hi, (3, 4)).astype(dtype)
    b = R.integers(lo, hi, (4, 2)).astype(dtype)
    y_zero_point = np.array(10, dtype)
    inputs = [a, np.array(0.05, np.float32), np.array(5, dtype), b, np.array(0.03, np.float32),
              np.array(-2 if lo else 120, dtype), np.array(0.04, np.float32), y_zero_point]
    got = assert_same("QLinearMatMul", inputs)[0]
    lo, hi = np.iinfo(y_zero_point.dtype).min, np.iinfo(y_zero_point.dtype).max
    assert (got == lo).any() or (got == hi).any()


def test_conv_integer_and_qlinear_conv_per_channel():
    x = R.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    attrs = {"pads": [1, 1, 1, 1], "strides": [2, 1]}
    assert_same("ConvInteger", [x, R.integers(0, 255, (3, 2, 3, 3)).astype(np.uint8), np.array(3, np.uint8),
                                np.array(100, np.uint8)], attrs)
    w = R.integers(-20, 20, (3, 2, 3, 3)).astype(np.int8)
    inputs = [x, np.array(0.02, np.float32), np.array(3, np.uint8), w, np.array([0.01, 0.02, 0.005], np.float32),
              np.zeros(3, np.int8), np.array(0.1, np.float32), np.array(128, np.uint8),
              np.array([100, -200, 50], np.int32)]
    assert_same("QLinearConv", inputs, attrs)


# ---- recurrent layers ----------------------------------------------------------------------------

def _rnn_inputs(gates, direction="forward", seq=5, batch=3, size=4, hidden=6, lens=None, states=1, peepholes=False,
                layout=0):
    dirs = 2 if direction == "bidirectional" else 1
    x = f32(batch, seq, size) if layout else f32(seq, batch, size)
    state = (lambda: f32(batch, dirs, hidden)) if layout else (lambda: f32(dirs, batch, hidden))
    inputs = [x, f32(dirs, gates * hidden, size) * 0.5, f32(dirs, gates * hidden, hidden) * 0.5,
              f32(dirs, 2 * gates * hidden), lens, *[state() for _ in range(states)]]
    if peepholes:
        inputs.append(f32(dirs, 3 * hidden))
    return inputs, {"hidden_size": hidden, "direction": direction, **({"layout": 1} if layout else {})}


# (A zero sequence length is left out: onnxruntime's RNN leaves that Y_h uninitialised.)
RNN_CASES = [({}, {}), ({"direction": "reverse"}, {}), ({"direction": "bidirectional"}, {}),
             ({"direction": "bidirectional", "lens": np.array([5, 2, 1], np.int32)}, {}), ({}, {"clip": 0.5})]


@pytest.mark.parametrize("case,attrs", RNN_CASES, ids=["forward", "reverse", "bidirectional", "sequence-lens", "clip"])
@pytest.mark.parametrize("op,gates", [("RNN", 1), ("GRU", 3), ("LSTM", 4)])
def test_recurrent_layers(op, gates, case, attrs):
    inputs, base = _rnn_inputs(gates, states=2 if op == "LSTM" else 1, **case)
    assert_same(op, inputs, {**base, **attrs}, opset=14, n_outputs=3 if op == "LSTM" else 2, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op,gates", [("RNN", 1), ("GRU", 3), ("LSTM", 4)])
def test_recurrent_layers_batch_first(op, gates):
    """layout 1 against onnxruntime's layout 0 on the transposed inputs (onnxruntime has no layout 1)."""
    n_out = 3 if op == "LSTM" else 2
    inputs, base = _rnn_inputs(gates, "bidirectional", states=n_out - 1, layout=1, lens=np.array([5, 3, 2], np.int32))
    got = ours_run(op, inputs, base, opset=14, n_outputs=n_out)
    flipped = [inputs[0].swapaxes(0, 1)] + inputs[1:5] + [s.swapaxes(0, 1) for s in inputs[5:]]
    want = ort_run(op, flipped, {**base, "layout": 0}, opset=14, n_outputs=n_out)
    np.testing.assert_allclose(got[0], want[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w.swapaxes(0, 1), rtol=1e-4, atol=1e-5)


def test_gru_linear_before_reset_and_activations_with_parameters():
    inputs, base = _rnn_inputs(3, "bidirectional")
    attrs = {**base, "linear_before_reset": 1, "activations": ["HardSigmoid", "LeakyRelu", "Sigmoid", "ScaledTanh"],
             "activation_alpha": [0.3, 0.05, 0.8], "activation_beta": [0.4, 1.2]}
    assert_same("GRU", inputs, attrs, opset=14, n_outputs=2, rtol=1e-4, atol=1e-5)


def test_lstm_peepholes_and_input_forget():
    inputs, base = _rnn_inputs(4, "bidirectional", states=2, peepholes=True, lens=np.array([4, 5, 1], np.int32))
    assert_same("LSTM", inputs, {**base, "input_forget": 1}, opset=14, n_outputs=3, rtol=1e-4, atol=1e-5)
    assert_same("LSTM", inputs, base, opset=7, n_outputs=3, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN"])
def test_exported_torch_recurrent_model(layer):
    """A two-layer bidirectional torch layer (batch first) as torch.onnx.export writes it, against torch."""
    import io
    import torch
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    torch.manual_seed(0)
    module = getattr(torch.nn, layer)(4, 5, num_layers=2, bidirectional=True, batch_first=True).eval()
    x = torch.randn(3, 7, 4)
    buf = io.BytesIO()
    torch.onnx.export(module, (x,), buf, dynamo=False, opset_version=17, input_names=["x"], output_names=["y", "h"][:2]
                      if layer != "LSTM" else ["y", "h", "c"])
    with torch.no_grad():
        want = module(x)
    want = [want[0]] + (list(want[1]) if layer == "LSTM" else [want[1]])
    got = Session(ir.load(buf.getvalue())).run([x.numpy()])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("image,block,attrs", [
    ([5, 5], [2, 2], {}), ([6, 5], [3, 2], {"strides": [2, 1], "pads": [1, 0, 1, 1], "dilations": [1, 2]}),
    ([4, 3, 5], [2, 1, 2], {"strides": [1, 2, 2]})])
def test_col2im(image, block, attrs):
    n = len(image)
    strides, dilations = attrs.get("strides", [1] * n), attrs.get("dilations", [1] * n)
    pads = attrs.get("pads", [0] * 2 * n)
    counts = [(image[i] + pads[i] + pads[n + i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1
              for i in range(n)]
    x = f32(2, 3 * int(np.prod(block)), int(np.prod(counts)))
    if n == 2:
        assert_same("Col2Im", [x, i64(*image), i64(*block)], attrs, opset=18)
    else:   # onnxruntime's Col2Im is 2-D only: the adjoint of im2col, checked through <col2im(c), v> = <c, im2col(v)>
        from onnxtrain.ops.vision import Col2Im
        v = f32(2, 3, *image)
        got = Col2Im(x, i64(*image), i64(*block), **attrs)
        im2col = np.zeros_like(x).reshape(2, 3, *block, *counts)
        for k in np.ndindex(*block):
            for p in np.ndindex(*counts):
                im2col[(slice(None), slice(None)) + k + p] = v[(slice(None), slice(None)) + tuple(
                    q * s + kk for q, s, kk in zip(p, strides, k))]
        np.testing.assert_allclose((got * v).sum(), (x * im2col.reshape(x.shape)).sum(), rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("attrs,with_mask,with_bias", [
    ({}, False, False), ({"pads": [1, 1, 1, 1], "strides": [2, 1]}, True, True),
    ({"group": 2, "offset_group": 2, "dilations": [2, 1]}, True, False)])
def test_deform_conv_against_onnx_reference(attrs, with_mask, with_bias):
    """onnxruntime 1.19 has no DeformConv; onnx's ReferenceEvaluator (GridSample-based) is the reference."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    group, og = attrs.get("group", 1), attrs.get("offset_group", 1)
    x, w = f32(2, 4, 7, 6), f32(6, 4 // group, 3, 2)
    dh, dw = attrs.get("dilations", [1, 1])
    pt, pl, pb, pr = attrs.get("pads", [0, 0, 0, 0])
    sh, sw = attrs.get("strides", [1, 1])
    oh, ow = (7 + pt + pb - dh * 2 - 1) // sh + 1, (6 + pl + pr - dw - 1) // sw + 1
    inputs = [x, w, f32(2, og * 2 * 6, oh, ow) * 1.5, f32(6) if with_bias else None,
              R.random((2, og * 6, oh, ow)).astype(np.float32) if with_mask else None]
    names = ["x", "w", "offset", "b" if with_bias else "", "mask" if with_mask else ""]
    node = helper.make_node("DeformConv", names, ["y"], **attrs)
    model = helper.make_model(helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", 1, None)]),
                              opset_imports=[helper.make_opsetid("", 19)])
    want = ReferenceEvaluator(model).run(None, {n: v for n, v in zip(names, inputs) if n})[0]
    got = ours_run("DeformConv", inputs, attrs, opset=19)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---- strings -------------------------------------------------------------------------------------

def strings(*values, shape=None):
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out.reshape(shape or (len(values),))


def assert_same_text(op, inputs, attrs=None, n_outputs=1, opset=20):
    want = ort_run(op, inputs, attrs, n_outputs=n_outputs, opset=opset)
    got = ours_run(op, inputs, attrs, n_outputs=n_outputs, opset=opset)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype == object:
            assert [v.decode("utf-8") for v in g.ravel()] == list(w.ravel())
        else:
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


WORDS = strings("Monday", "tuesday", "wednesday", "MONDAY", "Straße", "über")


@pytest.mark.parametrize("attrs", [
    {}, {"case_change_action": "LOWER"}, {"case_change_action": "UPPER", "stopwords": ["monday"]},
    {"is_case_sensitive": 1, "stopwords": ["Monday", "über"]},
    {"stopwords": ["monday", "tuesday", "wednesday", "straße", "über"], "case_change_action": "LOWER"}])
@pytest.mark.parametrize("shape", [(6,), (1, 6)])
def test_string_normalizer(attrs, shape):
    """(onnxruntime needs a locale this machine has: C.UTF-8.)"""
    assert_same_text("StringNormalizer", [WORDS.reshape(shape)], {"locale": "C.UTF-8", **attrs}, opset=17)


@pytest.mark.parametrize("delimiter,maxsplit", [(None, None), (",", None), (",", 1), ("ab", None), (" ", 2)])
def test_string_split(delimiter, maxsplit):
    x = strings("a,b,,c", "  lead and  trail ", "xabyabz", "no-delims", " ", shape=(5, 1))
    attrs = {k: v for k, v in (("delimiter", delimiter), ("maxsplit", maxsplit)) if v is not None}
    assert_same_text("StringSplit", [x], attrs, n_outputs=2)


def test_string_split_of_an_empty_string_is_one_empty_part():
    """As Python's str.split and onnx's reference (onnxruntime counts 0 parts when a delimiter is given)."""
    y, z = ours_run("StringSplit", [strings("", "a;")], {"delimiter": ";"}, n_outputs=2, opset=20)
    assert y.tolist() == [[b"", b""], [b"a", b""]] and z.tolist() == [1, 2]
    y, z = ours_run("StringSplit", [strings("", " ")], {}, n_outputs=2, opset=20)
    assert y.shape == (2, 0) and z.tolist() == [0, 0]


def test_string_concat_broadcasts():
    assert_same_text("StringConcat", [strings("a", "bé", "", shape=(3, 1)), strings("x", "yz")])


@pytest.mark.parametrize("pattern", [r"[a-z]+@[a-z]+\.com", r"\d{2,3}", r".*"])
def test_regex_full_match(pattern):
    assert_same_text("RegexFullMatch", [strings("abc@def.com", "12", "1234", "", "ab@cd.org")], {"pattern": pattern})


TFIDF_POOL = {"ngram_counts": [0, 4], "pool_int64s": [2, 3, 5, 4, 5, 6, 7, 8, 6, 7],
              "ngram_indexes": [6, 1, 3, 0, 2, 4, 5]}


@pytest.mark.parametrize("attrs", [
    {"mode": "TF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 0},
    {"mode": "TF", "min_gram_length": 2, "max_gram_length": 2, "max_skip_count": 3},
    {"mode": "IDF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 2},
    {"mode": "TFIDF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 5,
     "weights": [0.5, 1.0, 2.0, 0.1, 3.0, 0.25, 4.0]},
    {"mode": "IDF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0,
     "weights": [0.5, 1.0, 2.0, 0.1, 3.0, 0.25, 4.0]}])
@pytest.mark.parametrize("batched", [False, True])
def test_tfidf_vectorizer(attrs, batched):
    x = np.array([[1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], [4, 5, 6, 7, 8, 6, 7, 2, 3, 5, 4, 5]], np.int64)
    assert_same("TfIdfVectorizer", [x if batched else x[1]], {**TFIDF_POOL, **attrs}, opset=9)


def test_tfidf_vectorizer_strings():
    x = strings("a", "b", "a", "c", "a", "b", "d", shape=(7,))
    attrs = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 1, "ngram_counts": [0, 2],
             "pool_strings": ["a", "b", "a", "b", "c", "a"], "ngram_indexes": [0, 1, 2, 3]}
    assert_same_text("TfIdfVectorizer", [x], attrs, opset=9)


# ---- ai.onnx.ml ----------------------------------------------------------------------------------

def ml_run(op, inputs, attrs, ml_opset, *, ours_too=True):
    """(onnxruntime's outputs, ours) for one ai.onnx.ml node."""
    import onnx
    from onnx import helper
    import onnxruntime as ort
    from opref import _value_info
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [_value_info(n, v) for n, v in zip(names, inputs)],
                              [helper.make_empty_tensor_value_info("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", ml_opset)], ir_version=8)

    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, dict(zip(names, inputs)))[0]
    got = ours_run(op, inputs, attrs, domain="ai.onnx.ml", opset=ml_opset)[0] if ours_too else None
    return want, got


def _as_text(a):
    return [v.decode("utf-8") if isinstance(v, bytes) else v for v in a.ravel()]


@pytest.mark.parametrize("keys,values,extra", [
    ({"keys_strings": ["a", "b", "c"]}, {"values_int64s": [1, 2, 3]}, {"default_int64": 42}),
    ({"keys_int64s": [5, 7]}, {"values_strings": ["five", "seven"]}, {}),
    ({"keys_floats": [0.5, 1.5]}, {"values_floats": [10.0, 20.0]}, {"default_float": -1.0})])
@pytest.mark.parametrize("ml_opset", [2, 4])
def test_label_encoder(keys, values, extra, ml_opset):
    x = {"keys_strings": strings("a", "c", "z", "b", shape=(2, 2)), "keys_int64s": i64(5, 6, 7),
         "keys_floats": np.array([1.5, 0.5, 2.0], np.float32)}[next(iter(keys))]
    want, got = ml_run("LabelEncoder", [x], {**keys, **values, **extra}, ml_opset)
    if want.dtype == object:
        assert _as_text(got) == list(want.ravel()) and got.shape == want.shape
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_label_encoder_tensor_attributes():
    from onnx import helper, numpy_helper
    attrs = {"keys_tensor": numpy_helper.from_array(i64(1, 2, 3), "k"),
             "values_tensor": numpy_helper.from_array(np.array([0.5, 1.5, 2.5], np.float32), "v"),
             "default_tensor": numpy_helper.from_array(np.array([-9.0], np.float32), "d")}
    x = i64(3, 1, 4, 2)
    want, _ = ml_run("LabelEncoder", [x], attrs, 4, ours_too=False)
    from onnxtrain.ops.ml import LabelEncoder_4
    got = LabelEncoder_4(x, keys_tensor=i64(1, 2, 3), values_tensor=np.array([0.5, 1.5, 2.5], np.float32),
                         default_tensor=np.array([-9.0], np.float32))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert helper is not None


def test_binarizer_and_array_feature_extractor():
    x = f32(3, 5)
    want, got = ml_run("Binarizer", [x], {"threshold": 0.2}, 1)
    np.testing.assert_array_equal(got, want)
    for data, index in ((x, i64(4, 0, 0)), (f32(5), i64(1, 3)), (f32(2, 3, 5), np.array([[2, 1]], np.int64))):
        want, got = ml_run("ArrayFeatureExtractor", [data, index], {}, 1)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("post_transform", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_linear_regressor_and_classifier(post_transform):
    x = f32(6, 4)
    coefficients = [float(v) for v in f32(12)]
    if post_transform in ("NONE",):
        want, got = ml_run("LinearRegressor", [x], {"coefficients": coefficients, "intercepts": [0.5, -1.0, 2.0],
                                                    "targets": 3}, 1)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for labels in ({"classlabels_ints": [4, 7, 9]}, {"classlabels_strings": ["a", "b", "c"]}):
        attrs = {"coefficients": coefficients, "intercepts": [0.1, 0.0, -0.3], "post_transform": post_transform,
                 **labels}
        ref = _ml_outputs("LinearClassifier", [x], attrs, 1, 2)
        got = ours_run("LinearClassifier", [x], attrs, domain="ai.onnx.ml", opset=1, n_outputs=2)
        assert _as_text(got[0]) == list(ref[0].ravel())
        np.testing.assert_allclose(got[1], ref[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("post_transform", ["NONE", "LOGISTIC"])
def test_linear_classifier_binary(post_transform):
    """One coefficient row, two labels: against onnx's reference (onnxruntime 1.19 gives [1 - s, s] here and
    does not apply LOGISTIC; its labels agree)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    x = f32(6, 4)
    attrs = {"coefficients": [float(v) for v in f32(4)], "intercepts": [0.2], "post_transform": post_transform,
             "classlabels_ints": [0, 1]}
    node = helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain="ai.onnx.ml", **attrs)
    model = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [6, 4])],
                                                [helper.make_empty_tensor_value_info("label"),
                                                 helper.make_empty_tensor_value_info("scores")]),
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = ours_run("LinearClassifier", [x], attrs, domain="ai.onnx.ml", opset=1, n_outputs=2)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], _ml_outputs("LinearClassifier", [x], attrs, 1, 2)[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_scaler_normalizer_imputer():
    x = f32(5, 3)
    for op, attrs, inputs in [("Scaler", {"offset": [0.5, -1.0, 0.0], "scale": [2.0, 0.5, 1.0]}, [x]),
                              ("Scaler", {"offset": [0.5], "scale": [3.0]}, [x]),
                              ("Normalizer", {"norm": "MAX"}, [np.abs(x) + 0.1]), ("Normalizer", {"norm": "L1"}, [x]),
                              ("Normalizer", {"norm": "L2"}, [x]),
                              ("Imputer", {"imputed_value_floats": [9.0, 8.0, 7.0],
                                           "replaced_value_float": float("nan")},
                               [np.where(x > 0.5, np.nan, x).astype(np.float32)]),
                              ("Imputer", {"imputed_value_int64s": [-1], "replaced_value_int64": 3},
                               [i64(1, 3, 5, 3, 0).reshape(5, 1)])]:
        want, got = ml_run(op, inputs, attrs, 1)
        assert got.dtype == want.dtype, op
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=op)


def test_category_mapper_one_hot_encoder_feature_vectorizer():
    cats = {"cats_strings": ["cat", "dog", "eel"], "cats_int64s": [5, 1, 9]}
    want, got = ml_run("CategoryMapper", [strings("dog", "cow", "eel", shape=(3, 1))], cats, 1)
    np.testing.assert_array_equal(got, want)
    want, got = ml_run("CategoryMapper", [i64(9, 5, 2)], {**cats, "default_string": "none"}, 1)
    assert _as_text(got) == list(want.ravel())
    for x, attrs in ((i64(9, 2, 1, 9).reshape(2, 2), {"cats_int64s": [1, 9, 4]}),
                     (strings("b", "a", "z"), {"cats_strings": ["a", "b"]})):
        want, got = ml_run("OneHotEncoder", [x], attrs, 1)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="OneHotEncoder: value 'z' is not a category"):
        ours_run("OneHotEncoder", [strings("a", "z")], {"cats_strings": ["a"], "zeros": 0}, domain="ai.onnx.ml")
    inputs = [f32(3, 2), f32(3, 4), f32(3, 1)]
    want, got = ml_run("FeatureVectorizer", inputs, {"inputdimensions": [2, 3, 2]}, 1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("labels", [{"classlabels_int64s": [3, 1, 7]}, {"classlabels_strings": ["a", "b", "c"]}])
def test_zipmap(labels):
    x = f32(4, 3)
    want, got = ml_run("ZipMap", [x], labels, 1)
    assert len(got) == len(want)
    for g, w in zip(got, want):      # maps: compared by key (onnxruntime's come sorted)
        assert sorted(g) == sorted(w)
        np.testing.assert_allclose([g[k] for k in sorted(g)], [w[k] for k in sorted(w)], rtol=1e-6)


@pytest.mark.parametrize("kernel_type,params", [("LINEAR", [0.0, 0.0, 0.0]), ("POLY", [0.5, 1.0, 3.0]),
                                                ("RBF", [0.3, 0.0, 0.0]), ("SIGMOID", [0.2, -0.5, 0.0])])
@pytest.mark.parametrize("one_class", [0, 1])
def test_svm_regressor(kernel_type, params, one_class):
    x, vectors = f32(6, 4), f32(5, 4)
    attrs = {"coefficients": [float(v) for v in f32(5)], "kernel_params": params, "kernel_type": kernel_type,
             "n_supports": 5, "rho": [0.25], "support_vectors": [float(v) for v in vectors.ravel()],
             "one_class": one_class}
    want, got = ml_run("SVMRegressor", [x], attrs, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    linear = {"coefficients": [float(v) for v in f32(4)], "rho": [0.5], "n_supports": 0, "kernel_type": "LINEAR",
              "kernel_params": [0.0, 0.0, 0.0]}
    want, got = ml_run("SVMRegressor", [x], linear, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _svc_attrs(rng, vectors_per_class, labels, kernel_type, params, proba):
    n, k = sum(vectors_per_class), len(vectors_per_class)
    attrs = {("classlabels_strings" if isinstance(labels[0], str) else "classlabels_ints"): labels,
             "coefficients": [float(v) for v in rng.standard_normal((k - 1) * n)], "kernel_params": params,
             "kernel_type": kernel_type, "rho": [float(v) for v in rng.standard_normal(k * (k - 1) // 2)],
             "support_vectors": [float(v) for v in rng.standard_normal(n * 3)],
             "vectors_per_class": vectors_per_class}
    if proba:
        attrs["prob_a"] = [float(v) for v in rng.standard_normal(k * (k - 1) // 2)]
        attrs["prob_b"] = [float(v) for v in rng.standard_normal(k * (k - 1) // 2) * 0.1]
    return attrs


@pytest.mark.parametrize("vectors_per_class,labels", [([2, 3], [0, 1]), ([2, 1, 2], [4, 5, 6]),
                                                      ([1, 2, 2, 3], ["a", "b", "c", "d"])])
@pytest.mark.parametrize("kernel_type,params", [("RBF", [0.3, 0.0, 0.0]), ("POLY", [0.5, 1.0, 2.0]),
                                                ("LINEAR", [0.0, 0.0, 0.0]), ("SIGMOID", [0.2, -0.1, 0.0])])
@pytest.mark.parametrize("proba", [False, True])
def test_svm_classifier(vectors_per_class, labels, kernel_type, params, proba):
    """One-vs-one votes, decision values and (with prob_a/prob_b) libsvm's coupled probabilities."""
    rng = np.random.default_rng(len(labels) + 10 * proba)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    attrs = _svc_attrs(rng, vectors_per_class, labels, kernel_type, params, proba)
    want = _ml_outputs("SVMClassifier", [x], attrs, 1, 2)
    got = ours_run("SVMClassifier", [x], attrs, domain="ai.onnx.ml", opset=1, n_outputs=2)
    assert (_as_text(got[0]) == list(want[0].ravel())) if isinstance(labels[0], str) else \
        np.array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("post_transform", ["NONE", "SOFTMAX", "LOGISTIC"])
def test_svm_classifier_linear_and_transforms(post_transform):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    linear = {"classlabels_ints": [1, 2, 3], "coefficients": [float(v) for v in rng.standard_normal(9)],
              "rho": [0.1, -0.2, 0.3], "kernel_type": "LINEAR", "kernel_params": [0.0, 0.0, 0.0],
              "post_transform": post_transform}
    for attrs in (linear, {**_svc_attrs(rng, [2, 1, 2], [4, 5, 6], "RBF", [0.3, 0.0, 0.0], False),
                           "post_transform": post_transform}):
        want = _ml_outputs("SVMClassifier", [x], attrs, 1, 2)
        got = ours_run("SVMClassifier", [x], attrs, domain="ai.onnx.ml", opset=1, n_outputs=2)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def _ml_outputs(op, inputs, attrs, ml_opset, n_outputs):
    from onnx import helper
    import onnxruntime as ort
    from opref import _value_info
    names = [f"x{i}" for i in range(len(inputs))]
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, names, outs, domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [_value_info(n, v) for n, v in zip(names, inputs)],
                              [helper.make_empty_tensor_value_info(o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", ml_opset)], ir_version=8)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, dict(zip(names, inputs)))


def _legacy_regressor_model(aggregate, n_targets, rng, multi_weight=False, with_missing=False):
    """Random trees of mixed depth in TreeEnsembleRegressor form: node i of a tree branches to 2i+1, 2i+2."""
    modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
    attrs = {k: [] for k in ["nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
                             "target_treeids", "target_nodeids", "target_ids", "target_weights"]}
    for t in range(5):
        depth = int(rng.integers(0, 4))
        for k in range(2 ** (depth + 1) - 1):
            leaf = k >= 2 ** depth - 1
            attrs["nodes_treeids"].append(t), attrs["nodes_nodeids"].append(k)
            attrs["nodes_featureids"].append(0 if leaf else int(rng.integers(3)))
            attrs["nodes_modes"].append("LEAF" if leaf else modes[int(rng.integers(6))])
            attrs["nodes_values"].append(0.0 if leaf else float(np.round(rng.standard_normal(), 1)))
            attrs["nodes_truenodeids"].append(0 if leaf else 2 * k + 1)
            attrs["nodes_falsenodeids"].append(0 if leaf else 2 * k + 2)
            attrs["nodes_missing_value_tracks_true"].append(int(with_missing and rng.integers(2)))
            if leaf:
                for target in (range(n_targets) if multi_weight else [int(rng.integers(n_targets))]):
                    attrs["target_treeids"].append(t), attrs["target_nodeids"].append(k)
                    attrs["target_ids"].append(target)
                    attrs["target_weights"].append(float(np.round(rng.standard_normal(), 2)))
    return {**attrs, "n_targets": n_targets, "aggregate_function": aggregate}


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("n_targets,multi_weight", [(1, False), (3, False), (2, True)])
def test_tree_ensemble_regressor(aggregate, n_targets, multi_weight):
    rng = np.random.default_rng(n_targets)
    x = np.round(rng.standard_normal((30, 3)), 1).astype(np.float32)
    x[::7, 1] = np.nan
    attrs = _legacy_regressor_model(aggregate, n_targets, rng, multi_weight, with_missing=True)
    if multi_weight or n_targets == 1:   # every leaf reaches every target (see the next test)
        attrs["base_values"] = [float(v) for v in np.round(rng.standard_normal(n_targets), 2)]
    want, got = ml_run("TreeEnsembleRegressor", [x], attrs, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _classifier_attrs(rng, n_classes, class_ids, positive, labels):
    reg = _legacy_regressor_model("SUM", max(class_ids) + 1, rng)
    weights = np.round(rng.standard_normal(len(reg["target_weights"])), 2)
    if positive:
        weights = np.abs(weights) / 5
    attrs = {k: v for k, v in reg.items() if k.startswith("nodes_")}
    attrs.update(class_treeids=reg["target_treeids"], class_nodeids=reg["target_nodeids"],
                 class_ids=[class_ids[i % len(class_ids)] for i in range(len(weights))],
                 class_weights=[float(w) for w in weights])
    attrs["classlabels_int64s" if labels == "ints" else "classlabels_strings"] = \
        list(range(10, 10 + n_classes)) if labels == "ints" else [f"c{i}" for i in range(n_classes)]
    return attrs


@pytest.mark.parametrize("post_transform", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("base", [False, True])
@pytest.mark.parametrize("labels", ["ints", "strings"])
def test_tree_ensemble_classifier_multiclass(post_transform, base, labels):
    rng = np.random.default_rng(7)
    x = np.round(rng.standard_normal((40, 3)), 1).astype(np.float32)
    attrs = {**_classifier_attrs(rng, 4, [0, 1, 2, 3], False, labels), "post_transform": post_transform}
    if base:
        attrs["base_values"] = [0.1, -0.2, 0.3, 0.0]
    want = _ml_outputs("TreeEnsembleClassifier", [x], attrs, 1, 2)
    got = ours_run("TreeEnsembleClassifier", [x], attrs, domain="ai.onnx.ml", opset=1, n_outputs=2)
    if labels == "strings":
        assert _as_text(got[0]) == list(want[0].ravel())
    else:
        np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("post_transform", ["NONE", "LOGISTIC"])
@pytest.mark.parametrize("positive", [True, False])
@pytest.mark.parametrize("base", [None, [0.25]])
def test_tree_ensemble_classifier_binary(post_transform, positive, base):
    rng = np.random.default_rng(11)
    x = np.round(rng.standard_normal((40, 3)), 1).astype(np.float32)
    attrs = {**_classifier_attrs(rng, 2, [0], positive, "ints"), "post_transform": post_transform}
    if base:
        attrs["base_values"] = base
    want = _ml_outputs("TreeEnsembleClassifier", [x], attrs, 1, 2)
    got = ours_run("TreeEnsembleClassifier", [x], attrs, domain="ai.onnx.ml", opset=1, n_outputs=2)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_tree_ensemble_classifier_other_two_class_forms_raise():
    rng = np.random.default_rng(5)
    x = np.round(rng.standard_normal((4, 3)), 1).astype(np.float32)
    attrs = {**_classifier_attrs(rng, 2, [0, 1], True, "ints"), "post_transform": "SOFTMAX"}
    with pytest.raises(ValueError, match=r"2 labels with weights for classes \[0, 1\] and 0 base values are not "
                                         r"supported"):
        ours_run("TreeEnsembleClassifier", [x], attrs, domain="ai.onnx.ml", opset=1, n_outputs=2)


def test_tree_ensemble_regressor_adds_base_values_to_targets_no_leaf_reaches():
    """As the spec says and onnx's reference does (onnxruntime 1.19 writes 0 for such a target instead)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    attrs = {"nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [0, 0, 0],
             "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"], "nodes_values": [0.0, 0.0, 0.0],
             "nodes_truenodeids": [1, 0, 0], "nodes_falsenodeids": [2, 0, 0], "target_treeids": [0, 0],
             "target_nodeids": [1, 2], "target_ids": [0, 1], "target_weights": [1.0, 2.0], "n_targets": 3,
             "base_values": [0.5, 0.25, 0.125]}
    x = np.array([[-1.0], [1.0]], np.float32)
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml", **attrs)
    model = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [2, 1])],
                                                [helper.make_empty_tensor_value_info("y")]),
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = ours_run("TreeEnsembleRegressor", [x], attrs, domain="ai.onnx.ml", opset=1)[0]
    np.testing.assert_allclose(got, [[1.5, 0.25, 0.125], [0.5, 2.25, 0.125]])
    np.testing.assert_allclose(got, want)
    assert (ml_run("TreeEnsembleRegressor", [x], attrs, 1, ours_too=False)[0][:, 2] == 0).all()


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
def test_tree_ensemble_against_the_regressor_in_onnxruntime(aggregate):
    """TreeEnsemble (ml opset 5; onnxruntime 1.19 lacks it) against the same trees as TreeEnsembleRegressor
    (with MIN and MAX, some rows reach no leaf of a target: 0 there, as onnxruntime)."""
    modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
    n_trees, rng = 4, np.random.default_rng(1)
    x = np.round(rng.standard_normal((20, 3)), 1).astype(np.float32)
    reg = {k: [] for k in ["nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
                           "nodes_truenodeids", "nodes_falsenodeids", "target_treeids", "target_nodeids",
                           "target_ids", "target_weights"]}
    ens = {k: [] for k in ["nodes_featureids", "nodes_modes", "nodes_splits", "nodes_truenodeids",
                           "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs", "leaf_targetids",
                           "leaf_weights", "tree_roots"]}
    for t in range(n_trees):
        ens["tree_roots"].append(3 * t)
        for k, (true_node, false_node) in enumerate([(1, 2), (3, 4), (5, 6)]):
            mode, feature, split = int(rng.integers(6)), int(rng.integers(3)), float(np.round(rng.standard_normal(), 1))
            reg["nodes_treeids"].append(t), reg["nodes_nodeids"].append(k), reg["nodes_featureids"].append(feature)
            reg["nodes_modes"].append(modes[mode]), reg["nodes_values"].append(split)
            reg["nodes_truenodeids"].append(true_node), reg["nodes_falsenodeids"].append(false_node)
            ens["nodes_featureids"].append(feature), ens["nodes_modes"].append(mode), ens["nodes_splits"].append(split)
            leaf = k > 0
            ens["nodes_truenodeids"].append(4 * t + true_node - 3 if leaf else 3 * t + true_node)
            ens["nodes_falsenodeids"].append(4 * t + false_node - 3 if leaf else 3 * t + false_node)
            ens["nodes_trueleafs"].append(int(leaf)), ens["nodes_falseleafs"].append(int(leaf))
        for leaf in range(3, 7):
            target, weight = int(rng.integers(2)), float(np.round(rng.standard_normal(), 2))
            reg["nodes_treeids"].append(t), reg["nodes_nodeids"].append(leaf), reg["nodes_featureids"].append(0)
            reg["nodes_modes"].append("LEAF"), reg["nodes_values"].append(0.0)
            reg["nodes_truenodeids"].append(0), reg["nodes_falsenodeids"].append(0)
            reg["target_treeids"].append(t), reg["target_nodeids"].append(leaf), reg["target_ids"].append(target)
            reg["target_weights"].append(weight)
            ens["leaf_targetids"].append(target), ens["leaf_weights"].append(weight)
    want, _ = ml_run("TreeEnsembleRegressor", [x], {**reg, "n_targets": 2, "aggregate_function": aggregate}, 3,
                     ours_too=False)
    from onnxtrain.ops.ml import TreeEnsemble
    got = TreeEnsemble(x, **{**ens, "nodes_modes": np.array(ens["nodes_modes"], np.uint8),
                             "nodes_splits": np.array(ens["nodes_splits"], np.float32),
                             "leaf_weights": np.array(ens["leaf_weights"], np.float32)},
                       n_targets=2, aggregate_function=["AVERAGE", "SUM", "MIN", "MAX"].index(aggregate))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- random --------------------------------------------------------------------------------------

def test_random_ops_shapes_dtypes_and_distributions():
    """Shapes and dtypes as onnxruntime's; values by their moments (no two generators agree on values).  The draws
    are unseeded, so the sample mean is held to 5 standard errors of the distribution's (sqrt(variance / n)) and the
    sample variance to 3% (over 5 standard errors for these n): a wrong mean or scale falls far outside, a right
    one by chance less than once in a million runs."""
    x = np.zeros((200, 300), np.float32)
    cases = [("RandomUniform", [], {"shape": [200, 300], "low": -2.0, "high": 4.0, "dtype": 11}, (1.0, 3.0)),
             ("RandomNormal", [], {"shape": [200, 300], "mean": 1.5, "scale": 0.5}, (1.5, 0.25)),
             ("RandomUniformLike", [x], {"low": 1.0, "high": 2.0}, (1.5, 1 / 12)),
             ("RandomNormalLike", [x], {"scale": 2.0, "dtype": 11}, (0.0, 4.0))]
    for op, inputs, attrs, (mean, variance) in cases:
        want = ort_run(op, inputs, attrs)[0]
        got = ours_run(op, inputs, attrs)[0]
        assert got.shape == want.shape and got.dtype == want.dtype, op
        assert abs(got.mean() - mean) < 5 * np.sqrt(variance / got.size), (op, got.mean())
        assert abs(got.var() - variance) / variance < 0.03, (op, got.var())


def test_bernoulli_frequencies_and_seed():
    p = np.repeat(np.array([0.0, 0.2, 0.9, 1.0], np.float32), 20000).reshape(4, -1)
    got = ours_run("Bernoulli", [p], {}, opset=15)[0]
    assert got.dtype == np.float32 and set(np.unique(got)) <= {0.0, 1.0}
    np.testing.assert_allclose(got.mean(axis=1), [0.0, 0.2, 0.9, 1.0], atol=0.01)
    a = ours_run("Bernoulli", [p], {"seed": 3.0, "dtype": 7}, opset=15)[0]
    b = ours_run("Bernoulli", [p], {"seed": 3.0, "dtype": 7}, opset=15)[0]
    assert a.dtype == np.int64 and np.array_equal(a, b)


def test_multinomial_frequencies():
    logits = np.log(np.array([[0.1, 0.6, 0.3], [0.5, 0.0001, 0.4999]], np.float32))
    want = ort_run("Multinomial", [logits], {"sample_size": 50000, "dtype": 7})[0]
    got = ours_run("Multinomial", [logits], {"sample_size": 50000, "dtype": 7})[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    for row in range(2):
        np.testing.assert_allclose(np.bincount(got[row], minlength=3) / 50000,
                                   np.bincount(want[row], minlength=3) / 50000, atol=0.01)


# ---- ImageDecoder --------------------------------------------------------------------------------

def _png_file(rows: bytes, width, height, depth, color, palette=None) -> bytes:
    import struct
    import zlib

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0))
    if palette is not None:
        out += chunk(b"PLTE", palette.tobytes())
    return out + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _png_filtered(raw: np.ndarray, bpp: int, kinds) -> bytes:
    """Each row filtered forward (from the raw bytes, as the PNG spec defines) with the next filter in kinds."""
    raw = raw.astype(np.int64)
    out = []
    for y, row in enumerate(raw):
        kind = kinds[y % len(kinds)]
        up = raw[y - 1] if y else np.zeros_like(row)
        left = np.concatenate([np.zeros(bpp, np.int64), row[:-bpp]])
        upleft = np.concatenate([np.zeros(bpp, np.int64), up[:-bpp]])
        p = left + up - upleft
        pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upleft)
        paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
        pred = [np.zeros_like(row), left, up, (left + up) // 2, paeth][kind]
        out.append(bytes([kind]) + ((row - pred) & 0xFF).astype(np.uint8).tobytes())
    return b"".join(out)


@pytest.mark.parametrize("color,depth,channels", [(2, 8, 3), (6, 8, 4), (0, 8, 1), (4, 8, 2), (2, 16, 3), (3, 8, 1)],
                         ids=["rgb", "rgba", "gray", "gray-alpha", "rgb16", "palette"])
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_image_decoder_png_every_filter(color, depth, channels, pixel_format):
    from onnxtrain.ops.image import ImageDecoder
    rng = np.random.default_rng(color + depth)
    h, w = 9, 7
    values = rng.integers(0, 256 if depth == 8 else 65536, (h, w, channels))
    values[3:5] = values[3, 0]                                       # flat rows and runs
    palette = rng.integers(0, 256, (256, 3)).astype(np.uint8) if color == 3 else None
    raw = values.astype(">u2").view(np.uint8) if depth == 16 else values.astype(np.uint8)
    raw = raw.reshape(h, -1)
    data = _png_file(_png_filtered(raw, channels * depth // 8, [0, 1, 2, 3, 4]), w, h, depth, color, palette)
    got = ImageDecoder(np.frombuffer(data, np.uint8), pixel_format=pixel_format)
    eight = (values >> 8 if depth == 16 else values).astype(np.int64)
    rgb = palette[eight[..., 0]].astype(np.int64) if color == 3 else \
        np.repeat(eight[..., :1], 3, axis=2) if channels < 3 else eight[..., :3]
    if pixel_format == "Grayscale":
        want = ((rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16)[..., None]
    else:
        want = rgb[..., ::-1] if pixel_format == "BGR" else rgb
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_image_decoder_names_the_formats_it_cannot_read():
    from onnxtrain.ops.image import ImageDecoder
    jpeg = np.frombuffer(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", np.uint8)
    with pytest.raises(ValueError, match="decoding JPEG images is not supported"):
        ImageDecoder(jpeg)


# ---- signal processing and small ones -------------------------------------------------------------

@pytest.mark.parametrize("shape,attrs,length", [
    ((2, 8, 1), {}, None), ((2, 8, 2), {"inverse": 1}, None), ((2, 8, 1), {"onesided": 1}, None),
    ((2, 6, 3, 2), {"axis": 2}, None), ((2, 8, 1), {}, 10), ((2, 8, 2), {"onesided": 1}, 5)])
def test_dft_opset17(shape, attrs, length):
    inputs = [f32(*shape)] + ([] if length is None else [i64(length)])
    assert_same("DFT", inputs, attrs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [-2, 1, 2, -3])
def test_dft_opset20_axis_input(axis):
    assert_same("DFT", [f32(2, 4, 6, 2), None, i64(axis)], opset=20, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("onesided,window", [(1, True), (0, True), (1, False)])
def test_stft(onesided, window):
    signal = f32(2, 40, 1)
    inputs = [signal, i64(6), np.hanning(10).astype(np.float32) if window else None] + ([] if window else [i64(10)])
    assert_same("STFT", inputs, {"onesided": onesided}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows(op, periodic):
    assert_same(op, [np.array(10, np.int32)], {"periodic": periodic}, rtol=1e-5, atol=1e-6)
    assert_same(op, [i64(7)], {"periodic": periodic, "output_datatype": 11}, rtol=1e-5, atol=1e-6)


def test_mel_weight_matrix():
    inputs = [i64(8), i64(64), i64(16000), np.array(50, np.float32), np.array(7000, np.float32)]
    assert_same("MelWeightMatrix", inputs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k,dtype", [(0, None), (2, None), (-1, 7)])
def test_eyelike(k, dtype):
    attrs = {"k": k} if dtype is None else {"k": k, "dtype": dtype}
    assert_same("EyeLike", [f32(3, 5)], attrs)


def test_det():
    assert_same("Det", [f32(2, 3, 4, 4)], rtol=1e-4, atol=1e-5)


# ---- onnx's backend node tests ---------------------------------------------------------------------

NOT_RUN = [
    # onnx's expected values wrap out-of-range results around (its reference casts without clamping);
    # the spec saturates, and onnxruntime gives the values this kernel gives.
    "test_qlinearmatmul_2D_int8_float16", "test_qlinearmatmul_2D_int8_float32",
    "test_qlinearmatmul_3D_int8_float16", "test_qlinearmatmul_3D_int8_float32",
    # These fail in Unsqueeze with a 0-d axes input (ops/shape.py), not in AffineGrid.
    "test_affine_grid_2d_align_corners_expanded", "test_affine_grid_2d_expanded",
    "test_affine_grid_3d_align_corners_expanded", "test_affine_grid_3d_expanded"]


@pytest.mark.parametrize("name", node_tests(
    "test_top_k*", "test_gathernd*", "test_scatternd*", "test_scatter_*", "test_compress*", "test_unique*",
    "test_reversesequence*", "test_gridsample*", "test_affine_grid*", "test_roialign*", "test_nonmaxsuppression*",
    "test_center_crop_pad*", "test_quantizelinear*", "test_dequantizelinear*", "test_dynamicquantizelinear*",
    "test_qlinear*", "test_matmulinteger*", "test_convinteger*", "test_lstm*", "test_gru*", "test_rnn*",
    "test_simple_rnn*", "test_dft*", "test_stft*", "test_*window*", "test_melweightmatrix*", "test_eyelike*",
    "test_det*", "test_col2im*", "test_*deform_conv*", "test_strnorm*", "test_string*",
    "test_regex*", "test_tfidf*", "test_ai_onnx_ml*", "test_image_decoder_decode_bmp_rgb",
    "test_image_decoder_decode_png_rgb", "test_image_decoder_decode_pnm_rgb", "test_image_decoder_decode_tiff_rgb",
    excluded=NOT_RUN))
def test_onnx_node_data(name):
    check_node_test(name)
