"""Drawing on the pad with the mouse: live predictions, a new class, fine-tuning, and the download."""
import zipfile

import numpy as np
import onnxruntime as ort

import ort_cases as oc
from browser.conftest import reload_and_resume, screenshot


def draw(page, strokes):
    page.locator("#pad").scroll_into_view_if_needed()  # a click lower down (a download) may have scrolled it away
    box = page.locator("#pad").bounding_box()
    for stroke in strokes:
        x0, y0 = stroke[0]
        page.mouse.move(box["x"] + x0, box["y"] + y0)
        page.mouse.down()
        for x, y in stroke[1:]:
            page.mouse.move(box["x"] + x, box["y"] + y, steps=8)
        page.mouse.up()


ONE = [[(100, 25), (100, 175)]]
CROSS = [[(40, 40), (160, 160)], [(160, 40), (40, 160)]]


def test_draw_add_a_class_fine_tune_and_download(site_page, tmp_path):
    page = site_page.page
    page.wait_for_function("() => !document.getElementById('digit-add').disabled", timeout=60_000)
    draw(page, ONE)
    page.wait_for_function("() => document.getElementById('digit-prediction').textContent.startsWith('Looks like')")
    page.fill("#digit-new", "X")
    page.click("#digit-new-add")
    page.wait_for_function("() => document.getElementById('digit-class').selectedOptions[0].textContent === 'X'")
    for shift in (-12, -6, 0, 6, 12):
        page.click("#digit-clear")
        draw(page, [[(x + shift, y) for x, y in s] for s in CROSS])
        page.click("#digit-add")
        page.wait_for_function(f"() => document.getElementById('digit-counts').textContent.includes('X: {shift // 6 + 3}')")
    page.click("#digit-train")
    page.wait_for_function("() => document.getElementById('digit-metrics').textContent.startsWith('Fine-tuned')",
                           timeout=120_000)
    assert page.is_hidden("#digit-error")
    page.wait_for_function("() => document.getElementById('digit-signature').textContent.startsWith("
                           "'The model: Inputs: pixels float [batch, 64]. Outputs: output float [batch, 11]')")
    page.click("#digit-clear")
    draw(page, CROSS)
    page.wait_for_function("() => document.getElementById('digit-prediction').textContent.startsWith('Looks like: X')")
    screenshot(page, "#digits", "digits")
    cross = np.array(page.evaluate("() => window.onnxtrain.flows.digits.pixels()"), np.float32).reshape(1, 64)
    with page.expect_download() as download:
        page.click("#digit-download")
    path = tmp_path / "digits.onnx"
    download.value.save_as(path)
    label = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["label"], {"pixels": cross})[0]
    assert label[0] == 10  # the new class comes after the ten digits


def test_drawings_and_the_fine_tuned_model_come_back_after_a_reload(own_page, tmp_path):
    page = own_page.page
    page.wait_for_function("() => !document.getElementById('digit-add').disabled", timeout=60_000)
    page.fill("#digit-new", "X")
    page.click("#digit-new-add")
    page.wait_for_function("() => document.getElementById('digit-class').selectedOptions[0].textContent === 'X'")
    for shift in (-8, 0, 8):
        page.click("#digit-clear")
        draw(page, [[(x + shift, y) for x, y in s] for s in CROSS])
        page.click("#digit-add")
    page.wait_for_function("() => document.getElementById('digit-counts').textContent.includes('X: 3')")
    page.click("#digit-train")
    page.wait_for_function("() => document.getElementById('digit-metrics').textContent.startsWith('Fine-tuned')",
                           timeout=120_000)
    page.wait_for_function("() => document.getElementById('runs-list').textContent.includes('fine-tuned once')")
    with page.expect_download() as download:
        page.click("#digit-artifacts")
    with zipfile.ZipFile(download.value.path()) as archive:
        archive.extractall(tmp_path)
    state = oc.ort_api().CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    trainable = {n: p.data.shape for n, p in state.parameters if p.requires_grad}
    assert trainable == {"fc2.weight": (11, 32), "fc2.bias": (11,)}  # the head, with the new class
    page.click("#digit-clear")
    draw(page, CROSS)
    cross = page.evaluate("() => window.onnxtrain.flows.digits.pixels()")
    before = shown(page, own_page.task_call("digits", "predict", cross))
    page.wait_for_function("(text) => document.getElementById('digit-prediction').textContent === text", arg=before)

    line = reload_and_resume(page, "handwriting")
    assert "3 drawings, classes 0 1 2 3 4 5 6 7 8 9 X, fine-tuned once" in line
    page.wait_for_function("() => document.getElementById('digit-metrics').textContent.startsWith('Restored')")
    assert "X: 3" in page.text_content("#digit-counts")
    assert page.locator("#digit-class option").count() == 11
    assert shown(page, own_page.task_call("digits", "predict", cross)) == before


def shown(page, probabilities):
    """The pad's caption for these class probabilities (the percentage rounded as JavaScript does)."""
    best = int(np.argmax(probabilities))
    percent = page.evaluate("(p) => (100 * p).toFixed(0)", probabilities[best])
    return f"Looks like: {'0123456789'[best] if best < 10 else 'X'} ({percent}%)"
    assert not page.is_disabled("#digit-download")
