"""Types and shapes of graph values, inferred by the ops' shape rules, as onnx's inference defines them.

One walk over the graph in order. Each node's rule (``shape_rules``) maps its input types, and the values of
small int tensors known before running (initializers, Constants, and shape arithmetic such as
Shape -> Gather -> Concat, held as vectors of dims that may be symbols), to its output types. Symbolic dims
unify where an op needs them equal: a symbol that meets an int becomes that int everywhere (a Gemm's weight
pins its input's features), two symbols become one, named by the first seen. Two ints that must agree and do
not raise ``ShapeConflictError``, naming the node, its inputs and the axis.

A node whose inputs are all known values is evaluated by its kernel. A node without a rule whose inputs have
fixed shapes runs its kernel on inputs of exactly those shapes; with symbolic inputs it runs twice with
different, distinct sizes per symbol, and a dim that follows one symbol in both runs is that symbol.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.model import Graph, Model, Node, TensorType, ValueInfo
from .plan import attribute_value, describe_node, outer_names, subgraphs, topological_order
from .shape_rules import SHAPE_RULES, ShapeConflictError, ShapeInferenceError
from .symbols import Symbols

__all__ = ["ShapeConflictError", "ShapeInferenceError", "infer_types"]

SMALL = 1 << 16   # elements: values kept for shape arithmetic, not weights
NOT_FOLDED = ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
              "Bernoulli", "Dropout")


class _Node:
    """What a rule sees of one node: its attributes, its inputs' types and known values, and the symbols."""

    def __init__(self, node: Node, infer: "_Inference"):
        self.node, self._infer, self.symbols = node, infer, infer.symbols
        self.attrs = {k: attribute_value(a) for k, a in node.attributes.items()}
        self.n_inputs = len(node.inputs)
        self.out_dims = {}   # output index -> object array of dims: a shape vector computed symbolically

    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    def has(self, i: int) -> bool:
        return i < len(self.node.inputs) and bool(self.node.inputs[i])

    def type(self, i: int):
        return self._infer.types.get(self.node.inputs[i]) if self.has(i) else None

    def elem(self, i: int):
        t = self.type(i)
        return getattr(t, "elem_type", None)

    def shape(self, i: int):
        """Input ``i``'s dims (int | symbol | None each), or None when its rank is unknown."""
        t = self.type(i)
        if not isinstance(t, TensorType) or t.shape is None:
            return None
        return [self.symbols.find(d) for d in t.shape]

    def value(self, i: int):
        """Input ``i``'s value when it is known before running (a numpy array), else None."""
        return self._infer.values.get(self.node.inputs[i]) if self.has(i) else None

    def dims(self, i: int):
        """Input ``i`` as an object array of dims (ints or symbols) when it is a known int vector or scalar."""
        if not self.has(i):
            return None
        name = self.node.inputs[i]
        if name in self._infer.dims:
            return np.array([self.symbols.find(d) for d in self._infer.dims[name].ravel()],
                            dtype=object).reshape(self._infer.dims[name].shape)
        v = self._infer.values.get(name)
        if v is not None and v.dtype.kind in "iu":
            return v.astype(object)
        return None

    def ints(self, i: int):
        """Input ``i``'s value as a list of Python ints, or None."""
        v = self.value(i)
        return None if v is None else [int(x) for x in np.asarray(v).ravel()]

    def where(self) -> str:
        shapes = ", ".join(f"{n}: {self._infer.describe(n)}" for n in self.node.inputs if n)
        return f"{describe_node(self.node)} (inputs {shapes})"

    def unify(self, a, b, what: str):
        try:
            return self.symbols.unify(a, b)
        except ValueError:
            raise ShapeConflictError(f"{self.where()}: {what} must agree, but they are {a} and {b}") from None

    def fresh(self) -> str:
        return self.symbols.fresh()


