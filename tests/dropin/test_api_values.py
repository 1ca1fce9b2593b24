"""OrtValues across the training API, and nominal checkpoint states, as onnxruntime-training 1.19.2 has them.

Feeds may be OrtValues (then the outputs are OrtValues), the contiguous parameter buffer answers ``numpy()``,
copy_buffer_to_parameters takes the OrtValues ORT takes, and a nominal checkpoint (names and shapes, no values)
refuses every call that needs the values, with ORT's sentences, until its parameters are loaded.  Each side
generates its own artifacts from one small fixed-shape model."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import OrtValue

BATCH, N_IN, HIDDEN, N_OUT = 2, 4, 3, 2
TRAINABLE, FROZEN = ["fc1.weight", "fc1.bias", "fc2.weight"], ["fc2.bias"]
SIZES = {"fc1.weight": HIDDEN * N_IN, "fc1.bias": HIDDEN, "fc2.weight": N_OUT * HIDDEN, "fc2.bias": N_OUT}

# onnxruntime-training 1.19.2's sentences for the calls it refuses on a nominal state
GET_PARAMETER = "Cannot get parameter from a nominal state. Please load the parameter states first"
SET_PARAMETER = "Cannot copy parameter to a nominal state. Please load all the parameter states first"
COPY_PARAMETERS = "Cannot copy parameters from a nominal checkpoint state. Please load the model parameters first."
TRAIN_STEP = "Cannot perform TrainStep with a nominal state. Please load the model parameters first."
EVAL_STEP = "Cannot perform EvalStep with a nominal state. Please load the model parameters first."
EXPORT = "Cannot export the model with a nominal state. Please load the model parameters first."
OPTIMIZER_STEP = "The optimizer state cannot be constructed. Please load the model parameters first."
TRAINABLE_ONLY = ("For nominal checkpoint state, all parameters need to be loaded into the model "
                  "(trainable_only = false).")


def forward_model():
    rng = np.random.default_rng(7)

    def init(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.5, name)
    inits = [init("fc1.weight", (HIDDEN, N_IN)), init("fc1.bias", (HIDDEN,)), init("fc2.weight", (N_OUT, HIDDEN)),
             init("fc2.bias", (N_OUT,))]
    nodes = [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, N_IN])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, N_OUT])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def generate(training, folder, **kwargs):
    a = training.artifacts
    a.generate_artifacts(forward_model(), requires_grad=TRAINABLE, frozen_params=FROZEN, loss=a.LossType.MSELoss,
                         optimizer=a.OptimType.AdamW, artifact_directory=str(folder), **kwargs)
    return {name: os.path.join(folder, name) for name in os.listdir(folder)}


@pytest.fixture
def files(training, tmp_path):
    """The side's artifacts, with a nominal checkpoint; the train and eval steps output the loss alone."""
    return generate(training, tmp_path, nominal_checkpoint=True)


@pytest.fixture
def files_two_outputs(training, tmp_path):
    """The side's artifacts whose train and eval steps output the loss and y."""
    return generate(training, tmp_path, additional_output_names=["y"])


def open_module(training, f, checkpoint="checkpoint"):
    state = training.api.CheckpointState.load_checkpoint(f[checkpoint])
    module = training.api.Module(f["training_model.onnx"], state, f["eval_model.onnx"])
    return state, module, training.api.Optimizer(f["optimizer_model.onnx"], module)


def batch():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((BATCH, N_IN)).astype(np.float32),
            rng.standard_normal((BATCH, N_OUT)).astype(np.float32))


def ort_values(arrays):
    return [OrtValue.ortvalue_from_numpy(a) for a in arrays]


def ort_buffer(values: np.ndarray):
    """A buffer as ORT 1.19.2's copy_buffer_to_parameters takes it: the C OrtValue under the Python one (keep
    ``values`` alive while it is used)."""
    return OrtValue.ortvalue_from_numpy(values)._ortvalue


def flat_parameters(state, names):
    return np.concatenate([np.array(state.parameters[n].data).ravel() for n in names])


