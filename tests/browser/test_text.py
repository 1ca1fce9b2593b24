"""Text categories in Chromium on the site's MiniLM encoder (artifacts/minilm/): the app's flow through its UI (three
classes of typed examples, a head, then a short LoRA run; live predictions as the test types; the downloaded .zip's
model run by onnxruntime in CPython on the same texts tokenized by onnxtrain's tokenizer gives the page's
predictions), bad input shown in the page while the worker goes on, the truncation notice, and the library's
TextTask from a plain page.  Nothing leaves the origin.  The encoder loads once per page."""
import base64
import io
import json
import re
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import build
from browser.conftest import library_page, reload_and_resume, screenshot
from onnxtrain.text.tokenizer import Tokenizer

MINILM = "artifacts/minilm"
# Three categories of the test's own, a few examples each, and held-out texts worded otherwise.
EXAMPLES = {
    "cooking": ["Simmer the onions in butter until they turn golden.",
                "Knead the dough for ten minutes, then let it rise.",
                "Season the soup with salt, pepper and a little thyme.",
                "Bake the cake at 180 degrees for forty minutes."],
    "sport": ["The striker scored twice in the second half.",
              "She won the marathon in under three hours.",
              "Our team lost the final on penalties.",
              "He trains at the gym every morning before work."],
    "weather": ["Heavy rain is expected across the north tonight.",
                "Tomorrow will be sunny with a light breeze.",
                "A storm warning was issued for the coast.",
                "Temperatures will drop below freezing this weekend."],
}
HELD_OUT = {
    "cooking": ["Chop the garlic finely and fry it in olive oil.", "Stir the risotto until the rice is creamy."],
    "sport": ["The goalkeeper saved a penalty in the last minute.", "Tennis fans cheered as the champion served."],
    "weather": ["Snow and icy winds will sweep in on Monday.", "The forecast says clouds clearing by the afternoon."],
}
NAMES = list(EXAMPLES)
HELD = [t for texts in HELD_OUT.values() for t in texts]
HELD_LABELS = [k for k, texts in enumerate(HELD_OUT.values()) for _ in texts]
LORA = {}  # what the LoRA run predicted, for its resume after a reload
LONG = " ".join(["the match went on through the rain and the wind while the crowd kept singing"] * 12)


def tokenizer() -> Tokenizer:
    return Tokenizer.from_json((build.TEST_SITE / MINILM / "tokenizer.json").read_bytes())


def onnxruntime_predictions(model: bytes, texts: list, tok: Tokenizer):
    """(probabilities, labels) of the exported model in onnxruntime on ``texts`` tokenized by onnxtrain."""
    batch = tok.batch(texts)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(["probabilities", "label"], {"input_ids": batch.input_ids,
                                                   "attention_mask": batch.attention_mask})


