"""The audio backbone's front end: openWakeWord's log-mel spectrogram (its melspectrogram.onnx) in numpy and as
an ONNX graph, and the backbone's 76-frame windows.

16 kHz float PCM in [-1, 1] is scaled to int16 scale (x 32768, as openWakeWord feeds int16 samples cast to
float); 512-sample frames every 160 samples (no padding) with a periodic Hann window of 400 samples placed at
56..455; the power spectrum (257 bins) times a Slaney-normalised mel filterbank (32 bands, 60 to 3800 Hz);
10 log10(max(p, 1e-10)), floored at the clip's largest value less 80 dB (melspectrogram.onnx takes that largest
value over its whole input: here it is taken per clip, so that clips in a batch do not change each other); then
openWakeWord's ``x / 10 + 2`` (its ``melspec_transform``, not inside melspectrogram.onnx)."""
from __future__ import annotations

import functools

import numpy as np

from ..ir.builder import GraphBuilder
from ..ir.dtypes import DataType
from ..ir.model import Graph, Model, TensorType, ValueInfo

RATE = 16000
FULL_SCALE = 32768.0            # float PCM -> int16 scale
N_FFT, HOP, WIN = 512, 160, 400
BINS = N_FFT // 2 + 1           # 257
N_MELS, FMIN, FMAX = 32, 60.0, 3800.0
POWER_FLOOR, TOP_DB = 1e-10, 80.0
WINDOW_FRAMES = 76              # the backbone's input: 76 frames, 775 ms
WINDOW_SAMPLES = N_FFT + HOP * (WINDOW_FRAMES - 1)   # 12,512 samples make one window
HOP_FRAMES = 8                  # windows every 8 frames (80 ms), as openWakeWord slides the backbone
OPSET = 17


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear (3 mels per 200 Hz) below 1 kHz, logarithmic above."""
    f = np.asarray(f, np.float64)
    step = np.log(6.4) / 27
    return np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-10) / 1000) / step, f * 3 / 200)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, np.float64)
    step = np.log(6.4) / 27
    return np.where(m >= 15, 1000 * np.exp(step * (m - 15)), m * 200 / 3)


@functools.lru_cache(maxsize=1)
def mel_filterbank() -> np.ndarray:
    """[257, 32] float32: triangles between mel-spaced edges, each scaled to unit area (Slaney's norm)."""
    bins = np.linspace(0, RATE / 2, BINS)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(FMIN), _hz_to_mel(FMAX), N_MELS + 2))
    width = np.diff(edges)
    rise = (bins[None, :] - edges[:-2, None]) / width[:-1, None]
    fall = (edges[2:, None] - bins[None, :]) / width[1:, None]
    weights = np.maximum(0, np.minimum(rise, fall)) * (2 / (edges[2:] - edges[:-2]))[:, None]
    return weights.T.astype(np.float32)


@functools.lru_cache(maxsize=1)
def dft_kernels() -> tuple:
    """(real, imaginary) [257, 512] float32: the windowed DFT rows of the 512-sample frames."""
    window = np.zeros(N_FFT)
    start = (N_FFT - WIN) // 2   # 56: the window centred in the frame
    window[start:start + WIN] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(WIN) / WIN)
    angle = 2 * np.pi * np.outer(np.arange(BINS), np.arange(N_FFT)) / N_FFT
    return (window * np.cos(angle)).astype(np.float32), (-window * np.sin(angle)).astype(np.float32)


def frame_count(samples: int) -> int:
    return max(0, (samples - N_FFT) // HOP + 1)


def window_count(samples: int) -> int:
    frames = frame_count(samples)
    return 0 if frames < WINDOW_FRAMES else (frames - WINDOW_FRAMES) // HOP_FRAMES + 1


def log_mel_db(samples: np.ndarray) -> np.ndarray:
    """melspectrogram.onnx's output for one clip in int16 scale (float [n]): [frames, 32] float32 dB."""
    x = np.asarray(samples, np.float64)
    frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP]
    real, imag = dft_kernels()
    power = (frames @ real.T.astype(np.float64)) ** 2 + (frames @ imag.T.astype(np.float64)) ** 2
    db = 10 * np.log10(np.maximum(power @ mel_filterbank().astype(np.float64), POWER_FLOOR))
    return np.maximum(db, db.max() - TOP_DB).astype(np.float32)


