"""A web developer's bundled page: the sample apps of tests/browser/bundler_apps/ (one per bundler: esbuild, Vite,
webpack 5; their page is shared/app.js) built by the bundler's production build with the packed npm package
(dist/onnxtrain-<version>.tgz) installed, served from a plain static server (no headers) and run in Chromium.  The
page's losses and exported model equal CPython onnxtrain's on the same artifacts and batches; no request fails or
leaves the page's origin.  The bundlers run with their defaults and the settings docs/bundlers.md gives, which
quotes the apps' files.  A bundle whose library files are missing rejects with an error that names the URL."""
import base64
import json
import os
import re
import shutil
import subprocess
import tarfile

import numpy as np
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import build
import ort_cases as oc
from browser.conftest import Page

APPS = build.ROOT / "tests" / "browser" / "bundler_apps"
GUIDE = build.ROOT / "docs" / "bundlers.md"
BUNDLERS = ["esbuild", "vite", "webpack"]
CASE = "mlp_ce_adamw"  # the library tests' small MLP (20-16-5, cross-entropy, AdamW)
STEPS = 4
TIMEOUT_MS = 180_000  # the page trains (a fresh start of the engine, then the steps)
FAIL_MS = 60_000  # a missing file rejects the start well before this
# the apps' files that say how each is built: docs/bundlers.md quotes each of them whole
CONFIGS = ["esbuild/package.json", "esbuild/build.mjs", "esbuild/main.js", "vite/package.json",
           "webpack/package.json", "webpack/webpack.config.js"]


def version() -> str:
    return build.project_version()


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    """A copy of bundler_apps/ whose node_modules (beside the apps, so that shared/app.js finds it too) holds the
    packed npm package, unpacked as npm installs it, and links to the pinned tools the apps' package.json files
    name, with their commands in node_modules/.bin for `npm run build`."""
    tgz = build.ROOT / "dist" / f"onnxtrain-{version()}.tgz"
    if not tgz.is_file():
        pytest.fail(f"{tgz} is missing: run the tests through `python3 build.py test` (it packs the library)")
    root = tmp_path_factory.mktemp("apps")
    shutil.copytree(APPS, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("node_modules", "dist"))
    modules = root / "node_modules"
    (modules / ".bin").mkdir(parents=True)
    with tarfile.open(tgz) as tar:
        tar.extractall(root / "unpacked", filter="data")
    (root / "unpacked" / "package").rename(modules / "onnxtrain")
    tools = build.node_tools()
    wanted = set()
    for bundler in BUNDLERS:
        wanted |= set(json.loads((root / bundler / "package.json").read_text())["devDependencies"])
    for name in sorted(wanted):
        (modules / name).symlink_to(tools / name)
        bins = json.loads((tools / name / "package.json").read_text()).get("bin", {})
        for command, path in ({name: bins} if isinstance(bins, str) else bins).items():
            (modules / ".bin" / command).symlink_to(tools / name / path)
    return root


def reference():
    batches = oc.batches(CASE, STEPS)
    losses, _, module = oc.api_run(oc.files(CASE), batches)
    return batches, losses, module


def build_app(app, batches) -> "Path":
    """`npm run build` in the app folder ``app``; its output folder dist/, with the artifacts and data.json the
    page loads beside it."""
    dist = app / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    done = subprocess.run(["npm", "run", "build"], cwd=app, capture_output=True, text=True,
                          env=dict(os.environ, npm_config_update_notifier="false"))
    print(done.stdout, done.stderr)
    assert done.returncode == 0, f"{app.name}: npm run build failed:\n{done.stdout}\n{done.stderr}"
    (dist / "artifacts").mkdir()
    for path in oc.files(CASE).values():
        if path is not None:
            shutil.copy2(path, dist / "artifacts" / path.name)
    wire = lambda a: {"data": a.ravel().tolist(), "dims": list(a.shape)}  # noqa: E731
    (dist / "data.json").write_text(json.dumps({"batches": [{"input": wire(x), "labels": wire(y)}
                                                             for x, y in batches]}))
    return dist


def run_page(browser, folder, timeout=TIMEOUT_MS):
    """``folder`` served by a plain static server and opened in a fresh context: the page's window.appResult (the
    model as base64), its status line, its Page (requests) and the requests that failed or got an HTTP error."""
    server, url = build.serve_in_background(folder)
    context = browser.new_context()
    try:
        raw = context.new_page()
        page = Page(context, raw, url)
        failed = []
        context.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
        context.on("response", lambda r: r.status >= 400 and failed.append(f"{r.url}: HTTP {r.status}"))
        raw.goto(url)
        try:
            raw.wait_for_function("() => window.appResult !== undefined", timeout=timeout)
        except PlaywrightTimeout:
            pytest.fail(f"{folder.parent.name}: the page neither finished nor failed in {timeout / 1000:.0f} s "
                        f"(status {raw.text_content('#status')!r}; console {page.console[-5:]}; failed {failed})")
        result = raw.evaluate("""() => {
            const { model, ...rest } = window.appResult;
            if (!model) return rest;
            let text = "";
            for (let i = 0; i < model.length; i += 0x8000) text += String.fromCharCode(...model.subarray(i, i + 0x8000));
            return { ...rest, model: btoa(text) };
        }""")
        return result, raw.text_content("#status"), page, failed, url
    finally:
        context.close()
        server.shutdown()


