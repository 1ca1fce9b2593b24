"""The boundary with JavaScript in CPython (bytes and plain values in, bytes and plain values out), and a task's run
(tasks.training.Run): its steps, checkpoints, artifacts and refusals."""
import ctypes
import io

import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL
from onnxtrain.tasks.training import Run
from onnxtrain.web import new_array, plain


def run(name="mlp_ce_adamw", train=None, validation=None, **options):
    """A Run over one of ort_cases' artifact sets."""
    f = oc.files(name)
    arts = {TRAINING_MODEL: f["training"].read_bytes(), EVAL_MODEL: f["eval"].read_bytes(),
            OPTIMIZER_MODEL: f["optimizer"].read_bytes(), CHECKPOINT: f["checkpoint"].read_bytes()}
    return Run(arts, train, validation, **options)


class JsProxy:
    """What Pyodide gives for a JavaScript value that a request left unconverted: ``to_py()`` converts it."""

    def __init__(self, value):
        self.value = value

    def to_py(self):
        return self.value


def test_plain_turns_a_requests_buffers_into_bytes_once():
    tensor = np.arange(3, dtype=np.float32)
    args = [memoryview(b"abc"), {"x": tensor, "names": JsProxy(["a", memoryview(b"d")])}, JsProxy(memoryview(b"e")),
            (1, None, "s"), bytearray(b"f")]
    got = plain(args)
    assert got == [b"abc", {"x": tensor, "names": ["a", b"d"]}, b"e", [1, None, "s"], b"f"]
    assert got[1]["x"] is tensor and type(got[0]) is bytes
    assert plain(got) == got


def test_new_array_gives_the_address_the_worker_copies_into():
    array, address = new_array([2, 3], "int64", 48)
    assert array.shape == (2, 3) and array.dtype == np.int64 and array.flags.c_contiguous
    ctypes.memmove(address, np.arange(6, dtype=np.int64).ctypes.data, 48)
    np.testing.assert_array_equal(array, np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="cannot have shape"):
        new_array([2, 3], "int64", 40)
    with pytest.raises(ValueError, match="unsupported dtype 'float16'"):
        new_array([1], "float16", 2)


def test_generate_artifacts_through_the_registry():
    from onnxtrain.web.sessions import Registry, generate_artifacts
    model = oc.mlp(n_in=4, hidden=3, n_out=2).SerializeToString()
    options = {"requiresGrad": ["fc2.weight", "fc2.bias"], "frozenParams": ["fc1.weight"], "loss": "MSELoss",
               "optimizer": "SGD"}
    out = Registry().call("generate_artifacts", None, [memoryview(model), options])
    state = api.CheckpointState.load_checkpoint(out["checkpointState"])
    assert [n for n, p in state.parameters if p.requires_grad] == ["fc2.bias", "fc2.weight"]
    assert out["optimizerModel"] is not None
    with pytest.raises(ValueError, match=r"unknown LossType 'HingeLoss'; choose one of \['MSELoss'"):
        generate_artifacts(model, {"requiresGrad": ["fc2.weight"], "loss": "HingeLoss", "optimizer": None})


def test_describe_model():
    from onnxtrain.web import describe_model
    info = describe_model(oc.mlp(n_in=4, hidden=3, n_out=2).SerializeToString())
    assert [p["name"] for p in info["parameters"]] == oc.MLP_ALL and info["ops_without_gradient"] == []
    with pytest.raises(ValueError, match="not an ONNX model"):
        describe_model(b"hello")


def test_a_run_trains_on_npz_data_with_its_validation_split():
    from onnxtrain.train.npz import load_npz
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    buf = io.BytesIO()
    np.savez(buf, input=np.concatenate([x] * 5), labels=np.concatenate([y] * 5))
    s = run(train=load_npz(buf.getvalue(), ["input", "labels"]), validation=0.25)
    assert len(s.trainer.train_data[0]) == 30 and len(s.trainer.validation_data[0]) == 10
    while not s.step(8, 0.01)["epoch_done"]:
        pass
    assert s.epoch == 1 and np.isfinite(s.validation_loss())
    buf = io.BytesIO()
    np.savez(buf, features=x)
    with pytest.raises(ValueError, match=r"needs arrays named \['input', 'labels'\]; missing"):
        load_npz(buf.getvalue(), ["input", "labels"])


@pytest.mark.parametrize("error", [
    MemoryError("Unable to allocate 40.0 GiB for an array"),
    ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size."),
], ids=["MemoryError", "wasm32-too-big"])  # the second is what numpy says on wasm32 for an array over 2 GiB
def test_out_of_memory_suggests_a_smaller_batch_and_changes_nothing(error):
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    s = run(train=[x, y], device="numpy")   # the failure is put into the numpy provider's plan
    before = {n: p.data.copy() for n, p in s.state.parameters}
    steps = s.module._train.plan.steps
    original = steps[1].fn

    def exhausted(*args, **kwargs):
        raise error
    steps[1].fn = exhausted
    with pytest.raises(MemoryError, match="ran out of memory training a batch of 8 rows: choose a smaller batch"):
        s.step(8, 0.01)
    for n, p in s.state.parameters:
        np.testing.assert_array_equal(p.data, before[n])
    steps[1].fn = original
    assert s.step(8, 0.01)["epoch_done"] and s.epoch == 1


