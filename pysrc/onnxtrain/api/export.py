"""The inference model that Module.export_model_for_inferencing writes."""
from __future__ import annotations

from ..ir import dtypes
from ..ir.model import Graph, Model, Tensor, ValueInfo
from ..ir.rewrite import inference_batchnorm
from ..runtime.shapes import infer_types


def _needed(graph: Graph, output_names: list) -> tuple:
    """(value names, nodes) that ``output_names`` depend on, nodes in graph order."""
    producers = {o: node for node in graph.nodes for o in node.outputs if o}
    needed, kept, stack = set(), set(), list(output_names)
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        node = producers.get(name)
        if node is not None and id(node) not in kept:
            kept.add(id(node))
            stack.extend(i for i in node.inputs if i)
    return needed, [n for n in graph.nodes if id(n) in kept]


def _inference_nodes(nodes: list, needed: set) -> list:
    """``nodes``, where a BatchNormalization with training_mode=0 keeps only Y (``inference_batchnorm``)."""
    out = []
    for node in nodes:
        if node.op_type != "BatchNormalization" or node.attr("training_mode", 1) != 0 or len(node.outputs) < 2:
            out.append(node)
        else:
            out += inference_batchnorm(node, needed)
    return out


def inference_model(eval_model: Model, output_names: list, parameters: dict) -> Model:
    """The eval graph pruned to ``output_names`` with ``parameters`` turned into initializers."""
    graph = eval_model.graph
    known = {o for node in graph.nodes for o in node.outputs if o} | {v.name for v in graph.inputs}
    missing = [n for n in output_names if n not in known]
    if not output_names:
        raise ValueError(f"name at least one output to export (outputs of the eval model's nodes include "
                         f"{sorted(known - set(parameters))[:20]})")
    if missing:
        raise ValueError(f"Expected graph output for inference graph output could not be found: {missing[0]} "
                         f"(outputs of the eval model's nodes include {sorted(known - set(parameters))[:20]})")
    needed, nodes = _needed(graph, output_names)
    initializers = [t for t in graph.initializers if t.name in needed and t.name not in parameters]
    initializers += [Tensor(vi.name, parameters[vi.name].copy(), dtypes.from_numpy(parameters[vi.name].dtype))
                     for vi in graph.inputs if vi.name in parameters and vi.name in needed]
    inputs = [vi for vi in graph.inputs if vi.name in needed and vi.name not in parameters]
    value_info = [vi for vi in graph.value_info if vi.name in needed and vi.name not in output_names]
    new_graph = Graph(name=graph.name, nodes=_inference_nodes(nodes, needed), inputs=inputs, outputs=[],
                      initializers=initializers, value_info=value_info, doc_string=graph.doc_string)
    model = Model(graph=new_graph, ir_version=eval_model.ir_version, opset_imports=dict(eval_model.opset_imports),
                  producer_name=eval_model.producer_name, producer_version=eval_model.producer_version,
                  domain=eval_model.domain, model_version=eval_model.model_version,
                  doc_string=eval_model.doc_string, metadata_props=dict(eval_model.metadata_props),
                  functions=list(eval_model.functions))
    infos = graph.value_info_map()
    untyped = [n for n in output_names if infos.get(n) is None or infos[n].type is None]
    types = infer_types(model, untyped) if untyped else {}
    new_graph.outputs = [infos[n] if n not in types else ValueInfo(n, types[n]) for n in output_names]
    return model
