"""The JavaScript library (site/onnxtrain/, sources in web/lib/) on a page that is not the app: the library folder
copied under a sub-path of a plain static server (no headers), two sessions at once, the losses, parameters,
exported model and checkpoints checked against CPython onnxtrain and onnxruntime on the same artifacts and batches."""
import base64
import re
import shutil
import threading

import numpy as np
import pytest

import build
import ort_cases as oc
from browser.conftest import Page
from onnxtrain import api

SUB = "sub/dir/"
CASES = {"mlp": "mlp_ce_adamw", "cnn": "cnn_ce_adamw", "mnist": "mlp_full_ce_adamw"}
TWO = {k: CASES[k] for k in ("mlp", "cnn")}  # the two sessions at once
ORT_WEB = ("onnxruntime-web", "1.19.2", "dist/ort.training.wasm.min.mjs")
STEPS = 4

PAGE = """<!doctype html><meta charset="utf-8"><title>not the app</title>
<script type="module">
import * as onnxtrain from "./onnxtrain/onnxtrain.mjs";
const ARRAYS = { float32: Float32Array, int64: BigInt64Array };
const decode = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const encode = (bytes) => {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
};
window.lib = onnxtrain;
window.sessions = {};
window.tensor = ([type, text, dims]) => new onnxtrain.Tensor(type, new ARRAYS[type](decode(text).buffer), dims);
window.encode = (view) => encode(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
window.decode = decode;
window.feeds = (session, batch) => Object.fromEntries(session.trainingInputNames.map((n, i) => [n, tensor(batch[i])]));
window.libraryLoaded = true;
</script>
"""


# the classic-script build: globalThis.onnxtrain, no module import
CLASSIC = """<!doctype html><meta charset="utf-8"><title>classic</title>
<script src="onnxtrain/onnxtrain.js"></script>
<script>
window.firstLoss = (async () => {
  const session = await onnxtrain.TrainingSession.create({ checkpointState: "mlp/checkpoint",
    trainModel: "mlp/training", evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" });
  const x = new Float32Array(8 * 20).map((_, i) => Math.sin(i));
  const labels = BigInt64Array.from({ length: 8 }, (_, i) => BigInt(i % 5));
  const out = await session.runTrainStep({ input: new onnxtrain.Tensor("float32", x, [8, 20]),
    labels: new onnxtrain.Tensor("int64", labels, [8]) });
  await session.release();
  return out[session.trainingOutputNames[0]].data[0];
})();
</script>
"""

# onnxruntime-web 1.19.2's documented training loop (its web example: create from URLs, runTrainStep on
# ort.Tensor feeds, read the loss by its output name, runOptimizerStep, lazyResetGrad, runEvalStep), with only
# the import line changed from `import * as ort from "onnxruntime-web/training";`.  LOSS_NAME and the batches
# come from the test.
EXAMPLE = """<!doctype html><meta charset="utf-8"><title>ORT-web example</title>
<script type="module">
import * as ort from "./onnxtrain/onnxtrain.mjs";

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = "/dist/";

async function loadTrainingSession() {
  const createOptions = {
    checkpointState: "mnist/checkpoint",
    trainModel: "mnist/training",
    evalModel: "mnist/eval",
    optimizerModel: "mnist/optimizer",
  };
  return ort.TrainingSession.create(createOptions);
}

async function runTrainingEpoch(session, batches, lossNodeName) {
  const losses = [];
  for (const batch of batches) {
    const feeds = {
      input: new ort.Tensor("float32", batch.data, [batch.size, 784]),
      labels: new ort.Tensor("int64", batch.labels, [batch.size]),
    };
    const results = await session.runTrainStep(feeds);
    const lossArray = results[lossNodeName].data;
    losses.push(lossArray[0]);
    await session.runOptimizerStep();
    await session.lazyResetGrad();
  }
  return losses;
}

async function runTestingEpoch(session, batch, lossNodeName) {
  const feeds = {
    input: new ort.Tensor("float32", batch.data, [batch.size, 784]),
    labels: new ort.Tensor("int64", batch.labels, [batch.size]),
  };
  const results = await session.runEvalStep(feeds);
  return results[lossNodeName].data[0];
}

window.runExample = async (lossNodeName, evalLossNodeName, batches) => {
  const session = await loadTrainingSession();
  const losses = await runTrainingEpoch(session, batches, lossNodeName);
  const evalLoss = await runTestingEpoch(session, batches[0], evalLossNodeName);
  const stepMs = []; // timing, not part of the example: 20 more steps, one at a time
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await runTrainingEpoch(session, [batches[i % batches.length]], lossNodeName);
    stepMs.push(performance.now() - t0);
  }
  await session.release();
  return { losses, evalLoss, stepMs };
};
</script>
"""


