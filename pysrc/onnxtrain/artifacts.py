"""generate_artifacts: the training, eval and optimizer models and the checkpoint, from a forward model,
following onnxruntime-training 1.19.2's artifact contract (so ORT loads and trains them too)."""
from __future__ import annotations

import copy
import os
from enum import Enum

from . import onnxblock
from ._files import atomic_write
from .checkpoint import CheckpointData, write_checkpoint
from .ir import load as load_ir, ort_names, to_bytes
from .ir.model import Model
from .onnxblock import protos
from .onnxblock.building import building, empty_model
from .onnxblock.training_graph import build_training_models
from .ort_format import encode_ort_model, required_operators_config


class LossType(Enum):
    MSELoss = 1
    CrossEntropyLoss = 2
    BCEWithLogitsLoss = 3
    L1Loss = 4


class OptimType(Enum):
    AdamW = 1
    SGD = 2


def enum_member(enum, name: str):
    """``enum[name]`` with an error that lists the choices."""
    try:
        return enum[str(name)]
    except KeyError:
        raise ValueError(f"unknown {enum.__name__} {name!r}; choose one of {[m.name for m in enum]}") from None


_LOSSES = {LossType.MSELoss: onnxblock.loss.MSELoss, LossType.CrossEntropyLoss: onnxblock.loss.CrossEntropyLoss,
           LossType.BCEWithLogitsLoss: onnxblock.loss.BCEWithLogitsLoss, LossType.L1Loss: onnxblock.loss.L1Loss}
_OPTIMIZERS = {OptimType.AdamW: onnxblock.optim.AdamW, OptimType.SGD: onnxblock.optim.SGD}


def _block(what: str, value, enum, table: dict):
    """The onnxblock Block for ``value``: a name of ``enum`` (as the CLI and the page take), a member, or a
    Block itself."""
    if isinstance(value, str):
        value = enum_member(enum, value)
    if isinstance(value, enum):
        return table[value]()
    if callable(value):
        return value
    raise TypeError(f"{what} must be one of {[m.name for m in enum]} (a name or {enum.__name__} member) or an "
                    f"onnxblock Block, not {type(value).__name__} {value!r}")


def _as_model(model) -> Model:
    if isinstance(model, Model):
        return copy.deepcopy(model)
    if protos.is_proto(model):  # an onnx.ModelProto, without importing onnx
        return protos.model_from_proto(model)
    return load_ir(model)


def _ort_files(onnx_name: str, model: Model, directory, prefix: str) -> dict:
    """What onnxruntime's converter writes beside ``onnx_name`` (its Fixed style at its default level, "all"):
    ``<stem>.ort`` and ``<stem>.required_operators.config``, whose header names the .ort file by its absolute
    path.  The model is written as it is, not optimized first."""
    stem = onnx_name[:-len(".onnx")]
    ort_name = stem + ".ort"
    ort_path = ort_name if directory is None else os.path.abspath(os.path.join(os.fspath(directory), prefix + ort_name))
    return {ort_name: encode_ort_model(model),
            stem + ".required_operators.config": required_operators_config(model, ort_path).encode("utf-8")}


def generate_artifacts(model, requires_grad=None, frozen_params=None, loss=None, optimizer=None,
                       artifact_directory=None, prefix: str = "", ort_format: bool = False, custom_op_library=None,
                       additional_output_names=None, nominal_checkpoint: bool = False, loss_input_names=None):
    """Generate the training artifacts.  With ``artifact_directory=None`` return them as a dict of bytes
    (``training_model.onnx``, ``eval_model.onnx``, ``optimizer_model.onnx``, ``checkpoint`` and, if asked,
    ``nominal_checkpoint``; with ``ort_format``, each model's ``.ort`` and ``.required_operators.config`` too);
    otherwise write ``<prefix><name>`` files there atomically, once all of them are made."""
    if custom_op_library is not None:
        raise NotImplementedError("onnxtrain cannot load custom op libraries")
    given_proto = protos.is_proto(model)
    base = _as_model(model)
    inits = [t.name for t in base.graph.initializers]
    inputs = [v.name for v in base.graph.inputs]
    requires_grad, frozen = list(requires_grad or []), list(frozen_params or [])
    unknown = [n for n in requires_grad + frozen if n not in inits and n not in inputs]
    if unknown:
        raise ValueError(f"'{unknown[0]}' is not an initializer of the model, nor an input "
                         f"(initializers: {inits[:20]}, inputs: {inputs[:20]})")
    if optimizer is not None and not requires_grad:
        raise ValueError("an optimizer needs requires_grad: name the parameters to train")
    additional = list(additional_output_names or [])
    loss_block = None if loss is None else _block("loss", loss, LossType, _LOSSES)
    opt_block = None if optimizer is None else _block("optimizer", optimizer, OptimType, _OPTIMIZERS)

    forward_outputs = {v.name: v for v in base.graph.outputs}
    with building(base, protos=given_proto) as b:  # user loss blocks see self.base as the model was given
        if loss_block is None:
            loss_name = base.graph.outputs[0].name
        else:
            loss_name = loss_block(*(loss_input_names or list(forward_outputs)))
        model = b.model
    missing = [n for n in additional if n not in forward_outputs]
    if missing:
        raise ValueError(f"additional output '{missing[0]}' is not an output of the forward model")
    training, eval_model, (trainable_tensors, frozen_tensors) = build_training_models(
        model, loss_name, [forward_outputs[n] for n in additional], requires_grad, frozen)

    opset = base.opset("") or 17
    models = {ort_names.TRAINING_MODEL: training, ort_names.EVAL_MODEL: eval_model}
    if opt_block is not None:
        with building(empty_model(opset)) as opt:
            opt_block((trainable_tensors, frozen_tensors))
        models[ort_names.OPTIMIZER_MODEL] = opt.model
    out = {}
    for name, m in models.items():
        out[name] = to_bytes(m)
        if ort_format:
            out.update(_ort_files(name, m, artifact_directory, prefix))
    state = CheckpointData(trainable={t.name: t.data for t in trainable_tensors},
                           frozen={t.name: t.data for t in frozen_tensors})
    out[ort_names.CHECKPOINT] = write_checkpoint(state, layout="artifact")
    if nominal_checkpoint:
        out[ort_names.NOMINAL_CHECKPOINT] = write_checkpoint(
            CheckpointData(trainable=state.trainable, frozen=state.frozen, is_nominal=True), layout="artifact")
    if artifact_directory is None:
        return out
    os.makedirs(artifact_directory, exist_ok=True)
    for name, data in out.items():
        atomic_write(os.path.join(os.fspath(artifact_directory), prefix + name), data)
    return None
