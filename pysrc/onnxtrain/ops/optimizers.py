"""Kernels: the optimizer path of a training step.  Gradient accumulation and the com.microsoft
optimizers (in place), and the ai.onnx.preview.training optimizers (functional).

The in-place ops (InPlaceAccumulatorV2, AdamWOptimizer, SGDOptimizerV2,
InplaceClipGradNorm) write into the arrays they are given, as onnxruntime does:
those arrays are the runtime's live gradient, parameter and moment buffers.
AdamW and SGD make no temporaries: every intermediate goes to a scratch buffer
that is kept between calls.  The optimizers follow onnxruntime's float32
arithmetic operation by operation so that their results match it bit for bit
where numpy's rounding allows.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from . import simd
from .registry import kernel

PREVIEW = "ai.onnx.preview.training"


def bool_flag(value: bool, like=None) -> np.ndarray:
    """A bool flag output shaped like ``like`` (the lr or step input), else [1]."""
    if like is None:
        return np.array([value])
    flag = np.empty(np.shape(like), bool)
    flag.fill(value)
    return flag


def _signal(signal) -> bool:
    """An optional bool[1] input: absent means True."""
    return signal is None or bool(np.asarray(signal).item(0))


def scalar_input(op: str, name: str, value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"{op}: input '{name}' must hold one value, got shape {arr.shape}")
    return arr.reshape(())


def _writable(op: str, name: str, index, arr) -> None:
    if not isinstance(arr, np.ndarray) or not arr.flags.writeable:
        where = name if index is None else f"{name}[{index}]"
        raise ValueError(f"{op}: {where} must be a writable numpy array (it is updated in place)")


def _shapes(seq) -> list:
    return [x.shape if isinstance(x, np.ndarray) else np.shape(x) for x in seq]


def _check_groups(op: str, **seqs) -> None:
    """The sequences are equally long (and not empty), with equal shapes index by index."""
    names = list(seqs)
    first = seqs[names[0]]
    if not isinstance(first, (list, tuple)) or not first:
        raise ValueError(f"{op}: '{names[0]}' must be a non-empty sequence of tensors")
    for name in names[1:]:
        if not isinstance(seqs[name], (list, tuple)) or len(seqs[name]) != len(first):
            raise ValueError(f"{op}: '{name}' has {len(seqs[name]) if isinstance(seqs[name], (list, tuple)) else 'no'}"
                             f" tensors but '{names[0]}' has {len(first)}")
    shapes = [_shapes(seqs[name]) for name in names]
    if any(other != shapes[0] for other in shapes[1:]):
        for i, shape in enumerate(shapes[0]):
            for name, other in zip(names[1:], shapes[1:]):
                if other[i] != shape:
                    raise ValueError(f"{op}: {name}[{i}] has shape {other[i]} but {names[0]}[{i}] has shape {shape}")


def _check_writable(op: str, **seqs) -> None:
    for name, seq in seqs.items():
        if not all(isinstance(arr, np.ndarray) and arr.flags.writeable for arr in seq):
            for i, arr in enumerate(seq):
                _writable(op, name, i, arr)


_scratch_store = threading.local()


def _scratch(like: np.ndarray, k: int = 0) -> np.ndarray:
    """Scratch array number ``k`` shaped like ``like``; its contents are garbage.  The storage is kept
    (one flat buffer per dtype and k, per thread) and grows to the largest tensor seen."""
    store = _scratch_store.__dict__
    key = (like.dtype, k)
    flat = store.get(key)
    if flat is None or flat.size < like.size:
        flat = store[key] = np.empty(like.size, like.dtype)
    return flat[:like.size].reshape(like.shape)


# ---- gradient accumulation ------------------------------------------------------------------------

def _broadcast_into(op: str, buffer, value) -> None:
    if value.shape != buffer.shape and np.broadcast_shapes(buffer.shape, value.shape) != buffer.shape:
        raise ValueError(f"{op}: value of shape {value.shape} does not fit the buffer of shape {buffer.shape}")


@kernel("InPlaceAccumulatorV2", MS_DOMAIN)
def InPlaceAccumulatorV2(accumulation_buffer, value, overwrite_flag=None):
    """In place: buffer = value if overwrite_flag else buffer + value."""
    op = "InPlaceAccumulatorV2"
    _writable(op, "accumulation_buffer", None, accumulation_buffer)
    _broadcast_into(op, accumulation_buffer, value)
    if overwrite_flag is not None and _signal(overwrite_flag):
        np.copyto(accumulation_buffer, value)
    else:
        np.add(accumulation_buffer, value, out=accumulation_buffer)
    return bool_flag(True), accumulation_buffer


@kernel("InPlaceAccumulator", MS_DOMAIN)
def InPlaceAccumulator(old_sum, value, update_signal=None):
    """old_sum + value, or old_sum when update_signal is false (onnxruntime does not write into
    a fed buffer here, so neither does this kernel)."""
    if not _signal(update_signal):
        return old_sum
    _broadcast_into("InPlaceAccumulator", old_sum, value)
    return old_sum + value


@kernel("ZeroGradient", MS_DOMAIN)
def ZeroGradient(old_gradient, reset_signal):
    return np.zeros_like(old_gradient)


# ---- optimizers -----------------------------------------------------------------------------------

def _adamw_checks(op, weights, gradients, momentums_1, momentums_2, correct_bias, adam_mode) -> None:
    _check_groups(op, weights=weights, gradients=gradients, momentums_1=momentums_1, momentums_2=momentums_2)
    if adam_mode not in (0, 1):
        raise ValueError(f"{op}: adam_mode must be 0 or 1, got {adam_mode}")
    if adam_mode == 0 and correct_bias != 1:
        raise ValueError(f"{op}: correct_bias must be 1 when adam_mode is 0 (onnxruntime rejects it too)")


def _moments(g, m, v, a, one_a, b, one_b, s) -> None:
    """m = m*a + (1-a)*g;  v = v*b + ((1-b)*g)*g, in place (``s`` is scratch)."""
    np.multiply(m, a, out=m)
    np.multiply(g, one_a, out=s)
    m += s
    np.multiply(v, b, out=v)
    np.multiply(g, one_b, out=s)
    s *= g
    v += s


def _adamw_mode0(w, g, m, v, lr, a, b, eps, wd, ac, bc, one_a, one_b) -> None:
    """torch.optim.AdamW: decay first, then the bias-corrected update."""
    s, t = _scratch(w, 0), _scratch(w, 1)
    np.multiply(w, lr, out=s)
    s *= wd
    w -= s
    _moments(g, m, v, a, one_a, b, one_b, s)
    np.divide(v, bc, out=s)              # denom = sqrt(v / bc) + eps, times ac
    np.sqrt(s, out=s)
    s += eps
    s *= ac
    np.multiply(m, lr, out=t)
    t /= s
    w -= t


def _adamw_mode1(w, g, m, v, lr_wd, lr_c, a, b, eps, one_a, one_b) -> None:
    """Hugging Face's AdamW: the update with the corrected lr, then decay with the un-corrected lr."""
    s, t = _scratch(w, 0), _scratch(w, 1)
    _moments(g, m, v, a, one_a, b, one_b, s)
    np.sqrt(v, out=s)
    s += eps
    np.multiply(m, lr_c, out=t)
    t /= s
    w -= t
    np.multiply(w, lr_wd, out=s)         # onnxruntime applies it also when wd is 0
    w -= s


