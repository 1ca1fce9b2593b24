"""Graphs cut and joined: the part of a model that computes some of its values (``cut``), and two models run one
after the other with outputs of the first feeding inputs of the second (``compose``)."""
from __future__ import annotations

import copy

from .model import Graph, Model, ValueInfo


class ComposeError(ValueError):
    """A cut or a composition that names a value the graph lacks, or would give two values one name."""


def needed_nodes(graph: Graph, outputs) -> list:
    """The nodes of ``graph`` that ``outputs`` (value names) depend on, in graph order."""
    producer = {out: i for i, node in enumerate(graph.nodes) for out in node.outputs if out}
    need, todo = set(), list(outputs)
    while todo:
        i = producer.get(todo.pop())
        if i is None or i in need:
            continue
        need.add(i)
        todo.extend(name for name in graph.nodes[i].inputs if name)
    return [graph.nodes[i] for i in sorted(need)]


def _value_info(graph: Graph, name: str, new_name: str) -> ValueInfo:
    known = graph.value_info_map().get(name)
    return ValueInfo(new_name, None if known is None else copy.deepcopy(known.type))


def _rename_nodes(nodes: list, rename) -> list:
    out = []
    for node in nodes:
        node = copy.copy(node)
        node.inputs = [rename(n) if n else n for n in node.inputs]
        node.outputs = [rename(n) if n else n for n in node.outputs]
        node.name = rename(node.name) if node.name else node.name
        out.append(node)
    return out


def cut(model: Model, outputs: dict) -> Model:
    """The part of ``model`` that computes ``outputs`` ({new output name: value name in the model}), with those
    values renamed; the inputs and initializers it does not use are dropped.  Subgraphs of control-flow nodes are
    not searched for the outer values they read."""
    graph = model.graph
    produced = _names(graph)
    missing = [v for v in outputs.values() if v not in produced]
    if missing:
        raise ComposeError(f"the model has no value {missing[0]!r} to cut at")
    back = {old: new for new, old in outputs.items()}
    clash = [new for new in outputs if new in produced and back.get(new) != new and new not in back]
    if clash:
        raise ComposeError(f"the model already has a value named {clash[0]!r}")
    rename = lambda n: back.get(n, n)  # noqa: E731
    nodes = needed_nodes(graph, outputs.values())
    used = {n for node in nodes for n in node.inputs} | set(outputs.values())
    inputs = [copy.deepcopy(v) for v in graph.inputs if v.name in used]
    inits = [t for t in graph.initializers if t.name in used]
    new_graph = Graph(name=graph.name, nodes=_rename_nodes(nodes, rename), inputs=inputs, initializers=inits,
                      outputs=[_value_info(graph, old, new) for new, old in outputs.items()],
                      doc_string=graph.doc_string)
    return Model(graph=new_graph, ir_version=model.ir_version, opset_imports=dict(model.opset_imports),
                 producer_name=model.producer_name, producer_version=model.producer_version,
                 metadata_props=dict(model.metadata_props), functions=list(model.functions))


def _names(graph: Graph) -> set:
    return ({v.name for v in graph.inputs} | {t.name for t in graph.initializers}
            | {o for node in graph.nodes for o in node.outputs if o})


def compose(first: Model, second: Model, connect: dict, prefix: str = "", outputs=None) -> Model:
    """``first`` then ``second``: each input of ``second`` named in ``connect`` ({second's input: first's output})
    takes that value of ``first``.  Every name of ``second`` but its graph outputs gets ``prefix``.  The composed
    model's inputs are first's and second's unconnected ones; its outputs ``outputs`` (names of either's graph
    outputs; default second's).  Opsets are the higher of the two."""
    a, b = first.graph, second.graph
    b_inputs = {v.name for v in b.inputs}
    a_outputs = {v.name for v in a.outputs}
    for b_name, a_name in connect.items():
        if b_name not in b_inputs:
            raise ComposeError(f"the second model has no input {b_name!r}")
        if a_name not in a_outputs:
            raise ComposeError(f"the first model has no output {a_name!r}")
    keep = {v.name for v in b.outputs}
    rename = lambda n: connect[n] if n in connect else (n if n in keep else prefix + n)  # noqa: E731
    renamed_b = {rename(n) for n in _names(b) if n not in connect}
    clash = sorted(renamed_b & _names(a))
    if clash:
        raise ComposeError(f"both models have a value named {clash[0]!r}; give the second a prefix")
    inits = []
    for t in b.initializers:
        t = copy.copy(t)
        t.name = rename(t.name)
        inits.append(t)
    b_free = []
    for v in b.inputs:
        if v.name not in connect:
            v = copy.deepcopy(v)
            v.name = rename(v.name)
            b_free.append(v)
    value_info = [copy.deepcopy(v) for v in a.value_info]
    for v in b.value_info:
        v = copy.deepcopy(v)
        v.name = rename(v.name)
        value_info.append(v)
    all_outputs = {v.name: v for v in a.outputs}
    all_outputs.update({v.name: v for v in b.outputs})
    wanted = [v.name for v in b.outputs] if outputs is None else list(outputs)
    unknown = [n for n in wanted if n not in all_outputs]
    if unknown:
        raise ComposeError(f"neither model has an output {unknown[0]!r}")
    graph = Graph(name=b.name or a.name, nodes=list(a.nodes) + _rename_nodes(b.nodes, rename),
                  inputs=[copy.deepcopy(v) for v in a.inputs] + b_free,
                  outputs=[copy.deepcopy(all_outputs[n]) for n in wanted],
                  initializers=list(a.initializers) + inits, value_info=value_info)
    opsets = dict(first.opset_imports)
    for domain, version in second.opset_imports.items():
        opsets[domain] = max(version, opsets.get(domain, 0))
    if "ai.onnx" in opsets:
        opsets[""] = max(opsets.pop("ai.onnx"), opsets.get("", 0))
    return Model(graph=graph, ir_version=max(first.ir_version, second.ir_version), opset_imports=opsets,
                 producer_name="onnxtrain", functions=list(first.functions) + list(second.functions))