class _Inference:
    def __init__(self, model: Model):
        self.model = model
        self.symbols = Symbols()
        self.types, self.values, self.dims = {}, {}, {}

    def describe(self, name: str) -> str:
        t = self.types.get(name)
        if not isinstance(t, TensorType):
            return "?"
        dt = dtypes.DataType(t.elem_type).name.lower() if t.elem_type else "?"
        if t.shape is None:
            return f"{dt}[?]"
        return f"{dt}[{', '.join(str(self.symbols.public(d)) for d in t.shape)}]"

    def declare(self, vi: ValueInfo) -> None:
        t = vi.type
        if isinstance(t, TensorType) and t.shape is not None:
            shape = [self.symbols.named(d) if isinstance(d, str) else d if d is not None else self.symbols.fresh()
                     for d in t.shape]
            t = TensorType(t.elem_type, shape)
        self.types[vi.name] = t

    def run(self, graph: Graph) -> None:
        for vi in graph.inputs:
            self.declare(vi)
        for t in graph.initializers:
            self.types[t.name] = TensorType(t.data_type, list(t.data.shape))
            if t.data.size <= SMALL:
                self.values[t.name] = t.data
        for node in topological_order(graph, set(self.types)):
            self.node(node)

    def node(self, node: Node) -> None:
        ctx = _Node(node, self)
        outputs = [o for o in node.outputs]
        inputs = [i for i in node.inputs if i]
        key = (node.domain if node.domain != "ai.onnx" else "", node.op_type)
        if node.op_type not in NOT_FOLDED and all(i in self.values for i in inputs) and not subgraphs(node):
            if self._fold(node):
                return
        rule = SHAPE_RULES.get(key)
        if rule is not None:
            results = rule(ctx)
        else:
            results = self._probe(ctx)
        for k, name in enumerate(outputs):
            if name and k < len(results) and results[k] is not None:
                elem, shape = results[k]
                dims = None if shape is None else [self.symbols.fresh() if d is None else d for d in shape]
                self.types[name] = TensorType(None if elem is None else dtypes.DataType(elem), dims)
        for k, dims in ctx.out_dims.items():
            if k < len(outputs) and outputs[k]:
                dims = dims if isinstance(dims, np.ndarray) else np.array(dims, dtype=object)
                if all(isinstance(d, int) for d in dims.ravel()):
                    self.values[outputs[k]] = np.array(dims.tolist(), dtype=np.int64).reshape(dims.shape)
                else:
                    self.dims[outputs[k]] = dims

    def _single(self, node: Node, feeds: dict) -> list:
        """``node`` alone, run on ``feeds`` (its inputs and what its subgraphs read from outside)."""
        from .session import Session
        names = list(feeds)
        graph = Graph(name="infer", nodes=[node], outputs=[ValueInfo(o) for o in node.outputs if o],
                      inputs=[ValueInfo(n, self._feed_type(n, feeds[n])) for n in names])
        model = Model(graph=graph, ir_version=self.model.ir_version, opset_imports=self.model.opset_imports,
                      functions=self.model.functions)
        with np.errstate(all="ignore"):
            return Session(model).run([feeds[n] for n in names])

    @staticmethod
    def _feed_type(name, value):
        return TensorType(dtypes.from_numpy(np.asarray(value).dtype), list(np.shape(value)))

    def _fold(self, node: Node) -> bool:
        try:
            outs = self._single(node, {n: self.values[n] for n in dict.fromkeys(i for i in node.inputs if i)})
        except Exception:  # noqa: BLE001 -- a constant the kernel refuses is left to the rule, which reports it
            return False
        for name, v in zip([o for o in node.outputs if o], outs):
            if isinstance(v, (np.ndarray, np.generic)):
                v = np.asarray(v)
                self.types[name] = TensorType(dtypes.from_numpy(v.dtype), list(v.shape))
                if v.size <= SMALL:
                    self.values[name] = v
        return True

    def _probe(self, ctx: _Node) -> list:
        node = ctx.node
        reads = list(dict.fromkeys([i for i in node.inputs if i] +
                                   [n for _, g in subgraphs(node) for n in outer_names(g)]))
        shapes = {}
        for name in reads:
            t = self.types.get(name)
            if name in self.values:
                continue
            if not isinstance(t, TensorType) or t.shape is None or not t.elem_type:
                raise ShapeInferenceError(f"cannot infer the types of {ctx.where()}: no shape rule for "
                                          f"{node.op_type}, and the type of '{name}' is not known")
            shapes[name] = (t.elem_type, [self.symbols.find(d) for d in t.shape])
        symbols = list(dict.fromkeys(d for _, s in shapes.values() for d in s if isinstance(d, str)))
        runs = [{s: 7 + 2 * k for k, s in enumerate(symbols)}]
        if symbols:
            runs.append({s: 8 + 3 * k for k, s in enumerate(symbols)})
        results = []
        for sizes in runs:
            rng = np.random.default_rng(0)
            feeds = {}
            for name in reads:
                if name in self.values:
                    feeds[name] = self.values[name]
                    continue
                if name in self.dims:
                    dims = [self.symbols.find(d) for d in self.dims[name].ravel()]
                    if all(isinstance(d, int) or d in sizes for d in dims):
                        feeds[name] = np.array([sizes.get(d, d) for d in dims],
                                               dtype=dtypes.to_numpy(shapes[name][0])).reshape(self.dims[name].shape)
                        continue
                elem, shape = shapes[name]
                dt = dtypes.to_numpy(elem)
                dims = [sizes[d] if isinstance(d, str) else d for d in shape]
                feeds[name] = rng.standard_normal(dims).astype(dt) if dt.kind == "f" else np.zeros(dims, dt)
            try:
                outs = self._single(node, feeds)
            except Exception as e:  # noqa: BLE001 -- any kernel error here means the shape is not knowable
                why = "symbolic input dims" if symbols else "its inputs"
                raise ShapeInferenceError(f"cannot infer the types of {ctx.where()}: {node.op_type} has no shape "
                                          f"rule, and running it on {why} failed: {e}") from None
            results.append(outs)
        out = []
        for k, v in enumerate(results[0]):
            if not isinstance(v, (np.ndarray, np.generic)):
                out.append(None)
                continue
            v = np.asarray(v)
            shape = []
            for axis, size in enumerate(v.shape):
                other = [np.shape(r[k]) for r in results[1:]]
                if all(len(o) == v.ndim and o[axis] == size for o in other):
                    shape.append(int(size))
                    continue
                match = [s for s in symbols if runs[0][s] == size and
                         all(len(o) == v.ndim and o[axis] == run[s] for o, run in zip(other, runs[1:]))]
                shape.append(match[0] if len(match) == 1 else None)
            out.append((dtypes.from_numpy(v.dtype), shape))
        given = iter(out)
        return [next(given) if o else None for o in node.outputs]


def infer_types(model: Model, names: list) -> dict:
    """{name: TensorType} for ``names``, values of ``model``'s graph."""
    inference = _Inference(model)
    inference.run(model.graph)
    result = {}
    for name in names:
        t = inference.types.get(name)
        if t is None:
            raise ShapeInferenceError(f"'{name}' is not a value of the graph, or its type could not be inferred")
        if isinstance(t, TensorType) and t.shape is not None:
            t = TensorType(t.elem_type, [inference.symbols.public(d) for d in t.shape])
        result[name] = t
    return result