# ---- OrtValue feeds and outputs ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_ort_value_feeds_give_an_ort_value(training, files, mode):
    _, module, _ = open_module(training, files)
    module.train(mode == "train")
    x, target = batch()
    from_numpy = module(x, target)
    from_ort = module(*ort_values([x, target]))
    assert type(from_numpy) is np.ndarray and from_numpy.shape == () and from_numpy.dtype == np.float32
    assert isinstance(from_ort, OrtValue)
    assert from_ort.shape() == [] and from_ort.data_type() == "tensor(float)"
    np.testing.assert_array_equal(from_ort.numpy(), from_numpy)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_ort_value_feeds_give_a_tuple_of_ort_values(training, files_two_outputs, mode):
    _, module, _ = open_module(training, files_two_outputs)
    module.train(mode == "train")
    x, target = batch()
    from_numpy = module(x, target)
    from_ort = module(*ort_values([x, target]))
    assert isinstance(from_numpy, tuple) and [type(o) for o in from_numpy] == [np.ndarray, np.ndarray]
    assert isinstance(from_ort, tuple) and all(isinstance(o, OrtValue) for o in from_ort)
    assert [o.shape() for o in from_ort] == [[], [BATCH, N_OUT]]
    for o, expected in zip(from_ort, from_numpy):
        np.testing.assert_array_equal(o.numpy(), expected)


@pytest.mark.parametrize("which", [0, 1])
def test_a_numpy_array_among_the_feeds_gives_numpy(training, files, which):
    _, module, _ = open_module(training, files)
    feeds = list(batch())
    expected = module(*feeds)
    feeds[which] = OrtValue.ortvalue_from_numpy(feeds[which])
    out = module(*feeds)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, expected)


def test_ort_value_feeds_train_as_numpy_feeds_do(training, files):
    """Steps fed OrtValues and steps fed the same arrays end at the same parameters."""
    results = []
    for convert in (list, ort_values):
        state, module, optimizer = open_module(training, files)
        for _ in range(3):
            module(*convert(batch()))
            optimizer.step()
            module.lazy_reset_grad()
        results.append(flat_parameters(state, TRAINABLE + FROZEN))
    np.testing.assert_array_equal(results[0], results[1])


# ---- the contiguous parameter buffer ------------------------------------------------------------


@pytest.mark.parametrize("trainable_only", [True, False])
def test_contiguous_parameters_answer_numpy(training, files, trainable_only):
    state, module, optimizer = open_module(training, files)
    names = TRAINABLE if trainable_only else TRAINABLE + FROZEN
    size = sum(SIZES[n] for n in names)
    assert module.get_parameters_size(trainable_only) == size
    old = module.get_contiguous_parameters(trainable_only)
    values = old.numpy()
    assert type(values) is np.ndarray and values.dtype == np.float32 and values.shape == (size,)
    np.testing.assert_array_equal(np.sort(values), np.sort(flat_parameters(state, names)))
    module(*batch())
    optimizer.step()
    new = module.get_contiguous_parameters(trainable_only)
    assert not np.array_equal(old.numpy(), new.numpy())
    assert np.array_equal(np.sort(new.numpy()), np.sort(flat_parameters(state, names)))


def test_numpy_of_the_buffer_is_a_view_of_the_buffer_not_of_the_parameters(training, files):
    state, module, _ = open_module(training, files)
    before = flat_parameters(state, TRAINABLE + FROZEN)
    buffer = module.get_contiguous_parameters()
    buffer.numpy()[:] = 5.0
    np.testing.assert_array_equal(buffer.numpy(), 5.0)
    np.testing.assert_array_equal(flat_parameters(state, TRAINABLE + FROZEN), before)
    assert not np.any(module.get_contiguous_parameters().numpy() == 5.0)


