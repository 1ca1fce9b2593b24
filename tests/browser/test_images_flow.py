"""A folder of PNG files, one subfolder per class, trained in the page; the download runs in onnxruntime."""
import struct
import zlib

import numpy as np
import onnxruntime as ort

from browser.conftest import screenshot
from test_images import synthetic


def png(rgba: np.ndarray) -> bytes:
    h, w, _ = rgba.shape
    raw = b"".join(b"\0" + rgba[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_image_folder_trains_and_exports(site_page, tmp_path):
    page = site_page.page
    pixels, labels = synthetic(n_per_class=16, size=16)
    names = ["red", "blue", "green"]
    root = tmp_path / "photos"
    for i, (img, label) in enumerate(zip(pixels, labels)):
        (root / names[label]).mkdir(parents=True, exist_ok=True)
        (root / names[label] / f"{i}.png").write_bytes(png(img))
    (root / "red" / "notes.txt").write_text("not an image")
    (root / "blue" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
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
    page.set_input_files("#img-try", str(root / "green" / f"{int(np.flatnonzero(labels == 2)[0])}.png"))
    page.wait_for_function("() => document.getElementById('img-prediction').textContent.startsWith('Looks like')")
    assert page.text_content("#img-prediction").startswith("Looks like: green")
    screenshot(page, "#images", "images")
    with page.expect_download() as download:
        page.click("#img-download")
    path = tmp_path / "images.onnx"
    download.value.save_as(path)
    rgb = pixels[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255
    label = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["label"], {"image": rgb})[0]
    classes = sorted(names)
    assert np.mean(np.array([classes[i] for i in label]) == np.array([names[k] for k in labels])) > 0.8
