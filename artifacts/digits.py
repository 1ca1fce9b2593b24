"""The digit classifier the drawing flow personalises (site path artifacts/digits/): a 64-32-10 MLP pretrained by
onnxtrain itself on scikit-learn's bundled 8x8 digits, and 300 of those digits (replay.npz: x [300, 64] in 0..1,
y [300]) that fine-tuning mixes in."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

from onnxtrain.tasks.handwriting import pretrain

FILES = ["model.onnx", "replay.npz"]
REPLAY, SEED = 300, 0


def build(dest: Path) -> dict:
    digits = load_digits()
    (dest / "model.onnx").write_bytes(pretrain(digits.data, digits.target))
    pick = np.random.default_rng(SEED).permutation(len(digits.data))[:REPLAY]
    with open(dest / "replay.npz", "wb") as f:
        np.savez(f, x=(digits.data[pick] / 16).astype(np.float32), y=digits.target[pick])
    return {"kind": "pretrained model",
            "description": "64-32-10 MLP digit classifier trained with onnxtrain (tasks.handwriting.pretrain: "
                           "Trainer, cross-entropy, AdamW, 30 epochs) on scikit-learn's 1797 8x8 digits; "
                           f"replay.npz holds {REPLAY} of those digits",
            "made_by": "onnxtrain.tasks.handwriting.pretrain",
            "data": "scikit-learn's load_digits (bundled; a copy of the UCI Optical Recognition of Handwritten "
                    "Digits test set)",
            "license": "MIT (onnxtrain's own); the digits: UCI Machine Learning Repository, CC BY 4.0",
            "files": FILES}
