"""The drop-in suite: each test runs once on onnxruntime-training 1.19.2 and once on onnxtrain, through the
same names (``training.artifacts``, ``training.onnxblock``, ``training.api``), as code written for ORT would."""
from __future__ import annotations

import types

import pytest

from ort_cases import ort_training


def _onnxtrain():
    import onnxtrain.api
    import onnxtrain.artifacts
    import onnxtrain.onnxblock
    return types.SimpleNamespace(name="onnxtrain", api=onnxtrain.api, artifacts=onnxtrain.artifacts,
                                 onnxblock=onnxtrain.onnxblock)


def _onnxruntime():
    ort = ort_training()
    return types.SimpleNamespace(name="onnxruntime", api=ort.api, artifacts=ort.artifacts, onnxblock=ort.onnxblock)


@pytest.fixture(params=["onnxruntime", "onnxtrain"])
def training(request):
    """``onnxruntime.training`` of onnxruntime-training 1.19.2, or onnxtrain in its place."""
    return _onnxruntime() if request.param == "onnxruntime" else _onnxtrain()
