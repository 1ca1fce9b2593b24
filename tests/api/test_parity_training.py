"""onnxtrain trains ORT-generated artifacts exactly as onnxruntime-training 1.19.2 does.

The same script runs against both APIs (the names are the same); every recorded tensor must agree to
float32 tolerance.  Observed differences are about 1e-7 relative (one float32 ulp; ORT's vectorised
sqrt in AdamW and its summation order are the sources).
"""
import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api as ours

pytestmark = pytest.mark.usefixtures("kernels")   # numpy's kernels and the native ones

RTOL, ATOL = 1e-5, 1e-6


def as_numpy(value):
    return tuple(np.array(v) for v in value) if isinstance(value, tuple) else (np.array(value),)


def script(api, name, steps=4, lr=None, scheduler=None):
    """Train, accumulate, evaluate; return everything observable, in order."""
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    module = api.Module(str(f["training"]), state, str(f["eval"]))
    optimizer = api.Optimizer(str(f["optimizer"]), module) if f["optimizer"] else None
    if lr is not None:
        optimizer.set_learning_rate(lr)
    sched = api.LinearLRScheduler(optimizer, *scheduler, initial_lr=0.05) if scheduler else None
    trainable = [n for n, p in state.parameters if p.requires_grad]
    record = []
    data = oc.batches(name, steps + 2)
    for i, batch in enumerate(data[:steps]):
        record.append(("outputs", i, as_numpy(module(*batch))))
        record.append(("grads", i, tuple(np.array(state.parameters[n].grad) for n in trainable)))
        if optimizer:
            optimizer.step()
            record.append(("lr", i, (np.float32(optimizer.get_learning_rate()),)))
            if sched:
                sched.step()
        module.lazy_reset_grad()
        record.append(("params", i, tuple(np.array(p.data) for _, p in state.parameters)))
    # two steps without a reset accumulate
    module(*data[steps])
    module(*data[steps + 1])
    record.append(("accumulated", 0, tuple(np.array(state.parameters[n].grad) for n in trainable)))
    module.eval()
    record.append(("eval", 0, as_numpy(module(*data[0]))))
    record.append(("contiguous", 0, (np.array(_numpy(module.get_contiguous_parameters(False))),
                                     np.array(_numpy(module.get_contiguous_parameters(True))))))
    record.append(("sizes", 0, (np.array(module.get_parameters_size(False)),
                                np.array(module.get_parameters_size(True)))))
    return record, module.input_names(), module.output_names()


def _numpy(value):
    return value if isinstance(value, np.ndarray) else value.numpy()


def assert_same_records(theirs, mine):
    assert [r[:2] for r in theirs] == [r[:2] for r in mine]
    for (kind, step, ref), (_, _, got) in zip(theirs, mine):
        assert len(ref) == len(got), (kind, step)
        for i, (r, g) in enumerate(zip(ref, got)):
            assert g.shape == r.shape and g.dtype == r.dtype, (kind, step, i, g.shape, r.shape, g.dtype, r.dtype)
            np.testing.assert_allclose(g, r, rtol=RTOL, atol=ATOL, err_msg=f"{kind} at step {step}, tensor {i}")


CASES = [n for n in oc.CASES if n != "mlp_ce_adamw_nominal" and not n.endswith("_full_ce_adamw")]


@pytest.mark.parametrize("name", CASES)
def test_training_matches_onnxruntime(name):
    theirs, their_inputs, their_outputs = script(oc.ort_api(), name)
    mine, my_inputs, my_outputs = script(ours, name)
    assert my_inputs == their_inputs
    assert my_outputs == their_outputs
    assert_same_records(theirs, mine)


@pytest.mark.parametrize("name", ["mlp_full_ce_adamw", "cnn_full_ce_adamw"])
def test_full_size_models_match_onnxruntime(name):
    assert_same_records(script(oc.ort_api(), name, steps=2)[0], script(ours, name, steps=2)[0])


@pytest.mark.parametrize("name", ["mlp_ce_sgd", "linreg_mse_adamw"])
def test_set_learning_rate_matches(name):
    assert_same_records(script(oc.ort_api(), name, lr=0.05)[0], script(ours, name, lr=0.05)[0])


def test_linear_lr_scheduler_arguments_mean_their_names():
    # ORT 1.19.2's Python wrapper swaps warmup and total, so ORT(total, warmup) is onnxtrain(warmup, total).
    theirs = script(oc.ort_api(), "mlp_ce_sgd", steps=6, scheduler=(5, 2))[0]
    mine = script(ours, "mlp_ce_sgd", steps=6, scheduler=(2, 5))[0]
    assert_same_records(theirs, mine)
    rates = [float(r[2][0]) for r in mine if r[0] == "lr"]
    np.testing.assert_allclose(rates, [0.0, 0.025, 0.05, 0.05 * 2 / 3, 0.05 / 3, 0.0], rtol=1e-6)


def test_copy_buffer_to_parameters_matches():
    f = oc.files("mlp_ce_adamw")
    results = []
    for api in (oc.ort_api(), ours):
        state = api.CheckpointState.load_checkpoint(str(f["checkpoint"]))
        module = api.Module(str(f["training"]), state, str(f["eval"]))
        size = module.get_parameters_size(True)
        buf = np.linspace(-1, 1, size, dtype=np.float32)
        if api is ours:
            module.copy_buffer_to_parameters(buf, True)
        else:
            from onnxruntime.capi.onnxruntime_inference_collection import OrtValue
            keep = OrtValue.ortvalue_from_numpy(buf)
            module.copy_buffer_to_parameters(keep._ortvalue, True)
        results.append({n: np.array(p.data) for n, p in state.parameters})
    for n in results[0]:
        np.testing.assert_array_equal(results[1][n], results[0][n])


def test_nominal_checkpoint_flow():
    f = oc.files("mlp_ce_adamw_nominal")
    full = ours.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    buffer = ours.Module(str(f["training"]), full).get_contiguous_parameters(False)
    state = ours.CheckpointState.load_checkpoint(str(f["nominal"]))
    module = ours.Module(str(f["training"]), state, str(f["eval"]))
    optimizer = ours.Optimizer(str(f["optimizer"]), module)
    batch = oc.batches("mlp_ce_adamw_nominal", 1)[0]
    with pytest.raises(ours.NominalStateError, match="Cannot perform TrainStep with a nominal state"):
        module(*batch)
    with pytest.raises(ours.NominalStateError, match="Cannot get parameter from a nominal state"):
        state.parameters["fc1.bias"]
    with pytest.raises(ours.NominalStateError, match="trainable_only = false"):
        module.copy_buffer_to_parameters(buffer, True)
    module.copy_buffer_to_parameters(buffer, False)
    loss = module(*batch)
    optimizer.step()
    reference = ours.Module(str(f["training"]), ours.CheckpointState.load_checkpoint(str(f["checkpoint"])))
    np.testing.assert_array_equal(loss, reference(*batch))
