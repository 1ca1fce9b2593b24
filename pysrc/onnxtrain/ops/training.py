"""Kernels: com.microsoft training ops (gradient accumulation, optimizers, activation and
tensor gradients) and the ai.onnx.preview.training optimizers.

The in-place ops (InPlaceAccumulatorV2, AdamWOptimizer, SGDOptimizerV2,
InplaceClipGradNorm) write into the arrays they are given, as onnxruntime does:
those arrays are the runtime's live gradient, parameter and moment buffers.
The optimizers follow onnxruntime's float32 arithmetic operation by operation
so that their results match it bit for bit where numpy's rounding allows.
"""
from __future__ import annotations

import numpy as np

from .reduce import reduce_with
from .registry import kernel

MS = "com.microsoft"
PREVIEW = "ai.onnx.preview.training"


def _flag(value: bool, like=None) -> np.ndarray:
    """A bool flag output shaped like ``like`` (the lr or step input), else [1]."""
    shape = (1,) if like is None else np.shape(like)
    return np.full(shape, value, dtype=bool)


def _signal(signal) -> bool:
    """An optional bool[1] input: absent means True."""
    return signal is None or bool(np.asarray(signal).reshape(-1)[0])


def _scalar(op: str, name: str, value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"{op}: input '{name}' must hold one value, got shape {arr.shape}")
    return arr.reshape(())


def _writable(op: str, name: str, index, arr) -> None:
    if not isinstance(arr, np.ndarray) or not arr.flags.writeable:
        where = name if index is None else f"{name}[{index}]"
        raise ValueError(f"{op}: {where} must be a writable numpy array (it is updated in place)")


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
    for i in range(len(first)):
        for name in names[1:]:
            if np.shape(seqs[name][i]) != np.shape(first[i]):
                raise ValueError(f"{op}: {name}[{i}] has shape {np.shape(seqs[name][i])} but "
                                 f"{names[0]}[{i}] has shape {np.shape(first[i])}")


# ---- gradient accumulation ------------------------------------------------------------------------

def _broadcast_into(op: str, buffer, value) -> None:
    if np.broadcast_shapes(buffer.shape, value.shape) != buffer.shape:
        raise ValueError(f"{op}: value of shape {value.shape} does not fit the buffer of shape {buffer.shape}")


@kernel("InPlaceAccumulatorV2", MS)
def InPlaceAccumulatorV2(accumulation_buffer, value, overwrite_flag=None):
    """In place: buffer = value if overwrite_flag else buffer + value."""
    op = "InPlaceAccumulatorV2"
    _writable(op, "accumulation_buffer", None, accumulation_buffer)
    _broadcast_into(op, accumulation_buffer, value)
    if overwrite_flag is not None and _signal(overwrite_flag):
        accumulation_buffer[...] = value
    else:
        np.add(accumulation_buffer, value, out=accumulation_buffer)
    return _flag(True), accumulation_buffer


@kernel("InPlaceAccumulator", MS)
def InPlaceAccumulator(old_sum, value, update_signal=None):
    """old_sum + value, or old_sum when update_signal is false (onnxruntime does not write into
    a fed buffer here, so neither does this kernel)."""
    if not _signal(update_signal):
        return old_sum
    _broadcast_into("InPlaceAccumulator", old_sum, value)
    return old_sum + value


@kernel("ZeroGradient", MS)
def ZeroGradient(old_gradient, reset_signal):
    return np.zeros_like(old_gradient)


# ---- optimizers -----------------------------------------------------------------------------------

@kernel("AdamWOptimizer", MS)
def AdamWOptimizer(lr, step, weights, gradients, momentums_1, momentums_2, update_signal=None, *,
                   alpha=0.9, beta=0.999, epsilon=1e-8, weight_decay=1e-2, correct_bias=1, adam_mode=0):
    op = "AdamWOptimizer"
    _check_groups(op, weights=weights, gradients=gradients, momentums_1=momentums_1, momentums_2=momentums_2)
    if adam_mode not in (0, 1):
        raise ValueError(f"{op}: adam_mode must be 0 or 1, got {adam_mode}")
    if adam_mode == 0 and correct_bias != 1:
        raise ValueError(f"{op}: correct_bias must be 1 when adam_mode is 0 (onnxruntime rejects it too)")
    if not _signal(update_signal):
        return _flag(False, step), weights, momentums_1, momentums_2
    for name, seq in (("weights", weights), ("momentums_1", momentums_1), ("momentums_2", momentums_2)):
        for i, arr in enumerate(seq):
            _writable(op, name, i, arr)

    f32 = np.float32
    lr = f32(_scalar(op, "lr", lr))
    t = int(_scalar(op, "step", step))
    a, b, eps, wd = f32(alpha), f32(beta), f32(epsilon), f32(weight_decay)
    one = f32(1)
    ac = bc = one
    lr_c = lr
    if correct_bias == 1:
        # std::pow(float, int64) runs in double; the result is cast to float.
        ac = one - f32(float(a) ** t)
        bc = one - f32(float(b) ** t)
        lr_c = lr * (np.sqrt(bc) / ac)
    one_a, one_b = one - a, one - b

    for w, g, m, v in zip(weights, gradients, momentums_1, momentums_2):
        if adam_mode == 0:
            w -= (w * lr) * wd                    # decay first, as torch.optim.AdamW
        np.multiply(m, a, out=m)
        m += one_a * g
        np.multiply(v, b, out=v)
        v += (one_b * g) * g
        if adam_mode == 0:
            denom = np.sqrt(v / bc)
            denom += eps
            denom *= ac
            w -= (lr * m) / denom
        else:
            denom = np.sqrt(v)
            denom += eps
            w -= (lr_c * m) / denom
            w -= (lr * wd) * w                    # decay after the update, un-corrected lr
    return _flag(True, step), weights, momentums_1, momentums_2


