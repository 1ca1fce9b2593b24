"""Normalizations: BatchNormalization (and ORT's internal form), LayerNormalization, InstanceNormalization,
GroupNormalization, and their com.microsoft gradients.  Per-channel parameters pin the channel axis."""
from __future__ import annotations

from ._registry import Out, rule

MS = "com.microsoft"


def _channels(c, inputs) -> list:
    for i in inputs:
        if c.has(i):
            c.same(i, 0, 0, 1)
    return c.shape(0)


@rule("BatchNormalization")
def batch_norm(c):
    x = _channels(c, range(1, 5))
    stats = [Out(c.elem(3), [x[1]]) for _ in range(len(c.node.outputs) - 1)]
    return [Out(c.elem(0), x)] + stats


@rule("BatchNormInternal", domain=MS)
def batch_norm_internal(c):
    return batch_norm(c)


@rule("BatchNormalizationGrad", domain=MS)
def batch_norm_grad(c):
    x = c.shape(1)
    return [Out(c.elem(0), x), Out(c.elem(2), [x[1]]), Out(c.elem(2), [x[1]])]


@rule("InstanceNormalization")
def instance_norm(c):
    return Out(c.elem(0), _channels(c, (1, 2)))


@rule("GroupNormalization")
def group_norm(c):
    return c.like(0)


@rule("LayerNormalization")
def layer_norm(c):
    x = c.shape(0)
    axis = c.axis(c.attr("axis", -1), len(x))
    for i in (1, 2):
        if c.has(i):
            s = c.shape(i)
            for k, d in enumerate(s):
                axis_x = len(x) - len(s) + k
                if isinstance(d, int) and d != 1 and axis_x >= axis:
                    c.pin(0, axis_x, d, f" (normalized, by '{c.node.inputs[i]}')")
    x = c.shape(0)
    stats = x[:axis] + [1] * (len(x) - axis)
    stash = c.attr("stash_type", 1)
    return [Out(c.elem(0), x), Out(stash, list(stats)), Out(stash, list(stats))]


@rule("LayerNormalizationGrad", domain=MS)
def layer_norm_grad(c):
    return [Out(c.elem(0), c.shape(1)), Out(c.elem(2), c.shape(2)), Out(c.elem(2), c.shape(2))]
