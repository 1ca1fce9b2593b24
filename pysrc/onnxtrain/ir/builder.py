"""A small helper that appends nodes and constants to a graph under fresh, readable names."""
from __future__ import annotations

import numpy as np

from . import dtypes
from .model import Attribute, AttrType, Graph, Node, Tensor


def _attribute(name: str, value) -> Attribute:
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        return Attribute(name, AttrType.INT, int(value))
    if isinstance(value, (float, np.floating)):
        return Attribute(name, AttrType.FLOAT, float(value))
    if isinstance(value, (str, bytes)):
        return Attribute(name, AttrType.STRING, value.encode() if isinstance(value, str) else value)
    if isinstance(value, Graph):
        return Attribute(name, AttrType.GRAPH, value)
    if isinstance(value, np.ndarray):
        return Attribute(name, AttrType.TENSOR, Tensor("", value, dtypes.from_numpy(value.dtype)))
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, np.integer)) for v in value):
            return Attribute(name, AttrType.INTS, [int(v) for v in value])
        return Attribute(name, AttrType.FLOATS, [float(v) for v in value])
    raise TypeError(f"attribute {name}: unsupported value {value!r}")


class GraphBuilder:
    """Appends to ``graph``; every new value name is unique in the graph."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.names = {t.name for t in graph.initializers} | {v.name for v in graph.inputs}
        self.names |= {o for n in graph.nodes for o in n.outputs} | {n.name for n in graph.nodes}
        self.scope = ""

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def op(self, op_type: str, inputs: list, n_outputs: int = 1, domain: str = "", outputs=None, **attrs):
        """Append a node; returns its output name (or the list of names when n_outputs > 1)."""
        node_name = self.fresh(f"{self.scope}/{op_type}_0" if self.scope else op_type)
        outs = outputs or [self.fresh(f"{node_name}_out{i}" if n_outputs > 1 else f"{node_name}_out")
                           for i in range(n_outputs)]
        attributes = {k: _attribute(k, v) for k, v in attrs.items() if v is not None}
        self.graph.nodes.append(Node(op_type, [str(i) if i else "" for i in inputs], [str(o) for o in outs],
                                     name=node_name,
                                     domain=domain, attributes=attributes))
        return outs[0] if n_outputs == 1 else list(outs)

    def const(self, value, base: str = "const") -> str:
        value = np.asarray(value)
        name = self.fresh(f"{self.scope}/{base}" if self.scope else base)
        self.graph.initializers.append(Tensor(name, value, dtypes.from_numpy(value.dtype)))
        return name

    def ints(self, values, base: str = "axes") -> str:
        return self.const(np.asarray(values, dtype=np.int64), base)
