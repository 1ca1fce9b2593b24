"""The library's PersonalizeTask in Chromium on the site's backbone (artifacts/efficientnet_lite0/backbone.onnx):
loaded from its URL with progress, two classes of real photos, trained, predicted, exported; the export run by
onnxruntime in CPython gives the page's probabilities; a snapshot restores; nothing leaves the origin."""
import base64
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import build
from browser.conftest import library_page
from onnxtrain import ir
from onnxtrain.tasks.preprocess import preprocess_model, read_preprocess
from tasks.test_personalize import ACCURACY_BAR, crops, photos, rgba

BACKBONE_URL = "artifacts/efficientnet_lite0/backbone.onnx"
LIBRARY = "./onnxtrain/onnxtrain.mjs"

HELPERS = """() => {
  window.fromB64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  window.toB64 = (bytes) => {
    let text = "";
    for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(text);
  };
  window.errorOf = async (promise) => { try { await promise; return null; } catch (err) { return err.message; } };
}"""


def b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    """A page of its own on a plain static server: the site's library folder and backbone."""
    with library_page(browser, tmp_path_factory.mktemp("host"), [BACKBONE_URL]) as wrapped:
        wrapped.site_backbone = build.TEST_SITE / BACKBONE_URL
        yield wrapped


@pytest.fixture(scope="module")
def images():
    """Two classes (china, flower): 4 RGBA training crops each, 6 held-out RGBA crops each (other half)."""
    both = list(photos().items())[:2]
    train = [rgba(crops(photo, 4, "left", k)) for k, (_, photo) in enumerate(both)]
    test = np.concatenate([rgba(crops(photo, 6, "right", 10 + k)) for k, (_, photo) in enumerate(both)])
    return [name for name, _ in both], train, test, np.repeat([0, 1], 6)


