"""Inside Pyodide, in the page's worker: the pure-numpy unit tests (modules that set IN_PYODIDE = True), unchanged,
and the tests of tests/pyodide/ (the SIMD kernels, which only load there).  The marked WGSL kernel tests of
tests/webgpu/ need an adapter: test_webgpu_page.py runs them, through run_inside, in a Chromium with WebGPU."""
import json
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MARK = re.compile(r"^IN_PYODIDE = True\b", re.M)
# Writes FILES into FOLDER and runs pytest on TARGETS there (the whole folder when there are none).
RUNNER = """
import io, contextlib, os, json, pyodide_js
await pyodide_js.loadPackage("micropip")
import micropip
os.makedirs(FOLDER, exist_ok=True)
for name, text in json.loads(FILES).items():
    with open(f"{FOLDER}/{name}", "w") as f:
        f.write(text)
await micropip.install(json.loads(WHEELS), deps=False)
import pytest
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    code = pytest.main(["-q", "-p", "no:cacheprovider"] + [f"{FOLDER}/{t}" for t in json.loads(TARGETS) or [""]])
[int(code), out.getvalue()]
"""


SWITCH_BUILD = """
import pyodide_js
from pyodide.ffi import to_js
from js import fetch, Object, Uint8Array
from onnxtrain.ops import simd
path = "/lib/" + NAME
data = Uint8Array.new(await (await fetch("kernels/" + NAME)).arrayBuffer())
pyodide_js.FS.writeFile(path, data)
await pyodide_js._module.loadDynamicLibrary(path, to_js({"loadAsync": True, "global": False, "nodelete": True,
                                                          "fs": pyodide_js.FS}, dict_converter=Object.fromEntries))
simd.load(path)
"""


# A whole pytest session in the page: far longer than Page.call's default for one request.
RUN_INSIDE_TIMEOUT = 900_000

# What the marked modules of tests/webgpu/ import from their folder.
WEBGPU_SUPPORT = ("conftest.py", "gpu_cases.py")


def marked(paths) -> list:
    return [p for p in sorted(paths) if MARK.search(p.read_text())]


def pyodide_modules():
    """The marked modules of the layer folders (tests/ir, tests/ops, ...), and tests/pyodide's, by name."""
    layers = [p for p in TESTS.glob("*/test_*.py") if p.parent.name not in ("browser", "webgpu", "pyodide")]
    return {p.name: p.read_text() for p in marked(layers) + sorted((TESTS / "pyodide").glob("test_*.py"))}


def webgpu_modules():
    """The marked WGSL kernel test modules of tests/webgpu/, by name."""
    return {p.name: p.read_text() for p in marked((TESTS / "webgpu").glob("test_*.py"))}


def webgpu_support():
    return {name: (TESTS / "webgpu" / name).read_text() for name in WEBGPU_SUPPORT}


def test_marked_modules_exist_and_import_no_reference_packages():
    modules = pyodide_modules()
    assert {"test_runtime.py", "test_ir_pure.py", "test_checkpoint_pure.py", "test_kernels_pure.py",
            "test_simd_kernels.py"} <= set(modules)
    gpu = webgpu_modules()
    assert {"test_elementwise.py", "test_matrix.py", "test_reduce.py", "test_layout.py", "test_conv_pool.py",
            "test_norm_resize.py", "test_loss_training.py", "test_program.py"} <= set(gpu)
    for name, text in {**modules, **gpu, **webgpu_support()}.items():
        assert not re.search(r"^\s*(import|from) (onnx|onnxruntime|torch|ort_cases)\b", text, re.M), name


def run_inside(page, site_url, modules, folder="/tmp/unit", targets=()):
    """Write ``modules`` {name: text} into ``folder`` in the page's Pyodide and run pytest there, on ``targets``
    (names in the folder) or on the whole folder; every test must pass.  pytest's output."""
    names = page.page.evaluate("async () => (await fetch('testing/wheels/wheels.json')).json()")
    urls = [site_url + "testing/wheels/" + names[k] for k in ("iniconfig", "pluggy", "pytest")]
    values = {"FILES": repr(json.dumps(modules)), "WHEELS": repr(json.dumps(urls)),
              "TARGETS": repr(json.dumps(list(targets))), "FOLDER": repr(folder)}
    code = re.sub(r"\b(FILES|WHEELS|TARGETS|FOLDER)\b", lambda m: values[m.group(1)], RUNNER)  # in one pass
    status, output = page.call("runPython", {"code": code}, timeout=RUN_INSIDE_TIMEOUT)
    assert status == 0, output
    assert re.search(r"\d+ passed", output), output
    assert "failed" not in output and "error" not in output.lower(), output
    return output


def test_unit_tests_pass_inside_pyodide(site_page, site_url):
    assert site_page.info["kernels"] == "onnxtrain_kernels_relaxed.so"  # Chromium has relaxed SIMD
    run_inside(site_page, site_url, pyodide_modules())


def test_the_plain_simd128_build_passes_the_kernel_tests_too(own_page, site_url):
    """Engines without relaxed SIMD load the SIMD128 build: the same tests, on that build."""
    own_page.call("runPython", {"code": SWITCH_BUILD.replace("NAME", '"onnxtrain_kernels.so"')})
    modules = pyodide_modules()
    run_inside(own_page, site_url, {"test_simd_kernels.py": modules["test_simd_kernels.py"]})
