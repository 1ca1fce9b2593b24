"""Values as onnxruntime.training.api hands them over: the contiguous parameter buffer, which ORT gives as an
OrtValue, and OrtValue feeds, which ORT answers with OrtValues.  onnxruntime is never imported here: OrtValues
exist only where the caller has imported it, so its module is looked up, not loaded (Pyodide has none)."""
from __future__ import annotations

import sys

import numpy as np


class ContiguousParameters(np.ndarray):
    """Module.get_contiguous_parameters' buffer: a new float32 array (writing into it changes no parameter), which
    also answers ``numpy()`` as ORT's OrtValue does, with a view of the same buffer (not a copy)."""

    def numpy(self) -> np.ndarray:
        return self.view(np.ndarray)


def host_array(value) -> np.ndarray:
    """``value`` as a numpy array: itself, what its ``numpy()`` gives (an onnxruntime OrtValue, the C OrtValue
    get_contiguous_parameters gives in ORT, a CPU torch tensor), else ``np.asarray(value)``."""
    if isinstance(value, np.ndarray):
        return value
    numpy = getattr(value, "numpy", None)
    return np.asarray(numpy() if callable(numpy) else value)


def ort_value_class():
    """onnxruntime.OrtValue where the caller has imported onnxruntime, else None."""
    return getattr(sys.modules.get("onnxruntime"), "OrtValue", None)


def fed_ort_values(inputs) -> bool:
    """Whether ORT's Module.__call__ answers ``inputs`` with OrtValues: none is a numpy array and (unlike ORT, which
    also answers no inputs so) one is an onnxruntime.OrtValue."""
    for value in inputs:
        if isinstance(value, np.ndarray):
            return False
    cls = ort_value_class()
    return cls is not None and any(isinstance(value, cls) for value in inputs)


def as_ort_values(arrays: list) -> list:
    """``arrays`` as onnxruntime.OrtValues on the CPU (each holding its array's memory, no copy where contiguous)."""
    cls = ort_value_class()
    return [cls.ortvalue_from_numpy(a if a.flags.c_contiguous else a.copy()) for a in arrays]
