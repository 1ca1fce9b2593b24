"""Test clips of spoken words: Debian's espeak-ng says each word in several voices and speeds (its 22,050 Hz WAV),
centred in CLIP_SECONDS with quiet noise around it (-60 dBFS, as a room is never digitally silent), written
back as 16-bit WAV bytes at espeak-ng's rate, so that the task's WAV reading and resampling take part; and
background-noise clips (pink-ish noise at a few levels)."""
from __future__ import annotations

import functools
import io
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np
import pytest

ESPEAK = "espeak-ng"
WORDS = ("yes", "no", "stop", "go", "left", "right")
TRAIN_VOICES = ("en-us", "en-gb", "en-us+f2", "en-gb+m3")
HELD_OUT_VOICES = ("en-gb-scotland", "en-029+f4", "en-us+m7", "en-gb-x-rp+f1")
SPEEDS = (140, 190)           # words per minute: 2 speeds x 4 voices = 8 clips a class
CLIP_SECONDS = 1.25
NOISE = 1e-3


def espeak() -> str:
    """espeak-ng's path, or skip: build.py installs Debian's espeak-ng for the tests."""
    path = shutil.which(ESPEAK)
    if path is None:
        pytest.skip("espeak-ng is not installed (python3 build.py test installs Debian's espeak-ng)")
    return path


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1 if samples.ndim == 1 else samples.shape[1])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(np.round(samples * 32767), -32768, 32767).astype("<i2").tobytes())
    return buffer.getvalue()


@functools.lru_cache(maxsize=None)
def spoken(word: str, voice: str, speed: int) -> tuple:
    """(float samples, rate) of espeak-ng saying ``word``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "word.wav"
        subprocess.run([espeak(), "-v", voice, "-s", str(speed), "-w", str(out), word], check=True,
                       capture_output=True)
        with wave.open(str(out)) as w:
            rate = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768
    return x, rate


def word_clip(word: str, voice: str, speed: int, seed: int = 0) -> bytes:
    """WAV bytes: the word centred in CLIP_SECONDS with NOISE-level noise."""
    x, rate = spoken(word, voice, speed)
    nonzero = np.flatnonzero(np.abs(x) > 1e-3)
    x = x[nonzero[0]:nonzero[-1] + 1]
    n = int(CLIP_SECONDS * rate)
    clip = np.random.default_rng(seed).standard_normal(n) * NOISE
    start = max(0, (n - len(x)) // 2)
    clip[start:start + min(len(x), n)] += x[:n]
    return wav_bytes(clip, rate)


def noise_clip(seed: int, rate: int = 16000) -> bytes:
    """WAV bytes: CLIP_SECONDS of low-passed noise at a level between -50 and -30 dBFS."""
    rng = np.random.default_rng(1000 + seed)
    white = rng.standard_normal(int(CLIP_SECONDS * rate))
    pinkish = np.convolve(white, np.ones(8) / 8, mode="same")
    level = 10 ** (rng.uniform(-50, -30) / 20)
    return wav_bytes(pinkish / pinkish.std() * level, rate)


def dataset(voices, seed: int = 0, words=WORDS) -> dict:
    """{class name: [WAV bytes]}: each word in ``voices`` x SPEEDS, and as many noise clips ("noise")."""
    out = {w: [word_clip(w, v, s, seed + k) for k, (v, s) in enumerate((v, s) for v in voices for s in SPEEDS)]
           for w in words}
    out["noise"] = [noise_clip(seed * 100 + k) for k in range(len(voices) * len(SPEEDS))]
    return out
