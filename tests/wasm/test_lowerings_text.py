"""The lowerings MiniLM's LoRA step adds, with Pow (a decomposed LayerNormalization's square, as torch exports it),
Tanh and GELU (Gelu, com.microsoft's Gelu, BiasGelu and GeluGrad: numpy's double arithmetic, its bits):
Exp (GELU's gradient) is the executor's exp (mathlib.c, through double and rounded once), so it is tested bit for
bit against the native build's exp_f32 and within 2 ulp of numpy's SIMD exp (test_executor_c.py measures both);
Pow by an integer is the correctly rounded power (double-double, rounded once), tested against exact rationals and
within 1 ulp of numpy's float32 power (its SIMD or libm powf, which is not correctly rounded: x ** 2 differs from
x * x in about one value in ten); a ReduceSum with no axes and noop_with_empty_axes (the gradient of an operand
that was not broadcast) is its input as is."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import WASM, node_model, run_both
from onnxtrain.runtime import Session
from test_executor_c import _map, _ulps
from test_lowerings import check, rand


def test_exp_is_the_executors_and_within_2_ulp_of_numpys():
    x = np.concatenate([rand(300, 100).reshape(-1) * 30, [0.0, -0.0, np.inf, -np.inf, np.nan, 88.73, -103.9, -110.0]])
    x = x.astype(np.float32)
    model = node_model("Exp", {"x": x}, ["y"])
    with np.errstate(over="ignore"):
        want = Session(model).run([x])[0]
    session = Session(model, WASM)
    got = session.run([x])[0]
    assert session.fallbacks == []
    np.testing.assert_array_equal(got.view(np.uint32), _map("exp_f32", x).view(np.uint32))
    finite = np.isfinite(want)
    assert _ulps(got[finite], want[finite]).max() <= 2
    np.testing.assert_array_equal(got[~finite], want[~finite])


def test_reduce_sum_with_no_axes_and_noop_is_a_view():
    x = rand(4, 6)
    model = node_model("ReduceSum", {"x": x}, ["y"], initializers={"axes": np.zeros(0, np.int64)},
                       noop_with_empty_axes=1)
    session = check(model, [x])
    assert session.last_program.dispatch_count == 0


def test_reduce_mean_with_no_axes_and_noop_is_a_view():
    x = rand(4, 6)
    model = node_model("ReduceMean", {"x": x}, ["y"], opset=18, initializers={"axes": np.zeros(0, np.int64)},
                       noop_with_empty_axes=1)
    want, got, session, _ = run_both(model, [x])
    assert session.fallbacks == [] and session.last_program.dispatch_count == 0
    np.testing.assert_array_equal(got[0], want[0])


def _pow_reference(x: np.ndarray, n: int) -> np.ndarray:
    """x^n correctly rounded to float32: exact in Python's integers and fractions, rounded once."""
    from fractions import Fraction
    out = []
    for v in x.tolist():
        if v != v or v in (0.0, float("inf"), float("-inf")) or n == 0:
            with np.errstate(all="ignore"):
                out.append(np.power(np.float64(v), n))
            continue
        out.append(float(Fraction(v) ** n))          # the nearest double, then the float32 below
    with np.errstate(over="ignore"):
        return np.array(out, np.float64).astype(np.float32)


@pytest.mark.parametrize("n", [2, 3, -1, -2, 0, 1, 5])
def test_pow_is_correctly_rounded_and_within_an_ulp_of_numpys(n):
    x = np.concatenate([rand(2000).reshape(-1) * 10, rand(500).reshape(-1) * 1e-15, rand(500).reshape(-1) * 1e12,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]]).astype(np.float32)
    model = node_model("Pow", {"x": x}, ["y"], initializers={"n": np.array(n, np.float32)})
    with np.errstate(all="ignore"):
        want = Session(model).run([x])[0]
        session = Session(model, WASM)
        got = session.run([x])[0]
    assert session.fallbacks == []
    exact = _pow_reference(x, n)
    both = np.isfinite(exact) | np.isnan(exact)
    np.testing.assert_array_equal(got[both], exact[both])
    finite = np.isfinite(want) & np.isfinite(got)
    assert _ulps(got[finite], want[finite]).max() <= 1
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])


def test_pow_by_a_fraction_runs_on_the_host():
    x = np.abs(rand(5, 4))
    model = node_model("Pow", {"x": x}, ["y"], initializers={"n": np.array(0.5, np.float32)})
    want, got, session, _ = run_both(model, [x])
    assert len(session.fallbacks) == 1 and "not an integer" in session.fallbacks[0]


def test_tanh_is_the_executors_correctly_rounded_and_within_2_ulp_of_numpys():
    import math
    x = np.concatenate([rand(20000).reshape(-1) * 4, rand(3000).reshape(-1) * 0.06, rand(1000).reshape(-1) * 1e-6,
                        rand(1000).reshape(-1) * 30, [0.0, -0.0, np.inf, -np.inf, np.nan, 0.0625, -0.0625, 10.0]])
    x = x.astype(np.float32)
    model = node_model("Tanh", {"x": x}, ["y"])
    want = Session(model).run([x])[0]
    session = Session(model, WASM)
    got = session.run([x])[0]
    assert session.fallbacks == []
    np.testing.assert_array_equal(got.view(np.uint32), _map("tanh_f32", x).view(np.uint32))
    exact = np.array([math.tanh(v) if v == v else v for v in x.tolist()]).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), exact.view(np.uint32))
    assert _ulps(got, want).max() <= 2


def test_tanh_grad():
    dy, y = rand(13, 17), np.tanh(rand(13, 17))
    check(node_model("TanhGrad", {"dy": dy, "y": y}, ["dx"], domain="com.microsoft"), [dy, y])


@pytest.mark.parametrize("op,domain", [("Gelu", ""), ("Gelu", "com.microsoft")])
def test_gelu_is_numpys_bits(op, domain):
    """In double and rounded once, as the numpy kernel: its bits except within ~1e-15 of a float32 midpoint (none
    among these), the negative tail included (1 + erf(x / sqrt 2) is erfc there: erf.c's erf_f64 continues it)."""
    x = np.concatenate([rand(50000).reshape(-1) * 4, rand(5000).reshape(-1) * 30, np.linspace(-9, -5, 40000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -40.0]]).astype(np.float32)
    check(node_model(op, {"x": x}, ["y"], domain=domain, opset=20 if not domain else 17), [x])


def test_bias_gelu_and_gelu_grad_are_numpys_bits():
    a, b = rand(64, 300) * 3, rand(300)
    check(node_model("BiasGelu", {"a": a, "b": b}, ["y"], domain="com.microsoft"), [a, b])
    dy, x = rand(200, 300), rand(200, 300) * 4
    x.reshape(-1)[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, -40.0]
    x.reshape(-1)[6:20006] = np.linspace(-9, -5, 20000)
    check(node_model("GeluGrad", {"dy": dy, "x": x}, ["dx"], domain="com.microsoft"), [dy, x])


def test_the_tanh_gelu_runs_on_the_host():
    x = rand(4, 5)
    want, got, session, _ = run_both(node_model("Gelu", {"x": x}, ["y"], opset=20, approximate="tanh"), [x])
    assert len(session.fallbacks) == 1 and "erf GELU" in session.fallbacks[0]
