"""Kernels: RandomUniform, RandomNormal, their *Like forms, Bernoulli and Multinomial.

A node with a ``seed`` draws from a generator of its own (numpy's default generator seeded with it), which the
plan makes once (``node_generator``) and every run advances, as onnxruntime does: two runs of one session draw
differently, and a new session repeats the first session's draws.  Without a seed each run draws afresh.  The
values differ from onnxruntime's and onnx's reference, whose generators differ too.
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


def node_generator(seed):
    """The generator a node with attribute ``seed`` (None or NaN: not given) draws from, made once per plan."""
    return None if seed is None or math.isnan(seed) else np.random.default_rng(int(seed))


def draws(seed, generator):
    """What a kernel draws from: its node's generator, else (called without a plan) one made from ``seed``, else
    the shared unseeded one."""
    if generator is None:
        generator = node_generator(seed)
    return unseeded() if generator is None else generator


def _float_dtype(op: str, code: int):
    dtype = dtypes.to_numpy(code)
    if dtype.kind != "f":
        raise ValueError(f"{op}: dtype {dtypes.name(code)} is not a floating-point type")
    return dtype


@kernel("RandomUniform", since=1)
def RandomUniform(*, dtype=dtypes.FLOAT, high=1.0, low=0.0, seed=_UNSET, shape, _generator=None):
    return draws(seed, _generator).uniform(low, high, list(shape)).astype(_float_dtype("RandomUniform", dtype))


@kernel("RandomNormal", since=1)
def RandomNormal(*, dtype=dtypes.FLOAT, mean=0.0, scale=1.0, seed=_UNSET, shape, _generator=None):
    return draws(seed, _generator).normal(mean, scale, list(shape)).astype(_float_dtype("RandomNormal", dtype))


def _like_dtype(op: str, input, dtype):
    return input.dtype if dtype is None else _float_dtype(op, dtype)


@kernel("RandomUniformLike", since=1)
def RandomUniformLike(input, *, dtype=None, high=1.0, low=0.0, seed=_UNSET, _generator=None):
    values = draws(seed, _generator).uniform(low, high, input.shape)
    return values.astype(_like_dtype("RandomUniformLike", input, dtype))


@kernel("RandomNormalLike", since=1)
def RandomNormalLike(input, *, dtype=None, mean=0.0, scale=1.0, seed=_UNSET, _generator=None):
    values = draws(seed, _generator).normal(mean, scale, input.shape)
    return values.astype(_like_dtype("RandomNormalLike", input, dtype))


@kernel("Bernoulli", since=15)
def Bernoulli(input, *, dtype=None, seed=_UNSET, _generator=None):
    out_dtype = input.dtype if dtype is None else dtypes.to_numpy(dtype)
    return (draws(seed, _generator).random(input.shape) < input).astype(out_dtype)


@kernel("Multinomial", since=7)
def Multinomial(input, *, dtype=dtypes.INT32, sample_size=1, seed=_UNSET, _generator=None):
    """input: [batch, classes] unnormalised log-probabilities; output [batch, sample_size] class indices."""
    if dtype not in (dtypes.INT32, dtypes.INT64):
        raise ValueError(f"Multinomial: dtype {dtypes.name(dtype)} is not int32 or int64")
    logits = input.astype(np.float64)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    u = draws(seed, _generator).random((input.shape[0], sample_size))
    picks = np.minimum((u[:, :, None] >= cdf[:, None, :]).sum(axis=2), input.shape[1] - 1)
    return picks.astype(dtypes.to_numpy(dtype))
