"""ORT's artifacts trained on WebGPU equal the CPU provider: losses, parameters, accumulated gradients, eval
outputs and checkpoints (rtol 1e-4), with every node on the GPU and one submission per step."""
import numpy as np
import pytest

import ort_cases
from onnxtrain import api

CASES = ["mlp_ce_adamw", "mlp_ce_sgd", "mlp_mse_adamw", "mlp_bce_adamw", "mlp_l1_sgd", "cnn_ce_adamw",
         "linreg_mse_sgd", "frozen_ce_adamw", "mlp_cemean_ignore_sgd", "mlp_ce_adamw_wd_clip"]
RTOL = 1e-4


def close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * max(1e-6, float(np.max(np.abs(b)))), err_msg=what)


@pytest.mark.parametrize("name", CASES)
def test_training_equals_cpu(name):
    files = ort_cases.files(name)
    batches = ort_cases.batches(name, 4)
    cpu_losses, cpu_params, cpu = ort_cases.api_run(files, batches)
    gpu_losses, gpu_params, gpu = ort_cases.api_run(files, batches, device="webgpu")
    close(gpu_losses, cpu_losses, "losses")
    for step, (g, c) in enumerate(zip(gpu_params, cpu_params)):
        close(g, c, f"parameters after step {step + 1}")
    report = gpu.device_report()
    assert report["device"] == "webgpu" and report["gpu_bytes"] > 0
    assert report["fallbacks"]["train"] == [], report["fallbacks"]
    cpu.eval(), gpu.eval()
    close(gpu(*batches[0]), cpu(*batches[0]), "eval outputs")
    assert report["fallbacks"]["eval"] == [] or gpu.device_report()["fallbacks"]["eval"] == []


def test_accumulated_gradients_and_checkpoint():
    files = ort_cases.files("mlp_ce_adamw")
    batches = ort_cases.batches("mlp_ce_adamw", 3)
    states = {}
    for device in ("cpu", "webgpu"):
        state = api.CheckpointState.load_checkpoint(files["checkpoint"])
        module = api.Module(files["training"], state, files["eval"], device=device)
        optimizer = api.Optimizer(files["optimizer"], module)
        module(*batches[0])
        module(*batches[1])           # no reset: gradients add up
        grads = {n: p.grad.copy() for n, p in state.parameters}
        optimizer.step()
        states[device] = (grads, api.CheckpointState.save_checkpoint(state, None, include_optimizer_state=True),
                          module.export_model_for_inferencing(None, ["output"]))
    for name, grad in states["cpu"][0].items():
        close(states["webgpu"][0][name], grad, f"accumulated gradient of {name}")
    cpu_saved = api.CheckpointState.load_checkpoint(states["cpu"][1])
    gpu_saved = api.CheckpointState.load_checkpoint(states["webgpu"][1])
    for (n, c), (m, g) in zip(cpu_saved.parameters, gpu_saved.parameters):
        assert n == m
        close(g.data, c.data, f"saved parameter {n}")
    cpu_moments = cpu_saved._optimizer.states
    for n, moments in gpu_saved._optimizer.states.items():
        for m, value in moments.items():
            close(value, cpu_moments[n][m], f"saved {m} of {n}")
    assert len(states["webgpu"][2]) > 0


def test_host_writes_reach_the_gpu():
    """A parameter written on the host (copy_buffer_to_parameters, Parameter.data) is what the next GPU step
    trains from."""
    files = ort_cases.files("mlp_ce_sgd")
    batch = ort_cases.batches("mlp_ce_sgd", 1)[0]
    losses = {}
    for device in ("cpu", "webgpu"):
        state = api.CheckpointState.load_checkpoint(files["checkpoint"])
        module = api.Module(files["training"], state, files["eval"], device=device)
        optimizer = api.Optimizer(files["optimizer"], module)
        module(*batch)
        optimizer.step()
        flat = module.get_contiguous_parameters(True)
        module.copy_buffer_to_parameters(flat * np.float32(0.5), True)
        state.parameters["fc1.bias"].data[...] = 0.25
        losses[device] = float(module(*batch))
    np.testing.assert_allclose(losses["webgpu"], losses["cpu"], rtol=RTOL)


def test_one_submission_per_step():
    files = ort_cases.files("mlp_ce_adamw")
    batches = ort_cases.batches("mlp_ce_adamw", 4)
    state = api.CheckpointState.load_checkpoint(files["checkpoint"])
    module = api.Module(files["training"], state, files["eval"], device="webgpu")
    optimizer = api.Optimizer(files["optimizer"], module)
    device = module._train.provider.device
    module(*batches[0])
    optimizer.step()
    module.lazy_reset_grad()
    before = device.submissions
    for batch in batches[1:]:
        module(*batch)
        optimizer.step()
        module.lazy_reset_grad()
    assert device.submissions - before == 3


def test_unknown_device_is_named():
    files = ort_cases.files("mlp_ce_sgd")
    state = api.CheckpointState.load_checkpoint(files["checkpoint"])
    with pytest.raises(ValueError, match="'cuda'"):
        api.Module(files["training"], state, files["eval"], device="cuda")


def test_execution_providers_fall_back_in_order_and_never_silently(monkeypatch):
    from onnxtrain.providers import provider_for
    from onnxtrain.webgpu import NoAdapterError, provider
    assert provider_for(["webgpu", "wasm"]) == "webgpu"
    assert provider_for(["wasm", "webgpu"]) == "wasm"
    assert provider_for(None) == "wasm"

    def no_adapter():
        raise NoAdapterError("WebGPU: no adapter")
    monkeypatch.setattr(provider, "open_provider", no_adapter)
    assert provider_for(["webgpu", "wasm"]) == "wasm"
    with pytest.raises(RuntimeError, match="'webgpu' is available here \\(webgpu: WebGPU: no adapter\\)"):
        provider_for(["webgpu"])
    with pytest.raises(ValueError, match="unknown execution provider 'cuda'"):
        provider_for(["cuda", "wasm"])