def test_a_checkpointed_run_resumes_at_its_epoch_with_its_state(tmp_path):
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    a = run(train=[x, y])
    for _ in range(2):
        a.step(4, 0.01)
    saved = a.checkpoint({"onnxtrain.settings": {"batch": 4}, "name": "run"})
    (tmp_path / "checkpoint").write_bytes(saved)
    state = oc.ort_api().CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))  # a plain ORT checkpoint
    assert state.properties["epoch"] == 1 and state.properties["name"] == "run"
    assert state.properties["onnxtrain.settings"] == '{"batch": 4}'
    b = run(train=[x, y])
    assert b.restore(saved) == 1 and b.epoch == 1
    for (name, pa), (_, pb) in zip(a.state.parameters, b.state.parameters):
        np.testing.assert_array_equal(pa.data, pb.data, err_msg=name)
    np.testing.assert_allclose(a.step(8, 0.01)["loss"], b.step(8, 0.01)["loss"], rtol=0)
    with pytest.raises(ValueError, match="parameters do not match"):
        run("cnn_ce_adamw").restore(saved)


def test_the_artifacts_zip_goes_on_training_in_onnxruntime_where_the_page_stopped(tmp_path):
    import zipfile
    x, y = oc.batches("mlp_ce_adamw", 2)[0]
    s = run(train=[x, y])
    for _ in range(2):
        s.step(4, 0.01)
    with zipfile.ZipFile(io.BytesIO(s.artifacts_zip())) as archive:
        archive.extractall(tmp_path)
        assert sorted(archive.namelist()) == ["README.txt", "checkpoint", "eval_model.onnx", "optimizer_model.onnx",
                                              "training_model.onnx"]
    ort = oc.ort_api()
    state = ort.CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = ort.Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"))
    optimizer = ort.Optimizer(str(tmp_path / "optimizer_model.onnx"), module)
    assert state.properties["epoch"] == 1
    optimizer.set_learning_rate(state.properties["onnxtrain.learning_rate"])  # ORT restores the initial rate
    np.testing.assert_array_equal(module.get_contiguous_parameters().numpy(), s.module.get_contiguous_parameters())
    ours = s.trainer.guard.step([x, y])
    theirs = float(module(x, y))
    optimizer.step()
    np.testing.assert_allclose(theirs, ours, rtol=1e-5)
    np.testing.assert_allclose(module.get_contiguous_parameters().numpy(), s.module.get_contiguous_parameters(),
                               rtol=1e-5, atol=1e-7)


def test_validation_in_chunks_gives_the_whole_batch_loss_and_predictions():
    from onnxtrain.tasks.training import predict
    x, y = oc.batches("mlp_ce_adamw", 4)[0]
    xs, ys = np.concatenate([x] * 5), np.concatenate([y] * 5)
    s = run(train=[x, y], validation=[xs, ys])
    whole = s.validation_loss()
    np.testing.assert_allclose(s.validation_loss(chunk=7), whole, rtol=1e-6)
    full = predict(s.module, xs, chunk=len(xs))
    np.testing.assert_allclose(predict(s.module, xs, chunk=7), full, rtol=1e-6, atol=1e-7)
    assert full.shape[0] == len(xs)


# ---- careless input: a clear error and the run as it was ----------------------------------------------------

def run_state(s):
    return ({n: p.data.copy() for n, p in s.state.parameters}, s.epoch, s.trainer.position,
            None if s.trainer.order is None else s.trainer.order.copy(), s.trainer.rng.bit_generator.state,
            s.optimizer.get_learning_rate(), s.optimizer._group.step)


def assert_run_state(s, before):
    after = run_state(s)
    for name, array in after[0].items():
        np.testing.assert_array_equal(array, before[0][name], err_msg=name)
    assert after[1:3] == before[1:3] and after[4:] == before[4:]
    assert (after[3] is None) == (before[3] is None)
    if before[3] is not None:
        np.testing.assert_array_equal(after[3], before[3])


@pytest.mark.parametrize("batch", [0, -8, 2.5, float("nan"), float("inf"), True, "8"])  # None: the run's own
def test_a_bad_batch_size_is_refused_before_anything_changes(batch):
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    s = run(train=[np.concatenate([x] * 3), np.concatenate([y] * 3)])
    s.step(4, 0.01)  # mid-epoch: an order and a position to keep
    before = run_state(s)
    with pytest.raises(ValueError, match=f"the batch size must be a whole number >= 1, got {batch!r}"):
        s.step(batch, 0.01)
    assert_run_state(s, before)
    assert s.step(8.0, 0.01)["examples"] == 8  # a whole number that arrives as a float is fine


