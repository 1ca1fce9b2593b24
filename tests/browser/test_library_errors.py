"""Careless inputs through the JavaScript library in a real page (test_library's page and folder): each rejects with
an instance of the exported error class for its code (OnnxtrainError and its subclasses), a stable code, a message
of one line without a traceback, the traceback in details, and the session or task works on afterwards."""
import numpy as np

import ort_cases as oc
from browser.test_library import CASES, library_url, page, wire  # noqa: F401  (the fixtures of test_library)
from onnxtrain.web import errors

# label, code to run (s: a TrainingSession of the mlp case, good: its feeds, t: a TabularTask of CSV; every
# other name is at hand in the page's run()), the class (an export of onnxtrain.mjs), its name, its code, words of
# the message, and what must work afterwards: "session" (one train step of s) or "task" (t answers)
SESSION = [
    ("a label out of range", "s.runTrainStep({ ...good, labels: shifted(good.labels, 100n) })", "RunError",
     "RunError", "RUN", "is outside [0, 5)"),
    ("a negative label", "s.runTrainStep({ ...good, labels: shifted(good.labels, -10n) })", "RunError", "RunError",
     "RUN", "is outside [0, 5)"),
    ("float labels", "s.runTrainStep({ ...good, labels: floatLabels })", "OnnxtrainError", "TypeError", "TYPE",
     "input 'labels' of the training model must be a int64 tensor, got float32"),
    ("a missing input", "s.runTrainStep({ input: good.input })", "OnnxtrainError", "ValueError", "VALUE",
     "missing ['labels']"),
    ("wrong dims", "s.runTrainStep({ ...good, input: good.input.reshape([16, 10]) })", "OnnxtrainError",
     "ValueError", "VALUE", "must have dims ['?', 20], got [16, 10]"),
    ("an unknown output", "s.runTrainStep(good, ['nope'])", "OnnxtrainError", "ValueError", "VALUE",
     "no outputs named ['nope']"),
    ("a float16 feed", "s.runTrainStep({ ...good, input: { type: 'float16', data: new Uint16Array(4), dims: [4] } })",
     "OnnxtrainError", "ValueError", "VALUE", "unsupported dtype 'float16'"),
    ("dims that do not fit the data", "s.runTrainStep({ ...good, input: { type: 'float32', data: new "
     "Float32Array(3), dims: [2, 2] } })", "OnnxtrainError", "ValueError", "VALUE",
     "a buffer of 3 float32 values cannot have shape [2, 2]"),
    ("batchSize 0", "s.train(good, { batchSize: 0 })", "DataError", "DataError", "DATA",
     "the batch size must be a whole number >= 1, got 0"),
    ("batchSize a string", "s.train(good, { batchSize: '8' })", "DataError", "DataError", "DATA",
     "the batch size must be a whole number >= 1, got '8'"),
    ("batchSize 2.5", "s.train(good, { batchSize: 2.5 })", "DataError", "DataError", "DATA", "got 2.5"),
    ("epochs -1", "s.train(good, { epochs: -1 })", "OnnxtrainError", "ValueError", "VALUE",
     "epochs must be a whole number >= 1, got -1"),
    ("epochs a string", "s.train(good, { epochs: 'x' })", "OnnxtrainError", "ValueError", "VALUE", "got 'x'"),
    ("learningRate -1", "s.train(good, { learningRate: -1 })", "LearningRateError", "LearningRateError",
     "LEARNING_RATE", "the learning rate must be a finite number >= 0"),
    ("validation 1.5", "s.train(good, { validation: 1.5 })", "DataError", "DataError", "DATA",
     "the validation fraction must be a number from 0 up to (not including) 1, got 1.5"),
    ("an unknown schedule", "s.train(good, { schedule: 'wobbly' })", "OnnxtrainError", "ValueError", "VALUE",
     "schedule must be one of ['constant', 'linear']"),
    ("warmup -3", "s.train(good, { warmup: -3 })", "DataError", "DataError", "DATA", "the warmup fraction"),
    ("patience a string", "s.train(good, { patience: 'x' })", "OnnxtrainError", "ValueError", "VALUE",
     "patience must be an integer >= 0"),
    ("proximalMu -1", "s.train(good, { proximalMu: -1 })", "OnnxtrainError", "ValueError", "VALUE",
     "proximal_mu must be a finite number >= 0"),
    ("shuffle a string", "s.train(good, { shuffle: 'no' })", "OnnxtrainError", "ValueError", "VALUE",
     "shuffle must be true or false, got 'no'"),
    ("seed a string", "s.train(good, { seed: 'x' })", "DataError", "DataError", "DATA",
     "the seed must be a whole number >= 0, got 'x'"),
    ("keepBest 3", "s.train(good, { keepBest: 3 })", "OnnxtrainError", "ValueError", "VALUE",
     "keep_best must be true or false, got 3"),
    ("a Python-style option", "s.train(good, { batch_size: 4 })", "OnnxtrainError", "ValueError", "VALUE",
     "train has no option 'batch_size'"),
    ("resumeFrom garbage", "s.train(good, { resumeFrom: bytes('garbage') })", "CheckpointError",
     "CheckpointError", "CHECKPOINT", "too short to be an ONNX Runtime training checkpoint"),
    ("no rows", "s.train({ input: rows(good.input, 0), labels: rows(good.labels, 0) })", "DataError", "DataError",
     "DATA", "the training data has no rows"),
    ("a step that blows up", "s.train({ ...good, input: scaled(good.input, 1e30) }, { learningRate: 1e30 })",
     "NonFiniteStepError", "NonFiniteStepError", "NON_FINITE_STEP", "was undone"),
    ("setLearningRate('fast')", "s.setLearningRate('fast')", "LearningRateError", "LearningRateError",
     "LEARNING_RATE", "got nan"),
    ("setLearningRate(-1)", "s.setLearningRate(-1)", "LearningRateError", "LearningRateError", "LEARNING_RATE",
     "got -1.0"),
    ("export an unknown output", "s.exportModelForInferencing(['nope'])", "OnnxtrainError", "ValueError", "VALUE",
     "could not be found: nope"),
    ("export no output", "s.exportModelForInferencing([])", "OnnxtrainError", "ValueError", "VALUE",
     "name at least one output to export"),
    ("a garbage checkpoint", "s.loadCheckpoint(bytes('garbage checkpoint'))", "CheckpointError", "CheckpointError",
     "CHECKPOINT", "not an ONNX Runtime training checkpoint"),
    ("another model's checkpoint", "s.loadCheckpoint('cnn/checkpoint')", "OnnxtrainError", "ValueError", "VALUE",
     "the checkpoint's parameters do not match this model's"),
    ("a short parameter buffer", "s.loadParametersBuffer(new Uint8Array(4))", "OnnxtrainError", "ValueError",
     "VALUE", "the parameter buffer has 4 bytes"),
    ("an object property", "s.setProperty('p', { a: 1 })", "OnnxtrainError", "TypeError", "TYPE",
     "property 'p' must be an int, float or str"),
    ("an empty data file", "s.readDataset(new Uint8Array(0), 'data.npz')", "NpzError", "NpzError", "NPZ",
     "the data file is not a readable .npz archive"),
    ("a CSV of text as data", "s.readDataset(bytes(CSV), 'data.csv')", "DataError", "DataError", "DATA",
     "is not numeric"),
    ("a scheduler with a negative warm-up", "new lib.LinearLRScheduler(s, -1, 10, 0.1).ready", "OnnxtrainError",
     "ValueError", "VALUE", "warmup_step_count must be an integer >= 0"),
    ("a released session", "released.getParametersSize()", "OnnxtrainError", "ValueError", "VALUE",
     "this session was released: getParametersSize() cannot run; make a new one"),
    ("a CSV as the training model", "lib.TrainingSession.create({ ...MLP, trainModel: bytes(CSV) })",
     "ModelDecodeError", "ModelDecodeError", "MODEL_DECODE", "cannot load the training model: not an ONNX model"),
    ("a garbage checkpoint to create", "lib.TrainingSession.create({ ...MLP, checkpointState: bytes('garbage!') })",
     "CheckpointError", "CheckpointError", "CHECKPOINT", "not an ONNX Runtime training checkpoint"),
    ("another model's checkpoint to create", "lib.TrainingSession.create({ ...MLP, checkpointState: "
     "'cnn/checkpoint' })", "ArtifactError", "ArtifactError", "ARTIFACT", "that the checkpoint does not have"),
    ("an unknown provider", "lib.TrainingSession.create(MLP, { executionProviders: ['cuda'] })", "OnnxtrainError",
     "ValueError", "VALUE", "unknown execution provider 'cuda'"),
    ("a CSV to generate artifacts of", "lib.generateArtifacts(bytes(CSV))", "ModelDecodeError", "ModelDecodeError",
     "MODEL_DECODE", "not an ONNX model"),
    ("an unknown loss", "lib.generateArtifacts('forward/mlp.onnx', { loss: 'Huber' })", "OnnxtrainError",
     "ValueError", "VALUE", "unknown LossType 'Huber'"),
    ("an unknown parameter", "lib.generateArtifacts('forward/mlp.onnx', { requiresGrad: ['nope'] })",
     "OnnxtrainError", "ValueError", "VALUE", "'nope' is not an initializer of the model"),
    ("garbage to describe", "lib.describeModel(bytes('garbage'))", "OnnxtrainError", "ValueError", "VALUE",
     "this file is not an ONNX model"),
    ("a garbage handwriting model", "lib.HandwritingTask.create(bytes('garbage'))", "ModelDecodeError",
     "ModelDecodeError", "MODEL_DECODE", "not an ONNX model"),
    ("a garbage backbone", "lib.PersonalizeTask.create(bytes('garbage'))", "DataError", "DataError", "DATA",
     "the backbone is not an ONNX model"),
]
SETUP = "{ label: 'label', task: 'classification', hidden: [4] }"
TASK = [
    ("exportModel() before setup()", "t.exportModel()", "DataError", "DataError", "DATA", "set up the model first"),
    ("train() before setup()", "t.train()", "OnnxtrainError", "ValueError", "VALUE", "set the task up first"),
    ("setup() without a task", "t.setup({ label: 'label', hidden: [4] })", "DataError", "DataError", "DATA",
     "the task is not given"),
    ("setup() without hidden", "t.setup({ label: 'label', task: 'classification' })", "DataError", "DataError",
     "DATA", "the hidden layer sizes are \"None\""),
    ("setup() of an unknown column", "t.setup({ ...SETUP, label: 'nolabel' })", "DataError", "DataError", "DATA",
     "there is no column named \"nolabel\""),
    ("setup() validation 1.5", "t.setup({ ...SETUP, validation: 1.5 })", "DataError", "DataError", "DATA",
     "the validation share is \"1.5\""),
    ("setup() seed a string", "t.setup({ ...SETUP, seed: 'x' })", "DataError", "DataError", "DATA",
     "the seed is \"x\""),
    ("setup() an unknown optimizer", "t.setup({ ...SETUP, optimizer: 'Lion' })", "OnnxtrainError", "ValueError",
     "VALUE", "unknown OptimType 'Lion'"),
    ("a single-class CSV", "(await lib.TabularTask.create(bytes(ONE_CLASS), 'one.csv')).setup(SETUP)", "DataError",
     "DataError", "DATA", "has only one class (\"x\")"),
    ("an empty CSV", "lib.TabularTask.create(new Uint8Array(0), 'empty.csv')", "DataError", "DataError", "DATA",
     "empty.csv is empty"),
    ("a binary CSV", "lib.TabularTask.create(Uint8Array.from({ length: 256 }, (_, i) => i), 'b.csv')", "DataError",
     "DataError", "DATA", "b.csv is not UTF-8 text"),
    ("an image label out of range", "lib.ImageTask.create({ ...IMAGES, labels: [0, 5, 0, 1] })", "DataError",
     "DataError", "DATA", "image 2 has the label \"5\""),
    ("too few pixels", "lib.ImageTask.create({ ...IMAGES, pixels: new Uint8Array(10) })", "DataError", "DataError",
     "DATA", "the pixel buffer has 10 bytes"),
    ("one class of images", "lib.ImageTask.create({ ...IMAGES, labels: [0, 0, 0, 0], classes: ['a'] })",
     "DataError", "DataError", "DATA", "needs at least two class subfolders"),
]
# after the task's setup
SET_UP = [
    ("restore() of garbage", "t.restore(bytes('garbage'))", "CheckpointError", "CheckpointError", "CHECKPOINT",
     "too short"),
    ("a task's train() with batchSize 0", "t.train({ batchSize: 0 })", "DataError", "DataError", "DATA",
     "the batch size must be a whole number >= 1"),
    ("a task's train() with validation", "t.train({ validation: 0.5 })", "OnnxtrainError", "ValueError", "VALUE",
     "a task's train has no option 'validation'"),
    ("predictCsv() of other columns", "t.predictCsv(bytes('x,y\\n1,2\\n'))", "DataError", "DataError", "DATA",
     "lacks the columns [\"a\", \"b\"]"),
    ("predictCsv() offset a string", "t.predictCsv(bytes(CSV), { offset: 'x' })", "DataError", "DataError", "DATA",
     "the offset is \"x\""),
]

