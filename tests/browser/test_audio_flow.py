""""Teach your own sounds" through the page's UI, with Chromium's fake microphone playing words that espeak-ng
says (tests/audio/spoken_words.py): clips recorded with the level shown, more added as WAV files, training,
live predictions of held-out voices from the microphone, the downloaded model in onnxruntime on held-out clips
against the page's own predictions and in onnxruntime-web against onnxruntime, a WebM recording the browser
decodes, bad files as errors and notices in the UI with the task still usable, and the way without a
microphone or without its permission."""
import threading

import numpy as np
import onnxruntime as ort
import pytest

from audio import spoken_words as S
from browser.conftest import CHROMIUM_ARGS, Page, build, screenshot
from onnxtrain.tasks.audio_input import read_wav, wav_pcm

WORDS = ("yes", "no")
ACCURACY = 0.85  # held-out voices, the downloaded model in onnxruntime (the CPython task scores 0.93-0.95)
LIVE = 4  # live predictions checked per word


def looped(word: str, voice: str) -> bytes:
    """WAV bytes for the fake microphone: the word in ``voice``, then quiet noise (the file loops)."""
    return S.word_clip(word, voice, S.SPEEDS[0], seed=7)


@pytest.fixture(scope="module")
def microphone(browser, tmp_path_factory):
    """A second Chromium with a fake microphone that plays ``sound``: the test rewrites the file, and the
    microphone reads it anew each time the page opens it."""
    sound = tmp_path_factory.mktemp("microphone") / "microphone.wav"
    sound.write_bytes(S.noise_clip(0))
    with_mic = browser.browser_type.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS + [
        "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-audio-capture={sound}"])
    yield with_mic, sound
    with_mic.close()


def open_page(browser, site_url):
    context = browser.new_context()
    page = context.new_page()
    wrapped = Page(context, page, site_url)
    page.goto(site_url)
    page.wait_for_function("() => window.onnxtrain !== undefined")
    page.evaluate("() => window.onnxtrain.ready")
    return wrapped


def load(page):
    page.click("#audio-load")
    page.wait_for_function("() => !document.getElementById('audio-setup').hidden "
                           "|| !document.getElementById('audio-error').hidden", timeout=180_000)
    assert page.is_hidden("#audio-error"), page.text_content("#audio-error")


def mic(page, on: bool):
    if page.evaluate("() => window.onnxtrain.flows.audio.microphone()") != on:
        page.click("#audio-mic")
    page.wait_for_function("(on) => window.onnxtrain.flows.audio.microphone() === on "
                           "|| !document.getElementById('audio-mic-message').hidden", arg=on)
    assert page.is_hidden("#audio-mic-message"), page.text_content("#audio-mic-message")


def counts(page):
    return [int(t.split()[0]) for t in page.locator(".audio-class .cam-count").all_text_contents()]


def record(page, index: int, times: int):
    for _ in range(times):
        before = counts(page)[index]
        page.locator(".audio-record").nth(index).click()
        page.wait_for_function(f"() => Number(document.querySelectorAll('.audio-class .cam-count')[{index}]"
                               f".textContent.split(' ')[0]) > {before} "
                               "|| !document.getElementById('audio-error').hidden", timeout=60_000)
        assert page.is_hidden("#audio-error"), page.text_content("#audio-error")


def add_files(page, index: int, files: list):
    """Add files [(name, bytes, mime)] to class ``index``; wait until the page has them or shows an error."""
    before = counts(page)[index]
    page.evaluate("() => { document.getElementById('audio-error').hidden = true; }")
    page.locator(".audio-files").nth(index).set_input_files(
        [{"name": n, "mimeType": m, "buffer": b} for n, b, m in files])
    page.wait_for_function(f"() => Number(document.querySelectorAll('.audio-class .cam-count')[{index}]"
                           f".textContent.split(' ')[0]) > {before} "
                           "|| !document.getElementById('audio-error').hidden", timeout=60_000)


