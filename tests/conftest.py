import sys
import types

collect_ignore = ["pyodide"]  # wasm kernels: run inside Pyodide by tests/browser/test_in_pyodide.py

# onnxruntime/training/__init__.py imports its torch-based `optim` package; the
# on-device training parts (api, artifacts, onnxblock) do not need torch.
if "torch" not in sys.modules:
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.modules.setdefault("onnxruntime.training.optim", types.ModuleType("onnxruntime.training.optim"))
