"""Kernels: RandomUniform, RandomNormal, their *Like forms, Bernoulli and Multinomial.

A ``seed`` makes a node's draws repeatable (numpy's default generator seeded with it); without one each run
draws afresh.  The values differ from onnxruntime's and onnx's reference, whose generators differ too.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from .registry import kernel

_UNSET = float("nan")   # a FLOAT attribute's "not given" (the ops' seed is a float)
_shared = None


def unseeded():
    """numpy's default generator for every draw without a seed (these ops' and Dropout's), made from fresh entropy
    with the first such draw rather than at import (nor then in the engine's memory snapshot)."""
    global _shared
    if _shared is None:
        _shared = np.random.default_rng()
    return _shared


def _rng(seed: float):
    return unseeded() if math.isnan(seed) else np.random.default_rng(int(seed))


def _float_dtype(op: str, code: int):
    dtype = dtypes.to_numpy(code)
    if dtype.kind != "f":
        raise ValueError(f"{op}: dtype {dtypes.name(code)} is not a floating-point type")
    return dtype


@kernel("RandomUniform", since=1)
def RandomUniform(*, dtype=dtypes.FLOAT, high=1.0, low=0.0, seed=_UNSET, shape):
    return _rng(seed).uniform(low, high, list(shape)).astype(_float_dtype("RandomUniform", dtype))


@kernel("RandomNormal", since=1)
def RandomNormal(*, dtype=dtypes.FLOAT, mean=0.0, scale=1.0, seed=_UNSET, shape):
    return _rng(seed).normal(mean, scale, list(shape)).astype(_float_dtype("RandomNormal", dtype))


def _like_dtype(op: str, input, dtype):
    return input.dtype if dtype is None else _float_dtype(op, dtype)


@kernel("RandomUniformLike", since=1)
def RandomUniformLike(input, *, dtype=None, high=1.0, low=0.0, seed=_UNSET):
    return _rng(seed).uniform(low, high, input.shape).astype(_like_dtype("RandomUniformLike", input, dtype))


@kernel("RandomNormalLike", since=1)
def RandomNormalLike(input, *, dtype=None, mean=0.0, scale=1.0, seed=_UNSET):
    return _rng(seed).normal(mean, scale, input.shape).astype(_like_dtype("RandomNormalLike", input, dtype))


@kernel("Bernoulli", since=15)
def Bernoulli(input, *, dtype=None, seed=_UNSET):
    out_dtype = input.dtype if dtype is None else dtypes.to_numpy(dtype)
    return (_rng(seed).random(input.shape) < input).astype(out_dtype)


@kernel("Multinomial", since=7)
def Multinomial(input, *, dtype=dtypes.INT32, sample_size=1, seed=_UNSET):
    """input: [batch, classes] unnormalised log-probabilities; output [batch, sample_size] class indices."""
    if dtype not in (dtypes.INT32, dtypes.INT64):
        raise ValueError(f"Multinomial: dtype {dtypes.name(dtype)} is not int32 or int64")
    logits = input.astype(np.float64)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    u = _rng(seed).random((input.shape[0], sample_size))
    picks = np.minimum((u[:, :, None] >= cdf[:, None, :]).sum(axis=2), input.shape[1] - 1)
    return picks.astype(dtypes.to_numpy(dtype))