def features(pcm: np.ndarray) -> np.ndarray:
    """The backbone's log-mel features of one clip of 16 kHz float PCM [n]: [frames, 32] float32."""
    return (log_mel_db(np.asarray(pcm, np.float64) * FULL_SCALE) / 10 + 2).astype(np.float32)


def windows(feats: np.ndarray) -> np.ndarray:
    """The 76-frame windows of a clip's features [frames, 32], every HOP_FRAMES frames: [n, 76, 32]."""
    n = (len(feats) - WINDOW_FRAMES) // HOP_FRAMES + 1 if len(feats) >= WINDOW_FRAMES else 0
    return np.stack([feats[k * HOP_FRAMES:k * HOP_FRAMES + WINDOW_FRAMES] for k in range(n)]) if n else \
        np.zeros((0, WINDOW_FRAMES, N_MELS), np.float32)


def frontend_model(output: str = "windows") -> Model:
    """``pcm`` float32 [batch, samples] (16 kHz, -1..1, samples >= WINDOW_SAMPLES) -> ``output`` float32
    [batch * n, 76, 32, 1], the n windows of each clip in order (the backbone's input), as ``features`` and
    ``windows`` compute them; also ``clips`` int64 [1] (the batch size), for putting the windows back."""
    g = Graph(name="audio_frontend", inputs=[ValueInfo("pcm", TensorType(DataType.FLOAT, ["batch", "samples"]))],
              outputs=[ValueInfo(output, TensorType(DataType.FLOAT, ["windows", WINDOW_FRAMES, N_MELS, 1])),
                       ValueInfo("clips", TensorType(DataType.INT64, [1]))])
    b = GraphBuilder(g)
    b.scope = "frontend"
    real, imag = dft_kernels()
    x = b.op("Unsqueeze", [b.op("Mul", ["pcm", b.const(np.float32(FULL_SCALE), "full_scale")]), b.ints([1])])
    spectra = [b.op("Conv", [x, b.const(k[:, None, :], name)], kernel_shape=[N_FFT], strides=[HOP],
                    pads=[0, 0]) for k, name in ((real, "dft_real"), (imag, "dft_imag"))]
    power = b.op("Add", [b.op("Mul", [spectra[0], spectra[0]]), b.op("Mul", [spectra[1], spectra[1]])])
    mel = b.op("MatMul", [b.op("Transpose", [power], perm=[0, 2, 1]), b.const(mel_filterbank(), "mel_filterbank")])
    log = b.op("Log", [b.op("Max", [mel, b.const(np.float32(POWER_FLOOR), "power_floor")])])
    db = b.op("Mul", [log, b.const(np.float32(10 / np.log(10)), "db_per_neper")])
    floor = b.op("Sub", [b.op("ReduceMax", [db], axes=[1, 2], keepdims=1), b.const(np.float32(TOP_DB), "top_db")])
    feats = b.op("Add", [b.op("Div", [b.op("Max", [db, floor]), b.const(np.float32(10), "ten")]),
                         b.const(np.float32(2), "two")])
    shape = b.op("Shape", [feats])
    frames = b.op("Gather", [shape, b.ints([1], "frame_axis")])
    n = b.op("Add", [b.op("Div", [b.op("Sub", [frames, b.ints([WINDOW_FRAMES], "window_frames")]),
                                  b.ints([HOP_FRAMES], "hop_frames")]), b.ints([1], "one")])
    last = b.op("Mul", [n, b.ints([HOP_FRAMES], "hop")])
    starts = b.op("Range", [b.const(np.int64(0), "zero"), b.op("Squeeze", [last, b.ints([0])]),
                            b.const(np.int64(HOP_FRAMES), "step")])
    index = b.op("Add", [b.op("Unsqueeze", [starts, b.ints([1])]),
                         b.const(np.arange(WINDOW_FRAMES, dtype=np.int64)[None, :], "offsets")])
    picked = b.op("Gather", [feats, index], axis=1)                     # [batch, n, 76, 32]
    b.op("Reshape", [picked, b.ints([-1, WINDOW_FRAMES, N_MELS, 1], "window_shape")], outputs=[output])
    b.op("Gather", [shape, b.ints([0], "batch_axis")], outputs=["clips"])
    return Model(graph=g, ir_version=8, opset_imports={"": OPSET}, producer_name="onnxtrain")
