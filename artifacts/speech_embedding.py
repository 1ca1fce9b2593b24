"""The audio flow's backbone (site path artifacts/speech_embedding/): Google's speech_embedding as openWakeWord
re-implemented it in ONNX, the two files melspectrogram.onnx (the log-mel front end, fixed weights) and
embedding_model.onnx (76 log-mel frames -> a 96-d embedding), taken byte for byte from the openwakeword 0.5.1
wheel (downloaded into the build's cache) and checked by SHA-256.  Only these two files are shipped: the wheel's
wake-word heads, its .tflite copies and silero_vad.onnx are not (see LICENSE).

One cached stage (key: the recipe, the package's version, onnx/onnxruntime/numpy and onnxtrain's ir, ops, runtime
and tasks sources) checks that:
- onnxtrain's runtime gives onnxruntime's outputs on both models (check clips and random windows), within
  mel_tolerance_db on the log-mel and RUNTIME_RTOL of the largest magnitude on the embedding;
- onnxtrain's numpy front end (tasks.audio_frontend.log_mel_db) gives melspectrogram.onnx's dB values in
  onnxruntime within mel_tolerance_db (float32's rounding), one clip at a time, and its DFT kernels and mel
  filterbank are the model's weights (KERNEL_ATOL, FILTERBANK_ATOL).
A failed check raises CheckFailed."""
from __future__ import annotations

import hashlib
import json
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np

from .manifest import version
from .stages import CheckFailed, cached, digest, onnxtrain_sources

HERE = Path(__file__).resolve()
NAME = "speech_embedding"
PACKAGE, PACKAGE_VERSION = "openwakeword", "0.5.1"
MODELS = "openwakeword/resources/models/"
SHA256 = {"melspectrogram.onnx": "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
          "embedding_model.onnx": "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"}
FILES = [*SHA256, "checks.json"]
CHECK_PACKAGES = ["onnx", "onnxruntime-training-cpu", "numpy"]
ONNXTRAIN_PARTS = ["ir", "ops", "runtime", "tasks"]
# Both runtimes compute the embedding in float32 in other summation orders: measured 9e-7 of its largest
# magnitude.
RUNTIME_RTOL = 1e-5
# The log-mel values in dB carry float32's rounding of onnxruntime's 512-term DFT sums, about one unit roundoff
# (UNIT_ROUNDOFF) of the clip's peak amplitude: a value d dB under the clip's peak has an amplitude 10^(-d/20) of
# it, so its relative error, and 8.69 (20 / ln 10, dB per neper) times that in dB, grows as 10^(d/20); the floor
# (80 dB under) allows 5.2e-3 dB.  Plus four float32 ulps of the clip's largest dB magnitude, for the rounding of
# the logarithm and the scaling to dB (Log, Mul, Div) at the clip's scale.  Measured: 1.0e-3 dB at 77 dB under
# a chirp's peak (bound 3.9e-3), under 2e-5 dB elsewhere (see checks.json).
UNIT_ROUNDOFF = 2.0 ** -24


def mel_tolerance_db(reference: np.ndarray) -> np.ndarray:
    """The largest difference allowed to each value of ``reference`` (a clip's log-mel dB) by float32 rounding."""
    below = reference.max() - reference
    return 4 * np.finfo(np.float32).eps * np.abs(reference).max() + 20 / np.log(10) * UNIT_ROUNDOFF * 10 ** (below / 20)


KERNEL_ATOL = 1e-7        # float32 rounding of cos/sin times the window (values up to 1)
FILTERBANK_ATOL = 1e-8    # float32 rounding of weights up to 0.015
SEED = 0
# openWakeWord's README (the wheel's METADATA), quoted exactly: its backbone section, and its License section.
README_BACKBONE = ("This [model](https://arxiv.org/abs/2002.01322) is provided by "
                   "[Google](https://tfhub.dev/google/speech_embedding/1) as a TFHub module under an "
                   "[Apache-2.0](https://opensource.org/licenses/Apache-2.0) license.")
