"""Normalization and Resize WGSL kernels against the CPU kernels (themselves checked against onnxruntime)."""
import numpy as np
import pytest

from gpu_cases import assert_close, check_node, gpu_session, node_model, run_both
from onnxtrain import ir
from onnxtrain.ir.model import TensorType
from onnxtrain.tasks.preprocess import preprocess_model

IN_PYODIDE = True
MS = "com.microsoft"
rng = np.random.default_rng(0)


def floats(*shape, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(np.float32)


def bn_inputs(shape):
    c = shape[1]
    return {"X": floats(*shape, scale=2.0, shift=1.0), "scale": floats(c), "B": floats(c), "mean": floats(c),
            "var": (rng.random(c) + 0.5).astype(np.float32)}


def sum_atol(terms: np.ndarray, axis) -> float:
    """The rounding a float32 sum of ``terms`` may carry in any order: about eps * sqrt(n) * max|term| (random
    walk of the roundings), with a margin of 4."""
    n = terms.size // np.sum(terms, axis=axis).size
    return float(4 * np.finfo(np.float32).eps * np.sqrt(n) * np.abs(terms).max())


# -- BatchNormalization ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (4, 5), (3, 7, 11)], ids=["NCHW", "NC", "NCL"])
def test_batch_norm_inference(shape):
    check_node("BatchNormalization", bn_inputs(shape), opset=15, epsilon=1e-3)
    check_node("BatchNormInternal", bn_inputs(shape), domain=MS, training_mode=0)


@pytest.mark.parametrize("shape", [(3, 5, 6, 7), (6, 3), (2, 300, 3)], ids=["NCHW", "NC", "many-channels"])
def test_batch_norm_training(shape):
    """Opset 15 training mode: Y and the running mean and variance, updated with the momentum."""
    check_node("BatchNormalization", bn_inputs(shape), ["Y", "running_mean", "running_var"], opset=15,
               training_mode=1, momentum=0.7, epsilon=1e-4)


def test_batch_norm_internal_training():
    gpu = check_node("BatchNormInternal", bn_inputs((4, 3, 9, 10)), ["Y", "rm", "rv", "saved_mean", "saved_inv"],
                     domain=MS)
    assert gpu.last_program.dispatch_count == 2


def test_batch_norm_opset9_training_by_outputs():
    check_node("BatchNormalization", bn_inputs((2, 3, 4, 5)), ["Y", "rm", "rv", "sm", "sv"], opset=9)
    check_node("BatchNormalization", bn_inputs((2, 3, 4, 5)), ["Y"], opset=9)


def bn_grad_inputs(shape):
    x = floats(*shape, scale=2.0, shift=1.0)
    axes = (0,) + tuple(range(2, len(shape)))
    mean = x.mean(axis=axes)
    inv = (1 / np.sqrt(x.var(axis=axes) + np.float32(1e-5))).astype(np.float32)
    return {"dY": floats(*shape), "X": x, "scale": floats(shape[1]), "saved_mean": mean, "saved_inv_std": inv}


@pytest.mark.parametrize("shape", [(3, 5, 7, 9), (5, 3), (2, 7, 33)], ids=["NCHW", "NC", "NCL"])
def test_batch_norm_grad(shape):
    feeds = bn_grad_inputs(shape)
    model = node_model("BatchNormalizationGrad", feeds, ["dX", "dscale", "dbias"], domain=MS)
    got, want, _ = run_both(model, list(feeds.values()))
    axes = (0,) + tuple(range(2, len(shape)))
    x_hat = (feeds["X"] - feeds["saved_mean"].reshape((1, -1) + (1,) * (len(shape) - 2))) \
        * feeds["saved_inv_std"].reshape((1, -1) + (1,) * (len(shape) - 2))
    sums = sum_atol(feeds["dY"] * x_hat, axes)
    # dX = scale * inv * (dY - (dbias + x_hat * dscale) / n): the sums' rounding over n, times scale * inv
    n = feeds["X"].size // shape[1]
    dx_atol = 2 * sums / n * float(np.abs(feeds["scale"] * feeds["saved_inv_std"]).max() * np.abs(x_hat).max())
    assert_close(got[:1], want[:1], atol=max(dx_atol, 1e-6))
    assert_close(got[1:], want[1:], atol=sums)


def assert_deterministic(model, feeds: dict) -> None:
    """Two runs of ``model`` on the GPU give the same bits."""
    gpu = gpu_session(model)
    first = gpu.run([np.array(v) for v in feeds.values()])
    second = gpu.run([np.array(v) for v in feeds.values()])
    assert gpu.fallbacks == []
    for a, b in zip(first, second):
        assert a.tobytes() == b.tobytes()


def test_batch_norm_deterministic():
    feeds = bn_grad_inputs((16, 3, 20, 20))
    assert_deterministic(node_model("BatchNormalizationGrad", feeds, ["dX", "dscale", "dbias"], domain=MS), feeds)
    feeds = bn_inputs((16, 3, 20, 20))
    assert_deterministic(node_model("BatchNormInternal", feeds, ["Y", "rm", "rv", "sm", "si"], domain=MS), feeds)


def test_batch_norm_spatial0_falls_back():
    check_node("BatchNormalization", bn_inputs((2, 3)), opset=7, spatial=1)
    feeds = {"X": floats(2, 3, 4), "scale": floats(3, 4), "B": floats(3, 4), "mean": floats(3, 4),
             "var": np.ones((3, 4), np.float32)}
    model = node_model("BatchNormalization", feeds, ["Y"], opset=7, spatial=0)
    got, want, gpu = run_both(model, list(feeds.values()), allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "spatial=0" in gpu.fallbacks[0]


# -- LayerNormalization, InstanceNormalization ------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((3, 37), -1), ((2, 3, 5, 7), 2), ((2, 700), 1), ((5, 3, 4), 0)])
def test_layer_norm(shape, axis):
    row = shape[axis:]
    feeds = {"X": floats(*shape, scale=3.0, shift=0.5), "Scale": floats(*row), "B": floats(*row)}
    check_node("LayerNormalization", feeds, ["Y", "Mean", "InvStdDev"], axis=axis, epsilon=1e-4)


def test_layer_norm_without_bias_and_y_only():
    check_node("LayerNormalization", {"X": floats(4, 9), "Scale": floats(9)}, ["Y"], stash_type=0)


def test_layer_norm_broadcast_scale_falls_back():
    model = node_model("LayerNormalization", {"X": floats(2, 3, 5), "Scale": floats(5)}, ["Y"], axis=1)
    got, want, gpu = run_both(model, [floats(2, 3, 5), floats(5)], allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "broadcasts" in gpu.fallbacks[0]


def ln_grad_inputs(shape, axis):
    x = floats(*shape, scale=2.0)
    axes = tuple(range(axis % len(shape), len(shape)))
    mean = x.mean(axis=axes, keepdims=True)
    inv = (1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + np.float32(1e-5))).astype(np.float32)
    return {"dY": floats(*shape), "X": x, "scale": floats(*shape[axis % len(shape):]), "mean": mean,
            "inv": inv}


@pytest.mark.parametrize("shape,axis", [((7, 45), -1), ((2, 3, 4, 5), 2), ((300, 3), 1)])
def test_layer_norm_grad(shape, axis):
    feeds = ln_grad_inputs(shape, axis)
    model = node_model("LayerNormalizationGrad", feeds, ["dX", "dscale", "dbias"], domain=MS, axis=axis)
    got, want, _ = run_both(model, list(feeds.values()))
    batch = tuple(range(axis % len(shape)))
    x_hat = (feeds["X"] - feeds["mean"]) * feeds["inv"]
    norm = tuple(range(axis % len(shape), len(shape)))
    g = feeds["dY"] * feeds["scale"]
    # dX = inv * (g - mean(g) - x_hat * mean(g * x_hat)): the means' rounding times inv * max|x_hat|
    dx_atol = 2 * sum_atol(g * x_hat, norm) / x_hat[(0,) * len(shape)].size * float(
        np.abs(feeds["inv"]).max() * max(1, np.abs(x_hat).max()))
    assert_close(got[:1], want[:1], atol=max(dx_atol, 1e-6))
    assert_close(got[1:], want[1:], atol=sum_atol(feeds["dY"] * x_hat, batch))


def test_layer_norm_grad_deterministic():
    feeds = ln_grad_inputs((50, 3, 40), 1)
    assert_deterministic(node_model("LayerNormalizationGrad", feeds, ["dX", "dscale", "dbias"], domain=MS, axis=1),
                         feeds)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 5, 9)])
