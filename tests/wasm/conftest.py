"""The wasm provider's tests run on the native kernel build (as tests/pyodide does, they are left out where it is
not loaded: the provider has nothing to run on there); a loaded build without the executor fails them."""
from onnxtrain.ops import simd

collect_ignore_glob = [] if simd.available() else ["test_*.py"]