CSV = "a,b,label\n" + "".join(f"{i},{i % 7},{'yes' if i % 3 else 'no'}\n" for i in range(40))

RUN = """async ([cases, batch, csv]) => {
    const MLP = { checkpointState: "mlp/checkpoint", trainModel: "mlp/training", evalModel: "mlp/eval",
                  optimizerModel: "mlp/optimizer" };
    const s = await lib.TrainingSession.create(MLP);
    const released = await lib.TrainingSession.create(MLP);
    await released.release();
    const good = feeds(s, batch);
    const bytes = (text) => new TextEncoder().encode(text);
    const CSV = csv, ONE_CLASS = "a,label\\n1,x\\n2,x\\n3,x\\n4,x\\n5,x\\n";
    const SETUP = %s;
    const IMAGES = { pixels: new Uint8Array(4 * 16 * 16 * 4), count: 4, size: 16, labels: [0, 1, 0, 1],
                     classes: ["a", "b"] };
    const floatLabels = new lib.Tensor("float32", new Float32Array(good.labels.size), good.labels.dims);
    const shifted = (t, by) => new lib.Tensor("int64", t.data.map((v) => v + by), t.dims);
    const scaled = (t, by) => new lib.Tensor("float32", t.data.map((v) => v * by), t.dims);
    const rows = (t, n) => new lib.Tensor(t.type, t.data.subarray(0, 0), [n, ...t.dims.slice(1)]);
    const t = await lib.TabularTask.create(bytes(CSV), "data.csv");
    const results = [];
    const step = async () => (await s.runTrainStep(good))[s.trainingOutputNames[0]].data[0];
    const stepLoss = await step();
    for (const [label, code, className, , , , after] of cases) {
        if (label === "setup") {
            results.push({ label, setup: await t.setup(SETUP) });
            continue;
        }
        let err = null;
        try { await eval(`(async () => ${code})()`); } catch (e) { err = e; }
        const out = { label, rejected: err !== null };
        if (err) {
            Object.assign(out, { instance: err instanceof lib[className], base: err instanceof lib.OnnxtrainError,
                                 isError: err instanceof Error, name: err.name, code: err.code, message: err.message,
                                 details: err.details, text: String(err) });
        }
        try {
            out.after = after === "session" ? await step() : await t.detectTask("label");
        } catch (e) { out.after = `failed: ${e.message}`; }
        results.push(out);
    }
    const epochs = [];
    await t.train({ epochs: 1, onProgress: (record) => epochs.push(record.epoch) });
    return { results, stepLoss, epochs, exports: Object.keys(lib).filter((k) => /Error$/.test(k)).sort() };
}""" % SETUP


