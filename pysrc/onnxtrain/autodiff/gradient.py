"""build_gradient_graph: the forward graph plus the nodes that compute d(loss)/d(w) for the requested w."""
from __future__ import annotations

import copy

import numpy as np

from ..ir import dtypes, ort_names
from ..ir.builder import GraphBuilder
from ..ir.ort_names import MS_DOMAIN
from ..ir.model import AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from ..runtime.plan import topological_order
from ..runtime.session import Session
from ..runtime.shapes import infer_types
from .rules import GRADIENT_RULES, NO_GRADIENT, unbroadcast
from .values import Value, result_dtype


class GradientNotRegisteredError(NotImplementedError):
    """No gradient rule for an op on the path from the parameters to the loss (ORT's wording)."""


class _Context:
    """What a rule sees: ``op`` to build Values, static types and build-time constants, the node, and which of
    its inputs need a gradient (``wants``, for the rules whose nodes cannot be dropped afterwards)."""

    def __init__(self, builder, types, opset, constants):
        self.b, self.types, self.opset, self.constants = builder, types, opset, constants
        self.node, self.needs = None, ()

    def where(self) -> str:
        return f"{self.node.op_type} node '{self.node.name}'"

    def wants(self, i: int) -> bool:
        return i < len(self.needs) and self.needs[i]

    def shape(self, name):
        t = self.types.get(name)
        return None if t is None or t.shape is None else list(t.shape)

    def onnx_type(self, name) -> int:
        if getattr(name, "dtype", None) is not None:
            return dtypes.from_numpy(name.dtype)
        return self.types[name].elem_type

    def dtype(self, name):
        return name.dtype if getattr(name, "dtype", None) is not None else dtypes.to_numpy(self.onnx_type(name))

    def value(self, name):
        """``name`` as a Value ("" and None stay as they are)."""
        if not name or isinstance(name, Value):
            return name
        t = self.types.get(name)
        return Value(name, self, dtypes.to_numpy(t.elem_type) if t is not None and t.elem_type else None)

    def scalar(self, number, like):
        """A Value stays; a Python number becomes a scalar constant of ``like``'s element type."""
        if isinstance(number, str):
            return self.value(number)
        dtype = getattr(like, "dtype", None)
        if dtype is None and isinstance(like, str) and like in self.types:
            dtype = self.dtype(like)
        if dtype is None:
            raise TypeError(f"{self.where()}: no element type for the constant {number!r}")
        return Value(self.b.const(np.array(number, dtype=dtype), "scalar"), self, dtype)

    def op(self, op_type: str, *inputs, domain: str = "", n_outputs: int = 1, outputs=None, **attrs):
        """Append a node; numbers among ``inputs`` become constants of the first Value's type.  Returns Values."""
        values = [self.value(v) if isinstance(v, str) or v is None else v for v in inputs]
        like = next((v for v in values if isinstance(v, Value) and v.dtype is not None and v.dtype != bool), None)
        values = [v if v is None or isinstance(v, str) else self.scalar(v, like) for v in values]
        names = self.b.op(op_type, values, n_outputs=n_outputs, domain=domain, outputs=outputs, **attrs)
        dtype = result_dtype(op_type, values, attrs)
        if n_outputs == 1:
            return Value(names, self, dtype)
        return [Value(n, self, dtype) for n in names]

    def const(self, value, base: str = "const") -> str:
        """The name of a new initializer holding ``value``."""
        return self.b.const(value, base)

    def ints(self, values, base: str = "axes") -> str:
        """The name of a new int64 initializer holding ``values``."""
        return self.b.ints(values, base)

    def fresh(self, base: str) -> str:
        """A value name not yet used in the graph."""
        return self.b.fresh(base)

    def constant(self, name):
        return self.constants.get(name)

    def extra_output(self, index: int, base: str) -> str:
        """Output ``index`` of the forward node (Indices, log_prob, mask), adding it when the model omits it."""
        outs = self.node.outputs
        while len(outs) <= index:
            outs.append("")
        if not outs[index]:
            outs[index] = self.b.fresh(f"{self.node.outputs[0]}_{base}")
        return outs[index]

    def declare_like(self, value: str, like: str) -> None:
        t = self.types[like]
        self.b.graph.value_info.append(ValueInfo(str(value), TensorType(t.elem_type, list(t.shape))))


def _on_path(graph: Graph, order: list, wrt: set, loss: str, stop=frozenset()) -> tuple:
    """(values that depend on wrt, nodes between wrt and the loss), not looking past ops in ``stop``."""
    depends = set(wrt)
    for node in order:
        if node.op_type not in stop and any(i in depends for i in node.inputs if i):
            depends.update(o for o in node.outputs if o)
    needed, nodes = {loss}, []
    for node in reversed(order):
        if any(o in needed for o in node.outputs if o) and any(i in depends for i in node.inputs if i):
            nodes.append(node)
            needed.update(i for i in node.inputs if i in depends)
    return depends, nodes


SMALL = 1 << 16  # elements: folding is for axes, scales and shapes, not for weights


