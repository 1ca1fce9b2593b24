"""Elementwise WGSL kernels against the CPU kernels (themselves checked against onnxruntime)."""
import numpy as np
import pytest

from gpu_cases import check_node
from onnxtrain.webgpu.kernels.elementwise import UNARY

IN_PYODIDE = True
rng = np.random.default_rng(0)


def floats(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    x = floats(3, 70, scale=2.0)
    if op in ("Log", "Sqrt"):
        x = np.abs(x) + 0.1
    if op == "Reciprocal":
        x = np.where(np.abs(x) < 0.1, 0.5, x).astype(np.float32)
    check_node(op, {"X": x}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((2, 3, 4), (4,)), ((3, 1, 5), (1, 4, 1)), ((), (6,))])
def test_binary_broadcast(op, shapes):
    a, b = floats(*shapes[0]), floats(*shapes[1])
    if op == "Div":
        b = np.where(np.abs(b) < 0.1, 1.0, b).astype(np.float32)
    check_node(op, {"A": a, "B": b})


def test_int_arithmetic_and_compare():
    a = rng.integers(-50, 50, (3, 4)).astype(np.int64)
    b = rng.integers(1, 9, (4,)).astype(np.int64)
    for op in ("Add", "Sub", "Mul"):
        check_node(op, {"A": a, "B": b})
    for op in ("Equal", "Less", "Greater"):
        check_node(op, {"A": a, "B": b})


def test_large_grid():
    x = floats(70001, 3)
    check_node("Relu", {"X": x})


def test_activations_with_attributes():
    x = floats(5, 7, scale=3.0)
    check_node("LeakyRelu", {"X": x}, alpha=0.2)
    check_node("Elu", {"X": x}, alpha=0.7)
    check_node("HardSigmoid", {"X": x}, alpha=0.3, beta=0.4)
    check_node("Gelu", {"X": x}, opset=20, rtol=1e-5, atol=2e-6)
    check_node("Gelu", {"X": x}, opset=20, approximate="tanh", rtol=1e-5, atol=2e-6)
    check_node("Clip", {"X": x}, initializers={"lo": np.float32(-1), "hi": np.float32(0.5)},
               _input_order=["X", "lo", "hi"])


def test_grads():
    dy, x = floats(4, 9), floats(4, 9)
    y = 1 / (1 + np.exp(-x))
    check_node("ReluGrad", {"dY": dy, "X": x}, domain="com.microsoft")
    check_node("SigmoidGrad", {"dY": dy, "Y": y.astype(np.float32)}, domain="com.microsoft")
    check_node("TanhGrad", {"dY": dy, "Y": np.tanh(x)}, domain="com.microsoft")


def test_where_and_sum():
    c = rng.random((3, 4)) > 0.5
    check_node("Where", {"C": c, "A": floats(3, 4), "B": floats(4)})
    check_node("Sum", {"A": floats(3, 4), "B": floats(4), "C": floats(3, 1)})


def test_logic_and_casts():
    a, b = rng.random((3, 4)) > 0.5, rng.random(4) > 0.5
    for op in ("And", "Or", "Xor"):
        check_node(op, {"A": a, "B": b})
    check_node("Not", {"X": a})
    x = floats(3, 4, scale=3.0)
    check_node("Cast", {"X": x}, to=7)          # float -> int64 truncates
    check_node("Cast", {"X": x}, to=9)          # float -> bool
    check_node("Cast", {"X": a}, to=1)
    check_node("Identity", {"X": x})


def test_variadic_min_max_pow_and_more_comparisons():
    a, b, c = floats(3, 4), floats(4), floats(3, 1)
    check_node("Max", {"A": a, "B": b, "C": c})
    check_node("Min", {"A": a, "B": b})
    check_node("Mean", {"A": a, "B": b})
    base = np.abs(a) + 0.5
    check_node("Pow", {"A": base, "B": floats(4)}, rtol=2e-5)
    check_node("Pow", {"A": a, "B": np.array([2.0, 3.0, -1.0, 0.0], np.float32)}, rtol=2e-5)
    for op in ("GreaterOrEqual", "LessOrEqual"):
        check_node(op, {"A": a, "B": b})
    check_node("HardSwish", {"X": floats(5, 7, scale=4.0)}, opset=14)


def test_nan_passes_through_as_in_numpy():
    x = floats(4, 8)
    x[0, :3] = np.nan
    check_node("Relu", {"X": x})
    check_node("Clip", {"X": x}, initializers={"lo": np.float32(-1), "hi": np.float32(0.5)},
               _input_order=["X", "lo", "hi"])
    check_node("Max", {"A": x, "B": floats(8)})
    check_node("Min", {"A": floats(8), "B": x})
