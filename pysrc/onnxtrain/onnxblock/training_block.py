"""TrainingBlock: a Block whose build() returns the loss; calling it also builds the training and eval models."""
from __future__ import annotations

import copy

from .blocks import Block
from .building import current
from .training_graph import build_training_models


class TrainingBlock(Block):
    """Subclass, implement ``build(self, *output_names)`` returning the loss name, mark parameters with
    ``requires_grad(name)``, call it inside ``onnxblock.base(model)``, then take ``to_model_proto()`` and
    ``parameters()``."""

    def __init__(self):
        super().__init__()
        self._requires_grad, self._frozen_params = [], []
        self._parameters = self._training_model = self._eval_model = None

    def requires_grad(self, argument_name: str, value: bool = True) -> None:
        keep, drop = (self._requires_grad, self._frozen_params) if value else (self._frozen_params,
                                                                                self._requires_grad)
        if argument_name in drop:
            drop.remove(argument_name)
        if argument_name not in keep:
            keep.append(argument_name)

    def parameters(self):
        """(trainable, frozen) parameter Tensors, known once the block has been called."""
        if self._parameters is None:
            raise RuntimeError("Please build the training model first before trying to retrieve the parameters.")
        return self._parameters

    def to_model_proto(self):
        """(training model, eval model) as onnxtrain IR Models (``onnxtrain.ir.to_bytes`` gives the files)."""
        if self._training_model is None:
            raise RuntimeError("Please build the training and eval models first before trying to retrieve them.")
        return self._training_model, self._eval_model

    def __call__(self, *args, **kwargs):
        output = self.build(*args, **kwargs)
        inits = {t.name for t in current().model.graph.initializers}
        unknown = [n for n in self._requires_grad + self._frozen_params if n not in inits]
        if unknown:
            raise ValueError(f"'{unknown[0]}' is not an initializer of the model")
        self._training_model, self._eval_model, self._parameters = build_training_models(
            copy.deepcopy(current().model), output, [], self._requires_grad, self._frozen_params)
        return output
