"""A task trained through the Trainer on WebGPU gives the CPU's run: the same losses, metrics and exported
model (the Trainer's guarded steps read the state back when they check it)."""
import functools

import numpy as np

from onnxtrain.tasks import tabular
from onnxtrain.tasks.training import Run
from tasks.test_tabular import wine_csv


def run(device: str):
    session = tabular.TabularSession(wine_csv(), run=functools.partial(Run, device=device))
    session.setup("cultivar", "classification", [16])
    losses = []
    for _ in range(12):
        losses.append(session.step(32, 0.01)["loss"])
    return session, losses


def test_tabular_task_on_webgpu_equals_cpu():
    cpu, cpu_losses = run("cpu")
    gpu, gpu_losses = run("webgpu")
    assert gpu.training.module.device_report()["device"] == "webgpu"
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert gpu.evaluate()["confusion"] == cpu.evaluate()["confusion"]
    for (n, c), (_, g) in zip(cpu.training.module._state.parameters, gpu.training.module._state.parameters):
        np.testing.assert_allclose(g.data, c.data, rtol=1e-4, atol=1e-6, err_msg=n)
