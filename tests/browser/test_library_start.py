"""The library's start: its progress, the repeat visit from the engine's cache, env.wasm.wasmPaths, and an import
where there is no browser (a server rendering the page)."""
import json
import subprocess

import build
from browser.conftest import Page
from browser.test_library import SUB, library_url  # noqa: F401  (the fixture)

# start({onProgress}) on a fresh page of the library's test page: the records and what start() resolved to
STARTED = """async () => {
    const records = [];
    const info = await lib.start({ onProgress: (r) => records.push(r) });
    return { records, info };
}"""


def started(context, url):
    raw = context.new_page()
    page = Page(context, raw, url)
    raw.goto(url + SUB)
    raw.wait_for_function("() => window.libraryLoaded === true")
    return page, raw.evaluate(STARTED)


def downloads(records):
    """file -> its last download record."""
    return {r["file"]: r for r in records if r["phase"] == "download"}


def test_the_start_reports_each_file_then_the_phases_and_a_repeat_visit_reads_the_cache(browser, library_url):
    context = browser.new_context()
    try:
        first, out = started(context, library_url)
        files = downloads(out["records"])
        assert {"pyodide/pyodide.asm.wasm", "pyodide/pyodide-lock.json", "wheels/python_stdlib.pyc.zip"} <= set(files)
        assert all(r["loaded"] == r["total"] > 0 and not r["cached"] for r in files.values()), files
        phases = [r["phase"] for r in out["records"] if r["phase"] != "download"]
        assert phases == ["python", "imports", "kernels", "ready"], phases
        fetched = [u for u in first.requests if "/onnxtrain/pyodide/" in u or "/onnxtrain/wheels/" in u]
        assert len(fetched) == len(set(fetched)), fetched  # each file once: the lock file too

        second, again = started(context, library_url)
        cached = downloads(again["records"])
        assert again["info"]["start"] == "restored"
        assert cached and all(r["cached"] for r in cached.values()), cached
        assert not [u for u in second.requests if "/onnxtrain/wheels/" in u or u.endswith((".wasm", ".whl", ".so"))]
        assert first.off_origin() == [] and second.off_origin() == []
    finally:
        context.close()


def test_wasm_paths_says_where_the_files_are(browser, library_url):
    """The library imported from one folder, its files served from another named by env.wasm.wasmPaths (a bundle
    that did not copy them).  (A wasmPaths where no engine is, onnxruntime-web's own folder, falls back to the
    library's: test_library.py's onnxruntime-web example sets one.)"""
    context = browser.new_context()
    try:
        raw = context.new_page()
        page = Page(context, raw, library_url)
        raw.goto(library_url + SUB)
        raw.wait_for_function("() => window.libraryLoaded === true")
        info = raw.evaluate("""async () => {
            const lib = await import(new URL("../../broken/onnxtrain/onnxtrain.mjs", location.href).href);
            lib.env.wasm.wasmPaths = new URL("onnxtrain/", location.href).href;
            return lib.start();
        }""")
        assert info["numpy"]
        engine = [u for u in page.requests if u.endswith("/engine.mjs")]
        assert engine == [library_url + SUB + "onnxtrain/engine.mjs"], engine
        assert not [u for u in page.requests if "/broken/onnxtrain/" in u and not u.endswith("onnxtrain.mjs")]
    finally:
        context.close()


def test_importing_where_there_is_no_browser_is_harmless_and_start_says_why():
    """Node (a server rendering the page) imports the library; start() and create() reject with the reason."""
    module = (build.TEST_SITE / build.LIBRARY / "onnxtrain.mjs").as_uri()
    script = f"""
const lib = await import({json.dumps(module)});
const said = [];
for (const call of [() => lib.start(), () => lib.TrainingSession.create({{ checkpointState: "c", trainModel: "t" }})]) {{
  try {{ await call(); said.push(null); }} catch (err) {{ said.push(err.message); }}
}}
console.log(JSON.stringify({{ exports: Object.keys(lib).length, said }}));
"""
    result = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["exports"] > 10
    assert out["said"] == ["onnxtrain runs in a web browser: it trains in a Web Worker, which this environment lacks "
                           "(import it on the server if you like, but start it in the page)"] * 2, out
