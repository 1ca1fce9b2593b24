"""The BatchNormalization ops of ORT's training graphs (com.microsoft BatchNormInternal, which
generate_artifacts puts in place of BatchNormalization, and BatchNormalizationGrad) against onnxruntime-training."""
import numpy as np
import pytest

from opref import assert_same, ort_run

MS = "com.microsoft"
SHAPES = {"NC": (4, 3), "NCL": (2, 3, 5), "NCHW": (3, 4, 6, 6)}
ATTRS = {"defaults": {}, "eps-momentum": {"epsilon": 1e-3, "momentum": 0.7}}


def bn_inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    return [x, rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32),
            rng.standard_normal(c).astype(np.float32), (rng.random(c) + 0.5).astype(np.float32)]


@pytest.mark.parametrize("attrs", ATTRS.values(), ids=ATTRS.keys())
@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_batch_norm_internal_training(shape, attrs):
    """Y, the updated running mean and variance, the batch mean and 1/sqrt(batch variance + epsilon)."""
    assert_same("BatchNormInternal", bn_inputs(shape), attrs, domain=MS, n_outputs=5)


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_batch_norm_internal_inference(shape):
    assert_same("BatchNormInternal", bn_inputs(shape), {"training_mode": 0, "epsilon": 1e-3}, domain=MS)


@pytest.mark.parametrize("attrs", ATTRS.values(), ids=ATTRS.keys())
@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_batch_normalization_grad(shape, attrs):
    """dX, dscale and dbias from the batch mean and inverse standard deviation BatchNormInternal saved."""
    x, scale, bias, mean, var = bn_inputs(shape)
    _, _, _, saved_mean, saved_inv_std = ort_run("BatchNormInternal", [x, scale, bias, mean, var], attrs, domain=MS,
                                                 n_outputs=5)
    dy = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    assert_same("BatchNormalizationGrad", [dy, x, scale, saved_mean, saved_inv_std],
                {"epsilon": attrs.get("epsilon", 1e-5)}, domain=MS, n_outputs=3)
