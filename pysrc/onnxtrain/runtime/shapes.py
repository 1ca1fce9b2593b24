"""Types and shapes of graph values, inferred by the ops' shape rules without running the graph.

One walk in topological order.  Every value gets an element type and dims: ints, or symbols (the graph
inputs' dim names, or symbols invented for dims nobody named), held in one symbol table where dims unify: a
weight that pins a symbol to a size makes it that size everywhere, and two symbols an op ties become one.
Small int tensors (shapes, axes, sizes) carry their values, symbols included, so that Reshape, Expand,
Slice and the like know their output shapes from a Shape -> Gather -> Concat chain.  A node whose inputs are
all known constants is run (its kernel on those very values); an op without a rule is run on dummy inputs
only when all its input shapes are fully known.  The rules live in ``shape_rules/``, one module per family.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.model import Graph, Model, Tensor, TensorType, ValueInfo
from ..ops.registry import normalize_domain
from .plan import IN_PLACE_OPS, node_reads, subgraphs, topological_order
from .session import Session
from .shape_rules import SHAPE_RULES, Out, ShapeInferenceError
from .shape_rules._context import Context, NoRule, UnknownRank
from .shape_rules._symbols import FRESH, Symbols

__all__ = ["ShapeInferenceError", "infer_types"]

SMALL = 1 << 16  # elements: values are carried (and nodes folded) for shapes, axes and constants, not weights
_NOT_FOLDED = {"Dropout", "Bernoulli", "Multinomial", "RandomNormal", "RandomUniform", "RandomNormalLike",
               "RandomUniformLike"}


def infer_types(model: Model, names: list) -> dict:
    """{name: TensorType} for ``names``, values of ``model``'s graph (a non-tensor value: its ir Type).
    Dims are ints, the graph's symbols, or None where nothing names them.  Raises ShapeInferenceError (a
    ValueError) naming the node, its inputs and the axis where shapes truly conflict or cannot be known."""
    symbols = Symbols()
    states = _infer_graph(model, model.graph, {}, symbols, needed=set(names))
    missing = [n for n in names if n not in states]
    if missing:
        raise ShapeInferenceError(f"'{missing[0]}' is neither a graph input, an initializer nor a node's output")
    return {n: _public(states[n], symbols) for n in names}


def _public(state: Out, symbols: Symbols):
    if state.type is not None:
        return state.type
    shape = None if state.shape is None else [symbols.public(d) for d in state.shape]
    return TensorType(state.elem, shape)


def _declared(t, symbols: Symbols) -> Out:
    if not isinstance(t, TensorType):
        return Out(None, None, type=t)
    shape = None if t.shape is None else [
        d if isinstance(d, int) else symbols.see(d) if isinstance(d, str) and d else symbols.fresh() for d in t.shape]
    return Out(t.elem_type, shape)


def _infer_graph(model: Model, graph: Graph, outer: dict, symbols: Symbols, needed=None, inputs=None) -> dict:
    states = dict(outer)
    inputs = inputs or {}
    for vi in graph.inputs:
        states[vi.name] = inputs[vi.name] if vi.name in inputs else _declared(vi.type, symbols)
    fed = {vi.name for vi in graph.inputs}
    for t in graph.initializers:
        if t.name not in fed:
            states[t.name] = Out(t.data_type, list(t.dims), t.data)
    order = topological_order(graph, set(states))
    if needed is not None:
        order = _ancestors(order, needed)
    declared = {v.name: v for v in graph.value_info}
    declared.update({v.name: v for v in graph.outputs})

    def infer_subgraph(sub: Graph, sub_inputs: list) -> list:
        given = {vi.name: s for vi, s in zip(sub.inputs, sub_inputs) if s is not None}
        inner = _infer_graph(model, sub, states, symbols, inputs=given)
        return [inner[v.name] for v in sub.outputs]

    for node in order:
        outs = _infer_node(model, node, states, symbols, infer_subgraph)
        for name, out in zip(node.outputs, outs):
            if name:
                states[name] = _merge(out, declared.get(name), symbols, node)
    return states


def _ancestors(order: list, needed: set) -> list:
    needed, kept = set(needed), []
    for node in reversed(order):
        if any(o in needed for o in node.outputs):
            kept.append(node)
            needed.update(n for n in node_reads(node) if n)
    return kept[::-1]


def _infer_node(model: Model, node, states: dict, symbols: Symbols, infer_subgraph) -> list:
    domain = normalize_domain(node.domain)
    c = Context(node, states, symbols, model.opset(domain) or 1, infer_subgraph)
    for name in node.inputs:
        if name and name not in states:
            c.fail(f"input '{name}' has no type")
    rule = SHAPE_RULES.get((domain, node.op_type))
    outs, why = None, ""
    if rule is not None:
        try:
            outs = rule(c)
        except UnknownRank:
            outs = [Out(c.elem(0) if c.has(0) else None, None) for _ in node.outputs]
        except NoRule as e:
            why = f" ({e})"
        if isinstance(outs, Out):
            outs = [outs]
        if outs is not None:
            outs = list(outs) + [Out(None, None)] * (len(node.outputs) - len(outs))
    wanted = [i for i, o in enumerate(node.outputs) if o]
    if outs is not None and all(outs[i].value is not None for i in wanted):
        return outs
    if _foldable(node, c, domain):
        try:
            return _run_node(model, node, c, [c.value(i) for i in range(c.n_inputs)], keep_values=True)
        except Exception:  # noqa: BLE001 - a kernel that cannot fold leaves the rule's answer
            if outs is None:
                raise
    if outs is not None:
        return outs
    return _without_rule(model, node, c, why)


def _foldable(node, c: Context, domain: str) -> bool:
    if not node.inputs or node.op_type in _NOT_FOLDED or (domain, node.op_type) in IN_PLACE_OPS \
            or subgraphs(node):
        return False
    for i in range(c.n_inputs):
        if c.has(i):
            v = c.value(i)
            if v is None or v.size > SMALL or c.state(i).type is not None:
                return False
    return True


def _without_rule(model: Model, node, c: Context, why: str = "") -> list:
    """An op with no shape rule: run its kernel on inputs of exactly the known shapes, or refuse it."""
    op = f"{node.domain or 'ai.onnx'}::{node.op_type}{why}"
    if subgraphs(node):
        c.fail(f"onnxtrain has no shape rule for {op}, and it holds subgraphs")
    arrays = []
    for i in range(c.n_inputs):
        if not c.has(i):
            arrays.append(None)
            continue
        s = c.state(i)
        if s.type is not None or s.shape is None or not all(isinstance(d, int) for d in c.shape(i)):
            c.fail(f"onnxtrain has no shape rule for {op}, and the dims of '{node.inputs[i]}' are not all known, "
                   f"so its outputs' shapes cannot be known without running it on real data")
        value = c.value(i)
        arrays.append(value if value is not None else _dummy(s.elem, c.shape(i)))
    try:
        return _run_node(model, node, c, arrays, keep_values=False)
    except ShapeInferenceError:
        raise
    except Exception as e:  # noqa: BLE001 - any kernel failure is reported as this node's
        c.fail(f"onnxtrain has no shape rule for {op}, and running it on inputs of these shapes failed: {e}")


def _dummy(elem, shape: list) -> np.ndarray:
    dtype = dtypes.to_numpy(elem)
    if dtype == object:
        return np.full(shape, "", dtype=object)
    return np.zeros(shape, dtype)


def _run_node(model: Model, node, c: Context, arrays: list, keep_values: bool) -> list:
    names = [n for n in node.inputs if n]
    by_name = dict(zip(node.inputs, arrays))
    inits = [Tensor(n, by_name[n], c.states[n].elem or dtypes.from_numpy(by_name[n].dtype))
             for n in dict.fromkeys(names)]
    outputs = [o for o in node.outputs if o]
    graph = Graph(name="shape", nodes=[node], outputs=[ValueInfo(o) for o in outputs], initializers=inits)
    with np.errstate(all="ignore"):
        values = Session(Model(graph=graph, ir_version=model.ir_version, opset_imports=model.opset_imports,
                               functions=model.functions)).run({})
    got = dict(zip(outputs, values))
    outs = []
    for o in node.outputs:
        v = got.get(o)
        if not isinstance(v, np.ndarray):
            outs.append(Out(None, None))
            continue
        keep = v if keep_values and v.size <= SMALL else None
        outs.append(Out(dtypes.from_numpy(v.dtype), [int(d) for d in v.shape], keep))
    return outs


def _merge(out: Out, declared, symbols: Symbols, node) -> Out:
    """The inferred ``out`` with what the graph declares for the value (onnx's merge: a declared size stands
    where inference has a symbol; a declared name names an invented symbol)."""
    if declared is None or not isinstance(declared.type, TensorType) or out.type is not None:
        return out
    t = declared.type
    elem = out.elem or t.elem_type
    if t.shape is None:
        return Out(elem, out.shape, out.value)
    if out.shape is None:
        return Out(elem, _declared(t, symbols).shape, out.value)
    if len(out.shape) != len(t.shape):
        raise ShapeInferenceError(f"{node.op_type} node '{node.name}': '{declared.name}' is declared with rank "
                                  f"{len(t.shape)} ({t.shape}) but has rank {len(out.shape)}")
    shape = []
    for axis, (d, e) in enumerate(zip(out.shape, t.shape)):
        r = symbols.find(d)
        if isinstance(e, int) and isinstance(r, int) and e != r:
            raise ShapeInferenceError(f"{node.op_type} node '{node.name}': axis {axis} of '{declared.name}' is "
                                      f"declared {e} but is {r}")
        if isinstance(e, int) or (isinstance(e, str) and e and isinstance(r, str) and r.startswith(FRESH)):
            if isinstance(r, str) and r.startswith(FRESH):
                symbols.unify(r, symbols.see(e) if isinstance(e, str) else e)
                d = symbols.find(r)
            elif isinstance(e, int):
                d = e
        shape.append(d)
    return Out(elem, shape, out.value)
