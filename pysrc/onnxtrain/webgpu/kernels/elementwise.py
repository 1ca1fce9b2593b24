"""Elementwise ops: activations, arithmetic with broadcasting, comparisons, Where, Cast, and the gradients of
the activations.  One shader each for one, two and three inputs, with the op's expression filled in."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ..errors import NotLowered
from ..tensors import gtype
from ..registry import gpu_kernel
from .common import broadcast_shape, float_only, indexing_params

# erf: Taylor's series below 0.5 (relative error under 1e-7), Abramowitz and Stegun 7.1.26 above (absolute 1.5e-7).
ERF = """
fn erf_(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.5) {
    let t = x * x;
    return x * 1.1283791671 * (1.0 + t * (-0.33333333 + t * (0.1 + t * (-0.023809524 + t * 0.0046296296))));
  }
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592)
          * t * exp(-a * a);
  return sign(x) * y;
}
"""

# sin and cos: WGSL's builtins need only be within 2^-11 absolute on [-pi, pi] (Chromium's SwiftShader is off by
# 2e-4), so they are computed here, about 1.5 ulp: x = k pi/2 + r, |r| <= pi/4, with pi/2 in three parts
# (Cody and Waite; k * 1.5703125 is exact while |k| < 2^16), then Cephes' sinf and cosf polynomials on r and the
# quadrant k mod 4.  Beyond |x| = 8192 the reduction loses bits: the builtins take over there.
SINCOS = """
fn sincos_(x: f32) -> vec2<f32> {
  if (abs(x) > 8192.0) { return vec2<f32>(sin(x), cos(x)); }
  let k = round(x * 0.63661977236758134);
  let r = ((x - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.54978995489188216e-8;
  let z = r * r;
  let s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  let q = i32(k) & 3;
  let sc = select(vec2<f32>(s, c), vec2<f32>(c, -s), (q & 1) == 1);
  return select(sc, -sc, q >= 2);
}
fn sin_(x: f32) -> f32 { return sincos_(x).x; }
fn cos_(x: f32) -> f32 { return sincos_(x).y; }
"""

FUNCTIONS = {"erf_": ERF, "sin_": SINCOS, "cos_": SINCOS}


def _functions(expr: str) -> str:
    return "".join(dict.fromkeys(src for name, src in FUNCTIONS.items() if name + "(" in expr))


def unary(k, x, expr: str, params=(), out_dtype=None):
    """Y = expr(x) elementwise; ``params`` are read in ``expr`` as pf(1u), pf(2u) ..."""
    y = k.output(x.shape, out_dtype or x.dtype)
    if x.size:
        k.dispatch("unary", [x], [y], [x.size, *params], x.size, TX=gtype(x), TY=gtype(y), EXPR=expr,
                   FUNCTIONS=_functions(expr))
    return y


def binary(k, a, b, expr: str, out_dtype=None, params=()):
    """Y = expr(a, b) with broadcasting; ``params`` are read in ``expr`` as pf(20u), pf(21u) ..."""
    shape = broadcast_shape(a.shape, b.shape)
    y = k.output(shape, out_dtype or a.dtype)
    n = y.size
    if n:
        same = a.shape == b.shape == shape
        k.dispatch("binary", [a, b], [y], [n, 0 if same else 1, *indexing_params(shape, a.shape, b.shape),
                                           *params], n, TA=gtype(a), TB=gtype(b), TY=gtype(y), EXPR=expr,
                   FUNCTIONS=_functions(expr))
    return y


def _float(op):
    def check(x):
        float_only(op, x)
    return check


# -- activations and math of one input -------------------------------------------------------------------

UNARY = {
    "Relu": "select(max(x, 0.0), x, isnan_(x))",
    "Neg": "-x",
    "Abs": "abs(x)",
    "Exp": "exp(x)",
    "Log": "log(x)",
    "Sqrt": "sqrt(x)",
    "Reciprocal": "1.0 / x",
    "Sigmoid": "select(exp(x) / (1.0 + exp(x)), 1.0 / (1.0 + exp(-x)), x >= 0.0)",
    "Tanh": "tanh(clamp(x, -20.0, 20.0))",
    "Sign": "sign(x)",
    "Floor": "floor(x)",
    "Ceil": "ceil(x)",
    "Erf": "erf_(x)",
    "Softplus": "select(log(1.0 + exp(x)), x + log(1.0 + exp(-x)), x > 0.0)",
    "Softsign": "x / (1.0 + abs(x))",
    "Sin": "sin_(x)",
    "Cos": "cos_(x)",
}


def _make_unary(op: str, expr: str):
    def lower(k, X):
        float_only(op, X)
        return unary(k, X, expr)
    lower.__name__ = op
    gpu_kernel(op)(lower)


for _op, _expr in UNARY.items():
    _make_unary(_op, _expr)


@gpu_kernel("LeakyRelu")
def LeakyRelu(k, X, *, alpha=0.01):
    float_only("LeakyRelu", X)
    return unary(k, X, "select(x * pf(1u), x, x >= 0.0)", [float(alpha)])


@gpu_kernel("Elu")
def Elu(k, X, *, alpha=1.0):
    float_only("Elu", X)
    return unary(k, X, "select(pf(1u) * (exp(x) - 1.0), x, x > 0.0)", [float(alpha)])


@gpu_kernel("HardSigmoid")
def HardSigmoid(k, X, *, alpha=0.2, beta=0.5):
    float_only("HardSigmoid", X)
    return unary(k, X, "clamp(pf(1u) * x + pf(2u), 0.0, 1.0)", [float(alpha), float(beta)])


@gpu_kernel("HardSwish")
def HardSwish(k, X):
    float_only("HardSwish", X)
    return unary(k, X, "x * clamp(x / 6.0 + 0.5, 0.0, 1.0)")


GELU = {"none": "0.5 * x * (1.0 + erf_(x * 0.70710678118654752))",
        "tanh": "0.5 * x * (1.0 + tanh(clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -20.0, 20.0)))"}


@gpu_kernel("Gelu")
def Gelu(k, X, *, approximate="none"):
    float_only("Gelu", X)
    if approximate not in GELU:
        raise NotLowered(f"Gelu approximate={approximate!r}")
    return unary(k, X, GELU[approximate])


@gpu_kernel("Gelu", MS_DOMAIN)
def GeluMS(k, X):
    return Gelu(k, X)


@gpu_kernel("Clip")
def Clip(k, input, min=None, max=None):
    """Clip-6 (min and max attributes) and Clip-11+ (min and max inputs, known before the run)."""
    lo = min if not hasattr(min, "shape") else k.value(min, "Clip's min")
    hi = max if not hasattr(max, "shape") else k.value(max, "Clip's max")
    if input.dtype != np.float32:
        raise NotLowered(f"Clip on WebGPU takes float32, not {input.dtype.name}")
    lo = -3.4028234663852886e38 if lo is None else float(np.asarray(lo).reshape(-1)[0])
    hi = 3.4028234663852886e38 if hi is None else float(np.asarray(hi).reshape(-1)[0])
    return unary(k, input, "select(min(max(x, pf(1u)), pf(2u)), x, isnan_(x))", [lo, hi])


@gpu_kernel("Identity")
def Identity(k, input):
    return k.view(input, input.shape)


CASTS = {("f32", "i32"): "i32(trunc(x))", ("f32", "u32"): "u32(x != 0.0)", ("i32", "f32"): "f32(x)",
         ("i32", "u32"): "u32(x != 0)", ("u32", "f32"): "f32(x)", ("u32", "i32"): "i32(x)"}


@gpu_kernel("Cast")
def Cast(k, input, *, to, saturate=1):
    from ...ir import dtypes
    try:
        dtype = np.dtype(dtypes.to_numpy(to))
    except Exception:
        raise NotLowered(f"Cast to element type {to}") from None
    from ..tensors import GPU_TYPES
    if dtype not in GPU_TYPES:
        raise NotLowered(f"Cast to {dtype.name}")
    if GPU_TYPES[dtype] == gtype(input):
        out = k.view(input, input.shape)
        out.dtype = dtype
        return out
    return unary(k, input, CASTS[(gtype(input), GPU_TYPES[dtype])], out_dtype=dtype)


# -- two inputs --------------------------------------------------------------------------------------

ARITHMETIC = {"Add": "a + b", "Sub": "a - b", "Mul": "a * b", "Div": "a / b",
              "Max": "select(max(a, b), a + b, isnan_(a) || isnan_(b))",
              "Min": "select(min(a, b), a + b, isnan_(a) || isnan_(b))"}
INT_DIV = "select(a / select(b, 1, b == 0), 0, b == 0)"


def _make_binary(op: str, expr: str):
    def lower(k, A, B):
        if A.dtype != B.dtype or gtype(A) == "u32":
            raise NotLowered(f"{op} of {A.dtype.name} and {B.dtype.name}")
        e = INT_DIV if op == "Div" and gtype(A) == "i32" else expr
        return binary(k, A, B, e)
    lower.__name__ = op
    gpu_kernel(op)(lower)


for _op, _expr in ARITHMETIC.items():
    if _op in ("Max", "Min"):
        continue
    _make_binary(_op, _expr)


def _variadic(op: str):
    def lower(k, *inputs):
        if not inputs or any(t.dtype != np.float32 for t in inputs):
            raise NotLowered(f"{op} on WebGPU takes float32 inputs")
        out = inputs[0] if len(inputs) > 1 else k.view(inputs[0], inputs[0].shape)
        if len(inputs) == 1 and op == "Mean":
            return out
        for t in inputs[1:]:
            out = binary(k, out, t, ARITHMETIC.get(op, "a + b"))
        if op == "Mean":
            out = unary(k, out, "x / pf(1u)", [float(len(inputs))])
        return out
    lower.__name__ = op
    gpu_kernel(op)(lower)


for _op in ("Sum", "Max", "Min", "Mean"):
    _variadic(_op)


@gpu_kernel("Pow")
def Pow(k, X, Y):
    float_only("Pow", X, Y)
    # exact for integral exponents of negative bases, as numpy (pow() of WGSL is undefined for x < 0)
    return binary(k, X, Y, "select(pow(abs(a), b) * select(1.0, -1.0, fract(b * 0.5) != 0.0), pow(a, b), "
                           "a >= 0.0 || fract(b) != 0.0)")


COMPARE = {"Equal": "a == b", "Less": "a < b", "Greater": "a > b", "LessOrEqual": "a <= b",
           "GreaterOrEqual": "a >= b"}


def _make_compare(op: str, expr: str):
    def lower(k, A, B):
        if gtype(A) != gtype(B):
            raise NotLowered(f"{op} of {A.dtype.name} and {B.dtype.name}")
        return binary(k, A, B, f"u32({expr})", out_dtype=np.bool_)
    lower.__name__ = op
    gpu_kernel(op)(lower)


for _op, _expr in COMPARE.items():
    _make_compare(_op, _expr)


for _op, _expr in {"And": "a & b", "Or": "a | b", "Xor": "a ^ b"}.items():
    def _logic(k, A, B, _expr=_expr):
        return binary(k, A, B, _expr, out_dtype=np.bool_)
    _logic.__name__ = _op
    gpu_kernel(_op)(_logic)


@gpu_kernel("Not")
def Not(k, X):
    return unary(k, X, "1u - x", out_dtype=np.bool_)


@gpu_kernel("Where")
def Where(k, condition, X, Y):
    if X.dtype != Y.dtype:
        raise NotLowered(f"Where of {X.dtype.name} and {Y.dtype.name}")
    shape = broadcast_shape(condition.shape, X.shape, Y.shape)
    out = k.output(shape, X.dtype)
    if out.size:
        k.dispatch("where", [condition, X, Y], [out],
                   [out.size, 1, *indexing_params(shape, condition.shape, X.shape, Y.shape)], out.size, T=gtype(X))
    return out


# -- gradients of activations (com.microsoft) -----------------------------------------------------------

GRADS = {"ReluGrad": "select(0.0, a, b > 0.0)",
         "SigmoidGrad": "a * b * (1.0 - b)",            # (dY, Y)
         "TanhGrad": "a * (1.0 - b * b)"}                # (dY, Y)


def _make_grad(op: str, expr: str):
    def lower(k, dY, X):
        float_only(op, dY, X)
        return binary(k, dY, X, expr)
    lower.__name__ = op
    gpu_kernel(op, MS_DOMAIN)(lower)


for _op, _expr in GRADS.items():
    _make_grad(_op, _expr)


@gpu_kernel("Scale", MS_DOMAIN)
def Scale(k, input, scale, *, scale_down=0):
    value = float(np.asarray(k.value(scale, "Scale's scale")).reshape(-1)[0])
    if value == 0:
        raise ValueError("Scale: the scale value must not be 0")
    factor = float(np.float32(1) / np.float32(value)) if scale_down else value
    float_only("Scale", input)
    return unary(k, input, "x * pf(1u)", [factor])
