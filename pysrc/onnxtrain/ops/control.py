"""Kernels: control flow (If, Loop, Scan).

Subgraph attributes arrive planned and bound to their enclosing scope (runtime.execute.Branch):
``body(*inputs)`` runs the subgraph and returns its outputs as a list.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.model import TensorType
from .registry import kernel


def _truth(op: str, value) -> bool:
    v = np.asarray(value)
    if v.size != 1:
        raise ValueError(f"{op}: the condition must hold one element, got shape {list(v.shape)}")
    return bool(v.reshape(()))


def _empty_like_output(op: str, typ):
    """A scan output of zero iterations: shape [0] + the declared element shape (an unknown dim as 0)."""
    if not isinstance(typ, TensorType) or typ.elem_type is None:
        raise ValueError(f"{op}: ran zero iterations and the body does not declare the type of its scan output")
    dims = [d if isinstance(d, int) else 0 for d in (typ.shape or [])]
    return np.zeros([0] + dims, dtypes.to_numpy(typ.elem_type))


@kernel("If", since=1)
def If(cond, *, then_branch, else_branch):
    return tuple((then_branch if _truth("If", cond) else else_branch)())


@kernel("Loop", since=1)
def Loop(M=None, cond=None, *v_initial, body):
    n_carried = len(v_initial)
    if body.input_count != 2 + n_carried:
        raise ValueError(f"Loop: the body takes {body.input_count} inputs, expected 2 + {n_carried} "
                         f"loop-carried values")
    trips = None if M is None else int(np.asarray(M).reshape(()))
    going = True if cond is None else _truth("Loop", cond)
    carried = list(v_initial)
    scans = None
    i = 0
    while going and (trips is None or i < trips):
        outs = body(np.array(i, np.int64), np.array(going), *carried)
        # The spec's pseudo-code ignores the body's condition when the cond input is omitted; onnxruntime
        # and onnx's reference both stop on it, and so does this kernel.
        going = _truth("Loop", outs[0])
        carried = outs[1:1 + n_carried]
        if scans is None:
            scans = [[] for _ in outs[1 + n_carried:]]
        for acc, value in zip(scans, outs[1 + n_carried:]):
            acc.append(value)
        i += 1
    if scans is None:
        types = body.output_types[1 + n_carried:]
        stacked = [_empty_like_output("Loop", t) for t in types]
    else:
        stacked = [np.stack(acc) for acc in scans]
    return tuple(carried) + tuple(stacked)


def _axis(op: str, what: str, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: {what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _scan(body, states: list, xs: list, in_axes: list, in_dirs: list, out_axes, out_dirs):
    """The opset-9 Scan over one group: returns final states + scan outputs."""
    n_state = len(states)
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) > 1:
        raise ValueError(f"Scan: the scan inputs have different lengths {sorted(lengths)} along their scan axes")
    steps = lengths.pop() if lengths else 0
    collected = None
    for t in range(steps):
        slices = [np.take(x, steps - 1 - t if d else t, axis=a) for x, a, d in zip(xs, in_axes, in_dirs)]
        outs = body(*states, *slices)
        states = outs[:n_state]
        if collected is None:
            collected = [[] for _ in outs[n_state:]]
        for acc, v in zip(collected, outs[n_state:]):
            acc.append(v)
    n_out = len(body.output_types) - n_state
    out_dirs = list(out_dirs) if out_dirs is not None else [0] * n_out
    out_axes = list(out_axes) if out_axes is not None else [0] * n_out
    if len(out_dirs) != n_out or len(out_axes) != n_out:
        raise ValueError(f"Scan: scan_output_axes/scan_output_directions must have {n_out} values")
    results = []
    for k in range(n_out):
        if collected is None:
            value = _empty_like_output("Scan", body.output_types[n_state + k])
            rank = value.ndim
        else:
            acc = collected[k][::-1] if out_dirs[k] else collected[k]
            value = np.stack(acc)
            rank = value.ndim
        results.append(np.moveaxis(value, 0, _axis("Scan", "scan_output_axes value", out_axes[k], rank)))
    return list(states) + results


@kernel("Scan", since=9)
def Scan(*inputs, body, num_scan_inputs, scan_input_axes=None, scan_input_directions=None,
         scan_output_axes=None, scan_output_directions=None):
    n_state = len(inputs) - num_scan_inputs
    if n_state < 0:
        raise ValueError(f"Scan: num_scan_inputs {num_scan_inputs} exceeds the {len(inputs)} inputs")
    xs = inputs[n_state:]
    in_axes = [0] * num_scan_inputs if scan_input_axes is None else list(scan_input_axes)
    in_dirs = [0] * num_scan_inputs if scan_input_directions is None else list(scan_input_directions)
    if len(in_axes) != num_scan_inputs or len(in_dirs) != num_scan_inputs:
        raise ValueError(f"Scan: scan_input_axes/scan_input_directions must have {num_scan_inputs} values")
    in_axes = [_axis("Scan", "scan_input_axes value", a, x.ndim) for a, x in zip(in_axes, xs)]
    return tuple(_scan(body, list(inputs[:n_state]), list(xs), in_axes, in_dirs, scan_output_axes,
                       scan_output_directions))


@kernel("Scan", since=8)
def Scan_8(sequence_lens, *inputs, body, num_scan_inputs, directions=None):
    """Opset 8: axis 0 of every input and output is a batch axis; scan inputs scan along axis 1."""
    n_state = len(inputs) - num_scan_inputs
    if n_state < 0:
        raise ValueError(f"Scan: num_scan_inputs {num_scan_inputs} exceeds the {len(inputs)} inputs")
    dirs = [0] * num_scan_inputs if directions is None else list(directions)
    if len(dirs) != num_scan_inputs:
        raise ValueError(f"Scan: directions must have {num_scan_inputs} values")
    batch = inputs[0].shape[0] if inputs else 0
    if batch == 0:
        raise ValueError("Scan (opset 8): the batch axis is empty")
    xs = inputs[n_state:]
    if sequence_lens is not None:
        full = {x.shape[1] for x in xs}
        if any(int(n) not in full for n in np.asarray(sequence_lens).ravel()):
            raise ValueError("Scan (opset 8): sequence_lens shorter than the scan inputs' length are not supported")
    per_batch = [_scan(body, [s[b] for s in inputs[:n_state]], [x[b] for x in xs], [0] * len(xs), dirs,
                       None, None) for b in range(batch)]
    return tuple(np.stack([r[k] for r in per_batch]) for k in range(len(per_batch[0])))