def wire(array):
    array = np.ascontiguousarray(array)
    return [array.dtype.name, base64.b64encode(array.tobytes()).decode(), list(array.shape)]


def reference(name, batches):
    """CPython onnxtrain on the same artifacts: the losses and trainable parameters after each step, and the
    module and its state."""
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"])
    optimizer = api.Optimizer(f["optimizer"], module)
    losses, params = [], []
    for batch in batches:
        losses.append(float(np.asarray(module(*batch)).reshape(-1)[0]))
        optimizer.step()
        module.lazy_reset_grad()
        params.append(module.get_contiguous_parameters(True).copy())
    return losses, params, module


@pytest.fixture(scope="module")
def library_url(tmp_path_factory):
    """The test site's library folder, copied (hard links) to SUB of a plain server with a page of its own and the
    artifacts of both cases."""
    if not (build.TEST_SITE / build.LIBRARY / "onnxtrain.mjs").exists():
        pytest.fail(f"{build.TEST_SITE} has no library: run the tests through `python3 build.py test`")
    root = tmp_path_factory.mktemp("host")
    page_dir = root / SUB
    page_dir.mkdir(parents=True)
    shutil.copytree(build.TEST_SITE / build.LIBRARY, page_dir / "onnxtrain", copy_function=build.link_or_copy)
    (page_dir / "index.html").write_text(PAGE)
    (page_dir / "classic.html").write_text(CLASSIC)
    (page_dir / "example.html").write_text(EXAMPLE)
    shutil.copy2(build.npm_package(*ORT_WEB[:2]) / ORT_WEB[2], page_dir / "ort-web.mjs")
    for short, name in CASES.items():
        (page_dir / short).mkdir()
        for kind, path in oc.files(name).items():
            if path is not None:
                shutil.copy2(path, page_dir / short / kind)
    # a copy that lost the onnxtrain wheel, as a careless deploy might
    broken = root / "broken"
    shutil.copytree(page_dir, broken, copy_function=build.link_or_copy)
    for wheel in (broken / "onnxtrain" / "wheels").glob("onnxtrain-*.whl"):
        wheel.unlink()
    server = build.make_server(root, 0, isolate=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def page(browser, library_url):
    context = browser.new_context()
    raw = context.new_page()
    wrapped = Page(context, raw, library_url)
    raw.goto(library_url + SUB)
    raw.wait_for_function("() => window.libraryLoaded === true")
    yield wrapped
    context.close()
    assert wrapped.requests and wrapped.off_origin() == [], wrapped.off_origin()


def test_two_sessions_train_like_cpython(page):
    p = page.page
    batches = {short: oc.batches(name, STEPS) for short, name in TWO.items()}
    # both at once: the MLP from URLs, the CNN from an ArrayBuffer and Uint8Arrays
    names = p.evaluate("""async () => {
        const cnnBytes = await Promise.all(["checkpoint", "training", "eval", "optimizer"].map(
            async (kind) => new Uint8Array(await (await fetch(`cnn/${kind}`)).arrayBuffer())));
        const t0 = performance.now();
        const [mlp, cnn] = await Promise.all([
            lib.TrainingSession.create({ checkpointState: "mlp/checkpoint", trainModel: "mlp/training",
                                         evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" }),
            lib.TrainingSession.create({ checkpointState: cnnBytes[0].buffer, trainModel: cnnBytes[1],
                                         evalModel: cnnBytes[2], optimizerModel: cnnBytes[3] })]);
        Object.assign(sessions, { mlp, cnn });
        window.createMs = performance.now() - t0;
        return Object.fromEntries(await Promise.all(Object.entries(sessions).map(async ([k, s]) => [k, [
            s.trainingInputNames, s.trainingOutputNames, s.evalInputNames, s.evalOutputNames,
            await s.getParametersSize()]])));
    }""")
    for short, name in TWO.items():
        f = oc.files(name)
        module = api.Module(f["training"], api.CheckpointState.load_checkpoint(f["checkpoint"]), f["eval"])
        assert names[short][0] == names[short][2] == module.train().input_names()
        assert names[short][1] == module.output_names()
        assert names[short][3] == module.eval().output_names()
        assert names[short][4] == module.get_parameters_size(True)
    # the two sessions' steps interleaved: train, optimizer, reset
    got = p.evaluate("""async (batches) => {
        const losses = { mlp: [], cnn: [] };
        const params = { mlp: [], cnn: [] };
        const ms = { mlp: [], cnn: [] };
        for (let step = 0; step < batches.mlp.length; step++) {
            for (const key of ["mlp", "cnn"]) {
                const s = sessions[key];
                const batch = feeds(s, batches[key][step]);
                const t0 = performance.now();
                const out = await s.runTrainStep(batch);
                losses[key].push(out[s.trainingOutputNames[0]].data[0]);
                await s.runOptimizerStep();
                await s.lazyResetGrad();
                ms[key].push(performance.now() - t0);
                params[key].push(encode((await s.getContiguousParameters(true)).data));
            }
        }
        return { losses, params, ms, createMs };
    }""", {k: [[wire(a) for a in batch] for batch in v] for k, v in batches.items()})
    print(f"engine start and both sessions created: {got['createMs']:.0f} ms; ms per train+optimizer+reset step: "
          f"{ {k: [round(v, 1) for v in ms] for k, ms in got['ms'].items()} }")
    for short, name in TWO.items():
        losses, params, _ = reference(name, batches[short])
        print(f"{short}: page {got['losses'][short]} cpython {losses}")
        # the page runs the SIMD kernels, CPython numpy: float32 results that differ only in rounding
        np.testing.assert_allclose(got["losses"][short], losses, rtol=1e-6)
        for step, text in enumerate(got["params"][short]):
            np.testing.assert_allclose(np.frombuffer(base64.b64decode(text), np.float32), params[step],
                                       rtol=1e-5, atol=1e-6)


def test_export_checkpoint_and_learning_rate(page, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    p = page.page
    batches = oc.batches(CASES["mlp"], STEPS + 2)
    losses, params, module = reference(CASES["mlp"], batches[:STEPS])
    exported = base64.b64decode(p.evaluate("async () => encode(await sessions.mlp.exportModelForInferencing(['output']))"))
    x = batches[0][0]
    got = ort.InferenceSession(exported, providers=["CPUExecutionProvider"]).run(["output"], {"input": x})[0]
    expected = ort.InferenceSession(module.export_model_for_inferencing(None, ["output"]),
                                    providers=["CPUExecutionProvider"]).run(["output"], {"input": x})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # save, train a step, load: the parameters and optimizer state of the save, so the step after it is the same
    result = p.evaluate("""async ([next, after]) => {
        const s = sessions.mlp;
        const saved = await s.saveCheckpoint();
        const first = (await s.runTrainStep(feeds(s, next)))[s.trainingOutputNames[0]].data[0];
        await s.runOptimizerStep();
        await s.lazyResetGrad();
        const moved = encode((await s.getContiguousParameters(true)).data);
        await s.loadCheckpoint(saved);
        const back = encode((await s.getContiguousParameters(true)).data);
        const again = (await s.runTrainStep(feeds(s, next)))[s.trainingOutputNames[0]].data[0];
        await s.runOptimizerStep();
        await s.lazyResetGrad();
        await s.setLearningRate(0.015625);
        await s.setProperty("epoch", 7);
        await s.setProperty("note", "<img src=x>");
        const withProperties = encode(await s.saveCheckpoint());
        await s.loadCheckpoint(saved);
        const cleared = await s.getProperties();
        await s.loadCheckpoint(decode(withProperties));
        return { first, again, moved, back, rate: await s.getLearningRate(), savedBytes: saved.length,
                 withProperties, cleared, properties: await s.getProperties() };
    }""", [[wire(a) for a in batches[STEPS]], None])
    assert "note" not in result["cleared"]
    assert result["properties"]["epoch"] == 7 and result["properties"]["note"] == "<img src=x>"
    # the checkpoint loads in onnxruntime-training, properties and parameters included
    path = tmp_path / "checkpoint"
    path.write_bytes(base64.b64decode(result["withProperties"]))
    state = oc.ort_api().CheckpointState.load_checkpoint(str(path))
    assert state.properties["epoch"] == 7 and state.properties["note"] == "<img src=x>"
    assert result["first"] == result["again"]
    next_losses, _, _ = reference(CASES["mlp"], batches[:STEPS + 1])
    np.testing.assert_allclose(result["first"], next_losses[-1], rtol=1e-5)
    np.testing.assert_allclose(np.frombuffer(base64.b64decode(result["back"]), np.float32), params[-1],
                               rtol=1e-5, atol=1e-6)
    assert result["moved"] != result["back"]
    assert result["rate"] == 0.015625 and result["savedBytes"] > 0


def test_a_bad_feed_is_a_clear_error_and_the_session_goes_on(page):
    p = page.page
    batch = oc.batches(CASES["mlp"], 1)[0]
    result = p.evaluate("""async (batch) => {
        const s = sessions.mlp;
        const good = feeds(s, batch);
        const errors = [];
        for (const bad of [{ ...good, labels: new lib.Tensor("float32", new Float32Array(good.labels.size), good.labels.dims) },
                           { input: good.input },
                           { ...good, input: good.input.reshape([good.input.dims[0] * 2, good.input.dims[1] / 2]) }]) {
            try {
                await s.runTrainStep(bad);
                errors.push(null);
            } catch (err) {
                errors.push([err instanceof Error, err.message]);
            }
        }
        const out = await s.runEvalStep(good);
        return { errors, evalLoss: out[s.evalOutputNames[0]].data[0] };
    }""", [wire(a) for a in batch])
    messages = [e[1] for e in result["errors"]]
    assert all(e and e[0] for e in result["errors"]), result["errors"]
    assert messages[0] == "input 'labels' of the training model must be a int64 tensor, got float32"
    assert messages[1] == "the training model takes inputs ['input', 'labels']: missing ['labels']"
    assert messages[2] == "input 'input' of the training model must have dims ['?', 20], got [16, 10]"
    assert np.isfinite(result["evalLoss"])


def test_release_frees_one_session_and_leaves_the_other(page):
    p = page.page
    result = p.evaluate("""async () => {
        await sessions.cnn.release();
        let error = null;
        try { await sessions.cnn.getParametersSize(); } catch (err) { error = err.message; }
        return { error, mlp: await sessions.mlp.getParametersSize(false) };
    }""")
    assert result["error"].startswith("no session with handle")
    assert result["mlp"] > 0


def test_the_classic_script_build_defines_globalthis_onnxtrain(browser, library_url):
    context = browser.new_context()
    try:
        raw = context.new_page()
        wrapped = Page(context, raw, library_url)
        raw.goto(library_url + SUB + "classic.html")
        loss = raw.evaluate("() => window.firstLoss")
        x = np.sin(np.arange(8 * 20, dtype=np.float64)).astype(np.float32).reshape(8, 20)
        labels = np.arange(8, dtype=np.int64) % 5
        expected, _, _ = reference(CASES["mlp"], [(x, labels)])
        np.testing.assert_allclose(loss, expected[0], rtol=1e-6)
        assert raw.evaluate("() => typeof onnxtrain.TrainingSession.create") == "function"
        assert wrapped.off_origin() == []
    finally:
        context.close()


def test_onnxruntime_web_example_runs_with_its_import_changed(browser, library_url):
    name = CASES["mnist"]
    batches = oc.batches(name, 5)
    losses, _, module = reference(name, batches)
    eval_name = module.eval().output_names()[0]
    # the eval step after training, on the first batch, in CPython
    module.eval()
    eval_loss = float(np.asarray(module(*batches[0])).reshape(-1)[0])
    train_name = module.train().output_names()[0]
    context = browser.new_context()
    try:
        raw = context.new_page()
        wrapped = Page(context, raw, library_url)
        raw.goto(library_url + SUB + "example.html")
        raw.wait_for_function("() => window.runExample !== undefined")
        got = raw.evaluate("""async ([lossName, evalName, batches]) => {
            const decode = (t) => Uint8Array.from(atob(t), (c) => c.charCodeAt(0)).buffer;
            return runExample(lossName, evalName, batches.map(([x, y]) => ({
                data: new Float32Array(decode(x[1])), labels: new BigInt64Array(decode(y[1])), size: y[2][0] })));
        }""", [train_name, eval_name, [[wire(a) for a in batch] for batch in batches]])
        print(f"example: page {got['losses']} cpython {losses}; eval {got['evalLoss']} / {eval_loss}")
        print(f"784-128-10 MLP, batch 64: ms per step (train, optimizer, reset; 3 requests), median of 20: "
              f"{np.median(got['stepMs']):.1f} [{min(got['stepMs']):.1f}-{max(got['stepMs']):.1f}]")
        np.testing.assert_allclose(got["losses"], losses, rtol=1e-6)
        np.testing.assert_allclose(got["evalLoss"], eval_loss, rtol=1e-6)
        assert wrapped.off_origin() == []
    finally:
        context.close()


def test_onnxruntime_web_tensors_are_feeds(page):
    """Tensors made by onnxruntime-web 1.19.2 itself (its module, loaded from the page's folder) as feeds."""
    p = page.page
    batch = oc.batches(CASES["mlp"], 1)[0]
    result = p.evaluate("""async (batch) => {
        const ortweb = await import("./ort-web.mjs");
        const s = sessions.mlp;
        const own = feeds(s, batch);
        const theirs = Object.fromEntries(Object.entries(own).map(([n, t]) => [n, new ortweb.Tensor(t.type, t.data, t.dims)]));
        const a = (await s.runEvalStep(own))[s.evalOutputNames[0]].data[0];
        const b = (await s.runEvalStep(theirs))[s.evalOutputNames[0]].data[0];
        return { a, b, isOrt: theirs.input instanceof ortweb.Tensor };
    }""", [wire(a) for a in batch])
    assert result["isOrt"] and result["a"] == result["b"] and np.isfinite(result["a"])


def test_a_folder_that_lost_a_file_rejects_create_with_the_reason(browser, library_url):
    context = browser.new_context()
    try:
        raw = context.new_page()
        raw.goto(library_url + "broken/")
        raw.wait_for_function("() => window.libraryLoaded === true")
        errors = raw.evaluate("""async () => {
            const errors = [];
            for (let i = 0; i < 2; i++) {
                try {
                    await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint", trainModel: "mlp/training" });
                    errors.push(null);
                } catch (err) {
                    errors.push([err instanceof Error, err.message]);
                }
            }
            return errors;
        }""")
        for is_error, message in errors:
            assert is_error and re.search(r"/broken/onnxtrain/wheels/onnxtrain-[^/]*\.whl: HTTP 404$", message), message
    finally:
        context.close()
