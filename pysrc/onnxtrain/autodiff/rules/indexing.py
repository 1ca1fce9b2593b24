"""Gradient rules of the indexing ops: Gather, GatherElements, ScatterElements, TopK, Trilu, CumSum."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ._emit import shape_of, text
from ._registry import rule


@rule("Gather")
def _gather(c, x, y, dy):
    return [c.op("GatherGrad", shape_of(c, x[0]), x[1], dy[0], domain=MS_DOMAIN, axis=c.node.attr("axis", 0))]


@rule("GatherElements")
def _gather_elements(c, x, y, dy):
    return [c.op("GatherElementsGrad", dy[0], shape_of(c, x[0]), x[1], domain=MS_DOMAIN, axis=c.node.attr("axis", 0))]


@rule("ScatterElements")
def _scatter_elements(c, x, y, dy):
    """data: dY with the written positions cleared; updates: dY read back at those positions."""
    if text(c.node.attr("reduction", b"none")) != "none":
        raise NotImplementedError(f"{c.where()}: the ScatterElements gradient needs reduction 'none'")
    axis = c.node.attr("axis", 0)
    zeros = c.op("ConstantOfShape", shape_of(c, x[2]), value=np.zeros(1, dtype=c.dtype(x[2])))
    return [c.op("ScatterElements", dy[0], x[1], zeros, axis=axis), None,
            c.op("GatherElements", dy[0], x[1], axis=axis)]


@rule("TopK")
def _top_k(c, x, y, dy):  # dValues back to where Indices took them from
    return [c.op("GatherElementsGrad", dy[0], shape_of(c, x[0]), c.extra_output(1, "indices"), domain=MS_DOMAIN,
                 axis=c.node.attr("axis", -1))]


@rule("Trilu")
def _trilu(c, x, y, dy):
    return [c.op("Trilu", dy[0], *x[1:], upper=c.node.attr("upper", 1))]


@rule("CumSum")
def _cumsum(c, x, y, dy):  # the transpose of a running sum is the running sum the other way
    return [c.op("CumSum", dy[0], x[1], exclusive=c.node.attr("exclusive", 0), reverse=1 - c.node.attr("reverse", 0))]
