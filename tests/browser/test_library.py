"""The JavaScript library (site/onnxtrain/, sources in web/lib/) on a page that is not the app: the library folder
copied under a sub-path of a plain static server (no headers), two sessions at once, the losses, parameters,
exported model and checkpoints checked against CPython onnxtrain and onnxruntime on the same artifacts and batches."""
import base64
import shutil
import threading

import numpy as np
import pytest

import ort_cases as oc
from conftest import Page, build
from onnxtrain import api

SUB = "sub/dir/"
CASES = {"mlp": "mlp_ce_adamw", "cnn": "cnn_ce_adamw"}
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
    for short, name in CASES.items():
        (page_dir / short).mkdir()
        for kind, path in oc.files(name).items():
            if path is not None:
                shutil.copy2(path, page_dir / short / kind)
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
    batches = {short: oc.batches(name, STEPS) for short, name in CASES.items()}
    # both at once: the MLP from URLs, the CNN from an ArrayBuffer and Uint8Arrays
    names = p.evaluate("""async () => {
        const cnnBytes = await Promise.all(["checkpoint", "training", "eval", "optimizer"].map(
            async (kind) => new Uint8Array(await (await fetch(`cnn/${kind}`)).arrayBuffer())));
        const [mlp, cnn] = await Promise.all([
            lib.TrainingSession.create({ checkpointState: "mlp/checkpoint", trainModel: "mlp/training",
                                         evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" }),
            lib.TrainingSession.create({ checkpointState: cnnBytes[0].buffer, trainModel: cnnBytes[1],
                                         evalModel: cnnBytes[2], optimizerModel: cnnBytes[3] })]);
        Object.assign(sessions, { mlp, cnn });
        return Object.fromEntries(await Promise.all(Object.entries(sessions).map(async ([k, s]) => [k, [
            s.trainingInputNames, s.trainingOutputNames, s.evalInputNames, s.evalOutputNames,
            await s.getParametersSize()]])));
    }""")
    for short, name in CASES.items():
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
        for (let step = 0; step < batches.mlp.length; step++) {
            for (const key of ["mlp", "cnn"]) {
                const s = sessions[key];
                const out = await s.runTrainStep(feeds(s, batches[key][step]));
                losses[key].push(out[s.trainingOutputNames[0]].data[0]);
                await s.runOptimizerStep();
                await s.lazyResetGrad();
                params[key].push(encode((await s.getContiguousParameters(true)).data));
            }
        }
        return { losses, params };
    }""", {k: [[wire(a) for a in batch] for batch in v] for k, v in batches.items()})
    for short, name in CASES.items():
        losses, params, _ = reference(name, batches[short])
        print(f"{short}: page {got['losses'][short]} cpython {losses}")
        # the page runs the SIMD kernels, CPython numpy: float32 results that differ only in rounding
        np.testing.assert_allclose(got["losses"][short], losses, rtol=1e-6)
        for step, text in enumerate(got["params"][short]):
            np.testing.assert_allclose(np.frombuffer(base64.b64decode(text), np.float32), params[step],
                                       rtol=1e-5, atol=1e-6)


def test_export_checkpoint_and_learning_rate(page):
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
        return { first, again, moved, back, rate: await s.getLearningRate(), savedBytes: saved.length };
    }""", [[wire(a) for a in batches[STEPS]], None])
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
