"""Comparisons, logic, Where, Max and Min, Gather, and Clip with bounds fed during the run (a frozen initializer
of training artifacts), each against the numpy provider bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import node_model, run_both
from test_lowerings import check, rand

RNG = np.random.default_rng(13)
SHAPES = [((4, 5), (4, 5)), ((4, 5), (5,)), ((3, 1, 5), (4, 1)), ((), (2, 3))]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0]


def specials(x):
    flat = x.reshape(-1)
    flat[:min(len(SPECIAL), flat.size)] = SPECIAL[:flat.size]
    return x


@pytest.mark.parametrize("op", ["Less", "Greater", "Equal", "LessOrEqual", "GreaterOrEqual", "Max", "Min"])
@pytest.mark.parametrize("a_shape,b_shape", SHAPES)
def test_float_binary(op, a_shape, b_shape):
    a, b = specials(rand(*a_shape)), rand(*b_shape)
    b.reshape(-1)[-6:] = SPECIAL[::-1][:b.size][-6:] if b.size >= 6 else b.reshape(-1)[-6:]
    if a.shape == b.shape:
        b.reshape(-1)[:6] = [-0.0, 0.0, np.nan, 1.0, np.nan, np.nan]   # ties of zeros, NaN on either side
    check(node_model(op, {"a": a, "b": b}, ["y"]), [a, b])


def test_variadic_max_and_min():
    feeds = {"a": rand(3, 4), "b": rand(4), "c": rand(2, 1, 1)}
    for op in ("Max", "Min"):
        check(node_model(op, feeds, ["y"]), list(feeds.values()))


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
@pytest.mark.parametrize("a_shape,b_shape", SHAPES)
def test_logical(op, a_shape, b_shape):
    a, b = RNG.random(a_shape) < 0.5, RNG.random(b_shape) < 0.5
    check(node_model(op, {"a": np.asarray(a), "b": np.asarray(b)}, ["y"]), [np.asarray(a), np.asarray(b)])


def test_not():
    x = RNG.random((7, 9)) < 0.5
    check(node_model("Not", {"x": x}, ["y"]), [x])


@pytest.mark.parametrize("shapes", [[(4, 5), (4, 5), (4, 5)], [(4, 1), (5,), (4, 5)], [(2, 1, 3), (), (4, 1)]])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_where(shapes, dtype):
    cond = np.asarray(RNG.random(shapes[0]) < 0.5)
    x, y = [(RNG.standard_normal(s) * 100).astype(dtype) for s in shapes[1:]]
    check(node_model("Where", {"c": cond, "x": x, "y": y}, ["out"]), [cond, x, y])


@pytest.mark.parametrize("data_shape,indices,axis", [((30, 8), [[3, 0, -1], [29, 3, 3]], 0), ((4, 6, 5), [5, -6, 2], 1),
                                                     ((4, 6), 2, 1), ((10,), [[1]], 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_gather(data_shape, indices, axis, dtype):
    data = (RNG.standard_normal(data_shape) * 100).astype(dtype)
    idx = np.asarray(indices, np.int64)
    check(node_model("Gather", {"data": data, "i": idx}, ["y"], axis=axis), [data, idx])


def test_gather_out_of_range_is_the_numpy_kernels_error():
    from onnxtrain.runtime import RunError
    data, idx = rand(5, 3), np.array([1, 5], np.int64)
    model = node_model("Gather", {"data": data, "i": idx}, ["y"])
    from onnxtrain.runtime import Session
    from helpers import WASM
    with pytest.raises(RunError) as want:
        Session(model).run([data, idx])
    session = Session(model, WASM)
    with pytest.raises(RunError) as got:
        session.run([data, idx])
    assert str(got.value) == str(want.value) and "index 5 is out of range" in str(got.value)
    assert session.fallbacks == []
    good = np.array([4, -5], np.int64)
    np.testing.assert_array_equal(session.run([data, good])[0], data[good])


@pytest.mark.parametrize("lo,hi", [(0.0, 6.0), (-1.0, -1.0), (np.nan, 6.0), (0.0, np.nan), (2.0, -2.0)])
def test_clip_with_fed_bounds(lo, hi):
    x = specials(rand(9, 11) * 5)
    lo, hi = np.float32(lo).reshape(()), np.float32(hi).reshape(())
    check(node_model("Clip", {"x": x, "lo": lo, "hi": hi}, ["y"]), [x, lo, hi])
