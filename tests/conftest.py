import sys
import types

from onnxtrain.ops import simd

# tests/pyodide: the SIMD kernels against numpy, run inside Pyodide by tests/browser/test_in_pyodide.py, and here
# when the host build of the same kernels (build.py native) is loaded
collect_ignore = [] if simd.available() else ["pyodide"]

# onnxruntime/training/__init__.py imports its torch-based `optim` package; the
# on-device training parts (api, artifacts, onnxblock) do not need torch.
if "torch" not in sys.modules:
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.modules.setdefault("onnxruntime.training.optim", types.ModuleType("onnxruntime.training.optim"))