def unzipped(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def check_download(page, texts, predicted, names):
    """The .zip the Download button saves: its model (checked by onnx, the class names in its metadata) in
    onnxruntime on ``texts`` gives the page's ``predicted``; its tokenizer.json is the site's."""
    with page.expect_download() as download:
        page.click("#text-download")
    assert download.value.suggested_filename == "text-classifier.zip"
    files = unzipped(open(download.value.path(), "rb").read())
    assert set(files) == {"model.onnx", "tokenizer.json", "README.md"}
    assert files["tokenizer.json"] == (build.TEST_SITE / MINILM / "tokenizer.json").read_bytes()
    model = onnx.load_from_string(files["model.onnx"])
    onnx.checker.check_model(model, full_check=True)
    assert json.loads({p.key: p.value for p in model.metadata_props}["onnxtrain.classes"]) == names
    probabilities, labels = onnxruntime_predictions(files["model.onnx"], texts, tokenizer())
    np.testing.assert_allclose(probabilities, [p["probabilities"] for p in predicted], rtol=0, atol=1e-5)
    assert labels.tolist() == [p["label"] for p in predicted]
    return files


@pytest.fixture(scope="module")
def app(site_page):
    """The app with its text flow started: the language model loaded once for the module's tests."""
    page = site_page.page
    page.evaluate("""() => {
        window.loadLines = [];
        const status = document.getElementById('text-load-status');
        new MutationObserver(() => window.loadLines.push(status.textContent))
            .observe(status, { childList: true, characterData: true, subtree: true });
    }""")
    page.click("#text-load")
    page.wait_for_function("() => !document.getElementById('text-setup').hidden "
                           "|| !document.getElementById('text-error').hidden", timeout=300_000)
    assert page.is_hidden("#text-error"), page.text_content("#text-error")
    lines = page.evaluate("() => window.loadLines")
    progress = re.compile(r"Download(ing|ed) the language model: [0-9.]+ (of [0-9.]+ MB · |MB in )[0-9.]+ s.*")
    assert any(progress.fullmatch(line) for line in lines), lines
    ready = page.text_content("#text-load-status")
    assert ready.startswith("Ready: all-MiniLM-L6-v2, loaded in "), ready
    print(f"\n{ready}")
    return site_page


def counts(page) -> list:
    return [int(t.split()[0]) for t in page.locator(".text-class .cam-count").all_text_contents()]


def add_typed(page, index, text):
    """Type ``text`` in class ``index``'s box and press Add; the error or notice the page shows (or "")."""
    card = page.locator(".text-class").nth(index)
    before = counts(page)
    card.locator("textarea").fill(text)
    card.locator(".text-add").click()
    page.wait_for_function("""(n) => JSON.stringify([...document.querySelectorAll('.text-class .cam-count')]
        .map((e) => parseInt(e.textContent))) !== n || !document.getElementById('text-error').hidden""",
                           arg=str(before).replace(" ", ""), timeout=60_000)


def train(page, mode, epochs, lr):
    page.select_option("#text-mode", mode)
    page.fill("#text-epochs", str(epochs))
    page.fill("#text-lr", str(lr))
    page.fill("#text-batch", "8")
    page.evaluate("() => { document.getElementById('text-metrics').textContent = ''; }")  # the last run's line
    page.click("#text-train")
    page.wait_for_function("() => document.getElementById('text-metrics').textContent.startsWith('Done') "
                           "|| !document.getElementById('text-error').hidden", timeout=400_000)
    assert page.is_hidden("#text-error"), page.text_content("#text-error")
    return page.text_content("#text-metrics")


def live(page, text):
    """Type ``text`` in the Try it box; the page's prediction (after its debounce) and the note under it."""
    page.fill("#text-try", text)
    page.wait_for_function("(t) => window.onnxtrain.flows.text.live().text === t", arg=text, timeout=60_000)
    return page.evaluate("() => window.onnxtrain.flows.text.live().result"), page.text_content("#text-live-note")


def test_three_classes_typed_head_trained_live_predictions_and_download(app):
    page = app.page
    page.click("#text-add-class")
    page.wait_for_function("() => document.querySelectorAll('.text-class').length === 3")
    for i, name in enumerate(NAMES):
        field = page.locator(".text-class .cam-name").nth(i)
        field.fill(name)
        field.press("Enter")
    page.wait_for_function("(n) => JSON.stringify([...document.querySelectorAll('.text-class .cam-name')]"
                           ".map((e) => e.value)) === n", arg=str(NAMES).replace("'", '"').replace(" ", ""))
    assert app.task_call("text", "classes") == NAMES
    for i, texts in enumerate(EXAMPLES.values()):
        # blank and empty lines are skipped, and the page says so
        add_typed(page, i, "\n".join(texts[:2]) + "\n\n   \n" + "\n".join(texts[2:]))
        assert page.is_hidden("#text-error"), page.text_content("#text-error")
        assert page.text_content("#text-notice") == "Skipped 2 empty lines."
    assert counts(page) == [4, 4, 4] == app.task_call("text", "counts")
    shown = page.locator(".text-class").nth(0).locator(".text-examples li span").all_text_contents()
    assert shown == EXAMPLES["cooking"]

    assert page.is_hidden("#text-rank-label")  # LoRA's rank only in LoRA mode
    done = train(page, "head", 30, 0.01)
    print(done)
    assert "accuracy on the examples 100.0%" in done, done
    predicted = [live(page, text)[0] for text in HELD]
    accuracy = np.mean([p["label"] for p in predicted] == np.array(HELD_LABELS))
    print(f"head: held-out accuracy {accuracy:.3f} on {len(HELD)} texts")
    assert accuracy >= 5 / 6
    bars = page.locator("#text-bars .cam-bar-name").all_text_contents()
    assert bars == NAMES
    check_download(page, HELD, predicted, NAMES)
    screenshot(page, "#text", "text-flow")


def test_lora_trains_a_short_run_and_its_merged_download_predicts_as_the_page(app):
    page = app.page
    page.select_option("#text-mode", "lora")
    assert page.is_visible("#text-rank-label")
    # LoRA's epochs and learning rate, as the few-shot test measured them
    assert (page.input_value("#text-epochs"), page.input_value("#text-lr")) == ("4", "0.001")
    page.fill("#text-rank", "4")
    done = train(page, "lora", 2, 0.003)
    print(done)
    predicted = app.task_call("text", "predict", HELD)
    assert [live(page, text)[0] for text in HELD[:2]] == predicted[:2]
    check_download(page, HELD, predicted, NAMES)
    LORA["predicted"] = predicted


def test_long_texts_are_truncated_and_the_page_says_so(app):
    page = app.page
    assert len(tokenizer().encode(LONG)) == 128 and len(tokenizer().tokens(LONG)) > 126
    result, note = live(page, LONG)
    assert result["truncated"] and "longer than the language model reads (128 tokens)" in note, note
    short, note = live(page, HELD[0])
    assert not short["truncated"] and note == ""
    add_typed(page, 1, LONG)
    assert "1 example of sport is longer than the language model reads (128 tokens)" in \
        page.text_content("#text-notice")


def test_bad_input_is_shown_in_the_page_and_the_worker_goes_on(app, tmp_path):
    page = app.page
    card = page.locator(".text-class").nth(0)
    card.locator("textarea").fill("\n  \n")
    card.locator(".text-add").click()
    page.wait_for_selector("#text-error:not([hidden])")
    assert page.text_content("#text-error").startswith("Type at least one example")

    page.click("#text-add-class")  # a class without examples
    page.wait_for_function("() => document.querySelectorAll('.text-class').length === 4")
    page.select_option("#text-mode", "head")
    page.click("#text-train")
    page.wait_for_selector("#text-error:not([hidden])")
    error = page.text_content("#text-error")
    assert error == "the class \"Class 4\" has no texts; add some, or remove the class", error
    page.locator(".text-class").nth(3).locator(".cam-remove").click()
    page.wait_for_function("() => document.querySelectorAll('.text-class').length === 3")

    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("text,label\nCrème brûlée au four,cooking\n".encode("latin-1"))
    page.set_input_files("#text-csv", str(latin1))
    page.wait_for_selector("#text-error:not([hidden])")
    assert page.text_content("#text-error") == "latin1.csv is not UTF-8 text: save it as CSV UTF-8"
    assert page.is_hidden("#text-csv-columns")

    good = tmp_path / "more.csv"
    good.write_text('id,"the text",topic\n1,"Whisk the eggs, then fold in the flour.",cooking\n'
                    "2,Fog will linger in the valleys until noon.,weather\n3,Pack an umbrella for the trip.,travel\n")
    page.set_input_files("#text-csv", str(good))
    page.wait_for_selector("#text-csv-columns:not([hidden])")
    assert page.locator("#text-csv-text option").all_text_contents() == ["id", "the text", "topic"]
    page.select_option("#text-csv-text", "the text")
    page.select_option("#text-csv-label", "topic")
    before = app.task_call("text", "counts")
    page.click("#text-csv-add")
    page.wait_for_function("() => document.querySelectorAll('.text-class').length === 4")
    assert page.text_content("#text-notice") == "Added 3 examples from more.csv."
    assert app.task_call("text", "classes") == NAMES + ["travel"]
    assert app.task_call("text", "counts") == [before[0] + 1, before[1], before[2] + 1, 1]

    missing = page.evaluate("""async (csv) => {
        try { await window.onnxtrain.tasks.text().addCsv(new TextEncoder().encode(csv), { text: "body",
          label: "topic" }); return null; } catch (err) { return [err.name, err.message]; }
    }""", "text,topic\nhello,greeting\n")
    assert missing[0] == "DataError" and "body" in missing[1], missing
    assert app.task_call("text", "counts")[3] == 1  # nothing was added


def test_the_lora_run_resumes_after_a_reload_as_it_was_saved(app):
    """The LoRA run was saved after its last epoch (its setup's snapshot and that epoch's checkpoint): after a
    reload, Resume gives its classes, texts and predictions back, though texts were added since."""
    page = app.page
    line = reload_and_resume(page, "Text categories (LoRA)")
    assert line.startswith("Text categories (LoRA): 3 classes (cooking, sport, weather), epoch 2/2 · saved "), line
    page.wait_for_function("() => document.getElementById('text-metrics').textContent.startsWith('Restored') "
                           "|| !document.getElementById('text-error').hidden", timeout=120_000)
    assert page.is_hidden("#text-error"), page.text_content("#text-error")
    assert page.input_value("#text-mode") == "lora" and page.input_value("#text-rank") == "4"
    assert app.task_call("text", "classes") == NAMES and counts(page) == [4, 4, 4]
    assert app.task_call("text", "predict", HELD) == LORA["predicted"]
    assert live(page, HELD[3])[0] == LORA["predicted"][3]


# ---- the library's TextTask in a page of its own ------------------------------------------------------------------

@pytest.fixture(scope="module")
def plain(browser, tmp_path_factory):
    """A plain static server with the site's library folder and artifacts/minilm/."""
    with library_page(browser, tmp_path_factory.mktemp("host"), [MINILM]) as page:
        yield page


def test_the_librarys_text_task_in_a_plain_page(plain):
    page = plain.page
    out = page.evaluate("""async ([examples, held]) => {
      const toB64 = (bytes) => {
        let text = "";
        for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        return btoa(text);
      };
      const errorOf = async (p) => { try { await p; return null; } catch (err) {
        return [err.name, err instanceof lib.OnnxtrainError, err.message]; } };
      const loads = [];
      const task = await lib.TextTask.create({ onLoad: (p) => loads.push(p) });
      const ids = [];
      for (const [name, texts] of Object.entries(examples)) {
        ids.push((await task.addTexts(texts, await task.addClass(name))).ids);
      }
      const errors = {
        notStrings: await errorOf(task.addTexts("one string", 0)),
        klass: await errorOf(task.addTexts(["x"], 7)),
        columns: await errorOf(task.addCsv(new TextEncoder().encode("a,b\\n1,2\\n"), { text: "text", label: "b" })),
        mode: await errorOf(task.setup({ mode: "full" })),
      };
      const setup = await task.setup({ mode: "head" });
      const summary = await task.train({ epochs: 30, batchSize: 8, learningRate: 0.01 });
      const predicted = await task.predict(held);
      const one = await task.predict(held[0]);
      const snapshot = await task.snapshot();
      const again = await lib.TextTask.fromSnapshot(snapshot);
      const restored = { classes: await again.classes(), counts: await again.counts(),
        predicted: await again.predict(held) };
      await again.release();
      return { loads, ids, errors, setup, accuracy: summary.metrics.accuracy, predicted, one, restored,
        info: await task.info(), zip: toB64(await task.exportZip()), onnx: toB64(await task.exportModel()),
        deprecated: toB64(await task.exportOnnx()),
        counts: await task.counts() };
    }""", [EXAMPLES, HELD])
    size = (build.TEST_SITE / MINILM / "encoder.onnx").stat().st_size
    assert out["loads"][-2]["loaded"] == size and out["loads"][-1]["stage"] == "ready"
    assert out["info"]["loadSeconds"] >= out["loads"][-2]["seconds"]
    print(f"\nplain page: encoder {size / 1e6:.1f} MB loaded in {out['info']['loadSeconds']:.1f} s")
    assert out["ids"] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    assert out["errors"]["notStrings"] == ["TypeError", False, "the texts must be an array of strings"]
    assert out["errors"]["mode"] == ["TypeError", False, 'mode is "head" or "lora", not full']
    assert out["errors"]["klass"][:2] == ["DataError", True] and "there is no class 7" in out["errors"]["klass"][2]
    assert out["errors"]["columns"][:2] == ["DataError", True] and "text" in out["errors"]["columns"][2]
    assert out["counts"] == [4, 4, 4] and out["accuracy"] == 1.0
    assert out["one"] == out["predicted"][0]
    assert out["restored"] == {"classes": NAMES, "counts": [4, 4, 4], "predicted": out["predicted"]}
    files = unzipped(base64.b64decode(out["zip"]))
    assert files["model.onnx"] == base64.b64decode(out["onnx"]) == base64.b64decode(out["deprecated"])
    probabilities, labels = onnxruntime_predictions(files["model.onnx"], HELD, tokenizer())
    np.testing.assert_allclose(probabilities, [p["probabilities"] for p in out["predicted"]], rtol=0, atol=1e-5)
    assert labels.tolist() == [p["label"] for p in out["predicted"]]
