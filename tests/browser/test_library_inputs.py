"""The library's inputs in Chromium: Blobs, Files, Responses and URLs wherever it takes bytes, and the page's images
(<img>, <canvas>, OffscreenCanvas, ImageBitmap, VideoFrame, ImageData) wherever it takes an image, each giving the
same result as the bytes it stands for; and the small edges of the sessions and tasks (issue 24)."""
import base64

import numpy as np

import ort_cases as oc
from onnxtrain import api
from browser.test_library import CASES, STEPS, library_url, page, wire  # noqa: F401  (the fixtures)

ARTIFACTS = """
    window.artifactBytes = async (short) => Object.fromEntries(await Promise.all(
      [["checkpointState", "checkpoint"], ["trainModel", "training"], ["evalModel", "eval"],
       ["optimizerModel", "optimizer"]].map(async ([key, kind]) =>
        [key, new Uint8Array(await (await fetch(`${short}/${kind}`)).arrayBuffer())])));
    window.afterSteps = async (session, batches) => {
      const losses = [];
      for (const batch of batches) {
        const out = await session.runTrainStep(feeds(session, batch));
        losses.push(out[session.trainingOutputNames[0]].data[0]);
        await session.runOptimizerStep();
        await session.lazyResetGrad();
      }
      const params = encode((await session.getContiguousParameters(true)).data);
      await session.release();
      return { losses, params };
    };
"""


def test_sessions_take_blobs_files_responses_and_urls_as_their_bytes(page):
    p = page.page
    batches = [[wire(a) for a in batch] for batch in oc.batches(CASES["mlp"], STEPS)]
    got = p.evaluate("""async (batches) => {
      """ + ARTIFACTS + """
      const bytes = await artifactBytes("mlp");
      const as = {
        bytes: (key) => bytes[key],
        blob: (key) => new Blob([bytes[key]]),
        file: (key) => new File([bytes[key]], key),
        response: (key) => new Response(bytes[key]),
        url: (key) => new URL(`mlp/${{ checkpointState: "checkpoint", trainModel: "training", evalModel: "eval",
                                      optimizerModel: "optimizer" }[key]}`, location.href),
      };
      const runs = {};
      for (const [kind, of] of Object.entries(as)) {
        const session = await lib.TrainingSession.create(Object.fromEntries(Object.keys(bytes).map((k) => [k, of(k)])));
        runs[kind] = await afterSteps(session, batches);
      }
      // loadCheckpoint and loadParametersBuffer from a Blob, describeModel and generateArtifacts from a Response
      const session = await lib.TrainingSession.create(bytes);
      const zeros = new Float32Array(await session.getParametersSize(true));
      await session.loadParametersBuffer(new Blob([zeros]));
      const zeroed = (await session.getContiguousParameters(true)).data.every((v) => v === 0);
      await session.loadCheckpoint(new File([bytes.checkpointState], "checkpoint"));
      const restored = encode((await session.getContiguousParameters(true)).data);
      const forward = await (await fetch("forward/mlp.onnx")).arrayBuffer();
      const described = [await lib.describeModel(new Response(forward)), await lib.describeModel(forward)];
      const options = { requiresGrad: ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"] };
      const made = await lib.generateArtifacts(new Blob([forward]), options);
      const madeFromBytes = await lib.generateArtifacts(forward, options);
      const missing = await errorOf(lib.TrainingSession.create({ ...bytes, evalModel: "mlp/nothing-here" }));
      const notOk = await errorOf(lib.TrainingSession.create({ ...bytes,
        trainModel: new Response("gone", { status: 410, statusText: "Gone" }) }));
      const wrong = await errorOf(lib.TrainingSession.create({ ...bytes, trainModel: 42 }));
      const used = new Response(bytes.trainModel);
      await used.arrayBuffer();
      const read = await errorOf(lib.TrainingSession.create({ ...bytes, trainModel: used }));
      await session.release();
      return { runs, zeroed, restored, described, missing, notOk, wrong, read,
               same: ["trainModel", "evalModel", "optimizerModel", "checkpointState"].map((k) =>
                 made[k].length === madeFromBytes[k].length && made[k].every((v, i) => v === madeFromBytes[k][i])) };
    }""", batches)
    reference = got["runs"]["bytes"]
    for kind, run in got["runs"].items():
        assert run == reference, kind
    assert len(reference["losses"]) == STEPS
    assert got["zeroed"]
    f = oc.files(CASES["mlp"])
    module = api.Module(f["training"], api.CheckpointState.load_checkpoint(f["checkpoint"]))
    np.testing.assert_array_equal(np.frombuffer(base64.b64decode(got["restored"]), np.float32),
                                  module.get_contiguous_parameters(True))
    assert got["described"][0] == got["described"][1]
    assert got["same"] == [True] * 4
    assert got["missing"][2].startswith("evalModel http://") and got["missing"][2].endswith(
        "/mlp/nothing-here: HTTP 404 File not found"), got["missing"]
    assert got["notOk"][2] == "trainModel (a Response without a URL): HTTP 410 Gone"
    assert got["wrong"][:2] == [True, "TypeError"] and got["wrong"][2] == (
        "trainModel must be a URL, a Response, a Blob (or File), an ArrayBuffer or a Uint8Array")
    assert got["read"][2] == "trainModel: the Response's body has been read already"


