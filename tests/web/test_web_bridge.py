"""The Python side of the browser bridge, in CPython: bytes and flat buffers in, bytes and numbers out."""
import ctypes
import io

import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.web import TrainingSession, as_array, new_array


def session(name="mlp_ce_adamw"):
    f = oc.files(name)
    return TrainingSession(f["training"].read_bytes(), f["checkpoint"].read_bytes(), f["eval"].read_bytes(),
                           f["optimizer"].read_bytes())


def flat(arrays):
    return [{"data": memoryview(np.ascontiguousarray(a)).cast("B"), "shape": list(a.shape), "dtype": a.dtype.name}
            for a in arrays]


def reference_losses(name, steps):
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"])
    opt = api.Optimizer(f["optimizer"], module)
    losses = []
    for batch in oc.batches(name, steps):
        losses.append(float(module(*batch)))
        opt.step()
        module.lazy_reset_grad()
    return losses, state


def test_as_array_is_a_view_with_shape_and_dtype():
    source = np.arange(6, dtype=np.float32)
    view = as_array(memoryview(source).cast("B"), [2, 3], "float32")
    assert view.shape == (2, 3) and np.shares_memory(view, source)
    with pytest.raises(ValueError, match="cannot have shape"):
        as_array(memoryview(source).cast("B"), [4, 2], "float32")
    with pytest.raises(ValueError, match="unsupported dtype 'float16'"):
        as_array(b"\0\0", [1], "float16")


def test_new_array_gives_the_address_the_worker_copies_into():
    array, address = new_array([2, 3], "int64", 48)
    assert array.shape == (2, 3) and array.dtype == np.int64 and array.flags.c_contiguous
    ctypes.memmove(address, np.arange(6, dtype=np.int64).ctypes.data, 48)
    np.testing.assert_array_equal(array, np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="cannot have shape"):
        new_array([2, 3], "int64", 40)
    with pytest.raises(ValueError, match="unsupported dtype 'float16'"):
        new_array([1], "float16", 2)


def test_training_through_the_bridge_matches_the_api():
    s = session()
    assert s.describe()["train_inputs"] == ["input", "labels"]
    losses = [s.train_step(flat(batch)) for batch in oc.batches("mlp_ce_adamw", 5)]
    expected, state = reference_losses("mlp_ce_adamw", 5)
    assert losses == expected
    out = s.eval_step(flat(oc.batches("mlp_ce_adamw", 1)[0]))
    assert out[0]["shape"] == [] and out[0]["dtype"] == "float32"


def test_checkpoint_and_export_bytes():
    s = session()
    for batch in oc.batches("mlp_ce_adamw", 3):
        s.train_step(flat(batch))
    data = s.save_checkpoint(True)
    loaded = api.CheckpointState.load_checkpoint(data)
    for name, p in s.state.parameters:
        np.testing.assert_array_equal(loaded.parameters[name].data, p.data)
    other = session()
    other.load_checkpoint(data)
    batch = flat(oc.batches("mlp_ce_adamw", 1, seed=4)[0])
    assert other.train_step(batch) == s.train_step(batch)
    flat_params = np.frombuffer(s.contiguous_parameters(), np.float32)
    np.testing.assert_array_equal(flat_params, s.module.get_contiguous_parameters())
    model = s.export_model(["output"])
    assert model[:2] == b"\x08\x08"  # ModelProto.ir_version = 8


def test_errors_leave_the_session_usable():
    s = session()
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    with pytest.raises(ValueError, match="input 'input' must have shape"):
        s.train_step(flat([x[:, :3].copy(), y]))
    with pytest.raises(ValueError, match="do not match"):
        s.load_checkpoint(oc.files("cnn_ce_adamw")["checkpoint"].read_bytes())
    assert np.isfinite(s.train_step(flat([x, y])))


def test_generate_artifacts_through_the_registry():
    from onnxtrain.web.sessions import generate_artifacts
    model = oc.mlp(n_in=4, hidden=3, n_out=2).SerializeToString()
    out = generate_artifacts(memoryview(model), {"requiresGrad": ["fc2.weight", "fc2.bias"],
                                                 "frozenParams": ["fc1.weight"], "loss": "MSELoss", "optimizer": "SGD"})
    state = api.CheckpointState.load_checkpoint(out["checkpointState"])
    assert [n for n, p in state.parameters if p.requires_grad] == ["fc2.bias", "fc2.weight"]
    assert out["optimizerModel"] is not None
    with pytest.raises(ValueError, match=r"unknown LossType 'HingeLoss'; choose one of \['MSELoss'"):
        generate_artifacts(model, {"requiresGrad": ["fc2.weight"], "loss": "HingeLoss", "optimizer": None})


