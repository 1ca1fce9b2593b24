"""Module: train and eval steps over a CheckpointState, with onnxruntime.training.api's names and semantics."""
from __future__ import annotations

import numpy as np

from .. import ir, ort_format
from ..ir.model import Model, TensorType
from ..ir.ort_names import LAZY_RESET_GRAD, buffer_param, grad_buffer, is_grad_flag
from ..providers import open_provider
from ..runtime import Session
from ..runtime.residency import Residency
from .checkpoint_state import CheckpointState
from .errors import ArtifactError, ParameterBufferError, nominal_state_error, reworded
from .export import inference_model
from .values import ContiguousParameters, as_ort_values, fed_ort_values, host_array

def load_model(source, what: str) -> Model:
    """An IR model from a path or bytes of an ONNX or ORT format model, or an IR Model; errors name ``what``."""
    if isinstance(source, Model):
        return source
    try:
        return ort_format.load_model(source)
    except (OSError, ValueError) as e:
        raise reworded(e, f"cannot load the {what}: {e}") from e


class Module:
    """Runs the training model (forward, backward, gradient accumulation) and the eval model.

    Models may be given as paths or bytes.  Parameters and gradient buffers
    live in ``state`` and are shared with the Optimizer.
    """

    def __init__(self, train_model_uri, state: CheckpointState, eval_model_uri=None, device: str = "cpu",
                 session_options=None):
        if not isinstance(state, CheckpointState):
            raise TypeError(f"state must be a CheckpointState, got {type(state).__name__}")
        self._state = state
        self.device = device
        self._provider = open_provider(device, int(getattr(session_options, "intra_op_num_threads", 0) or 0))
        self._residency = _residency(self._provider, state)
        self.training = True
        self._accumulate = False  # False: the next train step overwrites the gradients

        self._train_model = load_model(train_model_uri, "training model")
        self._train = Session(self._train_model, self._provider)
        names = self._train.input_names
        entries = state._entries
        self._param_names = [n for n in names if n in entries]
        self._trainable_names = [n for n in self._param_names if entries[n].requires_grad]
        buffers_of = [buffer_param(n) for n in names]
        orphans = [p for p in buffers_of if p is not None and p not in entries]
        if orphans:
            raise ArtifactError(f"the training model trains parameters {orphans} that the checkpoint does not have "
                             f"(checkpoint parameters: {list(entries)}): are the model and checkpoint from the "
                             f"same artifact set?")
        buffer_names = [n for n, p in zip(names, buffers_of) if n not in entries and p in entries]
        self._train_user_inputs = [n for n in names if n not in entries and n != LAZY_RESET_GRAD
                                   and n not in buffer_names]
        missing = [n for n in self._trainable_names if grad_buffer(n) not in buffer_names]
        extra = [n for n in buffer_names if not entries[buffer_param(n)].requires_grad]
        if missing or extra:
            raise ArtifactError(f"training model and checkpoint disagree: trainable parameters without a gradient "
                             f"buffer input {missing}, gradient buffers for frozen parameters {extra}")
        absent = [n for n in entries if n not in self._param_names]
        if absent:
            raise ArtifactError(f"checkpoint parameters {absent} are not inputs of the training model")
        self._param_shapes = {vi.name: _fixed_shape(vi) for vi in self._train_model.graph.inputs
                              if vi.name in entries}
        self._train_layout = _feed_layout(names, self._train_user_inputs, entries)
        self._train_user_outputs = [n for n in self._train.output_names if not is_grad_flag(n)]
        self._train_user_output_index = [i for i, n in enumerate(self._train.output_names) if not is_grad_flag(n)]
        self._overwrite = np.array([True])   # the lazy_reset_grad input, one array written each step
        if not state.is_nominal:
            self._allocate_gradients()

        self._eval_model = None
        self._eval = None
        if eval_model_uri is not None:
            self._eval_model = load_model(eval_model_uri, "eval model")
            self._eval = Session(self._eval_model, self._provider)
            self._eval_user_inputs = [n for n in self._eval.input_names if n not in entries]
            self._eval_layout = _feed_layout(self._eval.input_names, self._eval_user_inputs, entries)

    # -- steps -------------------------------------------------------------------------------------

    def __call__(self, *user_inputs):
        """A train step in training mode (returns the loss and any extra outputs), else an eval step.  The inputs
        are numpy arrays or values whose ``numpy()`` gives one; where none is a numpy array and onnxruntime
        OrtValues are among them, the outputs are OrtValues, as in ORT."""
        if self._state.is_nominal:
            raise nominal_state_error("TrainStep" if self.training else "EvalStep")
        if self.training:
            outputs = self._train_step(user_inputs)
        else:
            if self._eval is None:
                raise RuntimeError("this Module has no eval model: pass eval_model_uri to run eval steps")
            self._check_count(user_inputs, self._eval_user_inputs)
            outputs = self._eval.run(self._feeds(self._eval_layout, user_inputs))
        outputs = [np.asarray(o) for o in outputs]
        if fed_ort_values(user_inputs):
            outputs = as_ort_values(outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _train_step(self, user_inputs, defer: bool = False):
        """The train step's user outputs; with ``defer`` a function that gives them, so that on a deferring
        provider (WebGPU) the optimizer step can join the same submission."""
        self._check_count(user_inputs, self._train_user_inputs)
        self._overwrite[0] = not self._accumulate
        feeds = self._feeds(self._train_layout, user_inputs, self._overwrite)
        if self._provider.compiles:
            outputs = self._train.run(feeds, self._train_user_outputs, defer)
        else:
            everything = self._train.run(feeds)
            done = [everything[i] for i in self._train_user_output_index]
            outputs = (lambda: done) if defer else done
        self._accumulate = True
        return outputs

    def _feeds(self, layout: list, user_inputs, flag=None) -> list:
        """The feeds of a ``_feed_layout``: the user's inputs, the state's arrays (held) and the reset flag."""
        feeds = [user_inputs[key] if kind == _USER else getattr(key, kind) if kind else flag for kind, key in layout]
        if self._residency is None:
            return feeds
        resident = self._residency.resident
        return [resident(f) if kind and kind != _USER else f for f, (kind, _) in zip(feeds, layout)]

    def _held(self, arrays: list) -> list:
        """State arrays as feeds: themselves, or their residents on a provider that keeps device copies."""
        return arrays if self._residency is None else [self._residency.resident(a) for a in arrays]

    def device_report(self) -> dict:
        """Where the module runs: the device, and on a compiling provider the nodes of the last train and eval
        runs that ran on the host (with why), the kernel calls of those runs, the device memory held by programs
        and the state (``gpu_bytes``), and what the provider says of itself (on WebGPU the adapter, the
        submissions and in the page the calls from Python so far)."""
        provider = self._provider
        if not provider.compiles:
            return {"device": self.device}
        sessions = {"train": self._train, "eval": self._eval}
        held = self._residency.nbytes if self._residency is not None else 0
        return {"device": self.device, **provider.describe(),
                "fallbacks": {k: v.fallbacks for k, v in sessions.items() if v is not None},
                "dispatches": {k: v.last_program.dispatch_count for k, v in sessions.items()
                               if v is not None and v.last_program is not None},
                "gpu_bytes": sum(v.device_bytes for v in sessions.values() if v is not None) + held}

    @staticmethod
    def _check_count(user_inputs, expected) -> None:
        if len(user_inputs) != len(expected):
            raise ValueError(f"expected {len(expected)} inputs {expected}, got {len(user_inputs)}")

    def train(self, mode: bool = True) -> "Module":
        self.training = mode
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def lazy_reset_grad(self) -> None:
        """Make the next train step overwrite the accumulated gradients instead of adding to them."""
        self._accumulate = False

    def input_names(self) -> list:
        return list(self._train_user_inputs if self.training or self._eval is None else self._eval_user_inputs)

    def output_names(self) -> list:
        return list(self._train_user_outputs if self.training or self._eval is None else self._eval.output_names)

    # -- parameters as one buffer --------------------------------------------------------------------

    def _buffer_names(self, trainable_only: bool) -> list:
        return self._trainable_names if trainable_only else self._param_names

    def get_parameters_size(self, trainable_only: bool = True) -> int:
        return int(sum(np.prod(self._param_shapes[n], dtype=np.int64) for n in self._buffer_names(trainable_only)))

    def get_contiguous_parameters(self, trainable_only: bool = False) -> ContiguousParameters:
        """The parameters (in training-model input order) flattened into one new float32 array; like ORT's
        OrtValue, it answers ``numpy()``."""
        names = self._buffer_names(trainable_only)
        entries = self._state._entries
        self._state._on_host()
        if self._state.is_nominal:
            raise nominal_state_error("contiguous")
        if not names:
            return np.zeros(0, np.float32).view(ContiguousParameters)
        flat = np.concatenate([entries[n].data.ravel() for n in names]).astype(np.float32, copy=False)
        return flat.view(ContiguousParameters)

    def copy_buffer_to_parameters(self, buffer, trainable_only: bool = True) -> None:
        """Copy a float32 buffer (the layout of get_contiguous_parameters, any shape of that size) into the
        parameters: a numpy array, or a value whose ``numpy()`` gives one (an OrtValue, as ORT takes).  On a
        nominal state, ``trainable_only=False`` loads every parameter and ends the nominal state."""
        buffer = host_array(buffer)
        if self._state.is_nominal and trainable_only:
            raise nominal_state_error("trainable_only")
        size = self.get_parameters_size(trainable_only)
        layout = (f"the buffer holds the {'trainable ' if trainable_only else ''}parameters' {size} float32 values, "
                  f"as get_contiguous_parameters(trainable_only={trainable_only}) gives them; got "
                  f"{buffer.dtype.name}{list(buffer.shape)}")
        if buffer.size != size:
            raise ParameterBufferError(f"Parameters buffer size incorrect. Expected:{size}, Actual:{buffer.size} "
                                       f"({layout})")
        if buffer.dtype != np.float32:
            raise ParameterBufferError(f"Tensor type mismatch. ({layout})")
        buffer = buffer.reshape(-1)
        entries = self._state._entries
        self._state._on_host(writing=True)
        offset = 0
        new = {}
        for name in self._buffer_names(trainable_only):
            shape = self._param_shapes[name]
            n = int(np.prod(shape, dtype=np.int64))
            new[name] = buffer[offset:offset + n].reshape(shape)
            offset += n
        if self._state.is_nominal:
            for name, values in new.items():
                entries[name].data = values.astype(entries[name].dtype, copy=True)
            self._state.is_nominal = False
            self._allocate_gradients()
        else:
            for name, values in new.items():
                entries[name].data[...] = values

    def _allocate_gradients(self) -> None:
        for name in self._trainable_names:
            entry = self._state._entries[name]
            if entry.grad is None or entry.grad.shape != entry.data.shape:
                entry.grad = np.zeros_like(entry.data)

    # -- export ------------------------------------------------------------------------------------

    def export_model_for_inferencing(self, inference_model_uri, graph_output_names):
        """Write the eval model with the current parameters as initializers, keeping only what
        ``graph_output_names`` need.  With ``inference_model_uri=None`` return the model's bytes."""
        if self._eval_model is None:
            raise RuntimeError("export_model_for_inferencing needs the eval model: pass eval_model_uri to Module")
        if self._state.is_nominal:
            raise nominal_state_error("export")
        if isinstance(graph_output_names, str):
            graph_output_names = [graph_output_names]
        self._state._on_host()
        model = inference_model(self._eval_model, list(graph_output_names),
                                {n: e.data for n, e in self._state._entries.items()})
        if inference_model_uri is None:
            return ir.to_bytes(model)
        ir.save(model, inference_model_uri)
        return None


_USER = "user"


def _residency(provider, state: CheckpointState):
    """The state's device copies on ``provider`` (None where the provider runs on the host arrays)."""
    held = state._device
    if held is None and provider.resident:
        held = state._device = Residency(provider)
    if held is not None and held.provider is not provider:
        raise ValueError(f"this CheckpointState is already used on {held.provider.title}; give a "
                         f"{provider.name} Module its own state")
    return held


def session_on(model: Model, device: str = "cpu") -> Session:
    """A session running ``model`` on ``device`` (``providers.DEVICES``)."""
    return Session(model, open_provider(device))


def _feed_layout(graph_inputs: list, user_inputs: list, entries: dict) -> list:
    """Where each graph input's value comes from, as (kind, key): (_USER, index into the user's
    inputs), ("data", parameter entry), ("grad", parameter entry) or (None, None) for lazy_reset_grad."""
    layout = []
    for name in graph_inputs:
        if name in entries:
            layout.append(("data", entries[name]))
        elif name == LAZY_RESET_GRAD:
            layout.append((None, None))
        elif buffer_param(name) in entries:
            layout.append(("grad", entries[buffer_param(name)]))
        else:
            layout.append((_USER, user_inputs.index(name)))
    return layout


def _fixed_shape(value_info) -> tuple:
    t = value_info.type
    if not isinstance(t, TensorType) or t.shape is None or not all(isinstance(d, int) for d in t.shape):
        raise ArtifactError(f"training model input '{value_info.name}' is a parameter but has no fixed shape")
    return tuple(t.shape)