def test_export_takes_one_name_and_release_twice_resolves(page):
    p = page.page
    got = p.evaluate("""async () => {
      const s = await lib.TrainingSession.create({ checkpointState: "mlp/checkpoint", trainModel: "mlp/training",
        evalModel: "mlp/eval", optimizerModel: "mlp/optimizer" });
      const one = await s.exportModelForInferencing("output");
      const list = await s.exportModelForInferencing(["output"]);
      await s.setProperty("note", "mine");
      const properties = await s.getProperties();
      await s.release();
      const twice = await errorOf(s.release());
      const after = await errorOf(s.getParametersSize());
      return { same: one.length === list.length && one.every((v, i) => v === list[i]), properties, twice, after };
    }""")
    assert got["same"] and got["properties"] == {"note": "mine"}
    assert got["twice"] is None
    assert got["after"] == [True, "ValueError",
                            "this session was released: getParametersSize() cannot run; make a new one"]


# Pixels of a 16 x 16 opaque image (alpha 255: the browser's premultiplied paths keep the colours exactly), drawn as
# each kind of image the library takes.
IMAGES = """async (rgba) => {
  const size = 16;
  const data = new ImageData(new Uint8ClampedArray(rgba), size, size);
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = size;
  canvas.getContext("2d").putImageData(data, 0, 0);
  const offscreen = new OffscreenCanvas(size, size);
  offscreen.getContext("2d").putImageData(data, 0, 0);
  const png = await offscreen.convertToBlob({ type: "image/png" });
  const img = new Image();
  img.src = URL.createObjectURL(png);
  await img.decode();
  return { size, data, canvas, offscreen, img, png, bitmap: await createImageBitmap(data),
           frame: new VideoFrame(canvas, { timestamp: 0 }) };
}"""