def error_after(page, index: int, files: list) -> str:
    add_files(page, index, files)
    assert page.is_visible("#audio-error")
    return page.text_content("#audio-error")


def live_after(page, sound, wav: bytes, n: int) -> list:
    """The page's next ``n`` live predictions with the microphone playing ``wav``."""
    mic(page, False)
    sound.write_bytes(wav)
    mic(page, True)
    start = page.evaluate("() => window.onnxtrain.flows.audio.live().count")
    names = []
    while len(names) < n:
        page.wait_for_function(f"(k) => window.onnxtrain.flows.audio.live().count > k", arg=start + len(names),
                               timeout=60_000)
        names.append(page.evaluate("() => window.onnxtrain.flows.audio.live().result.className"))
    return names


def mono_wav(samples, rate):
    return S.wav_bytes(np.asarray(samples, np.float64), rate)


def test_record_train_listen_export_and_bad_files(microphone, browser, site_url, tmp_path):
    browser_plain = browser
    browser, sound = microphone
    site = open_page(browser, site_url)
    page = site.page
    load(page)
    assert page.text_content("#audio-load-status").startswith("Ready: speech_embedding, loaded in ")
    page.click("#audio-add-class")
    page.wait_for_function("() => document.querySelectorAll('.audio-class').length === 3")
    for i, word in enumerate(WORDS, start=1):
        field = page.locator(".audio-class .cam-name").nth(i)
        field.fill(word)
        field.press("Enter")
    page.wait_for_function("async () => JSON.stringify(await window.onnxtrain.tasks.audio().classes()) === "
                           "JSON.stringify(['Background Noise', 'yes', 'no'])")

    # the microphone: its level moves while it plays noise; background clips, then each word in one voice
    sound.write_bytes(mono_wav(np.random.default_rng(3).standard_normal(16000) * 0.05, 16000))
    mic(page, True)
    page.wait_for_function("() => document.getElementById('audio-level').value > 0.2")
    record(page, 0, 3)
    for i, word in enumerate(WORDS, start=1):
        mic(page, False)
        sound.write_bytes(looped(word, S.TRAIN_VOICES[0]))
        mic(page, True)
        record(page, i, 2)
    page.locator(".audio-record").nth(2).click()  # the microphone stopped while a clip records: an error, no clip
    page.click("#audio-mic")
    page.wait_for_function("() => !document.getElementById('audio-error').hidden")
    assert "the microphone was stopped before the clip was recorded" in page.text_content("#audio-error")
    mic(page, False)
    assert counts(page) == [3, 2, 2]

    # the rest as WAV files: the training voices' clips, and noise
    train = S.dataset(S.TRAIN_VOICES, seed=0, words=WORDS)
    add_files(page, 0, [(f"noise{k}.wav", b, "audio/wav") for k, b in enumerate(train["noise"])])
    for i, word in enumerate(WORDS, start=1):
        add_files(page, i, [(f"{word}{k}.wav", b, "audio/wav") for k, b in enumerate(train[word])])
    assert page.is_hidden("#audio-error"), page.text_content("#audio-error")
    assert counts(page) == [11, 10, 10]
    assert page.text_content("#audio-notice") == "8 clips were resampled to 16 kHz."

    # bad files: each an error naming it, nothing added, the task still usable
    junk = b"RIFF\0\0\0\0WAVEfmt junk"
    assert "junk.wav is a WAV file that cannot be read" in error_after(page, 1, [("junk.wav", junk, "audio/wav")])
    assert "notes.txt is not audio this browser can decode" in error_after(
        page, 1, [("notes.txt", b"these are not sounds", "text/plain")])
    assert "quiet.wav is silent" in error_after(page, 1, [("quiet.wav", mono_wav(np.zeros(16000), 16000), "audio/wav")])
    assert "short.wav is 0.500 s long" in error_after(
        page, 1, [("short.wav", mono_wav(np.random.default_rng(1).standard_normal(4000) * 0.1, 8000), "audio/wav")])
    assert counts(page) == [11, 10, 10]
    x, rate = read_wav(S.word_clip("yes", S.TRAIN_VOICES[1], S.SPEEDS[1], seed=2), "yes")
    stereo = np.concatenate([x, 0.5 * x], axis=1)[::2]  # 11,025 Hz stereo
    add_files(page, 1, [("stereo.wav", S.wav_bytes(stereo, rate // 2), "audio/wav")])
    assert page.is_hidden("#audio-error"), page.text_content("#audio-error")
    notice = page.text_content("#audio-notice")
    assert notice == "stereo.wav has 2 channels; they were mixed down to one. 1 clip was resampled to 16 kHz.", notice
    assert counts(page) == [11, 11, 10]

    page.click("#audio-train")
    page.wait_for_function("() => document.getElementById('audio-metrics').textContent.startsWith('Done') "
                           "|| !document.getElementById('audio-error').hidden", timeout=300_000)
    assert page.is_hidden("#audio-error"), page.text_content("#audio-error")
    print("\n" + page.text_content("#audio-metrics"))
    assert page.text_content("#audio-signature").startswith("The model: ")

    # live: held-out voices through the microphone
    for word in WORDS:
        heard = live_after(page, sound, looped(word, S.HELD_OUT_VOICES[0]), LIVE)
        assert heard.count(word) >= LIVE - 1, (word, heard)
    mic(page, False)

    # a WebM recording, which the browser decodes
    page.evaluate("""async () => {
        const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
        const recorder = new MediaRecorder(stream, { mimeType: "audio/webm" });
        const parts = [];
        recorder.ondataavailable = (e) => parts.push(e.data);
        const done = new Promise((resolve) => { recorder.onstop = resolve; });
        recorder.start();
        await new Promise((r) => setTimeout(r, 1500));
        recorder.stop();
        await done;
        stream.getTracks().forEach((t) => t.stop());
        window.webm = new Blob(parts, { type: "audio/webm" });
    }""")
    webm = page.evaluate("async () => { const p = await window.onnxtrain.tasks.audio().predict(window.webm); "
                         "return [p.className, p.probabilities.length]; }")
    assert webm[0] in ("Background Noise", *WORDS) and webm[1] == 3, webm

    # the download in onnxruntime on held-out clips, against the page's own predictions
    model = site.task_bytes("audio", "exportModel")
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    test = S.dataset(S.HELD_OUT_VOICES, seed=5, words=WORDS)
    names = ["Background Noise", *WORDS]
    right = total = 0
    for name, clips in test.items():
        for clip in clips:
            pcm = wav_pcm(clip, name, allow_silence=True)[0]
            probabilities, label = session.run(["probabilities", "label"], {"pcm": pcm[None]})
            page_result = page.evaluate("async (x) => window.onnxtrain.tasks.audio().predict(new Float32Array(x))",
                                        pcm.tolist())
            # as tests/audio/test_audio_task.py holds the CPython task's predictions to the export
            np.testing.assert_allclose(probabilities[0], page_result["probabilities"], atol=1e-5)
            right += names[int(label[0])] == (names[0] if name == "noise" else name)
            total += 1
    print(f"held-out voices, the download in onnxruntime: {right}/{total}")
    assert right / total >= ACCURACY, (right, total)
    assert not site.off_origin(), site.off_origin()
    screenshot(page, "#audio", "audio")
    onnxruntime_web_runs(browser_plain, model, session, tmp_path)


ORT_PAGE = """<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>ort-web</title>
<script type="module">
import * as ort from "./ort.wasm.min.mjs";
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL("./", location.href).href;
window.runModel = async (clips) => {
  const session = await ort.InferenceSession.create("./model.onnx");
  const out = [];
  for (const clip of clips) {
    const result = await session.run({ pcm: new ort.Tensor("float32", Float32Array.from(clip), [1, clip.length]) });
    out.push([Array.from(result.probabilities.data), Number(result.label.data[0])]);
  }
  return out;
};
</script>"""


def onnxruntime_web_runs(browser, model: bytes, session, tmp_path):
    """The download in onnxruntime-web 1.19.2 (its wasm build, from npm; a page of its own) gives onnxruntime's
    probabilities and labels on held-out clips."""
    package = build.npm_package("onnxruntime-web", "1.19.2") / "dist"
    for name in ("ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"):
        build.link_or_copy(package / name, tmp_path / name)
    (tmp_path / "model.onnx").write_bytes(model)
    (tmp_path / "index.html").write_text(ORT_PAGE)
    server = build.make_server(tmp_path, 0, isolate=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.wait_for_function("() => window.runModel !== undefined")
        test = S.dataset(S.HELD_OUT_VOICES[:2], seed=9, words=WORDS)
        clips = [wav_pcm(c, name, allow_silence=True)[0] for name, cs in test.items() for c in cs]
        got = page.evaluate("(clips) => window.runModel(clips)", [c.tolist() for c in clips])
        page.close()
    finally:
        server.shutdown()
    for clip, (probabilities, label) in zip(clips, got):
        want, want_label = session.run(["probabilities", "label"], {"pcm": clip[None]})
        # both runtimes in float32, the front end's 512-term DFT sums in other orders: as the page's predictions
        np.testing.assert_allclose(probabilities, want[0], atol=1e-5)
        assert label == int(want_label[0])


def test_without_a_microphone_the_page_says_so_and_files_still_work(browser, site_url):
    site = open_page(browser, site_url)
    page = site.page
    load(page)
    page.click("#audio-mic")
    page.wait_for_function("() => !document.getElementById('audio-mic-message').hidden")
    assert page.text_content("#audio-mic-message").startswith("No microphone: there is no microphone"), \
        page.text_content("#audio-mic-message")
    assert page.evaluate("() => window.onnxtrain.flows.audio.microphone()") is False
    assert page.locator(".audio-record").first.is_disabled()
    clips = S.dataset(S.TRAIN_VOICES[:2], seed=0, words=("go",))
    add_files(page, 1, [(f"go{k}.wav", b, "audio/wav") for k, b in enumerate(clips["go"])])
    assert counts(page) == [0, 4]
    page.click("#audio-train")  # the background class has no clips: an error, and the flow goes on
    page.wait_for_function("() => !document.getElementById('audio-error').hidden", timeout=60_000)
    assert "Background Noise" in page.text_content("#audio-error"), page.text_content("#audio-error")
    add_files(page, 0, [(f"noise{k}.wav", b, "audio/wav") for k, b in enumerate(clips["noise"])])
    page.click("#audio-train")
    page.wait_for_function("() => document.getElementById('audio-metrics').textContent.startsWith('Done') "
                           "|| !document.getElementById('audio-error').hidden", timeout=300_000)
    assert page.is_hidden("#audio-error"), page.text_content("#audio-error")


def test_a_denied_microphone_is_said(browser, site_url):
    """A microphone the user does not allow (a fake device, no fake permission prompt: Chromium denies it)."""
    denying = browser.browser_type.launch(executable_path=str(build.CHROMIUM),
                                          args=CHROMIUM_ARGS + ["--use-fake-device-for-media-stream"])
    try:
        page = open_page(denying, site_url).page
        load(page)
        page.click("#audio-mic")
        page.wait_for_function("() => !document.getElementById('audio-mic-message').hidden")
        assert page.text_content("#audio-mic-message").startswith(
            "No microphone: the microphone is not allowed for this page"), page.text_content("#audio-mic-message")
        assert page.is_hidden("#audio-error") and page.locator(".audio-record").first.is_disabled()
    finally:
        denying.close()
