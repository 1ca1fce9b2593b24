"""Kernels: the Sequence and Optional ops.

At run time a sequence is a Python list of arrays and an optional is its value, or None when empty.
Kernels return new lists and never change the ones they are given.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from .registry import kernel


def _position(op: str, position, size: int, *, inserting: bool = False) -> int:
    p = int(np.asarray(position).reshape(()))
    high = size if inserting else size - 1
    if not -size <= p <= high:
        raise IndexError(f"{op}: position {p} is out of range for a sequence of {size} tensors")
    return p + size if p < 0 else p


@kernel("SequenceEmpty", since=11)
def SequenceEmpty(*, dtype=dtypes.FLOAT):
    dtypes.to_numpy(dtype)
    return []


@kernel("SequenceConstruct", since=11)
def SequenceConstruct(*inputs):
    return list(inputs)


@kernel("SequenceAt", since=11)
def SequenceAt(input_sequence, position):
    return input_sequence[_position("SequenceAt", position, len(input_sequence))]


@kernel("SequenceInsert", since=11)
def SequenceInsert(input_sequence, tensor, position=None):
    out = list(input_sequence)
    if position is None:
        out.append(tensor)
    else:
        out.insert(_position("SequenceInsert", position, len(out), inserting=True), tensor)
    return out


@kernel("SequenceErase", since=11)
def SequenceErase(input_sequence, position=None):
    out = list(input_sequence)
    if not out:
        raise IndexError("SequenceErase: the sequence is empty")
    del out[-1 if position is None else _position("SequenceErase", position, len(out))]
    return out


@kernel("SequenceLength", since=11)
def SequenceLength(input_sequence):
    return np.array(len(input_sequence), np.int64)


@kernel("SplitToSequence", since=11)
def SplitToSequence(input, split=None, *, axis=0, keepdims=1):
    axis = axis + input.ndim if axis < 0 else axis
    size = input.shape[axis]
    if split is None:
        parts = np.split(input, size, axis=axis) if size else []
        return [np.squeeze(p, axis) for p in parts] if not keepdims else parts
    split = np.asarray(split)
    if split.ndim == 0:
        step = int(split)
        if step <= 0:
            raise ValueError(f"SplitToSequence: split {step} must be positive")
        cuts = list(range(step, size, step))
    else:
        lengths = [int(n) for n in split]
        if sum(lengths) != size or any(n < 0 for n in lengths):
            raise ValueError(f"SplitToSequence: split {lengths} does not add up to the axis size {size}")
        cuts = list(np.cumsum(lengths)[:-1])
    return np.split(input, cuts, axis=axis)


@kernel("ConcatFromSequence", since=11)
def ConcatFromSequence(input_sequence, *, axis, new_axis=0):
    if not input_sequence:
        raise ValueError("ConcatFromSequence: the sequence is empty")
    if new_axis:
        rank = input_sequence[0].ndim + 1
        if not -rank <= axis < rank:
            raise ValueError(f"ConcatFromSequence: axis {axis} is out of range for rank {rank}")
        return np.stack(input_sequence, axis=axis)
    return np.concatenate(input_sequence, axis=axis)


@kernel("SequenceMap", since=17)
def SequenceMap(input_sequence, *additional_inputs, body):
    n = len(input_sequence)
    for extra in additional_inputs:
        if isinstance(extra, list) and len(extra) != n:
            raise ValueError(f"SequenceMap: sequences of lengths {n} and {len(extra)}")
    results = [body(input_sequence[i], *(x[i] if isinstance(x, list) else x for x in additional_inputs))
               for i in range(n)]
    n_out = len(body.output_types)
    return tuple([r[k] for r in results] for k in range(n_out))


@kernel("Optional", since=15)
def Optional(input=None, *, type=None):
    return input


@kernel("OptionalHasElement", since=15)
def OptionalHasElement(input=None):
    return np.array(input is not None)


@kernel("OptionalGetElement", since=15)
def OptionalGetElement(input):
    if input is None:
        raise ValueError("OptionalGetElement: the optional is empty")
    return input