@functools.lru_cache(maxsize=16)
def _adamw_constants(alpha: float, beta: float, epsilon: float, weight_decay: float) -> tuple:
    """alpha, beta, epsilon, weight_decay, 1, 1 - alpha and 1 - beta as float32 (a node's attributes: made once)."""
    f32 = np.float32
    a, b, one = f32(alpha), f32(beta), f32(1)
    return a, b, f32(epsilon), f32(weight_decay), one, one - a, one - b


@kernel("AdamWOptimizer", MS_DOMAIN)
def AdamWOptimizer(lr, step, weights, gradients, momentums_1, momentums_2, update_signal=None, *,
                   alpha=0.9, beta=0.999, epsilon=1e-8, weight_decay=1e-2, correct_bias=1, adam_mode=0):
    op = "AdamWOptimizer"
    _adamw_checks(op, weights, gradients, momentums_1, momentums_2, correct_bias, adam_mode)
    if not _signal(update_signal):
        return bool_flag(False, step), weights, momentums_1, momentums_2
    _check_writable(op, weights=weights, momentums_1=momentums_1, momentums_2=momentums_2)

    f32 = np.float32
    lr = f32(scalar_input(op, "lr", lr))
    t = int(scalar_input(op, "step", step))
    a, b, eps, wd, one, one_a, one_b = _adamw_constants(alpha, beta, epsilon, weight_decay)
    ac = bc = one
    lr_c = lr
    if correct_bias == 1:
        # std::pow(float, int64) runs in double; the result is cast to float.
        ac = one - f32(float(a) ** t)
        bc = one - f32(float(b) ** t)
        lr_c = lr * (np.sqrt(bc) / ac)
    scalars = [lr, a, b, one_a, one_b, eps, wd, ac, bc, lr_c, lr * wd]
    if simd.adamw(weights, gradients, momentums_1, momentums_2, adam_mode, scalars):
        return bool_flag(True, step), weights, momentums_1, momentums_2
    # 0-d arrays: numpy's ufuncs take them faster than numpy scalars, with the same result types.
    lr, a, b, one_a, one_b, eps, wd, ac, bc, lr_c, lr_wd = (np.array(x) for x in scalars)
    for w, g, m, v in zip(weights, gradients, momentums_1, momentums_2):
        if adam_mode == 0:
            _adamw_mode0(w, g, m, v, lr, a, b, eps, wd, ac, bc, one_a, one_b)
        else:
            _adamw_mode1(w, g, m, v, lr_wd, lr_c, a, b, eps, one_a, one_b)
    return bool_flag(True, step), weights, momentums_1, momentums_2