#: cases the library refuses in the page, before a request (so their details are no Python traceback)
REFUSED_IN_THE_PAGE = {"a released session"}


def test_careless_inputs_reject_with_the_exported_classes_and_everything_goes_on(page):
    cases = ([[*c, "session"] for c in SESSION] + [[*c, "task"] for c in TASK] + [["setup"] + [None] * 6]
             + [[*c, "task"] for c in SET_UP])
    assert len(cases) - 1 >= 40
    batch = oc.batches(CASES["mlp"], 1)[0]
    got = page.page.evaluate(RUN, [cases, [wire(a) for a in batch], CSV])
    assert "OnnxtrainError" in got["exports"] and "NonFiniteStepError" in got["exports"]
    expected = {c[0]: c for c in cases}
    for r in got["results"]:
        if r["label"] == "setup":
            assert r["setup"]["classes"] == ["no", "yes"]
            continue
        label, _, class_name, name, code, words, after = expected[r["label"]]
        assert r["rejected"], label
        assert r["instance"] and r["base"] and r["isError"], (label, r)
        assert (r["name"], r["code"]) == (name, code), (label, r["name"], r["code"], r["message"], r.get("details"))
        assert r["code"] in errors.CODES.values() and r["text"] == f"{name}: {r['message']}"
        message = r["message"]
        assert "\n" not in message and len(message) <= errors.MESSAGE_CHARS and "Traceback" not in message, message
        assert words in message, (label, message)
        if label in REFUSED_IN_THE_PAGE:  # the JavaScript stack of the call
            assert "callOf" in r["details"], (label, r["details"])
        else:
            assert r["details"].startswith("Traceback (most recent call last):") and name in r["details"], label
        if after == "session":
            assert r["after"] == got["stepLoss"], (label, r["after"])  # no step changed the parameters
        else:
            assert r["after"] == "classification", (label, r["after"])
    assert len(got["results"]) == len(cases) and np.isfinite(got["stepLoss"])
    assert got["epochs"] and set(got["epochs"]) == {1}  # the task, set up between the failures, trains


def test_arguments_the_page_checks_throw_javascripts_own_errors_that_say_what_is_needed(page):
    said = page.page.evaluate("""async () => {
        const out = [];
        for (const call of [() => lib.ImageTask.create({}), () => lib.ImageTask.create({ labels: [0], classes: "ab" }),
                            () => lib.start({ onProgress: 3 })]) {
            try { await call(); out.push(null); } catch (err) { out.push([err.constructor.name, err.message]); }
        }
        return out;
    }""")
    assert said == [["TypeError", "ImageTask.create needs labels: a class index per image (decodeImages gives them)"],
                    ["TypeError", "ImageTask.create needs classes: the class names (decodeImages gives them)"],
                    ["TypeError", "onProgress must be a function"]]
