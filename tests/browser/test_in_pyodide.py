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


def pyodide_modules():
    marked = [p for p in sorted(TESTS.glob("test_*.py")) if MARK.search(p.read_text())]
    return {p.name: p.read_text() for p in marked + sorted((TESTS / "pyodide").glob("test_*.py"))}


def test_marked_modules_exist_and_import_no_reference_packages():
    modules = pyodide_modules()
    assert {"test_runtime.py", "test_pure_modules.py", "test_simd_kernels.py"} <= set(modules)
    for name, text in modules.items():
        assert not re.search(r"^\s*(import|from) (onnx|onnxruntime|torch)\b", text, re.M), name


def test_unit_tests_pass_inside_pyodide(site_page, site_url):
    names = site_page.page.evaluate("async () => (await fetch('wheels/wheels.json')).json()")
    urls = [site_url + "wheels/" + names[k] for k in ("iniconfig", "pluggy", "pytest")]
    code = RUNNER.replace("FILES", repr(json.dumps(pyodide_modules()))).replace("WHEELS", repr(json.dumps(urls)))
    status, output = site_page.call("runPython", {"code": code})
    assert status == 0, output
    assert re.search(r"\d+ passed", output), output
    assert "failed" not in output and "error" not in output.lower(), output
