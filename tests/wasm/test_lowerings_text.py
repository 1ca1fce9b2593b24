"""The lowerings MiniLM's LoRA step adds: Exp (GELU's gradient) is the executor's exp (mathlib.c, through double and
rounded once), so it is tested bit for bit against the native build's exp_f32 and within 2 ulp of numpy's SIMD
exp (test_executor_c.py measures both); a ReduceSum with no axes and noop_with_empty_axes (the gradient of an
operand that was not broadcast) is its input as is."""
from __future__ import annotations

import numpy as np

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