README_LICENSE = ("All of the code in this repository is licensed under the **Apache 2.0** license. All of the "
                  "included pre-trained models are licensed under the [Creative Commons "
                  "Attribution-NonCommercial-ShareAlike 4.0 International]"
                  "(https://creativecommons.org/licenses/by-nc-sa/4.0/) license due to the inclusion of datasets "
                  "with unknown or restrictive licensing as part of the training data.")
LICENSE = ("Apache-2.0 per openWakeWord's README for the feature backbone (\"" + README_BACKBONE + "\"); the same "
           "README also says: \"" + README_LICENSE + "\" Only melspectrogram.onnx and embedding_model.onnx (the "
           "backbone) are shipped, none of openWakeWord's trained wake-word models. See docs/audio.md.")


def wheel() -> Path:
    from buildsys.downloads import pypi_file
    return pypi_file(PACKAGE, PACKAGE_VERSION)


def model_files(wheel_path) -> dict:
    """{file name: bytes} of the two models in the wheel, each checked against SHA256."""
    out = {}
    with zipfile.ZipFile(wheel_path) as z:
        names = set(z.namelist())
        for name, want in SHA256.items():
            if MODELS + name not in names:
                raise CheckFailed(f"the {PACKAGE} {PACKAGE_VERSION} wheel {wheel_path} has no {MODELS + name}")
            data = z.read(MODELS + name)
            got = hashlib.sha256(data).hexdigest()
            if got != want:
                raise CheckFailed(f"{MODELS + name} in {wheel_path} has SHA-256 {got}, not {want}")
            out[name] = data
    return out


def readme_text(wheel_path) -> str:
    """The wheel's METADATA (its README)."""
    with zipfile.ZipFile(wheel_path) as z:
        return z.read(f"{PACKAGE}-{PACKAGE_VERSION}.dist-info/METADATA").decode()


def check_key() -> str:
    return digest([HERE.read_bytes(), (HERE.parent / "stages.py").read_bytes(), f"{PACKAGE}=={PACKAGE_VERSION}",
                   *(f"{p}=={version(p)}" for p in CHECK_PACKAGES), *onnxtrain_sources(ONNXTRAIN_PARTS)])


def check_clips() -> dict:
    """int16-scale float32 clips: noise at three levels, a chirp, silence and one at full scale."""
    rng = np.random.default_rng(SEED)
    t = np.arange(24000) / 16000
    return {"noise_loud": rng.uniform(-1, 1, 16000) * 30000, "noise": rng.uniform(-1, 1, 16000) * 3000,
            "noise_quiet": rng.standard_normal(16000) * 2, "chirp": 8000 * np.sin(2 * np.pi * (100 + 1300 * t) * t),
            "silence": np.zeros(13000), "full_scale": np.sign(rng.standard_normal(16000)) * 32767}


def _ort(data: bytes, feed: np.ndarray) -> np.ndarray:
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: feed})[0]


def _onnxtrain(data: bytes, feed: np.ndarray) -> np.ndarray:
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    return Session(ir.load(data)).run([feed])[0]