def test_describe_model_and_npz_data(tmp_path):
    import io
    from onnxtrain.web import describe_model
    info = describe_model(oc.mlp(n_in=4, hidden=3, n_out=2).SerializeToString())
    assert [p["name"] for p in info["parameters"]] == oc.MLP_ALL and info["ops_without_gradient"] == []
    with pytest.raises(ValueError, match="not an ONNX model"):
        describe_model(b"hello")
    s = session()
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    buf = io.BytesIO()
    np.savez(buf, input=np.concatenate([x] * 5), labels=np.concatenate([y] * 5))
    info = s.set_npz(buf.getvalue(), validation=0.25)
    assert info["rows"] == 40 and info["validation_rows"] == 10
    while not s.step(8, 0.01)["epoch_done"]:
        pass
    assert s.epoch == 1 and np.isfinite(s.validation_loss())
    buf = io.BytesIO()
    np.savez(buf, features=x)
    with pytest.raises(ValueError, match=r"needs arrays named \['input', 'labels'\]; missing"):
        s.set_npz(buf.getvalue())


@pytest.mark.parametrize("error", [
    MemoryError("Unable to allocate 40.0 GiB for an array"),
    ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size."),
], ids=["MemoryError", "wasm32-too-big"])  # the second is what numpy says on wasm32 for an array over 2 GiB
def test_out_of_memory_suggests_a_smaller_batch_and_changes_nothing(error):
    s = session()
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    s.set_data([x, y])
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
    a = session()
    a.set_data([x, y])
    for _ in range(2):
        a.step(4, 0.01)
    saved = a.checkpoint({"onnxtrain.settings": {"batch": 4}, "name": "run"})
    (tmp_path / "checkpoint").write_bytes(saved)
    state = oc.ort_api().CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))  # a plain ORT checkpoint
    assert state.properties["epoch"] == 1 and state.properties["name"] == "run"
    assert state.properties["onnxtrain.settings"] == '{"batch": 4}'
    b = session()
    b.set_data([x, y])
    assert b.restore(saved) == 1 and b.epoch == 1
    for (name, pa), (_, pb) in zip(a.state.parameters, b.state.parameters):
        np.testing.assert_array_equal(pa.data, pb.data, err_msg=name)
    np.testing.assert_allclose(a.step(8, 0.01)["loss"], b.step(8, 0.01)["loss"], rtol=0)
    with pytest.raises(ValueError, match="parameters do not match"):
        session("cnn_ce_adamw").restore(saved)


def test_the_artifacts_zip_goes_on_training_in_onnxruntime_where_the_page_stopped(tmp_path):
    import zipfile
    x, y = oc.batches("mlp_ce_adamw", 2)[0]
    s = session()
    s.set_data([x, y])
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
    ours = s.train_step([x, y])
    theirs = float(module(x, y))
    optimizer.step()
    np.testing.assert_allclose(theirs, ours, rtol=1e-5)
    np.testing.assert_allclose(module.get_contiguous_parameters().numpy(), s.module.get_contiguous_parameters(),
                               rtol=1e-5, atol=1e-7)


def test_validation_in_chunks_gives_the_whole_batch_loss_and_predictions():
    from onnxtrain.tasks.training import predict
    x, y = oc.batches("mlp_ce_adamw", 4)[0]
    xs, ys = np.concatenate([x] * 5), np.concatenate([y] * 5)
    s = session()
    s.set_data([x, y], [xs, ys])
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


@pytest.mark.parametrize("batch", [0, -8, 2.5, float("nan"), float("inf"), True, "8", None])
def test_a_bad_batch_size_is_refused_before_anything_changes(batch):
    s = session()
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    s.set_data([np.concatenate([x] * 3), np.concatenate([y] * 3)])
    s.step(4, 0.01)  # mid-epoch: an order and a position to keep
    before = run_state(s)
    with pytest.raises(ValueError, match=f"the batch size must be a whole number >= 1, got {batch!r}"):
        s.step(batch, 0.01)
    assert_run_state(s, before)
    assert s.step(8.0, 0.01)["examples"] == 8  # a whole number that arrives as a float is fine


