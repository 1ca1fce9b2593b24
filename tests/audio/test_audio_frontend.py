"""The audio front end (tasks.audio_frontend) against openWakeWord's melspectrogram.onnx in onnxruntime, its
pipeline (the x / 10 + 2 scaling and the 8-frame windows of its utils.AudioFeatures) and its ONNX graph in
onnxruntime and onnxtrain; onnxtrain's runtime against onnxruntime on both models (the recipe's checks)."""
import numpy as np
import onnxruntime as ort
import pytest

import speech_backbone as B
import spoken_words as S
from onnxtrain import ir
from onnxtrain.runtime import Session
from onnxtrain.tasks import audio_frontend as F
from onnxtrain.tasks.audio_input import read_wav

recipe = B.recipe


def ort_run(data: bytes, feed: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: feed})[0]


def speech_int16() -> dict:
    """espeak-ng words as openWakeWord takes audio: int16 samples (at espeak's rate: the mel does not care)."""
    out = {}
    for word, voice in (("yes", "en-us"), ("stop", "en-gb+m3"), ("right", "en-029+f4")):
        samples, _ = read_wav(S.word_clip(word, voice, 160), word)
        out[f"{word}/{voice}"] = np.round(samples[:, 0] * 32768).astype(np.int16)
    return out


def test_kernels_and_filterbank_are_melspectrograms_weights():
    from onnx import load_from_string, numpy_helper
    weights = {t.name: numpy_helper.to_array(t) for t in load_from_string(B.melspectrogram()).graph.initializer}
    real, imag = F.dft_kernels()
    assert np.abs(weights["0.stft.conv_real.weight"][:, 0] - real).max() <= recipe.KERNEL_ATOL
    assert np.abs(weights["0.stft.conv_imag.weight"][:, 0] - imag).max() <= recipe.KERNEL_ATOL
    assert np.abs(weights["1.melW"] - F.mel_filterbank()).max() <= recipe.FILTERBANK_ATOL


@pytest.mark.parametrize("name", ["speech", "check_clips"])
def test_numpy_log_mel_is_melspectrogram_onnx_in_onnxruntime(name):
    S.espeak() if name == "speech" else None
    clips = speech_int16() if name == "speech" else recipe.check_clips()
    for clip_name, clip in clips.items():
        x = np.asarray(clip, np.float32)
        want = ort_run(B.melspectrogram(), x[None])[0, 0]
        got = F.log_mel_db(x)
        assert got.shape == want.shape == (F.frame_count(len(x)), F.N_MELS)
        bound = recipe.mel_tolerance_db(want)
        assert np.all(np.abs(got - want) <= bound), clip_name


def test_features_and_windows_follow_openwakewords_pipeline():
    """openWakeWord's AudioFeatures._get_embeddings: int16 PCM cast to float into melspectrogram.onnx, squeezed,
    x / 10 + 2, windows of 76 frames at every 8th frame (short ones dropped), into embedding_model.onnx."""
    S.espeak()
    for name, pcm16 in speech_int16().items():
        spec = np.squeeze(ort_run(B.melspectrogram(), pcm16.astype(np.float32)[None])) / 10 + 2
        theirs = [spec[i:i + 76] for i in range(0, spec.shape[0], 8) if spec[i:i + 76].shape[0] == 76]
        want = ort_run(B.embedding(), np.array(theirs, np.float32)[..., None])
        ours = F.windows(F.features(pcm16.astype(np.float64) / 32768))
        assert len(ours) == len(theirs) == F.window_count(len(pcm16))
        assert np.abs(ours - np.array(theirs)).max() <= recipe.mel_tolerance_db(spec * 10).max() / 10, name
        got = ort_run(B.embedding(), ours[..., None])
        assert np.abs(got - want).max() <= recipe.RUNTIME_RTOL * np.abs(want).max(), name


def test_frontend_graph_gives_each_clips_windows_in_onnxruntime_and_onnxtrain():
    rng = np.random.default_rng(0)
    t = np.arange(16000) / 16000
    pcm = np.stack([rng.uniform(-1, 1, 16000) * 0.09, 0.25 * np.sin(2 * np.pi * 440 * t),
                    rng.standard_normal(16000) * 1e-4]).astype(np.float32)   # floors 80 dB apart: per clip
    want = np.concatenate([F.windows(F.features(p)) for p in pcm])[..., None]
    model = F.frontend_model()
    for got, clips in (ort_run_all(ir.to_bytes(model), pcm), Session(model).run([pcm])):
        assert clips.tolist() == [3] and got.shape == want.shape == (9, 76, 32, 1)
        bound = max(recipe.mel_tolerance_db(F.log_mel_db(p * F.FULL_SCALE)).max() for p in pcm) / 10
        assert np.abs(got - want).max() <= bound


def ort_run_all(data: bytes, pcm: np.ndarray) -> list:
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"pcm": pcm})


def test_onnxtrain_runs_both_models_as_onnxruntime_and_the_recipe_check_catches_a_difference(monkeypatch):
    numbers = recipe.check(B.files())
    assert set(numbers["mel"]) == set(recipe.check_clips())
    assert set(numbers["embedding"]) == {"chirp_windows", "random"}
    original = recipe._onnxtrain
    for model, name in (("embedding_model.onnx", "embedding_model.onnx, input chirp_windows"),
                        ("melspectrogram.onnx", "runtime on melspectrogram.onnx, clip noise_loud")):
        data = B.files()[model]
        # a runtime 1e-4 off (ten times RUNTIME_RTOL; a dB value 1e-4 off is far over float32's rounding there)
        monkeypatch.setattr(recipe, "_onnxtrain", lambda d, feed, data=data: original(d, feed) * (
            np.float32(1 + 1e-4) if d is data else 1))
        with pytest.raises(recipe.CheckFailed, match=name):
            recipe.check(B.files())


def test_model_files_are_sha256_checked(tmp_path):
    import zipfile
    wheel = tmp_path / "openwakeword-0.5.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(recipe.MODELS + "melspectrogram.onnx", B.melspectrogram())
        z.writestr(recipe.MODELS + "embedding_model.onnx", B.embedding()[:-1] + b"\0")
    with pytest.raises(recipe.CheckFailed, match="embedding_model.onnx in .* has SHA-256"):
        recipe.model_files(wheel)


def test_recipe_builds_the_two_files_with_both_license_sentences(tmp_path):
    (tmp_path / "dest").mkdir()
    part = recipe.build(tmp_path / "dest", tmp_path / "cache")
    assert part["files"] == ["melspectrogram.onnx", "embedding_model.onnx", "checks.json"]
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == sorted(part["files"])
    for name, data in B.files().items():
        assert (tmp_path / "dest" / name).read_bytes() == data
    assert recipe.README_BACKBONE in part["license"] and recipe.README_LICENSE in part["license"]
    readme = recipe.readme_text(recipe.wheel())
    assert recipe.README_BACKBONE in readme and recipe.README_LICENSE in readme
    assert part["packages"] == {"openwakeword": "0.5.1"} and part["checks"]["kernel_max_abs_diff"] <= 1e-7
