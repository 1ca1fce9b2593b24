"""onnxruntime-web's step loop answered by the engine without entering Python (web/lib/fast_steps.mjs over
onnxtrain.web.fast_steps): the steps it answers give CPython's losses and parameters, and Python calls between them
(checkpoint, learning rate, export, parameters, other shapes, a failed step) see the state of the last step."""
import base64

import numpy as np
import pytest

import ort_cases as oc
from browser.test_library import CASES, library_url, page, wire  # noqa: F401  (the library page's fixtures)
from onnxtrain import api

CASE = CASES["mlp"]


def steps_answered(p) -> int:
    """How many train steps the page's engine has answered without Python so far."""
    return p.evaluate("async () => (await lib._engineCall('fastSteps')).steps")


def cpython(batches, learning_rate=None):
    """onnxtrain in CPython on the same artifacts: (module, optimizer)."""
    f = oc.files(CASE)
    module = api.Module(f["training"], api.CheckpointState.load_checkpoint(f["checkpoint"]), f["eval"])
    optimizer = api.Optimizer(f["optimizer"], module)
    if learning_rate is not None:
        optimizer.set_learning_rate(learning_rate)
    return module, optimizer


def step(module, optimizer, batch) -> float:
    loss = oc.first_output(module(*batch))
    optimizer.step()
    module.lazy_reset_grad()
    return loss


LOOP = """async ([key, batches]) => {
    const s = sessions[key];
    const losses = [];
    for (const batch of batches) {
        const out = await s.runTrainStep(feeds(s, batch));
        losses.push(out[s.trainingOutputNames[0]].data[0]);
        await s.runOptimizerStep();
        await s.lazyResetGrad();
    }
    return losses;
}"""


@pytest.fixture(scope="module")
def session(page):  # noqa: F811
    page.page.evaluate("""async () => {
        sessions.fast = await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint",
            trainModel: "mlp/training", evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" });
    }""")
    return page.page


def test_the_engine_answers_the_loop_with_cpythons_results(session):
    batches = oc.batches(CASE, 8)
    before = steps_answered(session)
    losses = session.evaluate(LOOP, ["fast", [[wire(a) for a in b] for b in batches]])
    params = session.evaluate("async () => encode((await sessions.fast.getContiguousParameters(true)).data)")
    # the first step has no optimizer program yet, the second compiles it: the other six are the engine's
    assert steps_answered(session) - before == 6
    module, optimizer = cpython(batches)
    want = [step(module, optimizer, b) for b in batches]
    np.testing.assert_allclose(losses, want, rtol=1e-6)
    np.testing.assert_allclose(np.frombuffer(base64.b64decode(params), np.float32),
                               module.get_contiguous_parameters(True), rtol=1e-5, atol=1e-6)


def test_python_calls_between_engine_steps_see_the_last_step(session):
    batches = oc.batches(CASE, 9, seed=1)
    wired = [[wire(a) for a in b] for b in batches]
    got = session.evaluate("""async ([loop, batches]) => {
        const run = eval(loop);
        const s = sessions.again = await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint",
            trainModel: "mlp/training", evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" });
        const losses = await run(["again", batches.slice(0, 3)]);
        const saved = encode(await s.saveCheckpoint());
        await s.setLearningRate(0.03125);
        losses.push(...await run(["again", batches.slice(3, 6)]));
        const rate = await s.getLearningRate();
        const exported = encode(await s.exportModelForInferencing([s.evalOutputNames[0]]));
        losses.push(...await run(["again", batches.slice(6)]));
        const last = encode(await s.saveCheckpoint());
        await s.release();
        return { losses, saved, rate, exported, last };
    }""", [LOOP, wired])
    module, optimizer = cpython(batches)
    want = [step(module, optimizer, b) for b in batches[:3]]
    saved = api.CheckpointState.load_checkpoint(base64.b64decode(got["saved"]))
    assert api._internal.optimizer_group(saved).step == 3
    optimizer.set_learning_rate(0.03125)
    want += [step(module, optimizer, b) for b in batches[3:6]]
    want += [step(module, optimizer, b) for b in batches[6:]]
    np.testing.assert_allclose(got["losses"], want, rtol=1e-6)
    assert got["rate"] == 0.03125
    last = api.CheckpointState.load_checkpoint(base64.b64decode(got["last"]))
    assert api._internal.optimizer_group(last).step == 9
    mine = dict(module._state.parameters)
    for name, parameter in last.parameters:
        np.testing.assert_allclose(parameter.data, mine[name].data, rtol=1e-5, atol=1e-6)


def test_other_shapes_go_to_python_and_the_engine_takes_them_up_again(session):
    batches = oc.batches(CASE, 3, seed=2)
    half = [[a[: len(a) // 2] for a in b] for b in oc.batches(CASE, 4, seed=3)]
    before = steps_answered(session)
    losses = session.evaluate(LOOP, ["fast", [[wire(a) for a in b] for b in batches + half]])
    # the first half batch compiles a program for its shape (Python), the second gets its description: two more
    # steps of the seven are Python's
    assert steps_answered(session) - before == 5
    assert np.all(np.isfinite(losses))


def test_a_bad_label_in_an_engine_step_is_pythons_error_and_the_session_goes_on(session):
    batches = oc.batches(CASE, 4, seed=4)
    bad = [a.copy() for a in batches[2]]
    bad[1][0] = 99
    got = session.evaluate("""async ([loop, good, bad, after]) => {
        const run = eval(loop);
        const s = sessions.bad = await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint",
            trainModel: "mlp/training", optimizerModel: "mlp/optimizer" });
        const losses = await run(["bad", good]);
        let error = null;
        try {
            await s.runTrainStep(feeds(s, bad));
        } catch (err) {
            error = [err.name, err.message];
        }
        await s.lazyResetGrad();
        losses.push(...await run(["bad", after]));
        await s.release();
        return { losses, error };
    }""", [LOOP, [[wire(a) for a in b] for b in batches[:2]], [wire(a) for a in bad],
           [[wire(a) for a in b] for b in batches[3:]]])
    assert got["error"] is not None and "99" in got["error"][1], got["error"]
    module, optimizer = cpython(batches)
    want = [step(module, optimizer, b) for b in batches[:2]]
    with pytest.raises(Exception, match="99"):
        module(*bad)
    module.lazy_reset_grad()
    want += [step(module, optimizer, b) for b in batches[3:]]
    np.testing.assert_allclose(got["losses"], want, rtol=1e-6)


def test_eval_steps_are_the_engines_too(session):
    batches = oc.batches(CASE, 3, seed=5)
    got = session.evaluate("""async ([loop, batches]) => {
        const run = eval(loop);
        const s = sessions.evals = await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint",
            trainModel: "mlp/training", evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" });
        await run(["evals", batches]);
        const before = (await lib._engineCall("fastSteps")).steps;
        const losses = [];
        for (const batch of batches) {
            const out = await s.runEvalStep(feeds(s, batch));
            losses.push(out[s.evalOutputNames[0]].data[0]);
        }
        const answered = (await lib._engineCall("fastSteps")).steps - before;
        await s.release();
        return { losses, answered };
    }""", [LOOP, [[wire(a) for a in b] for b in batches]])
    # the first eval step carries the last optimizer step and describes the eval program: the other two are the
    # engine's
    assert got["answered"] == 2
    module, optimizer = cpython(batches)
    for batch in batches:
        step(module, optimizer, batch)
    module.eval()
    np.testing.assert_allclose(got["losses"], [oc.first_output(module(*b)) for b in batches], rtol=1e-6)
