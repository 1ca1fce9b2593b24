"""The com.microsoft ops onnxruntime's level-"all" optimizer fuses (FusedGemm, FusedConv) and GeluGrad,
against onnxruntime's kernels."""
import numpy as np
import pytest

from opref import assert_same

R = np.random.default_rng(11)
MS = "com.microsoft"


def f32(*shape):
    return R.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("activation, params", [
    ("Relu", {}), ("Tanh", {}), ("Sigmoid", {}), ("LeakyRelu", {"activation_alpha": 0.2}),
    ("HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.4}), ("Elu", {"activation_alpha": 0.7}),
    ("Softplus", {}), ("Softsign", {}), ("ThresholdedRelu", {"activation_alpha": 0.5})])
def test_fused_gemm(activation, params):
    attrs = {"alpha": 0.5, "beta": 2.0, "transB": 1, "activation": activation, **params}
    assert_same("FusedGemm", [f32(4, 6), f32(5, 6), f32(5)], attrs, domain=MS, rtol=1e-5, atol=1e-5)


def test_fused_gemm_without_c_and_transposed_a():
    assert_same("FusedGemm", [f32(6, 4), f32(6, 5)], {"transA": 1, "activation": "Relu"}, domain=MS,
                rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation, params", [
    ("Relu", []), ("Tanh", []), ("Sigmoid", []), ("LeakyRelu", [0.1]), ("HardSigmoid", [0.3, 0.4]),
    ("Clip", [-0.5, 0.5])])
def test_fused_conv(activation, params):
    attrs = {"activation": activation, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 1]}
    if params:
        attrs["activation_params"] = params
    assert_same("FusedConv", [f32(2, 4, 7, 7), f32(6, 4, 3, 3), f32(6)], attrs, domain=MS, rtol=1e-5, atol=1e-5)


def test_fused_conv_adds_z_before_the_activation():
    attrs = {"activation": "Relu", "kernel_shape": [3, 3], "group": 2}
    assert_same("FusedConv", [f32(1, 4, 6, 6), f32(4, 2, 3, 3), f32(4), f32(1, 4, 4, 4)], attrs, domain=MS,
                rtol=1e-5, atol=1e-5)


def test_an_unknown_activation_is_refused():
    from opref import ours_run
    with pytest.raises(ValueError, match="FusedGemm: activation 'Gelu' is not one of"):
        ours_run("FusedGemm", [f32(2, 3), f32(3, 2)], {"activation": "Gelu"}, domain=MS)


def test_gelu_grad():
    x = np.concatenate([f32(50) * 3, np.float32([0, -8, 8])])
    assert_same("GeluGrad", [f32(53), x], domain=MS, rtol=1e-5, atol=1e-6)