def test_personalize_task_loads_trains_predicts_and_exports_like_onnxruntime(page, images):
    p = page.page
    p.evaluate(HELPERS)
    size = page.site_backbone.stat().st_size
    loaded = p.evaluate("""async ([library, url]) => {
      const lib = await import(library);
      window.loads = [];
      window.task = await lib.PersonalizeTask.create(url, { onLoad: (progress) => loads.push(progress) });
      window.lib = lib;
      return { loads, info: await task.info() };
    }""", [LIBRARY, BACKBONE_URL])
    loads, info = loaded["loads"], loaded["info"]
    assert loads[0]["loaded"] == 0 and loads[-2]["loaded"] == size and loads[-1]["stage"] == "ready"
    assert all(a["loaded"] <= b["loaded"] and a["seconds"] <= b["seconds"] for a, b in zip(loads, loads[1:]))
    assert {d["total"] for d in loads} <= {size, None}
    assert info["inputSize"] == 224 and info["features"] == 1280 and info["blockShape"] == [320, 7, 7]
    assert info["backboneBytes"] == size and info["loadSeconds"] >= loads[-2]["seconds"]
    print(f"backbone {size / 1e6:.1f} MB loaded in {info['loadSeconds']:.1f} s "
          f"(download {loads[-2]['seconds']:.1f} s)")

    names, train, test, labels = images
    h, w = train[0].shape[1:3]
    added = p.evaluate("""async ([names, batches, h, w]) => {
      const ids = [];
      const started = performance.now();
      for (const [k, name] of names.entries()) {
        const index = await task.addClass(name);
        ids.push(await task.addSamples(fromB64(batches[k]), { width: w, height: h, count: 4 }, index));
      }
      const seconds = (performance.now() - started) / 1000;
      return { ids, seconds, counts: await task.counts(), classes: await task.classes(),
        samples: await task.samples() };
    }""", [names, [b64(t) for t in train], h, w])
    print(f"page: embedded 8 samples of {w}x{h} px in {added['seconds']:.1f} s: "
          f"{8 / added['seconds']:.2f} per second")
    assert added["ids"] == [[1, 2, 3, 4], [5, 6, 7, 8]] and added["counts"] == [4, 4]
    assert added["classes"] == names
    assert added["samples"] == [{"id": i, "classIndex": int(i > 4)} for i in range(1, 9)]

    trained = p.evaluate("""async () => {
      const setup = await task.setup({ validation: 0 });
      const records = [];
      const summary = await task.train({ epochs: 20, batchSize: 8, learningRate: 0.003,
        onProgress: (r) => records.push(r.loss) });
      return { setup, steps: records.length, summary };
    }""")
    assert trained["setup"]["trainPerClass"] == [4, 4] and trained["steps"] == 20
    assert trained["summary"]["metrics"]["accuracy"] == 1.0

    th, tw = test.shape[1:3]
    started = p.evaluate("() => performance.now()")
    predicted = p.evaluate("""async ([pixels, n, h, w]) => {
      const all = fromB64(pixels);
      const out = [];
      for (let i = 0; i < n; i++) {
        out.push(await task.predict(all.subarray(i * h * w * 4, (i + 1) * h * w * 4), { width: w, height: h }));
      }
      return out;
    }""", [b64(test), len(test), th, tw])
    seconds = (p.evaluate("() => performance.now()") - started) / 1000
    print(f"page: {len(test)} predictions in {seconds:.1f} s: {len(test) / seconds:.2f} frames per second")
    accuracy = np.mean([q["label"] for q in predicted] == labels)
    print(f"page: held-out accuracy {accuracy:.3f}")
    assert accuracy >= ACCURACY_BAR
    assert all(q["className"] == names[q["label"]] for q in predicted)

    exported = base64.b64decode(p.evaluate("async () => toB64(await task.exportModel())"))
    onnx.checker.check_model(onnx.load_from_string(exported), full_check=True)
    reference = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
    probabilities, label = reference.run(["probabilities", "label"], {"image": test})
    np.testing.assert_allclose(probabilities, [q["probabilities"] for q in predicted], atol=2e-5)
    assert label.tolist() == [q["label"] for q in predicted]

    # a snapshot restores the classes, the samples and the run without embedding again
    restored = p.evaluate("""async ([library, url, pixels, h, w]) => {
      const snapshot = await task.snapshot();
      const again = await lib.PersonalizeTask.fromSnapshot(url, snapshot);
      const image = fromB64(pixels);
      const out = { classes: await again.classes(), counts: await again.counts(),
        prediction: await again.predict(image, { width: w, height: h }),
        original: await task.predict(image, { width: w, height: h }), bytes: snapshot.length };
      await again.release();
      return out;
    }""", [LIBRARY, BACKBONE_URL, b64(test[:1]), th, tw])
    assert restored["classes"] == names and restored["counts"] == [4, 4]
    assert restored["prediction"] == restored["original"]
    print(f"snapshot of 8 samples: {restored['bytes'] / 1e6:.2f} MB")


def test_bad_calls_reject_with_the_reason_and_the_task_goes_on(page, images):
    p = page.page
    errors = p.evaluate("""async () => ({
      pixels: await errorOf(task.addSamples(new Uint8Array(10), { width: 4, height: 4 }, 0)),
      size: await errorOf(task.addSamples(new Uint8Array(64), { width: 0, height: 4 }, 0)),
      klass: await errorOf(task.addSamples(new Uint8Array(64), { width: 4, height: 4 }, 5)),
      name: await errorOf(task.addClass("FLOWER")),
      sample: await errorOf(task.removeSample(99)),
      counts: await task.counts(),
    })""")
    assert "the pixel buffer has 10 bytes, but 1 RGBA image of 4×4 px take 64" in errors["pixels"]
    assert "width must be a whole number of 1 or more" in errors["size"]
    assert "there is no class 5; the classes are numbered 0 to 1" in errors["klass"]
    assert 'the class name "FLOWER" is taken (by "flower")' in errors["name"]
    assert 'there is no sample 99' in errors["sample"]
    assert errors["counts"] == [4, 4]
    alone = p.evaluate("""async ([library, url]) => {
      const one = await lib.PersonalizeTask.create(url);
      await one.addClass("only");
      const error = await errorOf(one.setup());
      await one.release();
      return error;
    }""", [LIBRARY, BACKBONE_URL])
    assert "there is one class; add at least two classes" in alone


