"""The training ops that update their buffers in place: InPlaceAccumulatorV2, AdamWOptimizer, SGDOptimizerV2.

They read the reset flag, the learning rate and the step from their buffers during the run, so one program
serves every step.  AdamW's bias corrections (1 - alpha^t, 1 - beta^t, with the power in double as
ops/optimizers.py's ``float(a) ** t``) are computed by the executor from the step it reads (mathlib.c's
pow_f64_int), then the same adamw_f32 / sgd_f32 kernels as the numpy provider run, tensor by tensor.  They return
the Tensors (and lists) they were given."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...runtime.program import NotLowered
from ..lowering import f32_only
from ..registry import wasm_kernel


def _flag(k, i: int, like_shape):
    """The op's bool output ``i`` ("updated"), shaped like ``like_shape``, when something reads it."""
    return k.output(like_shape, np.bool_) if k.used(i) else None


def _signal(op: str, signal) -> None:
    if signal is not None and (signal.dtype != np.bool_ or signal.size != 1):
        raise NotLowered(f"{op}: an update signal {signal.describe()} (the C kernel reads one bool)")


def _scalar(op: str, name: str, t, dtype) -> None:
    if t.size != 1 or t.dtype != dtype:
        raise NotLowered(f"{op}: {name} {t.describe()} (the C kernel reads one {np.dtype(dtype).name})")


def _groups(k, op: str, live: dict, read: dict) -> int:
    """The sequences are equally long, non-empty, float32 and equally shaped index by index; ``live`` ones are
    buffers the op can write."""
    seqs = {**live, **read}
    first = next(iter(seqs.values()))
    if not isinstance(first, list) or not first:
        raise NotLowered(f"{op}: its tensors are not a non-empty sequence")
    for name, seq in seqs.items():
        if not isinstance(seq, list) or len(seq) != len(first):
            raise NotLowered(f"{op}: {name} is not a sequence as long as the others")
        for i, (t, ref) in enumerate(zip(seq, first)):
            f32_only(op, t)
            if t.shape != ref.shape:
                raise NotLowered(f"{op}: {name}[{i}] {t.describe()} differs from {ref.describe()}")
    for name, seq in live.items():
        for i, t in enumerate(seq):
            k.live(t, f"{op}'s {name}[{i}]")
    return len(first)


@wasm_kernel("InPlaceAccumulatorV2", MS_DOMAIN)
def InPlaceAccumulatorV2(k, accumulation_buffer, value, overwrite_flag=None):
    op = "InPlaceAccumulatorV2"
    f32_only(op, accumulation_buffer, value)
    k.live(accumulation_buffer, f"{op}'s accumulation_buffer")
    if value.shape != accumulation_buffer.shape:
        raise NotLowered(f"{op}: value {value.describe()} broadcast into {accumulation_buffer.describe()}")
    _signal(op, overwrite_flag)
    flag = _flag(k, 0, (1,))
    k.call("accumulate", [accumulation_buffer, value, overwrite_flag], [flag], [value.size],
           updates=[accumulation_buffer])
    return flag, accumulation_buffer


@wasm_kernel("AdamWOptimizer", MS_DOMAIN)
def AdamWOptimizer(k, lr, step, weights, gradients, momentums_1, momentums_2, update_signal=None, *, alpha=0.9,
                   beta=0.999, epsilon=1e-8, weight_decay=1e-2, correct_bias=1, adam_mode=0):
    op = "AdamWOptimizer"
    if adam_mode not in (0, 1) or (adam_mode == 0 and correct_bias != 1):
        raise NotLowered(f"{op}: adam_mode {adam_mode} with correct_bias {correct_bias} (the numpy kernel rejects "
                         f"it)")
    _scalar(op, "lr", lr, np.float32)
    _scalar(op, "step", step, np.int64)
    _signal(op, update_signal)
    count = _groups(k, op, {"weights": weights, "momentums_1": momentums_1, "momentums_2": momentums_2},
                    {"gradients": gradients})
    flag = _flag(k, 0, step.shape)
    sizes = [t.size for t in weights]
    k.call("adamw", [lr, step, update_signal, *weights, *gradients, *momentums_1, *momentums_2], [flag],
           [count, step.size, adam_mode, correct_bias, float(alpha), float(beta), float(epsilon),
            float(weight_decay), *sizes], updates=[*weights, *momentums_1, *momentums_2])
    return flag, weights, momentums_1, momentums_2


@wasm_kernel("SGDOptimizerV2", MS_DOMAIN)
def SGDOptimizerV2(k, lr, weights, gradients, update_signal=None):
    op = "SGDOptimizerV2"
    _scalar(op, "lr", lr, np.float32)
    _signal(op, update_signal)
    count = _groups(k, op, {"weights": weights}, {"gradients": gradients})
    flag = _flag(k, 0, lr.shape)
    k.call("sgd", [lr, update_signal, *weights, *gradients], [flag], [count, lr.size, *[t.size for t in weights]],
           updates=list(weights))
    return flag, weights
