"""A folder of PNG files, one subfolder per class, trained in the page (the head of the pretrained backbone, or a
CNN from scratch); the download runs in onnxruntime."""
import struct
import zlib

import zipfile

import numpy as np
import onnx
import onnxruntime as ort

import ort_cases as oc
from browser.conftest import reload_and_resume, screenshot
from photo_scenes import scenes
from web.test_images import synthetic


def png(rgba: np.ndarray) -> bytes:
    h, w, _ = rgba.shape
    raw = b"".join(b"\0" + rgba[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


NAMES = ["red", "blue", "green"]


def folder(tmp_path, n_per_class):
    """photos/<class>/<i>.png; the pixels and labels."""
    pixels, labels = synthetic(n_per_class=n_per_class, size=16)
    root = tmp_path / "photos"
    for i, (img, label) in enumerate(zip(pixels, labels)):
        (root / NAMES[label]).mkdir(parents=True, exist_ok=True)
        (root / NAMES[label] / f"{i}.png").write_bytes(png(img))
    return root, pixels, labels


def test_image_folder_trains_and_exports(site_page, tmp_path):
    page = site_page.page
    root, pixels, labels = folder(tmp_path, 16)
    (root / "red" / "notes.txt").write_text("not an image")
    (root / "blue" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    page.select_option("#img-model", "scratch")
    page.select_option("#img-size", "16")
    page.set_input_files("#img-folder", str(root))
    page.wait_for_selector("#img-setup:not([hidden])")
    info = page.text_content("#img-info")
    assert "48 images in 3 classes (blue, green, red)" in info and "skipped 2 files" in info
    page.fill("#img-epochs", "8")
    page.select_option("#img-schedule", "linear")
    page.click("#img-train")
    page.wait_for_function("() => /^Done/.test(document.getElementById('img-metrics').textContent) "
                           "|| !document.getElementById('img-error').hidden", timeout=180_000)
    assert page.is_hidden("#img-error"), page.text_content("#img-error")
    assert page.locator("#img-chart canvas").count() >= 1
    best = page.get_attribute("#img-chart", "data-best-epoch")  # keep the best epoch is on by default
    metrics = page.text_content("#img-metrics")
    assert best is not None and (f"Kept epoch {best}, the best" in metrics
                                 or best == "8" and "The last epoch was the best" in metrics), (best, metrics)
    assert page.text_content("#img-signature").startswith(
        "The model: Inputs: image float [batch, 3, 16, 16]. Outputs: output float [batch, 3], probabilities float "
        "[batch, 3], label int64 [batch]. Input 'image': float32 [batch, 3, 16, 16], RGB, values 0..1")
    tried = int(np.flatnonzero(labels == 2)[0])
    page.set_input_files("#img-try", str(root / "green" / f"{tried}.png"))
    page.wait_for_function("() => document.getElementById('img-prediction').textContent.startsWith('Looks like')")
    in_page = page.text_content("#img-prediction")
    assert in_page.startswith("Looks like: green")
    screenshot(page, "#images", "images")
    with page.expect_download() as download:
        page.click("#img-download")
    path = tmp_path / "images.onnx"
    download.value.save_as(path)
    rgb = pixels[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255
    label = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["label"], {"image": rgb})[0]
    classes = sorted(NAMES)
    assert np.mean(np.array([classes[i] for i in label]) == np.array([NAMES[k] for k in labels])) > 0.8
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    probabilities = session.run(["probabilities"], {"image": rgb[tried:tried + 1]})[0][0]
    percent = page.evaluate("(p) => (100 * p).toFixed(0)", float(probabilities.max()))
    assert in_page == f"Looks like: {classes[int(probabilities.argmax())]} ({percent}%)"
    held_pixels, held_labels = synthetic(n_per_class=10, size=16, seed=7)  # images the page never saw
    held = session.run(["label"], {"image": held_pixels[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255})[0]
    assert np.mean(np.array([classes[i] for i in held]) == np.array([NAMES[k] for k in held_labels])) > 1 / 3 + 0.4


def test_a_run_resumes_after_a_reload_and_its_artifacts_train_on_in_onnxruntime(own_page, tmp_path):
    page = own_page.page
    root, pixels, labels = folder(tmp_path, 6)
    page.select_option("#img-model", "scratch")
    page.select_option("#img-size", "16")
    page.set_input_files("#img-folder", str(root))
    page.wait_for_selector("#img-setup:not([hidden])")
    page.select_option("#img-optimizer", "SGD")
    page.fill("#img-epochs", "2")
    page.click("#img-train")
    page.wait_for_function("() => /^Done/.test(document.getElementById('img-metrics').textContent)", timeout=120_000)
    with page.expect_download() as download:
        page.click("#img-artifacts")
    assert download.value.suggested_filename == "photos-artifacts.zip"
    with zipfile.ZipFile(download.value.path()) as archive:
        archive.extractall(tmp_path / "artifacts")
    api = oc.ort_api()
    state = api.CheckpointState.load_checkpoint(str(tmp_path / "artifacts" / "checkpoint"))
    assert state.properties["epoch"] == 2
    optimizer_ops = {n.op_type for n in onnx.load(str(tmp_path / "artifacts" / "optimizer_model.onnx")).graph.node}
    assert "SGDOptimizerV2" in optimizer_ops and "AdamWOptimizer" not in optimizer_ops
    module = api.Module(str(tmp_path / "artifacts" / "training_model.onnx"), state,
                        str(tmp_path / "artifacts" / "eval_model.onnx"))
    assert np.isfinite(module(np.zeros((2, 3, 16, 16), np.float32), np.zeros(2, np.int64)))
    page.set_input_files("#img-try", str(root / "red" / "0.png"))
    page.wait_for_function("() => document.getElementById('img-prediction').textContent.startsWith('Looks like')")
    before = page.text_content("#img-prediction")

    assert "photos: 18 images in 3 classes, epoch 2/2" in reload_and_resume(page, "photos")
    page.wait_for_function("() => document.getElementById('img-metrics').textContent.startsWith('Restored')")
    assert "18 images in 3 classes" in page.text_content("#img-info") and page.input_value("#img-optimizer") == "SGD"
    page.set_input_files("#img-try", str(root / "red" / "0.png"))
    page.wait_for_function("() => document.getElementById('img-prediction').textContent.startsWith('Looks like')")
    assert page.text_content("#img-prediction") == before
    page.fill("#img-epochs", "4")
    page.click("#img-train")
    page.wait_for_function("() => /^Done/.test(document.getElementById('img-metrics').textContent)", timeout=120_000)
    assert "epoch 4/4" in page.text_content("#img-metrics")
    assert page.locator("#img-confusion table").count() == 1


DROP = """async (tree) => {
  // FileSystemEntry look-alikes; readEntries hands out a folder's children two at a time, as Chrome does by 100
  const entry = (name, node) => Array.isArray(node)
    ? { isFile: true, isDirectory: false, name, file: (ok) => ok(new File([new Uint8Array(node)], name)) }
    : { isFile: false, isDirectory: true, name, createReader() {
          const children = Object.entries(node).map(([n, child]) => entry(n, child));
          return { readEntries: (ok) => ok(children.splice(0, 2)) };
        } };
  await window.onnxtrain.flows.images.dropEntries(Object.entries(tree).map(([n, child]) => entry(n, child)));
}"""


def test_a_dropped_folder_is_read_with_its_class_subfolders(site_page, tmp_path):
    page = site_page.page
    root, pixels, labels = folder(tmp_path, 5)
    tree = {"photos": {c.name: {f.name: list(f.read_bytes()) for f in c.iterdir()} for c in root.iterdir()}}
    tree["photos"]["readme.txt"] = list(b"class folders below")
    page.select_option("#img-model", "scratch")
    page.select_option("#img-size", "16")
    page.evaluate("() => { document.getElementById('img-info').textContent = ''; }")
    page.evaluate(DROP, tree)
    page.wait_for_function("() => document.getElementById('img-info').textContent !== '' "
                           "|| !document.getElementById('img-error').hidden")
    assert page.is_hidden("#img-error"), page.text_content("#img-error")
    info = page.text_content("#img-info")
    assert "15 images in 3 classes (blue, green, red)" in info and "skipped 1 file that is not an image: photos/readme.txt" in info


def scene_folder(tmp_path, per_class):
    """scenes/<class>/<i>.png of real objects on the training backgrounds (tests/photo_scenes.py)."""
    images, labels, names = scenes(per_class, held_out=False)
    root = tmp_path / "scenes"
    for i, (img, label) in enumerate(zip(images, labels)):
        (root / names[label]).mkdir(parents=True, exist_ok=True)
        (root / names[label] / f"{i}.png").write_bytes(png(np.concatenate([img, np.full((*img.shape[:2], 1), 255,
                                                                                        np.uint8)], -1)))
    return root, names


def train_in_page(page, epochs: str):
    page.fill("#img-epochs", epochs)
    page.click("#img-train")
    page.wait_for_function("() => /^Done/.test(document.getElementById('img-metrics').textContent) "
                           "|| !document.getElementById('img-error').hidden", timeout=300_000)
    assert page.is_hidden("#img-error"), page.text_content("#img-error")


def held_out_accuracy(page, tmp_path, name: str, images, labels, classes, size=None) -> float:
    """The downloaded model's accuracy in onnxruntime on ``images`` (uint8 RGB, 224 px)."""
    with page.expect_download() as download:
        page.click("#img-download")
    path = tmp_path / name
    download.value.save_as(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    if size is None:
        feed = images
    else:
        from PIL import Image
        feed = np.stack([np.asarray(Image.fromarray(i).resize((size, size), Image.BILINEAR)) for i in images])
        feed = feed.transpose(0, 3, 1, 2).astype(np.float32) / 255
    label = session.run(["label"], {"image": feed})[0]
    assert sorted(classes) == json_classes(path)
    return float(np.mean(np.array([sorted(classes)[i] for i in label]) == np.array([classes[k] for k in labels])))


def json_classes(path) -> list:
    import json
    return json.loads({p.key: p.value for p in onnx.load(str(path)).metadata_props}["onnxtrain.classes"])


def test_the_pretrained_backbone_learns_a_folder_of_few_photos_that_a_cnn_from_scratch_does_not(own_page, tmp_path):
    """The default (the pretrained backbone's head) and the CNN from scratch on the same folder of 8 photos per class;
    both downloads on photos of the objects on other backgrounds.  The pretrained run resumes after a reload."""
    page = own_page.page
    root, names = scene_folder(tmp_path, 8)
    held_images, held_labels, _ = scenes(15, held_out=True)
    assert page.input_value("#img-model") == "pretrained" and page.is_hidden("#img-size-label")
    page.set_input_files("#img-folder", str(root))
    page.wait_for_selector("#img-setup:not([hidden])", timeout=300_000)
    info = page.text_content("#img-info")
    assert "32 images in 4 classes (astronaut, cat, coffee, rocket), 24 for training and 8 for validation, the " \
           "pretrained EfficientNet-Lite0's features of 224×224 pixels" in info, info
    train_in_page(page, "20")
    assert page.text_content("#img-signature").startswith("The model: Inputs: image uint8 [")
    pretrained = held_out_accuracy(page, tmp_path, "pretrained.onnx", held_images, held_labels, names)
    tried = tmp_path / "tried.png"
    tried.write_bytes(png(np.concatenate([held_images[0], np.full((224, 224, 1), 255, np.uint8)], -1)))
    page.set_input_files("#img-try", str(tried))
    page.wait_for_function("() => document.getElementById('img-prediction').textContent.startsWith('Looks like')")
    before = page.text_content("#img-prediction")
    session = ort.InferenceSession(str(tmp_path / "pretrained.onnx"), providers=["CPUExecutionProvider"])
    probabilities = session.run(["probabilities"], {"image": held_images[:1]})[0][0]
    percent = page.evaluate("(p) => (100 * p).toFixed(0)", float(probabilities.max()))
    assert before == f"Looks like: {sorted(names)[int(probabilities.argmax())]} ({percent}%)"
    screenshot(page, "#images", "images-pretrained")

    assert "scenes: 32 images in 4 classes, epoch 20/20" in reload_and_resume(page, "scenes")
    page.wait_for_function("() => document.getElementById('img-metrics').textContent.startsWith('Restored')",
                           timeout=120_000)
    assert page.input_value("#img-model") == "pretrained" and "24 for training" in page.text_content("#img-info")
    page.set_input_files("#img-try", str(tried))
    page.wait_for_function("() => document.getElementById('img-prediction').textContent.startsWith('Looks like')")
    assert page.text_content("#img-prediction") == before

    page.select_option("#img-model", "scratch")
    page.select_option("#img-size", "32")
    page.set_input_files("#img-folder", str(root))
    page.wait_for_function("() => document.getElementById('img-info').textContent.includes('a CNN from scratch')")
    train_in_page(page, "20")
    scratch = held_out_accuracy(page, tmp_path, "scratch.onnx", held_images, held_labels, names, size=32)
    print(f"held-out accuracy in the page, 8 photos per class: pretrained {pretrained:.2f}, from scratch {scratch:.2f}")
    assert pretrained >= 0.9 and scratch <= pretrained - 0.2, (pretrained, scratch)