PREPROCESS_IN_PAGE = """
import base64, json
import numpy as np
from onnxtrain import ir
from onnxtrain.ops import simd
from onnxtrain.runtime import Session
from onnxtrain.tasks.preprocess import preprocess_model, read_preprocess
p = read_preprocess(json.loads(META))
image = np.frombuffer(base64.b64decode(IMAGE), np.uint8).reshape(SHAPE)
out = Session(preprocess_model(p["size"], p["mean"], p["std"])).run([image])[0]
[simd.available(), base64.b64encode(out.tobytes()).decode()]
"""


def test_the_preprocessing_graph_in_the_page_equals_onnxruntime(page):
    """The page (its SIMD kernels on: Resize by their gemm in float32) computes what onnxruntime computes."""
    meta = {p.key: p.value for p in onnx.load(str(page.site_backbone)).metadata_props}
    p = read_preprocess(meta)
    model = ir.to_bytes(preprocess_model(p["size"], p["mean"], p["std"]))
    reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    for shape in [(2, 240, 320, 4), (1, 480, 640, 3), (1, 150, 100, 4)]:
        image = rng.integers(0, 256, shape, dtype=np.uint8)
        code = (f"META = {json.dumps(json.dumps(meta))}\nIMAGE = {b64(image)!r}\nSHAPE = {list(shape)}\n"
                + PREPROCESS_IN_PAGE)
        simd_on, out = page.page.evaluate("(code) => lib._engineCall('runPython', { code })", code)
        assert simd_on
        got = np.frombuffer(base64.b64decode(out), np.float32).reshape(shape[0], 3, p["size"], p["size"])
        np.testing.assert_allclose(got, reference.run(None, {"image": image})[0], rtol=1e-5, atol=1e-4)


def test_fine_tuning_the_last_convolution_in_the_page_exports_what_it_predicts(page, images):
    """After the first test: fineTune trains conv_head (its gradient by the SIMD gemm) with the head; the export
    in onnxruntime gives the page's probabilities."""
    _, _, test, labels = images
    th, tw = test.shape[1:3]
    out = page.page.evaluate("""async ([pixels, n, h, w]) => {
      const setup = await task.setup({ fineTune: true });
      const losses = [];
      const started = performance.now();
      await task.train({ epochs: 5, batchSize: 8, learningRate: 0.001, onProgress: (r) => losses.push(r.loss) });
      const seconds = (performance.now() - started) / 1000;
      const all = fromB64(pixels);
      const predicted = [];
      for (let i = 0; i < n; i++) {
        predicted.push(await task.predict(all.subarray(i * h * w * 4, (i + 1) * h * w * 4), { width: w, height: h }));
      }
      return { setup, losses, seconds, predicted, exported: toB64(await task.exportModel()) };
    }""", [b64(test), len(test), th, tw])
    print(f"page: fine-tuning conv_head + head, 5 epochs of 8 samples in {out['seconds']:.1f} s")
    assert out["setup"]["fineTune"] and out["setup"]["parameters"] == 320 * 1280 + 1280 + 2 * 1280 + 2
    assert out["losses"][-1] < out["losses"][0] / 2
    assert np.mean([q["label"] for q in out["predicted"]] == labels) >= ACCURACY_BAR
    reference = ort.InferenceSession(base64.b64decode(out["exported"]), providers=["CPUExecutionProvider"])
    probabilities = reference.run(["probabilities"], {"image": test})[0]
    np.testing.assert_allclose(probabilities, [q["probabilities"] for q in out["predicted"]], atol=2e-5)