def test_instance_norm(shape):
    c = shape[1]
    check_node("InstanceNormalization", {"X": floats(*shape, scale=2.0, shift=1.0), "scale": floats(c),
                                         "B": floats(c)}, epsilon=1e-3)


# -- Resize ----------------------------------------------------------------------------------------------

def resize(x, scales=None, sizes=None, opset=18, **attrs):
    inits = {"roi": np.zeros(0, np.float32)}
    order = ["X", "roi"]
    if scales is not None:
        inits["scales"] = np.asarray(scales, np.float32)
        order.append("scales")
    else:
        inits["sizes"] = np.asarray(sizes, np.int64)
        order += ["", "sizes"]
    return check_node("Resize", {"X": x}, opset=opset, initializers=inits, _input_order=order, **attrs)


COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest(nearest_mode):
    x = floats(1, 3, 5, 7)
    for coords in COORDS:
        resize(x, scales=[1, 1, 1.6, 0.6], mode="nearest", nearest_mode=nearest_mode,
               coordinate_transformation_mode=coords)


@pytest.mark.parametrize("coords", COORDS)
def test_resize_linear(coords):
    x = floats(2, 3, 6, 5)
    resize(x, scales=[1, 1, 2.5, 0.5], mode="linear", coordinate_transformation_mode=coords)
    resize(x, sizes=[2, 3, 4, 9], mode="linear", coordinate_transformation_mode=coords)