@pytest.mark.parametrize("rate", [float("nan"), float("inf"), -0.01, "fast"])
def test_a_bad_learning_rate_is_refused_before_anything_changes(rate):
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    s = run(train=[x, y])
    before = run_state(s)
    with pytest.raises(ValueError, match=f"the learning rate must be a finite number >= 0, got {rate!r}"):
        s.step(4, rate)
    assert_run_state(s, before)


def test_a_step_without_data_says_so():
    with pytest.raises(ValueError, match=r"there is no training data: give it to Trainer\(\) or set_data first"):
        run().step(8, 0.01)


def test_a_non_finite_step_is_undone_with_the_run_as_it_was():
    from onnxtrain.train import NonFiniteStepError
    x, y = oc.batches("mlp_ce_sgd", 1)[0]
    s = run("mlp_ce_sgd", [np.concatenate([x * 100] * 2), np.concatenate([y] * 2)])
    s.step(8, 0.01)
    s.trainer.epoch = 2  # as after two finished epochs
    before = run_state(s)
    with pytest.raises(NonFiniteStepError, match=r"^step 2 \(epoch 3\) was undone: parameter '[\w.]+' is not finite "
                                                 r"after the update .* lower than the current 3e\+38$"):
        s.step(8, 3e38)
    assert_run_state(s, before)
    assert s.step(8, 0.01)["epoch_done"] and s.epoch == 3
    s.trainer.configure(check_finite=False)  # opted out: the update is written, as onnxruntime-training writes it
    with np.errstate(all="ignore"):
        s.step(8, 3e38)
    assert not np.isfinite(s.module.get_contiguous_parameters()).all()


def npz_bytes(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_npz_and_named_data_are_checked():
    from onnxtrain.train.npz import NpzError, load_npz
    s = run()
    x, y = oc.batches("mlp_ce_adamw", 2)[0]

    def set_npz(data, validation=0.1):
        s.trainer.set_data(load_npz(data, ["input", "labels"]), validation)
    with pytest.raises(ValueError, match="the data has no rows: 'input' is empty"):
        set_npz(npz_bytes(input=np.zeros((0, 20), np.float32), labels=np.zeros(0, np.int64)))
    with pytest.raises(ValueError, match="the data arrays have different numbers of rows: 'input' has 10, 'labels' "
                                         "has 9"):
        set_npz(npz_bytes(input=np.zeros((10, 20), np.float32), labels=np.zeros(9, np.int64)))
    with pytest.raises(ValueError, match="the data array 'labels' is a single value"):
        s.trainer.set_data({"input": x, "labels": np.int64(3)}, 0.1)
    with pytest.raises(ValueError, match=r"the data needs arrays named \['input', 'labels'\]; missing \['labels'\]"):
        s.trainer.set_data({"input": x}, 0.1)
    bad = np.concatenate([x] * 2)
    bad[11, 3] = np.nan
    bad[12, 0] = -np.inf
    with pytest.raises(ValueError, match=r"the training data array 'input' holds 2 nan or inf values \(the first in "
                                         r"row \d+\); remove those rows or fill them in"):
        s.trainer.set_data({"input": bad, "labels": np.concatenate([y] * 2)}, 0)
    with pytest.raises(ValueError, match=r"the validation fraction must be a number from 0 up to \(not including\) 1, "
                                         r"got 1.5"):
        set_npz(npz_bytes(input=x, labels=y), validation=1.5)
    pickled = io.BytesIO()
    np.savez(pickled, input=x, labels=np.array([None] * len(y), dtype=object))
    with pytest.raises(NpzError, match="member 'labels.npy' holds pickled Python objects"):
        set_npz(pickled.getvalue())
    assert s.trainer.train_data is None  # nothing was taken
    set_npz(npz_bytes(input=np.concatenate([x] * 2), labels=np.concatenate([y] * 2)), validation=0.99)
    assert len(s.trainer.train_data[0]) == 1 and len(s.trainer.validation_data[0]) == 15  # a training row at least


def test_the_signature_quotes_names_that_are_not_plain_and_reads_any_value_type():
    from onnx import TensorProto, helper
    seq = helper.make_tensor_sequence_value_info("parts", TensorProto.FLOAT, None)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x.in"], ["a, b: c"]), helper.make_node("Identity", ["parts"], ["parts out"])],
        "g", [helper.make_tensor_value_info("x.in", TensorProto.FLOAT, ["batch", 3]), seq],
        [helper.make_tensor_value_info("a, b: c", TensorProto.FLOAT, None),
         helper.make_tensor_sequence_value_info("parts out", TensorProto.FLOAT, None)], doc_string="doc")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    from onnxtrain.web.bridge import signature
    assert signature(model.SerializeToString()) == (
        'Inputs: x.in float [batch, 3], parts sequence(float). Outputs: "a, b: c" float, "parts out" '
        'sequence(float). doc')