def test_image_sources_predict_as_their_rgba_bytes(page):
    p = page.page
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (8, 16, 16, 4), dtype=np.uint8)
    pixels[..., 3] = 255
    got = p.evaluate("""async ([pixels, one]) => {
      const images = await (""" + IMAGES + """)(decode(one));
      const task = await lib.ImageTask.create({ pixels: decode(pixels), count: 8, size: 16,
        labels: [0, 1, 0, 1, 0, 1, 0, 1], classes: ["a", "b"], validation: 0.5 });
      const kinds = ["data", "canvas", "offscreen", "img", "bitmap", "frame"];
      const out = { bytes: await task.predict(images.data.data) };
      for (const kind of kinds) out[kind] = await task.predict(images[kind]);
      // a bigger image is drawn to the task's size, as decodeImages stretches it
      const big = new OffscreenCanvas(32, 32);
      big.getContext("2d").drawImage(images.canvas, 0, 0, 32, 32);
      const decoded = await lib.ImageTask.decodeImages([{ path: "x/big.png", bytes: new Uint8Array(
        await (await big.convertToBlob({ type: "image/png" })).arrayBuffer()) }], 16);
      out.bigBytes = await task.predict(decoded.pixels);
      out.big = await task.predict(big);
      images.frame.close();
      const errors = {
        unloaded: await errorOf(task.predict(new Image())),
        video: await errorOf(task.predict(document.createElement("video"))),
        closed: await errorOf(task.predict(images.frame)),
      };
      await task.release();
      return { out, errors, twice: await errorOf(task.release()), after: await errorOf(task.evaluate()) };
    }""", [base64.b64encode(pixels.tobytes()).decode(), base64.b64encode(pixels[0].tobytes()).decode()])
    out = got["out"]
    assert len(out["bytes"]) == 2 and abs(sum(out["bytes"]) - 1) < 1e-6
    for kind in ("data", "canvas", "offscreen", "img", "bitmap", "frame"):
        assert out[kind] == out["bytes"], kind
    assert out["big"] == out["bigBytes"]
    errors = got["errors"]
    assert errors["unloaded"][2] == "the image: the <img> is not loaded (yet)", errors
    assert errors["video"][2] == "the image: the <video> has no frame yet: wait for its loadeddata event", errors
    assert errors["closed"][2] == "the image: the VideoFrame is closed", errors
    assert got["twice"] is None
    assert got["after"][2] == "this task was released: evaluate() cannot run; make a new one"


def test_decode_images_takes_files_from_a_folder_and_refuses_a_folder_without_images(page):
    p = page.page
    got = p.evaluate("""async () => {
      const files = [];
      for (const [path, colour] of [["pets/cats/a.png", "#f00"], ["pets/dogs/b.png", "#00f"],
                                    ["pets/cats/c.png", "#0f0"]]) {
        const canvas = new OffscreenCanvas(20, 12);
        const context = canvas.getContext("2d");
        context.fillStyle = colour;
        context.fillRect(0, 0, 20, 12);
        const bytes = new Uint8Array(await (await canvas.convertToBlob({ type: "image/png" })).arrayBuffer());
        const file = new File([bytes], path.split("/").pop(), { type: "image/png" });
        Object.defineProperty(file, "webkitRelativePath", { value: path });  // as <input webkitdirectory> sets it
        files.push([file, { path, bytes }]);
      }
      const note = new File(["not an image"], "notes.txt");
      Object.defineProperty(note, "webkitRelativePath", { value: "pets/notes.txt" });
      const fromFiles = await lib.ImageTask.decodeImages([...files.map(([file]) => file), note], 8);
      const fromBytes = await lib.ImageTask.decodeImages([...files.map(([, b]) => b),
        { path: "pets/notes.txt", bytes: new TextEncoder().encode("not an image") }], 8);
      const texts = Array.from({ length: 5 }, (_, i) => new File([`row ${i}`], `t${i}.csv`));
      return { fromFiles: { ...fromFiles, pixels: encode(fromFiles.pixels) },
               fromBytes: { ...fromBytes, pixels: encode(fromBytes.pixels) },
               none: await errorOf(lib.ImageTask.decodeImages(texts, 8)),
               one: await errorOf(lib.ImageTask.decodeImages([texts[0]], 8)) };
    }""")
    assert got["fromFiles"] == got["fromBytes"]
    files = got["fromFiles"]
    assert files["count"] == 3 and files["classes"] == ["cats", "dogs"] and files["labels"] == [0, 1, 0]
    assert files["skipped"] == ["pets/notes.txt"]
    first = np.frombuffer(base64.b64decode(files["pixels"]), np.uint8).reshape(3, 8, 8, 4)
    assert (first[0] == [255, 0, 0, 255]).all() and (first[1] == [0, 0, 255, 255]).all()
    assert got["none"][2] == ('no image this browser decodes among the 5 files: "t0.csv", "t1.csv", "t2.csv", '
                              '… (5 skipped)')
    assert got["one"][2] == 'no image this browser decodes among the 1 file: "t0.csv"'