@kernel("SGDOptimizerV2", MS)
def SGDOptimizerV2(lr, weights, gradients, update_signal=None):
    op = "SGDOptimizerV2"
    _check_groups(op, weights=weights, gradients=gradients)
    if not _signal(update_signal):
        return _flag(False, lr), weights
    neg_lr = -np.float32(_scalar(op, "lr", lr))
    for i, (w, g) in enumerate(zip(weights, gradients)):
        _writable(op, "weights", i, w)
        w += neg_lr * g
    return _flag(True, lr), weights


@kernel("InplaceClipGradNorm", MS)
def InplaceClipGradNorm(gradients, *, max_norm=1.0, norm_type="fro"):
    """Scales all gradients in place by min(max_norm / (total L2 norm + 1e-6), 1)."""
    op = "InplaceClipGradNorm"
    if norm_type != "fro":
        raise ValueError(f"{op}: norm_type must be 'fro' (the only norm onnxruntime supports), got {norm_type!r}")
    _check_groups(op, gradients=gradients)
    total = np.float32(0)
    for i, g in enumerate(gradients):
        _writable(op, "gradients", i, g)
        flat = g.reshape(-1)
        total += np.dot(flat, flat)
    total = np.sqrt(total)
    coef = min(np.float32(max_norm) / (total + np.float32(1e-6)), np.float32(1))
    for g in gradients:
        g *= coef
    return gradients


# ---- activation gradients (Y is the forward output, X the forward input) -------------------------

@kernel("ReluGrad", MS)
def ReluGrad(dY, X):
    return np.where(X > 0, dY, dY.dtype.type(0))


@kernel("SigmoidGrad", MS)
def SigmoidGrad(dY, Y):
    return dY * Y * (Y.dtype.type(1) - Y)


@kernel("TanhGrad", MS)
def TanhGrad(dY, Y):
    return dY * (Y.dtype.type(1) - Y * Y)


@kernel("LeakyReluGrad", MS)
def LeakyReluGrad(dY, Y, *, alpha=0.01):
    return dY * np.where(Y > 0, Y.dtype.type(1), Y.dtype.type(alpha))


# MLAS's logistic (onnxruntime's float sigmoid): a rational approximation on [-18, 18],
# evaluated with fused multiply-adds by its x86-64 FMA3 kernel.
_LOGISTIC_P = np.array([4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
                        8.51377133304701e-03, 2.48287947061529e-01], np.float32)
_LOGISTIC_Q = np.array([6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
                        1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01], np.float32)


def _fma32(a: np.ndarray, b, c) -> np.ndarray:
    """float32 a*b + c with one rounding (the float32 product is exact in float64)."""
    return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)


def _mlas_logistic(x: np.ndarray) -> np.ndarray:
    v = np.clip(x, np.float32(-18), np.float32(18))
    v2 = v * v
    p = _fma32(v2, _LOGISTIC_P[0], _LOGISTIC_P[1])
    for c in _LOGISTIC_P[2:]:
        p = _fma32(p, v2, c)
    q = _fma32(v2, _LOGISTIC_Q[0], _LOGISTIC_Q[1])
    for c in _LOGISTIC_Q[2:]:
        q = _fma32(q, v2, c)
    return np.clip(p * v / q + np.float32(0.5), np.float32(0), np.float32(1))


@kernel("QuickGeluGrad", MS)
def QuickGeluGrad(dY, X, *, alpha=1.702):
    """QuickGelu(x) = x * sigmoid(alpha * x); float32 uses onnxruntime's sigmoid approximation."""
    one = X.dtype.type(1)
    ax = X * X.dtype.type(alpha)
    if X.dtype == np.float32:
        sig = _mlas_logistic(ax)
    else:
        with np.errstate(over="ignore"):
            sig = one / (one + np.exp(-ax))
    return dY * sig * (one + ax * (one - sig))


# ---- math and tensor gradients --------------------------------------------------------------------

