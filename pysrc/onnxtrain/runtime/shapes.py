"""Types and shapes of graph values, learned by running the graph on small dummy inputs.

Every symbolic or unknown input dim is set to a base size, then each symbol in
turn to one more; an output dim that follows exactly one symbol gets that
symbol's name, a dim that never changes is fixed, anything else is unknown.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.model import Graph, Model, TensorType, ValueInfo
from .execute import RunError
from .feeds import FeedError
from .session import Session

BASE = 2


def _dummy(value_info: ValueInfo, sizes: dict, rng) -> np.ndarray:
    t = value_info.type
    dtype = dtypes.to_numpy(t.elem_type)
    shape = [d if isinstance(d, int) else sizes[d if isinstance(d, str) else (value_info.name, i)]
             for i, d in enumerate(t.shape or [])]
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype)


def infer_types(model: Model, names: list) -> dict:
    """{name: TensorType} for ``names``, values of ``model``'s graph."""
    graph = model.graph
    symbols = []
    for vi in graph.inputs:
        if not isinstance(vi.type, TensorType) or vi.type.shape is None:
            raise ValueError(f"cannot infer shapes: input '{vi.name}' has no tensor shape")
        for i, d in enumerate(vi.type.shape):
            key = d if isinstance(d, str) else (vi.name, i) if d is None else None
            if key is not None and key not in symbols:
                symbols.append(key)
    probe = Model(graph=Graph(name=graph.name, nodes=graph.nodes, inputs=graph.inputs,
                              outputs=[ValueInfo(n) for n in names], initializers=graph.initializers,
                              value_info=graph.value_info),
                  ir_version=model.ir_version, opset_imports=model.opset_imports, functions=model.functions)
    session = Session(probe)

    def run(sizes):
        rng = np.random.default_rng(0)
        with np.errstate(all="ignore"):  # dummy values may leave an op's domain (log of a negative number)
            return session.run([_dummy(vi, sizes, rng) for vi in graph.inputs])

    def attempt(sizes):
        try:
            return run(sizes)
        except (RunError, FeedError):
            return None

    sizes = {s: BASE for s in symbols}
    base = attempt(sizes)
    if base is None:
        # A symbol may be pinned by the graph's fixed dims (a loss target's copy of an output symbol that
        # the exporter left free although the input's batch is fixed): try those sizes for one symbol.
        fixed = sorted({d for vi in graph.inputs for d in vi.type.shape if isinstance(d, int) and d != BASE})
        for s, size in ((s, size) for s in symbols for size in fixed):
            base = attempt({**sizes, s: size})
            if base is not None:
                sizes[s] = size
                break
        else:
            base = run(sizes)   # raises the first failure
    varied = [(s, attempt({**sizes, s: sizes[s] + 1})) for s in symbols]
    # Symbols that cannot change alone are tied to each other (a loss target's batch symbol, copied from the
    # output's, and the input's) or pinned; changed together they act as one, named by the first.
    tied = [s for s, outs in varied if outs is None]
    if len(tied) > 1:
        varied.append((tied[0], attempt({t: size + (t in tied) for t, size in sizes.items()})))
    varied = [(s, outs) for s, outs in varied if outs is not None]
    result = {}
    for k, name in enumerate(names):
        value = np.asarray(base[k])
        shape = []
        for axis, size in enumerate(value.shape):
            moved = [s for s, outs in varied
                     if np.ndim(outs[k]) != value.ndim or np.shape(outs[k])[axis] != size]
            if not moved:
                shape.append(int(size))
            elif len(moved) == 1 and isinstance(moved[0], str):
                shape.append(moved[0])
            else:
                shape.append(None)
        result[name] = TensorType(dtypes.from_numpy(value.dtype), shape)
    return result
