"""Compile a graph once into a list of prepared steps.

Nodes that no graph output needs are dropped (unless they update state in
place).  Every value gets an integer slot.  Each step holds its bound kernel,
the slots it reads and writes, its attribute keyword arguments, and the slots
whose values die after it.  Running is then a loop over the steps.

A subgraph (If's branches, Loop's and Scan's body) is planned once, as a Plan
whose ``outer_names`` are the values it reads from enclosing scopes.  Its
node's step reads those values after the node's own inputs, so that ordering,
dead-node removal and liveness in the enclosing plan count them like inputs;
the step's kernel is a ScopedKernel that binds the planned subgraphs to them.
"""
from __future__ import annotations

import heapq
import inspect
from dataclasses import dataclass
from operator import itemgetter

from ..ir import ort_names
from ..ir.model import Attribute, AttrType, Graph, Model, TensorType
from ..ir.ort_names import MS_DOMAIN
from ..ops import UnsupportedOpError, lookup
from ..ops.random import node_generator
from ..ops.registry import normalize_domain
from .attributes import attribute_problem, kernel_attributes
from .bit_patterns import bit_pattern_types
from .execute import ScopedKernel


# Ops that write into their inputs (the runtime's live gradient, parameter and moment buffers):
# they run even when nothing reads their outputs.
IN_PLACE_OPS = {(MS_DOMAIN, "InPlaceAccumulatorV2"), (MS_DOMAIN, ort_names.ADAMW), (MS_DOMAIN, ort_names.SGD),
                (MS_DOMAIN, "InplaceClipGradNorm")}


class GraphError(ValueError):
    """The graph cannot be planned (undefined input, cycle, missing kernel)."""


@dataclass(slots=True)
class Step:
    fn: object
    inputs: tuple     # slot per input; -1 for an omitted optional input
    outputs: tuple    # slot per output; -1 for an omitted optional output
    kwargs: dict
    free: tuple       # slots to drop after this step
    node: object
    # What the run loop uses, filled in by Plan: ``read(values)`` gives the arguments; ``write`` and
    # ``clear`` are ``outputs`` and ``free`` with the omitted outputs sent to a slot that is cleared at once.
    read: object = None
    write: tuple = ()
    clear: tuple = ()

    def describe(self) -> str:
        return describe_node(self.node)


def attribute_value(attr: Attribute):
    """An attribute as a kernel keyword argument."""
    t, v = attr.type, attr.value
    if t == AttrType.STRING:
        return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v
    if t == AttrType.STRINGS:
        return [s.decode("utf-8", "replace") if isinstance(s, (bytes, bytearray)) else s for s in v]
    if t == AttrType.TENSOR:
        return v.data
    if t == AttrType.TENSORS:
        return [x.data for x in v]
    if t in (AttrType.INTS, AttrType.FLOATS):
        return list(v)
    return v


def static_shape(value_info):
    """The shape in a ValueInfo (list of int | str | None), or None when unknown."""
    if value_info is None or not isinstance(value_info.type, TensorType):
        return None
    return None if value_info.type.shape is None else list(value_info.type.shape)


def subgraphs(node) -> list:
    """[(attribute name, Graph)] for the node's GRAPH attributes (GRAPHS too: each graph, same name)."""
    out = []
    for name, a in node.attributes.items():
        if a.type == AttrType.GRAPH and isinstance(a.value, Graph):
            out.append((name, a.value))
        elif a.type == AttrType.GRAPHS and a.value:
            out.extend((name, g) for g in a.value if isinstance(g, Graph))
    return out


def outer_names(graph: Graph) -> list:
    """The names ``graph`` reads (in its nodes, nested subgraphs and outputs) without defining them, in
    first-use order: the values it takes from enclosing scopes."""
    defined = {v.name for v in graph.inputs} | {t.name for t in graph.initializers}
    for node in graph.nodes:
        defined.update(node.outputs)
    out = {}
    for node in graph.nodes:
        for name in node_reads(node):
            if name and name not in defined:
                out[name] = None
    for v in graph.outputs:
        if v.name not in defined:
            out[v.name] = None
    return list(out)


