"""The personalization flow on WebGPU: the backbone's embeddings (EfficientNet-Lite0 behind the preprocessing
graph, every node on the GPU) equal the CPU's, and so does the head's training on the same embeddings.  Lavapipe
embeds an image in seconds, so two classes of one sample each."""
import numpy as np
import pytest

from onnxtrain.tasks.backbone import Backbone
from onnxtrain.tasks.personalize import PersonalizeSession
from tasks.test_personalize import BACKBONE, crops, photos


@pytest.mark.slow
def test_embeddings_and_head_training_equal_the_cpu():
    data = BACKBONE.read_bytes()
    sessions = {}
    for device in ("cpu", "webgpu"):
        session = PersonalizeSession(Backbone(data, device=device), device=device)
        for label, name in enumerate(["china", "flower"]):
            session.add_class(name)
            session.add_samples(crops(photos()[name], 1, "left", label, size=(60, 80)), label)
        sessions[device] = session
    cpu, gpu = sessions["cpu"], sessions["webgpu"]
    assert gpu.backbone.embedder.fallbacks == []
    for key, (features, block) in cpu.store.items():
        got = gpu.store[key]
        # sums in another order: values near 0 are compared on the scale of the whole tensor
        np.testing.assert_allclose(got[0], features, rtol=1e-4, atol=1e-4 * np.abs(features).max())
        np.testing.assert_allclose(got[1], block, rtol=1e-4, atol=1e-4 * np.abs(block).max())

    cpu.store = {key: (f.copy(), b.copy()) for key, (f, b) in gpu.store.items()}   # the same inputs to the head
    for session in (cpu, gpu):
        session.setup()
        for _ in range(6):
            session.step(2, 0.003)
    assert gpu.training.module.device_report()["fallbacks"]["train"] == []
    np.testing.assert_allclose(gpu.training.module.get_contiguous_parameters(),
                               cpu.training.module.get_contiguous_parameters(), rtol=1e-4, atol=1e-6)
    features = gpu.store[next(iter(gpu.store))][0][None]
    np.testing.assert_allclose(gpu._model().run([features])[0], cpu._model().run([features])[0], rtol=1e-4,
                               atol=1e-6)
