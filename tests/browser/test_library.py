"""The JavaScript library (site/onnxtrain/, sources in web/lib/) on a page that is not the app: the library folder
copied under a sub-path of a plain static server (no headers), two sessions at once, the losses, parameters,
exported model and checkpoints checked against CPython onnxtrain and onnxruntime on the same artifacts and batches."""
import base64
import json
import re
import shutil
import subprocess
import tarfile
import threading

import numpy as np
import pytest

import build
import ort_cases as oc
from browser.conftest import Page
from onnxtrain import api
from onnxtrain.train import Trainer

SUB = "sub/dir/"
CASES = {"mlp": "mlp_ce_adamw", "cnn": "cnn_ce_adamw", "mnist": "mlp_full_ce_adamw", "sgd": "mlp_ce_sgd"}
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
window.errorOf = async (promise) => {
  try { await promise; return null; } catch (err) { return [err instanceof Error, err.name, err.message]; }
};
window.tensor = ([type, text, dims]) => new onnxtrain.Tensor(type, new ARRAYS[type](decode(text).buffer), dims);
window.encode = (view) => encode(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
window.decode = decode;
window.feeds = (session, batch) => Object.fromEntries(session.trainingInputNames.map((n, i) => [n, tensor(batch[i])]));
window.libraryLoaded = true;
</script>
"""

# What onnxtrain.mjs exports (and the classic script's global holds), sorted
EXPORTS = ["AdapterError", "ArtifactError", "AudioTask", "CheckpointError", "ComposeError", "DataError", "DataTypeError",
           "EncoderError", "Federation", "FeedError", "GPUMemoryError", "GradientNotRegisteredError", "GraphError", "HandwritingTask", "ImageTask",
           "LearningRateError", "LinearLRScheduler", "Microphone", "ModelDecodeError", "NoAdapterError", "NominalStateError",
           "NonFiniteError", "NonFiniteStateError", "NonFiniteStepError", "NpzError", "OnnxtrainError",
           "PersonalizeTask", "RunError", "TabularTask", "Tensor", "TextTask", "TokenizerError", "TrainingSession",
           "UnsupportedOpError", "WebGPUError", "WeightsError",
           "describeModel", "env", "generateArtifacts", "isolate", "start"]


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

# a page that has an `ort` of its own before the classic build loads: it is left alone
WITH_ORT = """<!doctype html><meta charset="utf-8"><title>own ort</title>
<script>window.ort = { mine: true };</script>
<script src="onnxtrain/onnxtrain.js"></script>
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
    module."""
    return oc.api_run(oc.files(name), batches)


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
    (page_dir / "forward").mkdir()
    for short in ("mlp", "cnn"):  # the forward models of the cases, for generateArtifacts
        (page_dir / "forward" / f"{short}.onnx").write_bytes(oc.CASES[CASES[short]].forward().SerializeToString())
    (page_dir / "with-ort.html").write_text(WITH_ORT)
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
    assert result["error"] == "this session was released: getParametersSize() cannot run; make a new one"
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
        # every export of the module, and `ort` as the same object where the page had none
        assert raw.evaluate("() => Object.keys(onnxtrain).sort()") == EXPORTS
        assert raw.evaluate("() => globalThis.ort === globalThis.onnxtrain")
        raw.goto(library_url + SUB + "with-ort.html")
        assert raw.evaluate("() => [ort.mine, typeof onnxtrain.generateArtifacts]") == [True, "function"]
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


# every request the page sends to the engine, by method (a worker's postMessage, recorded before the library loads)
COUNT_REQUESTS = """(() => {
    const post = Worker.prototype.postMessage;
    window.engineRequests = [];
    Worker.prototype.postMessage = function (data, ...rest) {
        if (data && data.method) window.engineRequests.push(data.method);
        return post.call(this, data, ...rest);
    };
})();"""


def test_the_onnxruntime_web_step_loop_is_one_request_a_step_with_the_same_results(browser, library_url):
    """runOptimizerStep and lazyResetGrad ride with the next request: a runTrainStep / runOptimizerStep /
    lazyResetGrad step is one request, and the losses and parameters are CPython's step by step."""
    batches = oc.batches(CASES["mlp"], STEPS)
    context = browser.new_context()
    context.add_init_script(COUNT_REQUESTS)
    try:
        raw = context.new_page()
        raw.goto(library_url + SUB)
        raw.wait_for_function("() => window.libraryLoaded === true")
        got = raw.evaluate("""async (batches) => {
            const s = await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint", trainModel: "mlp/training",
                                                         optimizerModel: "mlp/optimizer" });
            const before = window.engineRequests.length;
            const losses = [];
            for (const batch of batches) {
                const out = await s.runTrainStep(feeds(s, batch));
                losses.push(out[s.trainingOutputNames[0]].data[0]);
                await s.runOptimizerStep();
                await s.lazyResetGrad();
            }
            const steps = window.engineRequests.slice(before);
            const params = encode((await s.getContiguousParameters(true)).data);
            return { losses, steps, last: window.engineRequests.at(-1), params };
        }""", [[wire(a) for a in batch] for batch in batches])
    finally:
        context.close()
    assert got["steps"] == ["run_train_step"] + ["deferred_then"] * (STEPS - 1), got["steps"]
    assert got["last"] == "deferred_then"  # the last step's optimizer step and reset, before the parameters
    losses, params, _ = reference(CASES["mlp"], batches)
    np.testing.assert_allclose(got["losses"], losses, rtol=1e-6)
    np.testing.assert_allclose(params_of(got["params"]), params[-1], rtol=1e-5, atol=1e-6)


# What the engine's start leaves unimported (tests/web/test_start_imports.py checks it in CPython), and that it made no
# random generator: so neither is in its memory snapshot.
UNSTARTED = """import sys
from onnxtrain.ops import random
[sorted(m for m in sys.modules if m.startswith(("onnxtrain.artifacts", "onnxtrain.onnxblock", "onnxtrain.autodiff",
    "onnxtrain.tasks", "importlib.metadata", "numpy.random"))), random._shared is None]"""


def test_a_start_and_a_start_from_its_snapshot_import_only_what_they_need(browser, library_url):
    context = browser.new_context()
    try:
        raw = context.new_page()
        starts = []
        for _ in range(2):
            raw.goto(library_url + SUB)
            raw.wait_for_function("() => window.libraryLoaded === true")
            starts.append(raw.evaluate("""async (code) => {
                const info = await lib.start();
                return [info.start, await lib._engineCall("runPython", { code }),
                        await lib._engineCall("snapshotSaved")];
            }""", UNSTARTED))
        # the unseeded draws still work, numpy.random imported when first used
        drawn = raw.evaluate("""() => lib._engineCall("runPython", { code: `import sys
from onnxtrain.ops import random
[0 <= float(random.unseeded().random()) < 1, "numpy.random" in sys.modules]` })""")
    finally:
        context.close()
    assert starts == [["made", [[], True], True], ["restored", [[], True], False]]
    assert drawn == [True, True]


TASK_MODULES = """import sys
["onnxtrain.tasks.tabular" in sys.modules, "onnxtrain.tasks.images" in sys.modules]"""


def test_start_tasks_imports_their_code_into_a_snapshot_of_their_own(browser, library_url):
    """start({tasks}): the start imports the kinds' modules before the snapshot, so a repeat visit has them without
    importing them (a restore imports no task); another list of kinds makes a snapshot of its own, beside the first;
    an unknown kind rejects the start, and the next start goes on."""
    context = browser.new_context()
    try:
        raw = context.new_page()
        starts = []
        for kinds in (["tabular"], ["tabular"], ["images"], ["handwritting"], ["images", "images"], ["tabular"]):
            raw.goto(library_url + SUB)
            raw.wait_for_function("() => window.libraryLoaded === true")
            starts.append(raw.evaluate("""async ([tasks, code]) => {
                let info;
                try {
                    info = await lib.start({ tasks });
                } catch (err) {
                    return [err.code, err.message];
                }
                return [info.start, "tasks" in info.timings, await lib._engineCall("runPython", { code }),
                        await lib._engineCall("snapshotSaved")];
            }""", [kinds, TASK_MODULES]))
        wrong = raw.evaluate("() => lib.start({ tasks: 'tabular' }).catch((err) => [err.name, err.message])")
    finally:
        context.close()
    assert starts == [["made", True, [True, False], True], ["restored", False, [True, False], False],
                      ["made", True, [False, True], True],  # the images task needs nothing of the tabular one
                      ["ENGINE", "start's tasks: unknown kind of task 'handwritting'; the kinds are "
                                 "['audio', 'handwriting', 'images', 'personalize', 'tabular', 'text']"],
                      ["restored", False, [False, True], False], ["restored", False, [True, False], False]]
    assert wrong == ["TypeError", "start's tasks must be an array of task kinds, such as [\"handwriting\"]"]


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
                    errors.push([err instanceof lib.OnnxtrainError, err.message, err.code, err.details]);
                }
            }
            return errors;
        }""")
        for is_error, message, code, details in errors:  # a JavaScript error in the engine
            assert is_error and re.search(r"/broken/onnxtrain/wheels/onnxtrain-[^/]*\.whl: HTTP 404: it is the library's "
                                          r"wheels/onnxtrain-[^ ]*\.whl; serve the library's files there, or say where "
                                          r"they are with env\.wasm\.wasmPaths$", message), message
            assert code == "ENGINE" and message in " ".join(details.split())
    finally:
        context.close()


# ---- beyond onnxruntime-web: generateArtifacts, train(), LinearLRScheduler, the npm package --------------------

def dataset(name, batches, seed=0):
    """``batches`` of the case's batches as one dataset, in the training model's input order."""
    parts = oc.batches(name, batches, seed)
    return [np.concatenate([b[i] for b in parts]) for i in range(len(parts[0]))]


def trainer(name, data, options, artifacts=None):
    """CPython onnxtrain's Trainer on the case's artifacts (or on ``artifacts``' bytes), set as train() sets it."""
    from onnxtrain.web.sessions import TRAIN_OPTIONS
    f = oc.files(name)
    if artifacts is None:
        artifacts = {k: f[k].read_bytes() for k in ("checkpoint", "training", "eval", "optimizer")}
    state = api.CheckpointState.load_checkpoint(artifacts["checkpoint"])
    module = api.Module(artifacts["training"], state, artifacts["eval"])
    optimizer = api.Optimizer(artifacts["optimizer"], module)
    run = Trainer(module, optimizer, data, **{TRAIN_OPTIONS[k]: v for k, v in options.items()})
    run.state = state
    return run


def params_of(text):
    return np.frombuffer(base64.b64decode(text), np.float32)


def test_generate_artifacts_in_the_page_train_like_cpython(page):
    p = page.page
    batches = oc.batches(CASES["mlp"], STEPS)
    got = p.evaluate("""async (batches) => {
        const names = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"];
        const made = await lib.generateArtifacts("forward/mlp.onnx", { requiresGrad: names, loss: "CrossEntropyLoss",
                                                                        optimizer: "AdamW" });
        const s = await lib.TrainingSession.create(made);
        const losses = [];
        for (const batch of batches) {
            losses.push((await s.runTrainStep(feeds(s, batch)))[s.trainingOutputNames[0]].data[0]);
            await s.runOptimizerStep();
            await s.lazyResetGrad();
        }
        const forward = await (await fetch("forward/mlp.onnx")).arrayBuffer();
        const frozen = await lib.generateArtifacts(forward, { requiresGrad: ["fc2.weight", "fc2.bias"],
            frozenParams: ["fc1.weight", "fc1.bias"], loss: "MSELoss", optimizer: null });
        const errors = [
            await errorOf(lib.generateArtifacts(forward, { requiresGrad: ["fc3.weight"] })),
            await errorOf(lib.generateArtifacts(forward, { requiresGrad: names, loss: "Hinge" })),
            await errorOf(lib.generateArtifacts(forward, { requiresGrad: names, optimiser: "SGD" })),
            await errorOf(lib.generateArtifacts(42)),
        ];
        const after = (await s.runEvalStep(feeds(s, batches[0])))[s.evalOutputNames[0]].data[0];
        await s.release();
        return { losses, errors, after, names: s.trainingInputNames, frozenOptimizer: frozen.optimizerModel,
                 kinds: Object.values(made).map((v) => v instanceof Uint8Array),
                 made: Object.fromEntries(Object.entries(made).map(([k, v]) => [k, encode(v)])),
                 frozenState: encode(frozen.checkpointState) };
    }""", [[wire(a) for a in batch] for batch in batches])
    assert got["kinds"] == [True] * 4 and got["names"] == ["input", "labels"]
    made = {k: base64.b64decode(v) for k, v in got["made"].items()}
    f = {"checkpoint": made["checkpointState"], "training": made["trainModel"], "eval": made["evalModel"],
         "optimizer": made["optimizerModel"]}
    expected, _, module = oc.api_run(f, batches)
    print(f"generated in the page: losses {got['losses']}, cpython on the same bytes {expected}")
    np.testing.assert_allclose(got["losses"], expected, rtol=1e-6)
    # the page's artifacts train like onnxruntime-training's own of the same forward model
    reference_losses, _, _ = reference(CASES["mlp"], batches)
    np.testing.assert_allclose(got["losses"], reference_losses, rtol=1e-5)
    frozen = api.CheckpointState.load_checkpoint(base64.b64decode(got["frozenState"]))
    assert {n: q.requires_grad for n, q in frozen.parameters} == {
        "fc1.weight": False, "fc1.bias": False, "fc2.weight": True, "fc2.bias": True}
    assert got["frozenOptimizer"] is None
    assert got["errors"][0][0] and got["errors"][0][2].startswith("'fc3.weight' is not an initializer of the model")
    assert got["errors"][1][2].startswith("unknown LossType 'Hinge'; choose one of ['MSELoss', 'CrossEntropyLoss'")
    assert got["errors"][2][2].startswith("generateArtifacts has no option 'optimiser'")
    assert got["errors"][3][1:] == ["TypeError", "the forward model must be a URL, a Response, a Blob (or File), "
                                    "an ArrayBuffer or a Uint8Array"]
    assert np.isfinite(got["after"])


TRAIN_PAGE = """async ([data, options]) => {
    const records = { mlp: [], cnn: [] };
    const t0 = performance.now();
    const summaries = await Promise.all(["mlp", "cnn"].map((key) => sessions["t" + key].train(
        feeds(sessions["t" + key], data[key]), { ...options[key], onProgress: (r) => records[key].push(r) })));
    const ms = performance.now() - t0;
    const params = {};
    for (const key of ["mlp", "cnn"]) {
        params[key] = encode((await sessions["t" + key].getContiguousParameters(true)).data);
    }
    const none = [summaries[1].validationLoss, summaries[1].best.bestEpoch, records.cnn.at(-1).validationLoss];
    return { records, summaries: { mlp: summaries[0], cnn: summaries[1] }, params, ms,
             nulls: none.map((v) => v === null) };
}"""


def test_train_two_sessions_at_once_like_the_cpython_trainer(page, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    p = page.page
    data = {"mlp": dataset(CASES["mlp"], 6), "cnn": dataset(CASES["cnn"], 3)}  # 48 and 24 rows
    options = {"mlp": {"epochs": 3, "batchSize": 10, "learningRate": 0.01, "schedule": "linear", "warmup": 0.2,
                       "validation": 0.25, "seed": 1, "keepBest": True},
               "cnn": {"epochs": 2, "batchSize": 8, "seed": 2, "shuffle": True}}
    p.evaluate("""async () => {
        for (const key of ["mlp", "cnn"]) {
            sessions["t" + key] = await lib.TrainingSession.create({ checkpointState: `${key}/checkpoint`,
                trainModel: `${key}/training`, evalModel: `${key}/eval`, optimizerModel: `${key}/optimizer` });
        }
    }""")
    got = p.evaluate(TRAIN_PAGE, [{k: [wire(a) for a in v] for k, v in data.items()}, options])
    print(f"train() of both sessions at once: {got['ms']:.0f} ms for {len(got['records']['mlp'])} + "
          f"{len(got['records']['cnn'])} steps")
    runs = {}
    for key in ("mlp", "cnn"):
        run = runs[key] = trainer(CASES[key], data[key], options[key])
        expected = []
        run.run(on_progress=expected.append)
        records = got["records"][key]
        assert [r["step"] for r in records] == list(range(1, len(expected) + 1))
        np.testing.assert_allclose([r["loss"] for r in records], [r["loss"] for r in expected], rtol=1e-6)
        assert [r["learningRate"] for r in records] == [r["learning_rate"] for r in expected]
        assert [r["epochDone"] for r in records] == [r["epoch_done"] for r in expected]
        summary = got["summaries"][key]
        assert summary["epochs"] == run.epoch and summary["steps"] == run.steps
        if key == "mlp":
            np.testing.assert_allclose([h["validationLoss"] for h in summary["history"]],
                                       [h["validation_loss"] for h in run.history], rtol=1e-6)
            assert summary["best"]["bestEpoch"] == run.best.best_epoch
            assert summary["best"]["restored"] == (run.use_best() is not None)
        else:
            assert summary["validationLoss"] is None and not summary["best"]["restored"]
            assert got["nulls"] == [True] * 3  # Python's None is null in the page
        np.testing.assert_allclose(params_of(got["params"][key]), run.module.get_contiguous_parameters(True),
                                   rtol=1e-5, atol=1e-6)
    # after train(): the CNN's exported model and its checkpoint, saved and loaded into a new session
    module, state = runs["cnn"].module, runs["cnn"].state
    result = p.evaluate("""async () => {
        const s = sessions.tcnn;
        const exported = await s.exportModelForInferencing(["output"]);
        const saved = await s.saveCheckpoint();
        const again = await lib.TrainingSession.create({ checkpointState: saved, trainModel: "cnn/training",
            evalModel: "cnn/eval", optimizerModel: "cnn/optimizer" });
        const params = encode((await again.getContiguousParameters(true)).data);
        const mine = encode((await s.getContiguousParameters(true)).data);
        await again.release();
        return { exported: encode(exported), saved: encode(saved), params, mine };
    }""")
    x = data["cnn"][0][:5]
    got_out = ort.InferenceSession(base64.b64decode(result["exported"]), providers=["CPUExecutionProvider"]).run(
        ["output"], {"input": x})[0]
    expected_out = ort.InferenceSession(module.export_model_for_inferencing(None, ["output"]),
                                        providers=["CPUExecutionProvider"]).run(["output"], {"input": x})[0]
    np.testing.assert_allclose(got_out, expected_out, rtol=1e-5, atol=1e-5)
    assert result["params"] == result["mine"]
    path = tmp_path / "checkpoint"
    path.write_bytes(base64.b64decode(result["saved"]))
    loaded = oc.ort_api().CheckpointState.load_checkpoint(str(path))  # onnxruntime-training reads it
    for name in ("conv1.weight", "fc.bias"):
        np.testing.assert_allclose(np.asarray(loaded.parameters[name].data), state.parameters[name].data,
                                   rtol=1e-5, atol=1e-6)


def test_abort_mid_run_keeps_the_last_whole_step_and_train_runs_again(page):
    p = page.page
    data = dataset(CASES["mlp"], 6)
    options = {"batchSize": 4, "learningRate": 0.005, "seed": 5}
    got = p.evaluate("""async ([data, options]) => {
        const s = await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint", trainModel: "mlp/training",
            evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" });
        const controller = new AbortController();
        const steps = [];
        const run = s.train(feeds(s, data), { ...options, epochs: 1000, signal: controller.signal,
            onProgress: (r) => { steps.push(r.step); if (r.step === 3) controller.abort(); } });
        const busy = [await errorOf(s.getLearningRate()), await errorOf(s.train(feeds(s, data), options))];
        const other = await sessions.tmlp.getParametersSize();  // another session is not busy
        const aborted = await run.then(() => null, (err) => [err.name, err instanceof DOMException,
                                                             err === controller.signal.reason]);
        const params = encode((await s.getContiguousParameters(true)).data);
        const again = [];
        const summary = await s.train(feeds(s, data), { ...options, epochs: 1, onProgress: (r) => again.push(r.loss) });
        // an already aborted signal rejects at once and leaves the session free
        const early = new AbortController();
        early.abort();
        const before = await errorOf(s.train(feeds(s, data), { signal: early.signal }));
        const rate = await s.getLearningRate();
        await s.release();
        return { steps, busy, other, aborted, params, again, summary, before, rate };
    }""", [[wire(a) for a in data], options])
    assert got["aborted"] == ["AbortError", True, True]
    done = got["steps"][-1]
    assert got["steps"] == list(range(1, done + 1)) and done >= 3
    for error in got["busy"]:
        assert error[0] and re.fullmatch(r"this session is training: \w+\(\) has to wait until train\(\) ends "
                                         r"\(or is aborted\)", error[2]), error
    assert got["other"] > 0
    run = trainer(CASES["mlp"], data, {**options, "epochs": 1000})
    for _ in range(done):
        run.step()
    np.testing.assert_allclose(params_of(got["params"]), run.module.get_contiguous_parameters(True),
                               rtol=1e-5, atol=1e-6)
    second = Trainer(run.module, run.optimizer, data, batch_size=4, learning_rate=0.005, seed=5, epochs=1)
    expected = [second.step()["loss"] for _ in range(second.steps_per_epoch)]
    np.testing.assert_allclose(got["again"], expected, rtol=1e-5)
    assert got["summary"]["steps"] == len(expected) == 12
    assert got["before"][1] == "AbortError" and got["rate"] == pytest.approx(0.005)


def test_bad_training_data_is_a_clear_error_and_the_session_goes_on(page):
    p = page.page
    data = dataset(CASES["mlp"], 2)
    got = p.evaluate("""async (data) => {
        const s = sessions.tmlp;
        const good = feeds(s, data);
        const floatLabels = new lib.Tensor("float32", new Float32Array(good.labels.size), good.labels.dims);
        const errors = [
            await errorOf(s.train({ ...good, labels: floatLabels })),
            await errorOf(s.train({ input: good.input })),
            await errorOf(s.train({ ...good, labels: [1, 2, 3] })),
            await errorOf(s.train(good, { batch_size: 4 })),
            await errorOf(s.train(good, { onProgress: () => { throw new RangeError("from onProgress"); } })),
            await errorOf(s.train(good, { onProgress: 3 })),
        ];
        const losses = [];
        const summary = await s.train(good, { batchSize: 8, shuffle: false, onProgress: (r) => losses.push(r.loss) });
        return { errors, losses, steps: summary.steps };
    }""", [wire(a) for a in data])
    errors = got["errors"]
    assert errors[0] == [True, "TypeError", "input 'labels' of the training data must be a int64 tensor, got float32"]
    assert errors[1][2] == "the training data takes inputs ['input', 'labels']: missing ['labels']"
    assert errors[2][1:] == ["TypeError", "dataset input 'labels' is not a tensor: give a Tensor, or an object with "
                                          "type, data and dims"]
    assert errors[3][2].startswith("train has no option 'batch_size'")
    assert errors[4][1:] == ["RangeError", "from onProgress"]
    assert errors[5][1:] == ["TypeError", "train's onProgress must be a function"]
    assert got["steps"] == 2 and len(got["losses"]) == 2 and np.all(np.isfinite(got["losses"]))


def test_linear_lr_scheduler_rates_equal_onnxruntime_training(page):
    p = page.page
    batches = oc.batches(CASES["sgd"], 6)
    got = p.evaluate("""async (batches) => {
        const s = await lib.TrainingSession.create({ checkpointState: "sgd/checkpoint", trainModel: "sgd/training",
            optimizerModel: "sgd/optimizer" });
        const scheduler = new lib.LinearLRScheduler(s, 2, 5, 0.05);
        await scheduler.ready;
        const rates = [await s.getLearningRate()];
        const losses = [];
        for (const batch of batches) {
            losses.push((await s.runTrainStep(feeds(s, batch)))[s.trainingOutputNames[0]].data[0]);
            await s.runOptimizerStep();
            await s.lazyResetGrad();
            rates.push(await scheduler.step());
        }
        const bad = new lib.LinearLRScheduler(s, 2, -1, 0.05);
        const errors = [await errorOf(bad.ready), await errorOf(bad.step())];
        const rate = await s.getLearningRate();
        await s.release();
        return { rates, losses, errors, rate };
    }""", [[wire(a) for a in batch] for batch in batches])
    # onnxruntime-training 1.19.2 on the same settings: its Python wrapper takes (total, warmup)
    ort = oc.ort_api()
    f = oc.files(CASES["sgd"])
    module = ort.Module(str(f["training"]), ort.CheckpointState.load_checkpoint(str(f["checkpoint"])))
    optimizer = ort.Optimizer(str(f["optimizer"]), module)
    scheduler = ort.LinearLRScheduler(optimizer, 5, 2, 0.05)
    rates, losses = [optimizer.get_learning_rate()], []
    for batch in batches:
        losses.append(float(module(*batch)))
        optimizer.step()
        module.lazy_reset_grad()
        scheduler.step()
        rates.append(optimizer.get_learning_rate())
    print(f"LinearLRScheduler(2, 5, 0.05): page {got['rates']}, onnxruntime-training {rates}")
    np.testing.assert_allclose(got["rates"], rates, rtol=1e-6)
    np.testing.assert_allclose(got["losses"], losses, rtol=1e-5)
    for error in got["errors"]:
        assert error[0] and error[2] == "total_step_count must be an integer >= 0, got -1"
    assert got["rate"] == got["rates"][-1]


def test_the_backbone_package_holds_the_sites_backbone_and_gives_its_url(tmp_path):
    name, folder = build.BACKBONE_PACKAGE
    tgz = build.ROOT / "dist" / f"{name}-{build.project_version()}.tgz"
    with tarfile.open(tgz) as tar:
        files = {m.name[len("package/"):]: tar.extractfile(m).read() for m in tar.getmembers()}
    assert sorted(files) == ["README.md", "backbone.onnx", "index.d.ts", "index.mjs", "package.json"]
    assert files["backbone.onnx"] == (build.SITE / "artifacts" / folder / "backbone.onnx").read_bytes()
    (tmp_path / "package.json").write_text('{"name": "app", "version": "1.0.0", "private": true}')
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
                    str(tgz)], cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run(["node", "--input-type=module", "-e",
                          f"console.log((await import({json.dumps(name)})).backboneUrl)"],
                         cwd=tmp_path, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == (tmp_path / "node_modules" / name / "backbone.onnx").as_uri()


def test_the_npm_package_holds_the_library_folder(tmp_path):
    version = build.project_version()
    tgz = build.ROOT / "dist" / f"onnxtrain-{version}.tgz"
    library = build.SITE / build.LIBRARY  # as the site ships it (the test site has a test hook in it)
    assert tgz.is_file(), f"{tgz}: run the tests through `python3 build.py test`"
    with tarfile.open(tgz) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert all(m.isfile() and m.name.startswith("package/") for m in members.values())
        package = json.loads(tar.extractfile("package/package.json").read())
        contents = {name[len("package/"):]: tar.extractfile(m).read() for name, m in members.items()}
    folder = {p.relative_to(library).as_posix(): p.read_bytes() for p in library.rglob("*") if p.is_file()}
    assert contents == folder  # the whole folder, byte for byte: the engine loads every part of it
    assert package["name"] == "onnxtrain" and package["version"] == version
    assert package["main"] == package["module"] == "./onnxtrain.mjs" and package["types"] == "./onnxtrain.d.ts"
    assert package["exports"]["."]["import"] == "./onnxtrain.mjs"
    # installed from the tarball (offline), "onnxtrain" resolves to the module and the classic build
    (tmp_path / "package.json").write_text('{"name": "app", "version": "1.0.0", "private": true}')
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
                    str(tgz)], cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run(["node", "--input-type=module", "-e", """
        const lib = await import("onnxtrain");
        const { createRequire } = await import("node:module");
        const require = createRequire(process.cwd() + "/");
        console.log(JSON.stringify([Object.keys(lib).sort(), require.resolve("onnxtrain/onnxtrain.js"),
                                    require.resolve("onnxtrain/isolation-sw.js")]));"""],
                         cwd=tmp_path, check=True, capture_output=True, text=True)
    names, classic, isolation = json.loads(out.stdout)
    assert names == EXPORTS
    assert classic == str(tmp_path / "node_modules" / "onnxtrain" / "onnxtrain.js")
    assert isolation == str(tmp_path / "node_modules" / "onnxtrain" / "isolation-sw.js")  # to copy to a site's root


def test_the_unbundled_sources_export_what_the_bundle_does():
    """web/lib/onnxtrain.mjs, the entry the app imports in the source tree, runs as it is (its modules in
    web/lib/src/, unbundled) and exports the names the shipped bundle does."""
    entry = build.ROOT / "web" / "lib" / "onnxtrain.mjs"
    out = subprocess.run(["node", "--input-type=module", "-e",
                          "console.log(JSON.stringify(Object.keys(await import(process.argv[1])).sort()))",
                          entry.as_uri()], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout) == EXPORTS