@pytest.mark.parametrize("rate", [float("nan"), float("inf"), -0.01, "fast"])
def test_a_bad_learning_rate_is_refused_before_anything_changes(rate):
    s = session()
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    s.set_data([x, y])
    before = run_state(s)
    with pytest.raises(ValueError, match=f"the learning rate must be a finite number >= 0, got {rate!r}"):
        s.step(4, rate)
    with pytest.raises(ValueError, match="the learning rate must be a finite number >= 0"):
        s.set_learning_rate(rate)
    assert_run_state(s, before)


def test_a_step_without_data_says_so():
    with pytest.raises(ValueError, match="there is no training data: give it with set_data, set_named or set_npz"):
        session().step(8, 0.01)


def test_a_non_finite_step_is_undone_with_the_run_as_it_was():
    from onnxtrain.train import NonFiniteStepError
    f = oc.files("mlp_ce_sgd")
    s = TrainingSession(f["training"].read_bytes(), f["checkpoint"].read_bytes(), f["eval"].read_bytes(),
                        f["optimizer"].read_bytes())
    x, y = oc.batches("mlp_ce_sgd", 1)[0]
    s.set_data([np.concatenate([x * 100] * 2), np.concatenate([y] * 2)])
    s.step(8, 0.01)
    s.trainer.epoch = 2  # as after two finished epochs
    before = run_state(s)
    with pytest.raises(NonFiniteStepError, match=r"^step 2 \(epoch 3\) was undone: parameter '[\w.]+' is not finite "
                                                 r"after the update .* lower than the current 3e\+38$"):
        s.step(8, 3e38)
    assert_run_state(s, before)
    assert s.step(8, 0.01)["epoch_done"] and s.epoch == 3
    s.set_finite_check(False)  # opted out: the update is written, as onnxruntime-training writes it
    with np.errstate(all="ignore"):
        s.step(8, 3e38)
    assert not np.isfinite(s.module.get_contiguous_parameters()).all()


def test_train_step_is_checked_too():
    from onnxtrain.train import NonFiniteStepError
    s = session()
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    x = x.copy()
    x[0, 0] = np.inf
    before = s.module.get_contiguous_parameters()
    with pytest.raises(NonFiniteStepError, match=r"^step 1 was undone: the loss is nan"):
        s.train_step(flat([x, y]))
    np.testing.assert_array_equal(s.module.get_contiguous_parameters(), before)


def npz_bytes(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_npz_and_named_data_are_checked():
    from onnxtrain.train.npz import NpzError
    s = session()
    x, y = oc.batches("mlp_ce_adamw", 2)[0]
    with pytest.raises(ValueError, match="the data has no rows: 'input' is empty"):
        s.set_npz(npz_bytes(input=np.zeros((0, 20), np.float32), labels=np.zeros(0, np.int64)))
    with pytest.raises(ValueError, match="the data arrays have different numbers of rows: 'input' has 10, 'labels' "
                                         "has 9"):
        s.set_npz(npz_bytes(input=np.zeros((10, 20), np.float32), labels=np.zeros(9, np.int64)))
    with pytest.raises(ValueError, match="the data array 'labels' is a single value"):
        s.set_named({"input": x, "labels": np.int64(3)})
    with pytest.raises(ValueError, match=r"the data needs arrays named \['input', 'labels'\]; missing \['labels'\]"):
        s.set_named({"input": x})
    bad = np.concatenate([x] * 2)
    bad[11, 3] = np.nan
    bad[12, 0] = -np.inf
    with pytest.raises(ValueError, match=r"the training data array 'input' holds 2 nan or inf values \(the first in "
                                         r"row \d+\); remove those rows or fill them in"):
        s.set_named({"input": bad, "labels": np.concatenate([y] * 2)}, validation=0)
    with pytest.raises(ValueError, match=r"the validation fraction must be a number from 0 up to \(not including\) 1, "
                                         r"got 1.5"):
        s.set_npz(npz_bytes(input=x, labels=y), validation=1.5)
    pickled = io.BytesIO()
    np.savez(pickled, input=x, labels=np.array([None] * len(y), dtype=object))
    with pytest.raises(NpzError, match="member 'labels.npy' holds pickled Python objects"):
        s.set_npz(pickled.getvalue())
    assert s.train_data is None  # nothing was taken
    info = s.set_npz(npz_bytes(input=np.concatenate([x] * 2), labels=np.concatenate([y] * 2)), validation=0.99)
    assert info["train_rows"] == 1 and info["validation_rows"] == 15  # at least one training row


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
        'Inputs: x.in float [batch, 3], parts sequence(float). Outputs: "a, b: c" float, "parts out" sequence(float). doc')