def check(files: dict) -> dict:
    """The manifest entry's numbers; CheckFailed when a check fails (see the module's doc)."""
    from onnxtrain.tasks import audio_frontend as F
    import onnx
    from onnx import numpy_helper
    mel, embedding = files["melspectrogram.onnx"], files["embedding_model.onnx"]
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load_from_string(mel).graph.initializer}
    real, imag = F.dft_kernels()
    kernel_diff = max(float(np.abs(weights["0.stft.conv_real.weight"][:, 0] - real).max()),
                      float(np.abs(weights["0.stft.conv_imag.weight"][:, 0] - imag).max()))
    bank_diff = float(np.abs(weights["1.melW"] - F.mel_filterbank()).max())
    if kernel_diff > KERNEL_ATOL or bank_diff > FILTERBANK_ATOL:
        raise CheckFailed(f"the numpy front end's DFT kernels differ from melspectrogram.onnx's by {kernel_diff:.3g} "
                          f"(at most {KERNEL_ATOL:g}), its mel filterbank by {bank_diff:.3g} (at most "
                          f"{FILTERBANK_ATOL:g})")
    numbers = {"mel": {}, "embedding": {}}
    for name, clip in check_clips().items():
        x = clip.astype(np.float32)[None]
        want = _ort(mel, x)
        got = _onnxtrain(mel, x)
        numpy_db = F.log_mel_db(x[0])
        bound = mel_tolerance_db(want[0, 0])
        runtime, port = np.abs(got[0, 0] - want[0, 0]), np.abs(numpy_db - want[0, 0])
        for who, diff in (("onnxtrain's runtime on melspectrogram.onnx", runtime), ("the numpy front end", port)):
            worst = np.unravel_index(np.argmax(diff - bound), diff.shape)
            if diff[worst] > bound[worst]:
                raise CheckFailed(f"{who}, clip {name}: frame {worst[0]} band {worst[1]} differs from "
                                  f"melspectrogram.onnx in onnxruntime by {diff[worst]:.3g} dB, more than "
                                  f"float32's rounding allows there ({bound[worst]:.3g} dB)")
        runtime, port = float(runtime.max()), float(port.max())
        numbers["mel"][name] = {"frames": int(want.shape[2]), "onnxtrain_vs_onnxruntime": runtime,
                                "numpy_vs_onnxruntime_db": port}
    rng = np.random.default_rng(SEED)
    feeds = {"chirp_windows": F.windows(F.log_mel_db(check_clips()["chirp"]) / 10 + 2)[..., None],
             "random": (rng.standard_normal((4, F.WINDOW_FRAMES, F.N_MELS, 1)) + 2).astype(np.float32)}
    for name, x in feeds.items():
        want, got = _ort(embedding, x.astype(np.float32)), _onnxtrain(embedding, x.astype(np.float32))
        scale, diff = float(np.abs(want).max()), float(np.abs(got - want).max())
        if want.shape[1:] != (1, 1, 96) or diff > RUNTIME_RTOL * scale:
            raise CheckFailed(f"onnxtrain's runtime on embedding_model.onnx, input {name}: output {list(want.shape)} "
                              f"differs from onnxruntime by {diff:.3g}, more than {RUNTIME_RTOL:g} x {scale:.3g}")
        numbers["embedding"][name] = {"windows": int(len(x)), "onnxtrain_vs_onnxruntime": diff,
                                      "output_max_abs": scale}
    numbers.update(kernel_max_abs_diff=kernel_diff, filterbank_max_abs_diff=bank_diff,
                   unit_roundoff=UNIT_ROUNDOFF, runtime_rtol=RUNTIME_RTOL)
    return numbers


def check_stage(source: Path, folder: Path) -> None:
    start = time.perf_counter()
    files = model_files(source)
    readme = readme_text(source)
    for quote in (README_BACKBONE, README_LICENSE):
        if quote not in readme:
            raise CheckFailed(f"the {PACKAGE} {PACKAGE_VERSION} README no longer says {quote[:60]!r}...: read its "
                              f"license again")
    numbers = check(files)
    numbers["check_seconds"] = round(time.perf_counter() - start, 2)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "checks.json").write_text(json.dumps(numbers, indent=1) + "\n")


def build(dest: Path, cache: Path) -> dict:
    """melspectrogram.onnx, embedding_model.onnx and checks.json in ``dest``; the manifest entry's part."""
    source = wheel()
    checked = cached(cache / NAME / f"checked-{check_key()}", lambda tmp: check_stage(source, tmp))
    for name in FILES:
        shutil.copy2(checked / name, dest / name)
    return {"kind": "pretrained audio backbone",
            "description": "Google's speech_embedding as openWakeWord's ONNX models: melspectrogram.onnx (input "
                           "'input' float32 [1, samples], 16 kHz mono in int16 scale; output [1, 1, frames, 32] "
                           "log-mel dB, frames = (samples - 512) // 160 + 1, floored 80 dB under the input's "
                           "maximum) and embedding_model.onnx (input 'input_1' float32 [N, 76, 32, 1], the log-mel "
                           "as x / 10 + 2; output 'conv2d_19' [N, 1, 1, 96])",
            "made_by": f"taken byte for byte from the {PACKAGE} {PACKAGE_VERSION} wheel, SHA-256 checked, in "
                       f"artifacts/{HERE.name}",
            "packages": {PACKAGE: PACKAGE_VERSION}, "license": LICENSE,
            "checks": json.loads((checked / "checks.json").read_text()), "files": FILES}
