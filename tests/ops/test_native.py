"""The native kernels' packaging: the onnxtrain wheel stays pure Python, the onnxtrain_native platform wheel
carries the host build of web/kernels, and onnxtrain loads it from an install unless ONNXTRAIN_NATIVE=0.
(The kernels themselves: tests/pyodide, collected here when they are loaded; the parity tests run both ways.)"""
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build_py():
    spec = importlib.util.spec_from_file_location("onnxtrain_build", ROOT / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_onnxtrain_wheel_stays_pure_python():
    wheel = build_py().build_wheel()
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Root-Is-Purelib: true" in zf.read(info).decode()
        metadata = zf.read(info.replace("WHEEL", "METADATA")).decode()
    assert not [n for n in names if n.endswith((".so", ".c", ".h", ".wasm", ".dll", ".dylib"))]
    assert 'Requires-Dist: onnxtrain_native==0.1.0; extra == "native"' in metadata


def available_in(site: Path, **env) -> str:
    """simd.available() in a fresh CPython that has pysrc and ``site`` on its path."""
    base = {k: v for k, v in os.environ.items() if k != "ONNXTRAIN_NATIVE"}
    env = dict(base, PYTHONPATH=os.pathsep.join([str(ROOT / "pysrc"), str(site)]), **env)
    out = subprocess.run([sys.executable, "-c", "from onnxtrain.ops import simd; print(simd.available())"],
                         env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.slow
def test_the_native_wheel_installs_kernels_that_onnxtrain_loads(tmp_path):
    build = build_py()
    build.build_native()
    wheels = sorted((ROOT / "dist").glob("onnxtrain_native-*-py3-none-*.whl"))
    wheel = next(w for w in wheels if not w.name.endswith("-any.whl"))
    with zipfile.ZipFile(wheel) as zf:
        assert "onnxtrain_native/onnxtrain_kernels.so" in zf.namelist()
        zf.extractall(tmp_path)
    assert available_in(tmp_path) == "True"
    assert available_in(tmp_path, ONNXTRAIN_NATIVE="0") == "False"
    assert available_in(tmp_path / "nothing-here") == "False"
