"""The Trainer's guarded steps on WebGPU: one submission per step, and a step whose loss or update is not finite
is undone exactly, with the error the CPU gives."""
import numpy as np
import pytest

import ort_cases
from onnxtrain import api
from onnxtrain.train import Trainer
from onnxtrain.train.guard import NonFiniteStepError


def trainer(device, name="mlp_ce_adamw", **options):
    files = ort_cases.files(name)
    state = api.CheckpointState.load_checkpoint(files["checkpoint"])
    module = api.Module(files["training"], state, files["eval"], device=device)
    optimizer = api.Optimizer(files["optimizer"], module)
    x, y = ort_cases.batches(name, 1, seed=3)[0]
    data = [np.concatenate([x] * 16), np.concatenate([y] * 16)]   # 16 steps an epoch
    return Trainer(module, optimizer, data, batch_size=8, epochs=2, learning_rate=0.01, shuffle=False, **options)


def test_guarded_steps_equal_the_cpu_in_one_submission_each():
    cpu, gpu = trainer("cpu"), trainer("webgpu")
    device = gpu.module._train.provider.device
    gpu.step()
    before = device.submissions
    cpu.step()
    records = [(cpu.step(), gpu.step()) for _ in range(5)]
    assert device.submissions - before == 5
    for c, g in records:
        np.testing.assert_allclose(g["loss"], c["loss"], rtol=1e-4)
    np.testing.assert_allclose(gpu.module.get_contiguous_parameters(), cpu.module.get_contiguous_parameters(),
                               rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("what", ["loss", "update"])
def test_a_bad_step_is_undone_as_on_the_cpu(what):
    errors, states = {}, {}
    for device in ("cpu", "webgpu"):
        t = trainer(device)
        t.step()
        before = (t.module.get_contiguous_parameters().copy(),
                  api.CheckpointState.save_checkpoint(t.module._state, None, include_optimizer_state=True))
        t.module._state.parameters["fc1.bias"].data[...] += 0   # a host write: the GPU copies are sent again
        before = (t.module.get_contiguous_parameters().copy(), before[1])
        if what == "loss":
            t.train_data[0][8:16] = np.nan   # the next batch
        else:
            t.optimizer.set_learning_rate(3e38)
            t.train_data[0][8:16] *= 1e30
        with pytest.raises(NonFiniteStepError) as caught:
            t.step()
        errors[device] = str(caught.value)
        np.testing.assert_array_equal(t.module.get_contiguous_parameters(), before[0])
        saved = api.CheckpointState.load_checkpoint(
            api.CheckpointState.save_checkpoint(t.module._state, None, include_optimizer_state=True))
        was = api.CheckpointState.load_checkpoint(before[1])
        assert saved._optimizer.step == was._optimizer.step
        for n, moments in was._optimizer.states.items():
            for m, value in moments.items():
                np.testing.assert_array_equal(saved._optimizer.states[n][m], value)
        states[device] = t
    assert errors["webgpu"] == errors["cpu"]