@pytest.mark.parametrize("bundler", BUNDLERS)
def test_the_bundled_app_trains_like_cpython(browser, apps, bundler):
    ort = pytest.importorskip("onnxruntime")
    batches, losses, module = reference()
    dist = build_app(apps / bundler, batches)
    result, status, page, failed, url = run_page(browser, dist)
    assert "error" not in result, f"{bundler}: {result['error']}"
    print(f"{bundler}: page {result['losses']} cpython {losses}; {len(page.requests)} requests")
    # the page runs the SIMD kernels, CPython numpy: float32 results that differ only in rounding
    np.testing.assert_allclose(result["losses"], losses, rtol=1e-6)
    assert status.startswith(f"step {STEPS}: loss ")
    x = batches[0][0]
    got = ort.InferenceSession(base64.b64decode(result["model"]), providers=["CPUExecutionProvider"]).run(
        ["output"], {"input": x})[0]
    expected = ort.InferenceSession(module.export_model_for_inferencing(None, ["output"]),
                                    providers=["CPUExecutionProvider"]).run(["output"], {"input": x})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert failed == [], failed
    assert page.requests and page.off_origin() == [], page.off_origin()
    # start()'s onProgress: each file's bytes as they came (the last report of each has them all), then "ready"
    progress = result["progress"]
    last = {p["file"]: p for p in progress if p["phase"] == "download"}
    assert last and all(p["loaded"] == p["total"] > 0 for p in last.values()), last
    assert progress[-1]["phase"] == "ready", progress[-1]


def without_wasm_paths(apps):
    """The esbuild app as the issue's user first built it: main.js without env.wasm.wasmPaths."""
    app = apps / "esbuild-without-wasm-paths"
    if not app.exists():
        shutil.copytree(apps / "esbuild", app)
        main = (app / "main.js").read_text()
        line = 'env.wasm.wasmPaths = "./onnxtrain/";\n'
        assert line in main
        (app / "main.js").write_text(main.replace(line, ""))
    return app


# (the app, a file of its output to delete, the file whose URL the error names, relative to the page)
MISSING = {
    "engine": ("esbuild", "onnxtrain/engine.mjs", "onnxtrain/engine.mjs"),
    "pyodide": ("esbuild", "onnxtrain/pyodide/pyodide.asm.wasm", "onnxtrain/pyodide/pyodide.asm.wasm"),
    "no wasmPaths": (without_wasm_paths, None, "engine.mjs"),
}


@pytest.mark.parametrize("case", list(MISSING))
def test_missing_library_files_reject_with_the_url(browser, apps, case):
    app, delete, named = MISSING[case]
    app = app(apps) if callable(app) else apps / app
    dist = build_app(app, oc.batches(CASE, 1))
    if delete:
        (dist / delete).unlink()
    result, status, page, failed, url = run_page(browser, dist, FAIL_MS)
    assert "error" in result, f"{case}: the page trained without {delete or 'wasmPaths'}"
    assert url + named in result["error"], result["error"]
    assert status == result["error"]
    assert page.off_origin() == []


def guide_blocks() -> dict:
    """docs/bundlers.md's fenced code blocks that name an app file after their language (```js esbuild/build.mjs):
    {file: text}."""
    blocks = re.findall(r"^```\w+ ([\w./-]+)\n(.*?)^```$", GUIDE.read_text(), re.M | re.S)
    names = [name for name, _ in blocks]
    assert len(names) == len(set(names)), f"{GUIDE.name} quotes a file twice: {names}"
    return dict(blocks)


def test_the_guide_quotes_the_apps_files():
    blocks = guide_blocks()
    assert sorted(blocks) == sorted(CONFIGS), f"{GUIDE.name} quotes {sorted(blocks)}, the apps' files are {CONFIGS}"
    for name, text in blocks.items():
        assert text == (APPS / name).read_text(), f"{GUIDE.name}'s {name} is not the app's {APPS / name}"


def test_the_apps_pin_the_tools_versions():
    tools = json.loads((build.NODE_TOOLS / "package.json").read_text())["devDependencies"]
    for bundler in BUNDLERS:
        package = json.loads((APPS / bundler / "package.json").read_text())
        assert package["dependencies"] == {"onnxtrain": version()}, bundler
        for name, pinned in package["devDependencies"].items():
            assert tools[name] == pinned, f"{bundler}/package.json pins {name} {pinned}, tools/ {tools[name]}"