def node_reads(node) -> list:
    """The names a node reads: its inputs, then what its subgraphs read from enclosing scopes."""
    if not node.attributes:
        return node.inputs
    implicit = [n for _, g in subgraphs(node) for n in outer_names(g)]
    if not implicit:
        return node.inputs
    return list(node.inputs) + [n for n in dict.fromkeys(implicit) if n not in node.inputs]


def topological_order(graph: Graph, available: set) -> list:
    """Nodes ordered so that every input is produced before use (stable: file order when valid)."""
    producer_of = {}
    for i, node in enumerate(graph.nodes):
        for out in node.outputs:
            if out:
                producer_of[out] = i
    pending = {}
    users = {}
    for i, node in enumerate(graph.nodes):
        deps = set()
        for name in node_reads(node):
            if not name or name in available:
                continue
            if name not in producer_of:
                raise GraphError(f"{describe_node(node)} reads '{name}', which is neither a graph input, an "
                                 f"initializer nor the output of any node")
            deps.add(producer_of[name])
        pending[i] = len(deps)
        for d in deps:
            users.setdefault(d, []).append(i)
    ready = [i for i, n in pending.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(graph.nodes[i])
        for u in users.get(i, ()):
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(graph.nodes):
        stuck = [graph.nodes[i] for i, n in pending.items() if n > 0]
        raise GraphError("the graph has a cycle through " + ", ".join(describe_node(n) for n in stuck[:5]))
    return order


def live_nodes(order: list, outputs) -> list:
    """The nodes of ``order`` that a graph output needs, directly or through other nodes, and the
    in-place nodes with what they need; in the same order."""
    needed = set(outputs)
    kept = []
    for node in reversed(order):
        if (normalize_domain(node.domain), node.op_type) in IN_PLACE_OPS or any(o in needed for o in node.outputs):
            kept.append(node)
            needed.update(name for name in node_reads(node) if name)
    return kept[::-1]


def describe_node(node) -> str:
    name = f" '{node.name}'" if node.name else ""
    return f"{node.domain or 'ai.onnx'}::{node.op_type} node{name}"


class Plan:
    """A graph compiled for execution.

    ``inputs`` are the names callers feed (graph inputs, in order); an input
    that also has an initializer takes the initializer unless it is fed.
    A subgraph's plan also has ``outer_names`` (with ``outer_slots``), the
    values its caller supplies from enclosing scopes.
    """

    def __init__(self, model: Model, graph: Graph | None = None, outer: list = ()):
        graph = graph or model.graph
        self.graph = graph
        initializers = {t.name: t.data for t in graph.initializers}
        self.input_names = [v.name for v in graph.inputs]
        self.input_set = frozenset(self.input_names)
        self.input_info = [v for v in graph.inputs]
        self.output_names = [v.name for v in graph.outputs]
        self.outer_names = [n for n in outer if n not in initializers and n not in self.input_names]
        available = set(initializers) | set(self.input_names) | set(self.outer_names)
        order = live_nodes(topological_order(graph, available), self.output_names)
        try:
            bit_pattern_types(graph, order, describe_node)
        except ValueError as e:
            raise GraphError(str(e)) from None
        reads = {id(node): node_reads(node) for node in order}
        used = {name for node in order for name in reads[id(node)]} | set(self.output_names)

        slot_of: dict = {}

        def slot(name: str) -> int:
            if not name:
                return -1
            if name not in slot_of:
                slot_of[name] = len(slot_of)
            return slot_of[name]

        for name in self.input_names:
            slot(name)
        for name in initializers:
            slot(name)
        for name in self.outer_names:
            slot(name)
        shapes = {name: static_shape(vi) for name, vi in graph.value_info_map().items()}

        raw_steps = []
        for node in order:
            raw_steps.append((node, self._bind(model, node, shapes, used, reads[id(node)]),
                              tuple(slot(n) for n in reads[id(node)]), tuple(slot(n) for n in node.outputs)))
        self.slot_of = slot_of
        self.input_slots = [slot_of[n] for n in self.input_names]
        self.outer_slots = [slot_of[n] for n in self.outer_names]
        missing = [n for n in self.output_names if n not in slot_of]
        if missing:
            raise GraphError(f"graph output '{missing[0]}' is not produced by any node, input or initializer")
        self.output_slots = [slot_of[n] for n in self.output_names]

        keep = set(self.output_slots) | {slot_of[n] for n in initializers}
        last_use = {}
        for i, (_, _, ins, outs) in enumerate(raw_steps):
            for s in ins + outs:
                if s >= 0:
                    last_use[s] = i
        dies_after: dict = {}
        for s, i in last_use.items():
            if s not in keep:
                dies_after.setdefault(i, []).append(s)
        self.steps = [Step(fn, ins, outs, kwargs, tuple(dies_after.get(i, ())), node)
                      for i, (node, (fn, kwargs), ins, outs) in enumerate(raw_steps)]
        self.template = [None] * len(slot_of)
        for name, data in initializers.items():
            self.template[slot_of[name]] = data
        self._prepare_run()

    def _prepare_run(self) -> None:
        """Fill in each step's ``read``, ``write`` and ``clear``.  Two extra slots follow the values: an
        omitted input reads the first (always None), an omitted output goes to the second."""
        none_slot, sink = len(self.template), len(self.template) + 1
        self.template += [None, None]
        for step in self.steps:
            ins = tuple(none_slot if s < 0 else s for s in step.inputs)
            step.read = (itemgetter(slice(ins[0], ins[0] + 1)) if len(ins) == 1 else itemgetter(*ins) if ins
                         else itemgetter(slice(0, 0)))
            step.write = tuple(sink if s < 0 else s for s in step.outputs)
            step.clear = step.free + ((sink,) if sink in step.write else ())

    @staticmethod
    def _bind(model: Model, node, shapes: dict, used: set, reads: list):
        domain = normalize_domain(node.domain)
        opset = model.opset(domain)
        try:
            fn = lookup(node.op_type, domain, opset if opset is not None else 1)
        except UnsupportedOpError as e:
            raise GraphError(f"{describe_node(node)}: {e}") from None
        expected = kernel_attributes(fn)
        for name, a in node.attributes.items():
            if name not in expected:
                raise GraphError(f"{describe_node(node)}: onnxtrain's kernel does not support attribute "
                                 f"'{name}'")
            problem = attribute_problem(a, expected[name])
            if problem:
                raise GraphError(f"{describe_node(node)}: attribute '{name}' {problem}")
        kwargs = {name: attribute_value(a) for name, a in node.attributes.items()}
        params = inspect.signature(fn).parameters
        if "_outputs" in params:
            kwargs["_outputs"] = tuple(bool(o) and o in used for o in node.outputs)
        if "_generator" in params:   # a random op's own generator, kept by this plan and advanced by every run
            kwargs["_generator"] = node_generator(kwargs.get("seed"))
        if "_output_shapes" in params:
            kwargs["_output_shapes"] = [shapes.get(o) for o in node.outputs]
        bodies = {}
        for name, a in node.attributes.items():
            if a.type == AttrType.GRAPHS:
                raise GraphError(f"{describe_node(node)}: attribute '{name}' holds several graphs, which no "
                                 f"onnxtrain kernel takes")
            if a.type == AttrType.GRAPH:
                try:
                    bodies[name] = Plan(model, a.value, outer_names(a.value))
                except GraphError as e:
                    raise GraphError(f"in {name} of {describe_node(node)}: {e}") from None
                del kwargs[name]
        if bodies:
            return ScopedKernel(fn, len(node.inputs), kwargs, bodies, reads,
                                describe_node(node)), {}
        return fn, kwargs
