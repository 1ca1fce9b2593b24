"""Reductions over axes (ReduceSum ... ReduceLogSumExp), Softmax and LogSoftmax with their com.microsoft
gradients, and ArgMax/ArgMin.

A reduction sees its input as two index spaces, the kept and the reduced dimensions (dimensions of 1 left out,
neighbours of one kind merged), each walked with strides from the parameters: any set of axes runs.  A
workgroup reduces one output (a tree in workgroup memory) when the reduced set is long, else a thread does;
a few outputs of very long sets go in two passes (a workgroup per chunk, then one over the partials).  All in a
fixed order, so that two runs give the same bits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ..errors import NotLowered
from ..tensors import gtype
from ..lowering import MAX_GROUPS
from ..registry import gpu_kernel
from ...runtime.program import Tensor
from .common import MAX_RANK, float_only, innermost_first, strides

WIDE_MIN = 64                 # reduced lengths from which a workgroup, not a thread, reduces each output
NARROW_MIN_OUTPUTS = 4096     # outputs from which a strided reduced walk goes by thread (reads coalesced over outputs)
SPLIT_MIN = 16384             # reduced lengths from which few outputs are reduced in two passes, over chunks first
SPLIT_MAX_OUTPUTS = 256       # (few: fewer than this)
CHUNK = 4096                  # elements per workgroup in the first of two passes
MAX_CHUNKS = 1024
INF = float("inf")


@dataclass(frozen=True)
class Reduction:
    map: str                  # of x (and m, the max, when shifted)
    combine: str = "a + b"
    final: str = "acc"        # of acc and m; pf(4u) is the count
    identity: str = "zero"
    ints: bool = False        # also on int64 and int32
    shifted: bool = False


REDUCTIONS = {
    "ReduceSum": Reduction("x", ints=True),
    "ReduceMean": Reduction("x", final="acc / pf(4u)"),
    "ReduceMax": Reduction("x", "max(a, b)", identity="lowest", ints=True),
    "ReduceMin": Reduction("x", "min(a, b)", identity="highest", ints=True),
    "ReduceProd": Reduction("x", "a * b", identity="one", ints=True),
    "ReduceSumSquare": Reduction("x * x", ints=True),
    "ReduceL1": Reduction("abs(x)", ints=True),
    "ReduceL2": Reduction("x * x", final="sqrt(acc)"),
    "ReduceLogSum": Reduction("x", final="log(acc)"),
    "ReduceLogSumExp": Reduction("exp(x - m)", final="log(acc) + m", shifted=True),
}

IDENTITIES = {"f32": {"zero": 0.0, "one": 1.0, "lowest": -INF, "highest": INF},
              "i32": {"zero": 0, "one": 1, "lowest": -2 ** 31, "highest": 2 ** 31 - 1}}

# the max of a log-sum-exp when it is not finite (all -inf): 0, as the CPU kernel
FINITE_SHIFT = "select(0.0, mx, abs(mx) <= 3.4028234663852886e38)"


def wgsl_bool(flag) -> str:
    return "true" if flag else "false"


def workgroup_grid(n: int) -> tuple:
    """A workgroup per item for ``n`` items, spread over x and y (the shaders read ``wg.x + wg.y * nw.x``)."""
    if n <= MAX_GROUPS:
        return (max(1, n), 1, 1)
    rows = -(-n // MAX_GROUPS)
    return (-(-n // rows), rows, 1)


def by_workgroup(length: int, outputs: int, contiguous: bool) -> bool:
    """Whether a workgroup (rather than a thread) reduces each output of ``length`` elements."""
    return length >= WIDE_MIN and (contiguous or outputs < NARROW_MIN_OUTPUTS)


def _grid(wide: bool, n: int):
    return workgroup_grid(n) if wide else n


# -- ReduceSum ... ReduceLogSumExp ----------------------------------------------------------------------

def reduced_axes(k, op: str, axes, rank: int, noop_with_empty_axes) -> set | None:
    """The reduced axes (all for none given), or None for an empty axes input with noop_with_empty_axes."""
    if isinstance(axes, Tensor):
        axes = k.value(axes, f"{op}'s axes")
    axes = [] if axes is None else np.asarray(axes).reshape(-1).tolist()
    if not axes:
        return None if noop_with_empty_axes else set(range(rank))
    bad = [a for a in axes if not -rank <= a < rank]
    if bad:
        raise NotLowered(f"{op}: axis {bad[0]} is out of range for an input of rank {rank}")
    return {a % rank for a in axes}


def merged_groups(shape, axes) -> tuple:
    """(kept, reduced): [(dim, stride)] outermost first, dimensions of 1 left out and neighbours of one kind
    merged into one."""
    kept, reduced, last = [], [], None
    for d, (n, s) in enumerate(zip(shape, strides(shape))):
        if n == 1:
            continue
        group = reduced if d in axes else kept
        if last is group:
            group[-1] = (group[-1][0] * n, s)
        else:
            group.append((n, s))
        last = group
    return kept, reduced


def walk_params(groups) -> list:
    return innermost_first([n for n, _ in groups], 1) + innermost_first([s for _, s in groups], 0)


def reduce(k, op: str, data, axes, keepdims, noop_with_empty_axes):
    spec = REDUCTIONS[op]
    if gtype(data) not in (("f32", "i32") if spec.ints else ("f32",)):
        raise NotLowered(f"{op} on WebGPU takes {'float32 and integers' if spec.ints else 'float32'}, "
                         f"not {data.dtype.name}")
    chosen = reduced_axes(k, op, axes, data.rank, noop_with_empty_axes)
    if chosen is None:
        return k.view(data, data.shape)
    shape = tuple(1 if d in chosen else n for d, n in enumerate(data.shape) if keepdims or d not in chosen)
    kept, red = merged_groups(data.shape, chosen)
    outputs = int(np.prod(shape, dtype=np.int64))
    length = int(np.prod([n for d, n in enumerate(data.shape) if d in chosen], dtype=np.int64))
    if outputs and not length:
        raise NotLowered(f"{op} over an empty set")
    if len(kept) > MAX_RANK or len(red) > MAX_RANK:
        raise NotLowered(f"{op}: the WGSL kernel walks at most {MAX_RANK} kept and {MAX_RANK} reduced dimensions")
    y = k.output(shape, data.dtype)
    if not outputs:
        return y
    chunks = min(MAX_CHUNKS, -(-length // CHUNK))
    if spec.shifted or length < SPLIT_MIN or outputs >= SPLIT_MAX_OUTPUTS or chunks < 2:
        wide = by_workgroup(length, outputs, not red or red[-1][1] == 1)
        reduce_axes(k, data, y, spec, spec.map, spec.final, kept, red, length, outputs, 1, wide)
        return y
    # a workgroup per chunk of each output's reduced indices, then a pass over each output's partials
    partials = k.output((outputs * chunks,), data.dtype)
    reduce_axes(k, data, partials, spec, spec.map, "acc", kept, red, length, outputs * chunks, chunks, True)
    reduce_axes(k, partials, y, spec, "x", spec.final, [(outputs, chunks)], [(chunks, 1)], length, outputs, 1,
                by_workgroup(chunks, outputs, True))
    return y


def reduce_axes(k, x, y, spec, map_: str, final: str, kept, red, length: int, outputs: int, chunks: int,
                wide: bool):
    """Record reduce_axes.wgsl: ``outputs`` results (a chunk of ``chunks`` per kept index), each of the reduced
    indices (``red``) at the kept index (``kept``), with ``map_`` and ``final``; ``length`` is the count a mean
    divides by."""
    ids = IDENTITIES[gtype(x)]
    n = int(np.prod([d for d, _ in red], dtype=np.int64))
    params = [outputs, n, len(kept), len(red), float(length), ids[spec.identity], ids["lowest"], chunks,
              *walk_params(kept), *walk_params(red)]
    k.dispatch("reduce_axes", [x], [y], params, _grid(wide, outputs), T=gtype(x), WIDE=wgsl_bool(wide),
               SHIFTED=wgsl_bool(spec.shifted), MAP=map_, COMBINE=spec.combine, FINAL=final,
               SHIFT=FINITE_SHIFT if spec.shifted else "mx")


def _make_reduce(op: str):
    def lower(k, data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
        """Axes as an attribute (a list) before opset 13/18, as an input (a Tensor known before the run) after."""
        return reduce(k, op, data, axes, keepdims, noop_with_empty_axes)
    lower.__name__ = op
    gpu_kernel(op)(lower)


for _op in REDUCTIONS:
    _make_reduce(_op)


# -- Softmax, LogSoftmax and their gradients -------------------------------------------------------------

@dataclass(frozen=True)
class RowOp:
    term: str                 # summed over the row, of a, b and m (the row's max when shifted)
    out: str                  # of a, b, m and s (the sum)
    shifted: bool = True
    two_inputs: bool = False


ROW_OPS = {
    "Softmax": RowOp("exp(a - m)", "exp(a - m) / s"),
    "LogSoftmax": RowOp("exp(a - m)", "(a - m) - log(s)"),
    "SoftmaxGrad_13": RowOp("a * b", "b * (a - s)", shifted=False, two_inputs=True),        # (dY, Y)
    "LogSoftmaxGrad_13": RowOp("a", "a - exp(b) * s", shifted=False, two_inputs=True),      # (dY, Y)
}


def single_axis_rows(shape, axis: int) -> tuple:
    """(outer, n, inner) of rows along one axis (opset 13)."""
    a = axis % len(shape)
    return (int(np.prod(shape[:a], dtype=np.int64)), int(shape[a]), int(np.prod(shape[a + 1:], dtype=np.int64)))


def coerced_rows(shape, axis: int) -> tuple:
    """(outer, n, 1) of the input seen as 2-D [prod(dims[:axis]), prod(dims[axis:])] (opsets 1 to 12)."""
    a = axis + len(shape) if axis < 0 else axis
    return (int(np.prod(shape[:a], dtype=np.int64)), int(np.prod(shape[a:], dtype=np.int64)), 1)


def softmax_rows(k, op: str, x, axis) -> tuple:
    """The rows of Softmax or LogSoftmax: opset 13's single axis (default -1) or the 2-D coercion of opsets 1 to
    12 (default 1).  The lowering context says the opset only if it has ``opset``; without it, only the cases
    where the two agree run here."""
    rank = x.rank
    new = single_axis_rows(x.shape, -1 if axis is None else axis) if rank and (
        axis is None or -rank <= axis < rank) else None
    old_axis = 1 if axis is None else axis
    old = coerced_rows(x.shape, old_axis) if rank and -rank <= old_axis <= rank else None
    opset = getattr(k, "opset", None)
    rows = (new if opset >= 13 else old) if opset is not None else new if new == old else None
    if rows is None:
        if opset is None and new is not None and old is not None:
            raise NotLowered(f"{op}: opset 13's single axis and the 2-D coercion of opsets 1 to 12 differ here, "
                             f"and the WGSL lowering is not told the opset")
        raise NotLowered(f"{op}: axis {axis} for an input of rank {rank}")
    return rows


def row_op(k, op: str, rows: tuple, a, b=None):
    spec = ROW_OPS[op]
    float_only(op, a, b)
    if b is not None and b.shape != a.shape:
        raise NotLowered(f"{op} of shapes {list(a.shape)} and {list(b.shape)}")
    outer, n, inner = rows
    y = k.output(a.shape, np.float32)
    count = outer * inner
    if count and n:
        wide = by_workgroup(n, count, inner == 1)
        inputs = [a] if b is None else [a, b]
        out_binding = len(inputs) + 1
        bindings = ("" if b is None else "@group(0) @binding(2) var<storage, read> B: array<f32>;\n") + \
            f"@group(0) @binding({out_binding}) var<storage, read_write> Y: array<f32>;"
        k.dispatch("reduce_softmax", inputs, [y], [count, n, inner, -INF], _grid(wide, count),
                   BINDINGS=bindings, LOAD_B="0.0" if b is None else "B[i]", WIDE=wgsl_bool(wide),
                   SHIFTED=wgsl_bool(spec.shifted), TERM=spec.term, OUT=spec.out)
    return y


@gpu_kernel("Softmax")
def Softmax(k, input, *, axis=None):
    return row_op(k, "Softmax", softmax_rows(k, "Softmax", input, axis), input)


@gpu_kernel("LogSoftmax")
def LogSoftmax(k, input, *, axis=None):
    return row_op(k, "LogSoftmax", softmax_rows(k, "LogSoftmax", input, axis), input)


def _grad_rows(op: str, Y, axis) -> tuple:
    if Y.rank == 0 or not -Y.rank <= axis < Y.rank:
        raise NotLowered(f"{op}: axis {axis} for an input of rank {Y.rank}")
    return single_axis_rows(Y.shape, axis)


@gpu_kernel("SoftmaxGrad_13", MS_DOMAIN)
def SoftmaxGrad_13(k, dY, Y, *, axis=-1):
    return row_op(k, "SoftmaxGrad_13", _grad_rows("SoftmaxGrad_13", Y, axis), dY, Y)


@gpu_kernel("LogSoftmaxGrad_13", MS_DOMAIN)
def LogSoftmaxGrad_13(k, dY, Y, *, axis=-1):
    return row_op(k, "LogSoftmaxGrad_13", _grad_rows("LogSoftmaxGrad_13", Y, axis), dY, Y)


# -- ArgMax, ArgMin --------------------------------------------------------------------------------------

def arg_reduce(k, op: str, data, axis, keepdims, select_last_index, better: str):
    if gtype(data) not in ("f32", "i32"):
        raise NotLowered(f"{op} on WebGPU takes float32 and integers, not {data.dtype.name}")
    rank = data.rank
    if rank == 0 or not -rank <= axis < rank:
        raise NotLowered(f"{op}: axis {axis} for an input of rank {rank}")
    outer, n, inner = single_axis_rows(data.shape, axis)
    a = axis % rank
    if not n:
        raise NotLowered(f"{op} along an empty axis")
    shape = data.shape[:a] + ((1,) if keepdims else ()) + data.shape[a + 1:]
    y = k.output(shape, np.int64)
    count = outer * inner
    if count:
        wide = by_workgroup(n, count, inner == 1)
        k.dispatch("reduce_arg", [data], [y], [count, n, inner, int(bool(select_last_index))], _grid(wide, count),
                   T=gtype(data), WIDE=wgsl_bool(wide), BETTER=better)
    return y


@gpu_kernel("ArgMax")
def ArgMax(k, data, *, axis=0, keepdims=1, select_last_index=0):
    return arg_reduce(k, "ArgMax", data, axis, keepdims, select_last_index, ">")


@gpu_kernel("ArgMin")
def ArgMin(k, data, *, axis=0, keepdims=1, select_last_index=0):
    return arg_reduce(k, "ArgMin", data, axis, keepdims, select_last_index, "<")


@gpu_kernel("ReduceSumTraining", MS_DOMAIN)
def ReduceSumTraining(k, data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ReduceSum-13 under ORT's training name (its gradient graphs use it)."""
    return reduce(k, "ReduceSum", data, axes, keepdims, noop_with_empty_axes)