def _folded_constants(model: Model, order: list, inits: dict, depends: set) -> dict:
    """Initializers plus the small values computed from them and Constant nodes alone (an exporter's Resize
    scales are a Concat of Constants), for the rules that need a value at build time."""
    values = dict(inits)
    for node in order:
        if node.op_type.startswith("Random") or node.op_type == "Dropout" or \
                any(a.type in (AttrType.GRAPH, AttrType.GRAPHS) for a in node.attributes.values()) or \
                not all(not i or (i in values and i not in depends and values[i].size <= SMALL) for i in node.inputs):
            continue
        used = {i for i in node.inputs if i}
        graph = Graph(name="fold", nodes=[node], outputs=[ValueInfo(o) for o in node.outputs if o],
                      initializers=[Tensor(n, values[n], dtypes.from_numpy(values[n].dtype)) for n in used])
        try:
            outs = Session(Model(graph=graph, ir_version=model.ir_version, opset_imports=model.opset_imports)).run({})
        except (ValueError, TypeError, IndexError, RuntimeError):  # then it is no build-time constant
            continue
        values.update((o, v) for o, v in zip([o for o in node.outputs if o], outs)
                      if isinstance(v, np.ndarray) and v.size <= SMALL)
    return values


def build_gradient_graph(model: Model, loss_name: str, wrt: list) -> Model:
    """A copy of ``model`` whose graph also outputs ``<w>_grad`` for every name in ``wrt``."""
    model = copy.deepcopy(model)
    graph = model.graph
    inits = {t.name: t.data for t in graph.initializers}
    known = set(inits) | {v.name for v in graph.inputs} | {o for n in graph.nodes for o in n.outputs if o}
    missing = [w for w in wrt if w not in known]
    if missing:
        raise ValueError(f"cannot differentiate with respect to '{missing[0]}': it is not a value of the graph")
    if loss_name not in known:
        raise ValueError(f"the loss '{loss_name}' is not a value of the graph")
    order = topological_order(graph, set(inits) | {v.name for v in graph.inputs})
    # differentiable dependence stops at ops without a gradient (a Shape feeding shape arithmetic)
    depends, path = _on_path(graph, order, set(wrt), loss_name, NO_GRADIENT)
    unreachable = [w for w in wrt if w not in {i for n in path for i in n.inputs} and w != loss_name]
    if unreachable:
        if any(unreachable[0] in n.inputs for n in _on_path(graph, order, set(wrt), loss_name)[1]):
            raise ValueError(f"no gradient reaches '{unreachable[0]}': every path from it to the loss goes through "
                             f"ops without a gradient")
        raise ValueError(f"'{unreachable[0]}' does not influence the loss '{loss_name}', so it has no gradient")
    for node in path:
        if node.op_type not in GRADIENT_RULES and node.op_type not in NO_GRADIENT:
            raise GradientNotRegisteredError(
                f"The gradient builder has not been registered: {node.op_type} for node {node.name}")

    all_values = sorted({o for n in graph.nodes for o in n.outputs if o} | {v.name for v in graph.inputs}
                        | set(inits))
    probe_names = [n for n in all_values if n not in inits]
    types = infer_types(model, probe_names)
    for name, data in inits.items():
        types[name] = TensorType(dtypes.from_numpy(data.dtype), list(data.shape))
    loss_type = types[loss_name]
    if int(np.prod([d if isinstance(d, int) else 2 for d in loss_type.shape])) != 1:
        raise ValueError(f"the loss '{loss_name}' must hold one value, but has shape {loss_type.shape}")

    builder = GraphBuilder(graph)
    ctx = _Context(builder, types, model.opset("") or 1, _folded_constants(model, order, inits, depends))
    seed = ort_names.grad(loss_name)
    builder.names.add(seed)
    graph.initializers.append(Tensor(seed, np.array(1.0, dtype=ctx.dtype(loss_name)), loss_type.elem_type))
    if loss_type.shape:  # a [1]-shaped loss: the scalar seed is broadcast to it
        seed = builder.op("Expand", [seed, builder.op("Shape", [loss_name])])
    contributions = {loss_name: [seed]}

    def gradient_of(value: str):
        parts = contributions.get(value)
        if not parts:
            return None
        if len(parts) > 1:
            builder.scope = ""
            total = builder.op("Sum", parts, outputs=[builder.fresh(f"{value}_grad_sum")])
            contributions[value] = [total]
        return contributions[value][0]

    for node in path:
        dys = [gradient_of(o) if o else None for o in node.outputs]
        if node.op_type in NO_GRADIENT or all(d is None for d in dys):
            continue
        ctx.node = node
        ctx.needs = [bool(i) and i in depends for i in node.inputs]
        builder.scope = f"{node.name or node.op_type}_Grad"
        rule = GRADIENT_RULES[node.op_type]
        grads = list(rule(ctx, [ctx.value(i) for i in node.inputs], [ctx.value(o) for o in node.outputs],
                          [d if d is None else Value(d, ctx, ctx.dtype(o)) for d, o in zip(dys, node.outputs)]))
        if len(grads) > len(node.inputs):
            raise ValueError(f"the gradient rule of {ctx.where()} returned {len(grads)} gradients for "
                             f"{len(node.inputs)} inputs")
        for name, g, need in zip(node.inputs, grads, ctx.needs):
            if need and g is not None:
                if getattr(rule, "broadcasts", False):
                    g = unbroadcast(ctx, g, ctx.shape(node.outputs[0]), name)
                contributions.setdefault(name, []).append(g)

    builder.scope = ""
    for w in wrt:
        g = gradient_of(w)
        if g is None:
            raise ValueError(f"no gradient reaches '{w}': every path from it to the loss goes through ops without "
                             f"a gradient")
        out = ort_names.grad(w)
        builder.names.add(out)
        graph.nodes.append(Node("Identity", [str(g)], [out], name=builder.fresh(f"{w}_grad_output")))
        graph.outputs.append(ValueInfo(out, TensorType(types[w].elem_type, list(types[w].shape))))
    if any(n.domain == MS_DOMAIN for n in graph.nodes):
        model.opset_imports.setdefault(MS_DOMAIN, 1)
    return model

