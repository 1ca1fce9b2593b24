"""Audio clips as the audio task takes them: WAV files read with the standard library's ``wave`` (8, 16, 24 or
32-bit integer PCM), float PCM arrays, channels mixed down, other rates resampled to 16 kHz (a windowed-sinc
interpolator in numpy), and the checks that name a bad clip: too short, silent, clipped (a notice)."""
from __future__ import annotations

import io

import numpy as np

from ..train.data import DataError
from .audio_frontend import RATE, WINDOW_SAMPLES

SILENT_PEAK = 10 ** (-60 / 20)      # a clip whose loudest sample is below -60 dBFS holds no sound
CLIPPED_SHARE = 0.001               # a notice when more than 0.1% of the samples are at full scale
FULL = 0.999
ZERO_CROSSINGS = 16                 # the resampling kernel's half width, in periods of the lower rate
MAX_SECONDS = 600
LOW_RATE, HIGH_RATE = 4000, 192000


def read_wav(data: bytes, what: str) -> tuple:
    """(float64 samples [frames, channels] in -1..1, sample rate) of WAV bytes; DataError naming ``what``."""
    import wave   # here, so that the task imports where a Python build leaves the module out
    data = bytes(data)
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        start = data[:12]
        raise DataError(f"{what} is not a WAV file (it starts with {start!r}); give a WAV file (RIFF/WAVE, "
                        f"integer PCM)")
    try:
        with wave.open(io.BytesIO(data)) as w:
            channels, width, rate, count = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            raw = w.readframes(count)
    except (wave.Error, EOFError, ValueError) as e:
        raise DataError(f"{what} is a WAV file that cannot be read ({e}); save it again as 16-bit PCM") from None
    if len(raw) != count * channels * width or not raw:
        got = len(raw) // max(1, channels * width)
        raise DataError(f"{what} is cut short: its header promises {count} frames, it holds {got}")
    if width == 1:
        x = (np.frombuffer(raw, np.uint8).astype(np.float64) - 128) / 128
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        x = ((b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)) << 8 >> 8) / 2 ** 23
    else:
        x = np.frombuffer(raw, {2: "<i2", 4: "<i4"}[width]).astype(np.float64) / 2 ** (8 * width - 1)
    return x.reshape(-1, channels), rate


def mono(samples: np.ndarray, what: str) -> np.ndarray:
    """float samples [n] or [n, channels] -> [n], the channels' mean; DataError for other shapes or values."""
    x = np.asarray(samples)
    if x.dtype.kind not in "fiu" or x.ndim not in (1, 2) or x.size == 0:
        raise DataError(f"{what} must be float PCM [samples] or [samples, channels]; it is {x.dtype} "
                        f"{list(x.shape)}")
    x = x.astype(np.float64)
    if not np.all(np.isfinite(x)):
        raise DataError(f"{what} holds NaN or infinite samples")
    return x.mean(axis=1) if x.ndim == 2 else x


def resample(x: np.ndarray, rate: int, to: int = RATE) -> np.ndarray:
    """``x`` at ``rate`` Hz resampled to ``to`` Hz: band-limited interpolation with a Hann-windowed sinc whose
    cutoff is the lower rate's Nyquist frequency."""
    if rate == to:
        return x
    ratio = to / rate
    cutoff = min(1.0, ratio)                     # of the input's Nyquist frequency
    half = int(np.ceil(ZERO_CROSSINGS / cutoff))  # taps each side, in input samples
    n_out = int(np.floor(len(x) * ratio))
    padded = np.concatenate([np.zeros(half), x, np.zeros(half + 1)])
    out = np.empty(n_out)
    offsets = np.arange(-half, half + 1)
    for start in range(0, n_out, 4096):
        t = np.arange(start, min(n_out, start + 4096)) / ratio           # output times in input samples
        base = np.floor(t).astype(np.int64)
        taps = base[:, None] + offsets[None, :]
        d = t[:, None] - taps
        kernel = cutoff * np.sinc(cutoff * d) * (0.5 + 0.5 * np.cos(np.pi * np.clip(d / (half + 1), -1, 1)))
        out[start:start + len(t)] = np.sum(kernel * padded[taps + half], axis=1)
    return out


def clip_pcm(samples, rate, what: str, allow_silence: bool = False) -> tuple:
    """(16 kHz mono float32 PCM, notices) of a clip's samples at ``rate``; DataError naming ``what`` when it is
    shorter than one backbone window or silent (unless ``allow_silence``)."""
    try:
        rate = int(rate)
    except (TypeError, ValueError):
        raise DataError(f"the sample rate of {what} is {rate!r}; it must be a whole number of Hz") from None
    if not LOW_RATE <= rate <= HIGH_RATE:
        raise DataError(f"{what} has a sample rate of {rate} Hz; it must be from {LOW_RATE} to {HIGH_RATE} Hz")
    x = np.asarray(samples)
    notices = []
    if x.ndim == 2 and x.shape[1] > 1:
        notices.append(f"{what} has {x.shape[1]} channels; they were mixed down to one")
    x = mono(x, what)
    if len(x) > MAX_SECONDS * rate:
        raise DataError(f"{what} is {len(x) / rate:.0f} s long; at most {MAX_SECONDS} s")
    clipped = float(np.mean(np.abs(x) >= FULL))
    if clipped > CLIPPED_SHARE:
        notices.append(f"{what} is clipped ({100 * clipped:.1f}% of its samples at full scale); record it "
                       f"quieter")
    if rate != RATE:
        notices.append(f"{what} was resampled from {rate} Hz to {RATE} Hz")
        x = resample(x, rate)
    if len(x) < WINDOW_SAMPLES:
        raise DataError(f"{what} is {len(x) / RATE:.3f} s long; a clip must be at least {WINDOW_SAMPLES / RATE:.3f} "
                        f"s ({WINDOW_SAMPLES} samples at {RATE} Hz), the backbone's window")
    peak = float(np.max(np.abs(x)))
    if peak < SILENT_PEAK and not allow_silence:
        level = "digital silence" if peak == 0 else f"its loudest sample is {20 * np.log10(peak):.0f} dBFS"
        raise DataError(f"{what} is silent ({level}); record it again with the sound in it")
    return x.astype(np.float32), notices


def wav_pcm(data: bytes, what: str, allow_silence: bool = False) -> tuple:
    """``clip_pcm`` of a WAV file's bytes."""
    samples, rate = read_wav(data, what)
    return clip_pcm(samples, rate, what, allow_silence)