def test_resize_nhwc_and_axes():
    x = floats(1, 9, 7, 3)
    resize(x, sizes=[1, 5, 11, 3], mode="linear")
    resize(x, scales=[1, 2, 0.5, 1], mode="nearest")
    check_node("Resize", {"X": x}, opset=18, initializers={"sizes": np.array([4, 4], np.int64)},
               _input_order=["X", "", "", "sizes"], axes=[1, 2], mode="linear", keep_aspect_ratio_policy="not_larger")


def test_resize_antialias_downscale():
    x = floats(2, 3, 23, 17, scale=50.0, shift=100.0)
    resize(x, sizes=[2, 3, 5, 6], mode="linear", antialias=1)
    resize(x, scales=[1, 1, 0.3, 0.45], mode="linear", antialias=1, coordinate_transformation_mode="align_corners")


def test_resize_cubic_and_crop():
    x = floats(1, 2, 6, 8)
    resize(x, scales=[1, 1, 1.5, 0.75], mode="cubic", exclude_outside=1)
    check_node("Resize", {"X": x}, opset=18,
               initializers={"roi": np.array([0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8], np.float32),
                             "scales": np.array([1, 1, 0.8, 0.6], np.float32)},
               _input_order=["X", "roi", "scales"], mode="linear",
               coordinate_transformation_mode="tf_crop_and_resize")


def test_resize_10_and_upsample():
    x = floats(1, 2, 5, 6)
    scales = np.array([1, 1, 2.0, 0.5], np.float32)
    check_node("Resize", {"X": x}, opset=10, initializers={"scales": scales}, _input_order=["X", "scales"],
               mode="nearest")
    check_node("Upsample", {"X": x}, opset=9, initializers={"scales": np.array([1, 1, 2, 1.5], np.float32)},
               _input_order=["X", "scales"], mode="linear")
    check_node("Upsample", {"X": x}, opset=7, scales=[1.0, 1.0, 3.0, 2.0], mode="nearest")


def test_resize_extrapolation_falls_back():
    x = floats(1, 1, 4, 4)
    model = node_model("Resize", {"X": x}, ["Y"], opset=18,
                       initializers={"roi": np.array([0, 0, -0.5, 0, 1, 1, 1.5, 1], np.float32),
                                     "scales": np.array([1, 1, 2, 1], np.float32)},
                       _input_order=["X", "roi", "scales"], mode="linear",
                       coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.0)
    got, want, gpu = run_both(model, [x], allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "extrapolation_value" in gpu.fallbacks[0]


def test_preprocess_graph():
    """tasks/preprocess.py's graph (crop, Resize linear antialiased, scale) on a small image: the GPU's Resize
    equals the CPU's.  WebGPU holds no uint8, so the image is fed as int32 (the graph casts it to float)."""
    model = preprocess_model(8, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    model.graph.inputs[0].type = TensorType(ir.dtypes.DataType.INT32, ["batch", "height", "width", "channels"])
    image = np.random.default_rng(1).integers(0, 256, (2, 13, 19, 4)).astype(np.int32)
    got, want, gpu = run_both(model, [image], allow_fallback=True)
    assert not any("Resize" in f for f in gpu.fallbacks), gpu.fallbacks
    assert_close(got, want, rtol=1e-5, atol=1e-5)