@pytest.mark.parametrize("kind", ["own buffer", "OrtValue"])
@pytest.mark.parametrize("trainable_only", [True, False])
def test_copy_buffer_to_parameters_round_trips(training, files, kind, trainable_only):
    state, module, _ = open_module(training, files)
    frozen_before = flat_parameters(state, FROZEN)
    size = module.get_parameters_size(trainable_only)
    values = np.linspace(-1, 1, size, dtype=np.float32)
    if kind == "own buffer":    # get_contiguous_parameters' buffer, written through numpy()
        buffer = module.get_contiguous_parameters(trainable_only)
        buffer.numpy()[:] = values
    else:
        buffer = ort_buffer(values)
    module.copy_buffer_to_parameters(buffer, trainable_only)
    np.testing.assert_array_equal(module.get_contiguous_parameters(trainable_only).numpy(), values)
    assert sorted(flat_parameters(state, TRAINABLE if trainable_only else TRAINABLE + FROZEN)) == sorted(values)
    if trainable_only:
        np.testing.assert_array_equal(flat_parameters(state, FROZEN), frozen_before)
    module(*batch())   # still trains


def test_copy_buffer_to_parameters_takes_any_shape_of_the_size(training, files):
    state, module, _ = open_module(training, files)
    values = np.arange(module.get_parameters_size(True), dtype=np.float32)
    module.copy_buffer_to_parameters(ort_buffer(values.reshape(1, -1)), True)
    np.testing.assert_array_equal(module.get_contiguous_parameters(True).numpy(), values)


@pytest.mark.parametrize("trainable_only", [True, False])
def test_copy_buffer_to_parameters_refuses_a_wrong_size(training, files, trainable_only):
    state, module, _ = open_module(training, files)
    before = flat_parameters(state, TRAINABLE + FROZEN)
    size = module.get_parameters_size(trainable_only)
    for wrong in (size - 1, size + 1):
        values = np.zeros(wrong, np.float32)
        with pytest.raises(RuntimeError, match=re.escape(f"Parameters buffer size incorrect. Expected:{size}, "
                                                         f"Actual:{wrong}")):
            module.copy_buffer_to_parameters(ort_buffer(values), trainable_only)
    np.testing.assert_array_equal(flat_parameters(state, TRAINABLE + FROZEN), before)


def test_copy_buffer_to_parameters_refuses_a_wrong_type(training, files):
    state, module, _ = open_module(training, files)
    values = np.zeros(module.get_parameters_size(True), np.float64)
    with pytest.raises(RuntimeError, match=re.escape("Tensor type mismatch.")):
        module.copy_buffer_to_parameters(ort_buffer(values), True)


def test_numpy_and_python_ort_value_buffers(training, files):
    """ORT 1.19.2's copy_buffer_to_parameters takes only the C OrtValue (its get_contiguous_parameters' type):
    a numpy array or a Python OrtValue is a TypeError there.  onnxtrain takes both (docs/compatibility.md)."""
    state, module, _ = open_module(training, files)
    values = np.linspace(0, 1, module.get_parameters_size(True), dtype=np.float32)
    for buffer in (values, OrtValue.ortvalue_from_numpy(values)):
        if training.name == "onnxruntime":
            with pytest.raises(TypeError, match="incompatible function arguments"):
                module.copy_buffer_to_parameters(buffer, True)
        else:
            module.copy_buffer_to_parameters(buffer, True)
            np.testing.assert_array_equal(module.get_contiguous_parameters(True).numpy(), values)


# ---- nominal checkpoint states ------------------------------------------------------------------


def full_buffer(training, files):
    _, module, _ = open_module(training, files)
    return module.get_contiguous_parameters(False).numpy().copy()


def assert_refused(sentence, call, *args):
    with pytest.raises(RuntimeError, match=re.escape(sentence)):
        call(*args)


