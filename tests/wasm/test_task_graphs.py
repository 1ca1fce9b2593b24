"""The site's models on the wasm provider against the numpy provider, with no node on the host: EfficientNet-Lite0's
embeddings behind the preprocessing (tasks/backbone.py) and the personalization head's training, with and without
the fine-tuned last convolution (tasks/personalize.py); MiniLM's sentence embeddings (tasks/text.py's Encoder) and
the text task's LoRA training step (text/lora.py).

The embeddings are numpy's bits.  Training: with the numpy kernels on the executor's exp and log
(helpers.use_executor_math) the personalization runs are numpy's bits too; against stock numpy, the exp of softmax
cross-entropy and of GELU's gradient (Erf's, in LoRA's backward) is the executor's (mathlib.c: within 2 ulp of
numpy's SIMD exp, test_lowerings_text.py), carried by AdamW into the parameters: losses within LOSS_RTOL,
parameters within PARAM_ATOL after STEPS steps (measured over six image seeds: at most 1.1e-7 relative and 2.4e-7;
AdamW's normalised step lr * m / (sqrt(v) + eps) can move a parameter whose gradient is near zero by up to 2 lr a
step on any difference, which these seeds do not hit: one other draw moved one of 3843 parameters by 2.8e-6)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import assert_bits, use_executor_math

ROOT = Path(__file__).resolve().parents[2]
BACKBONE = ROOT / "site" / "artifacts" / "efficientnet_lite0" / "backbone.onnx"
STEPS = 4
LOSS_RTOL = 1e-5
PARAM_ATOL = 1e-6
TEXTS = {"sport": ["The team won the match in overtime.", "She scored two goals in the final.",
                   "The coach praised the defenders after the game.", "He ran the marathon in under three hours."],
         "food": ["Add the garlic and simmer for ten minutes.", "This soup needs more salt.",
                  "We baked bread with rye flour.", "The restaurant serves fresh pasta every day."]}


def no_host_nodes(run) -> None:
    module = run.module
    assert module._train.fallbacks == [] and run.optimizer._session.fallbacks == [], \
        (module._train.fallbacks, run.optimizer._session.fallbacks)


def compare_runs(sessions: dict, batch_size: int, learning_rate: float, exact: bool = False) -> None:
    """STEPS steps of each session; with the executor's exp and log in the numpy kernels (``exact``), numpy's bits."""
    results = {}
    for device, session in sessions.items():
        losses = [session.step(batch_size, learning_rate)["loss"] for _ in range(STEPS)]
        results[device] = (losses, session.training.module.get_contiguous_parameters(True).copy())
        if device == "wasm":
            no_host_nodes(session.training)
    (want_losses, want_params), (losses, params) = results["numpy"], results["wasm"]
    if exact:
        assert losses == want_losses
        assert_bits(params, want_params, "the parameters")
    np.testing.assert_allclose(losses, want_losses, rtol=LOSS_RTOL)
    np.testing.assert_allclose(params, want_params, rtol=0, atol=PARAM_ATOL)


# -- EfficientNet-Lite0 ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def backbone_bytes() -> bytes:
    if not BACKBONE.exists():
        pytest.fail(f"{BACKBONE} is missing: build the site first (`python3 build.py site`, or run the tests through "
                    f"`python3 build.py test`)")
    return BACKBONE.read_bytes()


@pytest.mark.slow
@pytest.mark.site
@pytest.mark.parametrize("shape", [(16, 224, 224, 4), (3, 240, 320, 4), (2, 100, 90, 3)])
def test_backbone_embeddings(backbone_bytes, shape):
    from onnxtrain.tasks.backbone import Backbone
    want, got = Backbone(backbone_bytes, device="numpy"), Backbone(backbone_bytes, device="wasm")
    images = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    for g, w in zip(got.embed(images), want.embed(images)):
        assert_bits(g, w, "the features and the block")
    assert got.embedder.fallbacks == []


@pytest.mark.slow
@pytest.mark.site
@pytest.mark.parametrize("fine_tune", [False, True])
@pytest.mark.parametrize("exact", [True, False])
def test_personalization_head(backbone_bytes, fine_tune, exact, monkeypatch):
    from onnxtrain.tasks.backbone import Backbone
    from onnxtrain.tasks.personalize import PersonalizeSession
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (4, 120, 150, 4), dtype=np.uint8) for _ in range(3)]
    sessions = {}
    for device in ("numpy", "wasm"):
        session = sessions[device] = PersonalizeSession(Backbone(backbone_bytes, device=device), device=device)
        for c, batch in enumerate(images):
            session.add_class(f"class {c}")
            session.add_samples(batch, c)
        session.setup(fine_tune=fine_tune, seed=3)
    if exact:
        use_executor_math(monkeypatch)
    compare_runs(sessions, 8, 0.003, exact)


# -- MiniLM ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_files():
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "text"))
    import minilm
    return minilm.files()


@pytest.mark.slow
def test_minilm_embeddings(minilm_files):
    from onnxtrain.tasks.text import Encoder
    from onnxtrain.text.tokenizer import Tokenizer
    want, got = Encoder(minilm_files[0], "numpy"), Encoder(minilm_files[0], "wasm")
    texts = [t for rows in TEXTS.values() for t in rows] + ["ok", "the printer keeps jamming " * 40]
    batch = Tokenizer.from_json(minilm_files[1]).batch(texts)
    assert_bits(got.embed(batch), want.embed(batch), "the embeddings")
    assert got.session.fallbacks == []


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["lora", "head"])
def test_minilm_lora_and_head_steps(minilm_files, mode):
    from onnxtrain.tasks.text import Encoder, TextSession
    sessions = {}
    for device in ("numpy", "wasm"):
        session = sessions[device] = TextSession(Encoder(minilm_files[0], device), minilm_files[1], device=device)
        for k, (name, rows) in enumerate(TEXTS.items()):
            session.add_class(name)
            session.add_texts(rows, k)
        session.setup(mode=mode, rank=4 if mode == "lora" else None, seed=1)
    compare_runs(sessions, 4, 1e-3)
