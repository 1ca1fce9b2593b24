"""From a model with a loss to ORT's training and eval models: parameters become inputs, the gradient
graph is built, and gradients accumulate in place into caller-fed buffers."""
from __future__ import annotations

import copy

from ..autodiff import build_gradient_graph
from ..ir import ort_names
from ..ir.dtypes import DataType
from ..ir.model import Graph, Model, Node, TensorType, ValueInfo
from ..ir.rewrite import inference_batchnorm
from ..runtime.shapes import infer_types


def _read_names(graph) -> set:
    """Every value name a node of ``graph`` (or of its subgraphs) reads, and the graph's outputs."""
    names = {v.name for v in graph.outputs}
    for node in graph.nodes:
        names.update(node.inputs)
        for a in node.attributes.values():
            for sub in (a.value if isinstance(a.value, list) else [a.value]):
                if isinstance(sub, Graph):
                    names |= _read_names(sub)
    return names


def _inference_batchnorm(graph, node, read: set) -> list:
    """BatchNormalization with training_mode=0, which may have only its output Y: the running-statistics
    outputs are dropped, or, where something reads them, become Identity copies of the unchanged running
    statistics.  (ORT 1.19.2's own eval model keeps them, and ORT then refuses to load it.)"""
    node.attributes["training_mode"].value = 0
    dropped = {n for n in node.outputs[1:] if n}
    graph.value_info = [v for v in graph.value_info if v.name not in dropped]
    return inference_batchnorm(node, read)


def _eval_copy(model: Model) -> Model:
    """The model with training behaviour off: Dropout without training_mode, BatchNorm training_mode=0."""
    model = copy.deepcopy(model)
    graph = model.graph
    read = _read_names(graph)
    nodes = []
    for node in graph.nodes:
        if node.op_type == "Dropout" and len(node.inputs) > 2:
            node.inputs[2] = ""
        if node.op_type == "BatchNormalization" and "training_mode" in node.attributes:
            nodes += _inference_batchnorm(graph, node, read)
        else:
            nodes.append(node)
    graph.nodes = nodes
    return model


def _accumulation(model: Model, differentiated: list, n_user_outputs: int) -> None:
    """Replace the gradient outputs with in-place accumulation into caller-fed buffers, typed as the values
    differentiated (parameters, and graph inputs that require a gradient)."""
    graph = model.graph
    values = {v.name: v for v in graph.inputs}
    outputs = graph.outputs[:n_user_outputs]
    for i, name in enumerate(differentiated):
        graph.nodes.append(Node("InPlaceAccumulatorV2",
                                [ort_names.grad_buffer(name), ort_names.grad(name), ort_names.LAZY_RESET_GRAD],
                                [ort_names.grad_flag(name)], name=ort_names.accumulator_node(n_user_outputs + i),
                                domain=ort_names.MS_DOMAIN))
        outputs.append(ValueInfo(ort_names.grad_flag(name), TensorType(DataType.BOOL, [1])))
    graph.inputs += [ValueInfo(ort_names.grad_buffer(n), copy.deepcopy(values[n].type)) for n in differentiated]
    graph.inputs.append(ValueInfo(ort_names.LAZY_RESET_GRAD, TensorType(DataType.BOOL, [1])))
    graph.outputs = outputs
    model.opset_imports.setdefault(ort_names.MS_DOMAIN, 1)


def build_training_models(model: Model, loss_name: str, additional_outputs: list, requires_grad: list, frozen: list):
    """(training model, eval model, (trainable tensors, frozen tensors)); ``model`` is changed.
    ``requires_grad`` names parameters (initializers) and graph inputs; as in ORT, gradients follow the
    order of the training model's inputs: the graph inputs first, then the parameters in initializer order."""
    probe = copy.copy(model)
    probe.graph = copy.copy(model.graph)
    probe.graph.outputs = [ValueInfo(loss_name)]
    loss_type = infer_types(probe, [loss_name])[loss_name]
    model.graph.outputs = [ValueInfo(loss_name, loss_type)] + list(additional_outputs)
    input_grads = [v.name for v in model.graph.inputs if v.name in requires_grad]
    by_name = {t.name: t for t in model.graph.initializers}
    order = [t.name for t in model.graph.initializers if t.name in requires_grad or t.name in frozen]
    trainable = [n for n in order if n in requires_grad]
    frozen = [n for n in order if n in frozen and n not in requires_grad]
    for name in order:
        model.graph.initializers.remove(by_name[name])
    model.graph.inputs += [ValueInfo(n, TensorType(by_name[n].data_type, list(by_name[n].dims))) for n in order]
    eval_model = _eval_copy(model)
    differentiated = input_grads + trainable
    training = build_gradient_graph(model, loss_name, differentiated) if differentiated else copy.deepcopy(model)
    _accumulation(training, differentiated, 1 + len(additional_outputs))
    return training, eval_model, ([by_name[n] for n in trainable], [by_name[n] for n in frozen])