@kernel("SGDOptimizerV2", MS_DOMAIN)
def SGDOptimizerV2(lr, weights, gradients, update_signal=None):
    op = "SGDOptimizerV2"
    _check_groups(op, weights=weights, gradients=gradients)
    if not _signal(update_signal):
        return bool_flag(False, lr), weights
    _check_writable(op, weights=weights)
    neg_lr = -np.float32(scalar_input(op, "lr", lr))
    if simd.sgd(weights, gradients, neg_lr):
        return bool_flag(True, lr), weights
    neg_lr = np.array(neg_lr)
    for w, g in zip(weights, gradients):
        s = _scratch(w)
        np.multiply(g, neg_lr, out=s)
        w += s
    return bool_flag(True, lr), weights


@kernel("InplaceClipGradNorm", MS_DOMAIN)
def InplaceClipGradNorm(gradients, *, max_norm=1.0, norm_type="fro"):
    """Scales all gradients in place by min(max_norm / (total L2 norm + 1e-6), 1)."""
    op = "InplaceClipGradNorm"
    if norm_type != "fro":
        raise ValueError(f"{op}: norm_type must be 'fro' (the only norm onnxruntime supports), got {norm_type!r}")
    _check_groups(op, gradients=gradients)
    _check_writable(op, gradients=gradients)
    total = np.float32(0)
    for g in gradients:
        flat = g.reshape(-1)
        total += np.dot(flat, flat)
    total = np.sqrt(total)
    coef = min(np.float32(max_norm) / (total + np.float32(1e-6)), np.float32(1))
    for g in gradients:
        g *= coef
    return gradients


# ---- ai.onnx.preview.training (functional: new values are returned, inputs are left alone) -------

def _split_groups(op: str, inputs, n_groups: int) -> list:
    if not inputs or len(inputs) % n_groups:
        raise ValueError(f"{op}: expected {n_groups} equally long groups of tensors after R and T, "
                         f"got {len(inputs)} tensors")
    n = len(inputs) // n_groups
    return [inputs[k * n:(k + 1) * n] for k in range(n_groups)]


@kernel("Adagrad", PREVIEW)
def Adagrad(R, T, *inputs, decay_factor=0.0, epsilon=1e-6, norm_coefficient=0.0):
    """inputs: X..., G..., H...; outputs: X_new..., H_new..."""
    op = "Adagrad"
    xs, gs, hs = _split_groups(op, inputs, 3)
    r = float(scalar_input(op, "R", R)) / (1 + int(scalar_input(op, "T", T)) * decay_factor)
    x_out, h_out = [], []
    for x, g, h in zip(xs, gs, hs):
        dt = x.dtype.type
        g = dt(norm_coefficient) * x + g
        h_new = h + g * g
        x_out.append(x - dt(r) * g / (np.sqrt(h_new) + dt(epsilon)))
        h_out.append(h_new)
    return tuple(x_out + h_out)


@kernel("Adam", PREVIEW)
def Adam(R, T, *inputs, alpha=0.9, beta=0.999, epsilon=1e-6, norm_coefficient=0.0, norm_coefficient_post=0.0):
    """inputs: X..., G..., V..., H...; outputs: X_new..., V_new..., H_new..."""
    xs, gs, vs, hs = _split_groups("Adam", inputs, 4)
    t = int(scalar_input("Adam", "T", T))
    r = float(scalar_input("Adam", "R", R))
    if t > 0:
        r = r * np.sqrt(1 - beta ** t) / (1 - alpha ** t)
    x_out, v_out, h_out = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        dt = x.dtype.type
        g = dt(norm_coefficient) * x + g
        v_new = dt(alpha) * v + dt(1 - alpha) * g
        h_new = dt(beta) * h + dt(1 - beta) * (g * g)
        x_new = x - dt(r) * (v_new / (np.sqrt(h_new) + dt(epsilon)))
        x_out.append(dt(1 - norm_coefficient_post) * x_new)
        v_out.append(v_new)
        h_out.append(h_new)
    return tuple(x_out + v_out + h_out)


@kernel("Momentum", PREVIEW)
def Momentum(R, T, *inputs, alpha=None, beta=None, mode=None, norm_coefficient=None):
    """inputs: X..., G..., V...; outputs: X_new..., V_new...; mode "standard" or "nesterov"."""
    op = "Momentum"
    for name, value in (("alpha", alpha), ("beta", beta), ("mode", mode), ("norm_coefficient", norm_coefficient)):
        if value is None:
            raise ValueError(f"{op}: attribute '{name}' is required")
    if mode not in ("standard", "nesterov"):
        raise ValueError(f"{op}: mode must be 'standard' or 'nesterov', got {mode!r}")
    xs, gs, vs = _split_groups(op, inputs, 3)
    t = int(scalar_input(op, "T", T))
    r = float(scalar_input(op, "R", R))
    beta_t = beta if t > 0 else 1.0
    x_out, v_out = [], []
    for x, g, v in zip(xs, gs, vs):
        dt = x.dtype.type
        g = dt(norm_coefficient) * x + g
        v_new = dt(alpha) * v + dt(beta_t) * g
        step = v_new if mode == "standard" else g + dt(alpha) * v_new
        x_out.append(x - dt(r) * step)
        v_out.append(v_new)
    return tuple(x_out + v_out)