@kernel("Scale", MS)
def Scale(input, scale, *, scale_down=0):
    """input * scale, or input * (1/scale) when scale_down; the scale is read as a float first."""
    value = np.float32(_scalar("Scale", "scale", scale))
    if value == 0:
        raise ValueError("Scale: the scale value must not be 0")
    factor = np.float32(1) / value if scale_down else value
    return input * input.dtype.type(factor)


def _axes(op: str, axes, rank: int) -> list:
    out = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"{op}: axis {a} is out of range for rank {rank}")
        out.append(a % rank)
    return out


@kernel("ReduceSumTraining", MS)
def ReduceSumTraining(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ReduceSum (opset 13) with the axes as an input."""
    return reduce_with("ReduceSumTraining", np.sum, data, axes, keepdims, noop_with_empty_axes)


def _shape(op: str, shape) -> tuple:
    shape = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in shape):
        raise ValueError(f"{op}: shape {shape} has a negative dimension")
    return shape


@kernel("SliceGrad", MS)
def SliceGrad(dY, shape, starts, ends, axes=None, steps=None):
    """Zeros of ``shape`` with dY written where Slice(starts, ends, axes, steps) read."""
    op = "SliceGrad"
    dX = np.zeros(_shape(op, shape), dY.dtype)
    starts, ends = np.asarray(starts).reshape(-1).tolist(), np.asarray(ends).reshape(-1).tolist()
    axes = list(range(len(starts))) if axes is None else _axes(op, axes, dX.ndim)
    steps = [1] * len(starts) if steps is None else np.asarray(steps).reshape(-1).tolist()
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError(f"{op}: starts, ends, axes and steps must have equal lengths, got "
                         f"{len(starts)}, {len(ends)}, {len(axes)}, {len(steps)}")
    index = [slice(None)] * dX.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st == 0:
            raise ValueError(f"{op}: step must not be 0 (axis {a})")
        index[a] = slice(s, e, st)  # Python slices clamp exactly as ONNX Slice does
    region = dX[tuple(index)]
    if region.shape != dY.shape:
        raise ValueError(f"{op}: dY of shape {dY.shape} does not match the sliced shape {region.shape}")
    dX[tuple(index)] = dY
    return dX


def _normalize_indices(op: str, indices, size: int) -> np.ndarray:
    idx = np.asarray(indices).astype(np.intp, copy=False)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise ValueError(f"{op}: index out of range [-{size}, {size})")
    return np.where(idx < 0, idx + size, idx)


@kernel("GatherGrad", MS)
def GatherGrad(shape, indices, dY, *, axis=0):
    """Zeros of ``shape``; dY rows are added back at the gathered indices (duplicates add up)."""
    op = "GatherGrad"
    dX = np.zeros(_shape(op, shape), dY.dtype)
    axis = _axes(op, axis, dX.ndim)[0]
    idx = _normalize_indices(op, indices, dX.shape[axis])
    expected = dX.shape[:axis] + idx.shape + dX.shape[axis + 1:]
    if dY.shape != expected:
        raise ValueError(f"{op}: dY of shape {dY.shape} does not match the Gather output shape {expected}")
    np.add.at(dX, (slice(None),) * axis + (idx,), dY)
    return dX


@kernel("GatherElementsGrad", MS)
def GatherElementsGrad(dY, shape, indices, *, axis=0):
    op = "GatherElementsGrad"
    dX = np.zeros(_shape(op, shape), dY.dtype)
    axis = _axes(op, axis, dX.ndim)[0]
    if indices.shape != dY.shape or indices.ndim != dX.ndim:
        raise ValueError(f"{op}: indices of shape {indices.shape} must have dY's shape {dY.shape} "
                         f"and the rank of {dX.shape}")
    index = list(np.indices(indices.shape, sparse=True))
    index[axis] = _normalize_indices(op, indices, dX.shape[axis])
    np.add.at(dX, tuple(index), dY)
    return dX


@kernel("ConcatTraining", MS)
def ConcatTraining(*inputs, axis=None):
    """Concat, plus the length of each input along ``axis`` (int64) as a second output."""
    if axis is None:
        raise ValueError("ConcatTraining: attribute 'axis' is required")
    if not inputs:
        raise ValueError("ConcatTraining: needs at least one input")
    axis = _axes("ConcatTraining", axis, inputs[0].ndim)[0]
    return (np.concatenate(inputs, axis=axis),
            np.array([x.shape[axis] for x in inputs], dtype=np.int64))


@kernel("Group", MS)
def Group(*input_tensors):
    return _flag(True)


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
    r = float(_scalar(op, "R", R)) / (1 + int(_scalar(op, "T", T)) * decay_factor)
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
    t = int(_scalar("Adam", "T", T))
    r = float(_scalar("Adam", "R", R))
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
    t = int(_scalar(op, "T", T))
    r = float(_scalar(op, "R", R))
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
