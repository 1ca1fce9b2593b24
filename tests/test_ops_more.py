"""Kernels for the ops exported detection, segmentation and RNN models use (indexing, vision, quantization,
recurrent), against onnxruntime and onnx's backend node test data."""
import numpy as np
import pytest

from onnx_node_data import check_node_test, node_tests
from opref import assert_same, ours_run

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


# ---- onnx's backend node tests ---------------------------------------------------------------------

# The *_expanded forms of AffineGrid fail in Unsqueeze with a 0-d axes input (ops/shape.py).
@pytest.mark.parametrize("name", node_tests(
    "test_top_k*", "test_gathernd*", "test_scatternd*", "test_scatter_*", "test_compress*", "test_unique*",
    "test_reversesequence*", "test_gridsample*", "test_affine_grid*", "test_roialign*", "test_nonmaxsuppression*",
    "test_center_crop_pad*", excluded=["test_affine_grid_2d_align_corners_expanded", "test_affine_grid_2d_expanded",
                                       "test_affine_grid_3d_align_corners_expanded", "test_affine_grid_3d_expanded"]))
def test_onnx_node_data(name):
    check_node_test(name)
