"""Inside Pyodide, in the page's worker: the pure-numpy unit tests (modules that set IN_PYODIDE = True), unchanged,
and the tests of tests/pyodide/ (the SIMD kernels, which only load there)."""
import json
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MARK = re.compile(r"^IN_PYODIDE = True\b", re.M)
RUNNER = """
import io, contextlib, os, json, pyodide_js
await pyodide_js.loadPackage("micropip")
import micropip
os.makedirs("/tmp/unit", exist_ok=True)
for name, text in json.loads(FILES).items():
    with open(f"/tmp/unit/{name}", "w") as f:
        f.write(text)
await micropip.install(json.loads(WHEELS), deps=False)
import pytest
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    code = pytest.main(["-q", "-p", "no:cacheprovider", "/tmp/unit"])
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


def pyodide_modules():
    marked = [p for p in sorted(TESTS.glob("test_*.py")) if MARK.search(p.read_text())]
    return {p.name: p.read_text() for p in marked + sorted((TESTS / "pyodide").glob("test_*.py"))}


def test_marked_modules_exist_and_import_no_reference_packages():
    modules = pyodide_modules()
    assert {"test_runtime.py", "test_pure_modules.py", "test_simd_kernels.py"} <= set(modules)
    for name, text in modules.items():
        assert not re.search(r"^\s*(import|from) (onnx|onnxruntime|torch)\b", text, re.M), name


def run_inside(page, site_url, modules):
    names = page.page.evaluate("async () => (await fetch('testing/wheels/wheels.json')).json()")
    urls = [site_url + "testing/wheels/" + names[k] for k in ("iniconfig", "pluggy", "pytest")]
    code = RUNNER.replace("FILES", repr(json.dumps(modules))).replace("WHEELS", repr(json.dumps(urls)))
    status, output = page.call("runPython", {"code": code})
    assert status == 0, output
    assert re.search(r"\d+ passed", output), output
    assert "failed" not in output and "error" not in output.lower(), output


def test_unit_tests_pass_inside_pyodide(site_page, site_url):
    assert site_page.info["kernels"] == "onnxtrain_kernels_relaxed.so"  # Chromium has relaxed SIMD
    run_inside(site_page, site_url, pyodide_modules())


def test_the_plain_simd128_build_passes_the_kernel_tests_too(own_page, site_url):
    """Engines without relaxed SIMD load the SIMD128 build: the same tests, on that build."""
    own_page.call("runPython", {"code": SWITCH_BUILD.replace("NAME", '"onnxtrain_kernels.so"')})
    modules = pyodide_modules()
    run_inside(own_page, site_url, {"test_simd_kernels.py": modules["test_simd_kernels.py"]})
