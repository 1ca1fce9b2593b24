"""TrainingBlock: a Block whose build() returns the loss; calling it also builds the training and eval models."""
from __future__ import annotations

from . import protos
from .blocks import Block
from .building import current, shallow_copy
from .training_graph import build_training_models


class TrainingBlock(Block):
    """Subclass, implement ``build(self, *output_names)`` returning the loss name, mark parameters (or graph
    inputs) with ``requires_grad(name)``, call it inside ``onnxblock.base(model)``, then take
    ``to_model_proto()`` and ``parameters()``.  Where the base was an ``onnx.ModelProto``, these are
    ``onnx.ModelProto`` and ``onnx.TensorProto``; otherwise onnxtrain IR Models and Tensors."""

    def __init__(self):
        super().__init__()
        self._requires_grad, self._frozen_params = [], []
        self._parameters = self._training_model = self._eval_model = None
        self._protos = False

    def requires_grad(self, argument_name: str, value: bool = True) -> None:
        keep, drop = (self._requires_grad, self._frozen_params) if value else (self._frozen_params,
                                                                                self._requires_grad)
        if argument_name in drop:
            drop.remove(argument_name)
        if argument_name not in keep:
            keep.append(argument_name)

    def parameters(self):
        """(trainable, frozen) parameters, known once the block has been called."""
        if self._parameters is None:
            raise RuntimeError("Please build the training model first before trying to retrieve the parameters.")
        if self._protos and not all(protos.is_proto(t) for group in self._parameters for t in group):
            self._parameters = tuple([protos.tensor_to_proto(t) for t in group] for group in self._parameters)
        return self._parameters

    def to_model_proto(self):
        """(training model, eval model); converted to ``onnx.ModelProto`` once, on the first call, where the
        base was one."""
        if self._training_model is None or self._eval_model is None:
            raise RuntimeError("Please build the training and eval models first before trying to retrieve them.")
        if self._protos and not protos.is_proto(self._training_model):
            self._training_model = protos.model_to_proto(self._training_model)
            self._eval_model = protos.model_to_proto(self._eval_model)
        return self._training_model, self._eval_model

    def __call__(self, *args, **kwargs):
        b = current()
        output = self._build(b, args, kwargs)
        with b.own_code():
            graph = b.model.graph
            known = {t.name for t in graph.initializers}
            inputs = {v.name for v in graph.inputs}
            unknown = [n for n in self._requires_grad if n not in known | inputs]
            unknown += [n for n in self._frozen_params if n not in known | inputs]
            if unknown:
                raise ValueError(f"'{unknown[0]}' is not an initializer of the model, nor an input")
            self._training_model, self._eval_model, self._parameters = build_training_models(
                shallow_copy(b.model), output, [], self._requires_grad, self._frozen_params)
            self._protos = b.protos
            b.replace(shallow_copy(self._training_model))
        return output