def test_a_nominal_state_refuses_what_needs_the_values(training, files, tmp_path):
    state, module, optimizer = open_module(training, files, "nominal_checkpoint")
    # what needs no values works
    assert len(state.parameters) == 4 and "fc1.weight" in state.parameters
    assert module.get_parameters_size(False) == sum(SIZES.values())
    assert module.input_names() == ["x", "target"]
    module.lazy_reset_grad()
    # what needs them is refused with ORT's sentences
    assert_refused(GET_PARAMETER, state.parameters.__getitem__, "fc1.weight")
    assert_refused(GET_PARAMETER, list, state.parameters)
    assert_refused(SET_PARAMETER, state.parameters.__setitem__, "fc1.weight", np.ones((2, 2), np.float32))
    assert_refused(COPY_PARAMETERS, module.get_contiguous_parameters, False)
    assert_refused(COPY_PARAMETERS, module.get_contiguous_parameters, True)
    assert_refused(TRAIN_STEP, module, *batch())
    assert_refused(TRAIN_STEP, module, *ort_values(batch()))
    module.eval()
    assert_refused(EVAL_STEP, module, *batch())
    module.train()
    assert_refused(EXPORT, module.export_model_for_inferencing, str(tmp_path / "inference.onnx"), ["y"])
    assert_refused(OPTIMIZER_STEP, optimizer.step)
    values = np.zeros(module.get_parameters_size(True), np.float32)
    assert_refused(TRAINABLE_ONLY, module.copy_buffer_to_parameters, ort_buffer(values), True)
    values = np.zeros(module.get_parameters_size(False) - 1, np.float32)
    assert_refused("Parameters buffer size incorrect.", module.copy_buffer_to_parameters, ort_buffer(values), False)


def test_a_saved_nominal_state_is_nominal(training, files, tmp_path):
    state, _, _ = open_module(training, files, "nominal_checkpoint")
    path = str(tmp_path / "saved_nominal")
    training.api.CheckpointState.save_checkpoint(state, path)
    again = training.api.CheckpointState.load_checkpoint(path)
    module = training.api.Module(files["training_model.onnx"], again, files["eval_model.onnx"])
    assert_refused(GET_PARAMETER, again.parameters.__getitem__, "fc2.bias")
    assert_refused(TRAIN_STEP, module, *batch())


def test_loading_every_parameter_ends_the_nominal_state(training, files, tmp_path):
    values = full_buffer(training, files)
    full_state, full, _ = open_module(training, files)
    state, module, optimizer = open_module(training, files, "nominal_checkpoint")
    assert_refused(OPTIMIZER_STEP, optimizer.step)
    module.copy_buffer_to_parameters(ort_buffer(values), False)
    for name in TRAINABLE + FROZEN:
        np.testing.assert_array_equal(state.parameters[name].data, full_state.parameters[name].data)
    np.testing.assert_array_equal(module.get_contiguous_parameters(False).numpy(), values)
    np.testing.assert_array_equal(module(*batch()), full(*batch()))
    module.eval()
    full.eval()
    np.testing.assert_array_equal(module(*batch()), full(*batch()))
    module.train()
    before = module.get_contiguous_parameters(True).numpy().copy()
    optimizer.step()           # the Optimizer made on the nominal state steps now
    assert not np.array_equal(module.get_contiguous_parameters(True).numpy(), before)
    module.export_model_for_inferencing(str(tmp_path / "inference.onnx"), ["y"])
    assert os.path.getsize(tmp_path / "inference.onnx") > 0
    path = str(tmp_path / "loaded")
    training.api.CheckpointState.save_checkpoint(state, path, True)
    reloaded = training.api.CheckpointState.load_checkpoint(path)
    for name in TRAINABLE + FROZEN:
        np.testing.assert_array_equal(reloaded.parameters[name].data, state.parameters[name].data)


def test_an_optimizer_made_after_loading_steps(training, files):
    values = full_buffer(training, files)
    state, module, _ = open_module(training, files, "nominal_checkpoint")
    module.copy_buffer_to_parameters(ort_buffer(values), False)
    optimizer = training.api.Optimizer(files["optimizer_model.onnx"], module)
    module(*batch())
    optimizer.step()
    assert not np.array_equal(module.get_contiguous_parameters(False).numpy(), values)
