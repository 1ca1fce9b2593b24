"""Kernels: DFT, STFT, the window functions and MelWeightMatrix.

Complex tensors are real tensors with a last axis of 2 (real, imaginary); a real input may have a last
axis of 1.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from .registry import kernel


def _complex(op: str, x):
    if x.shape[-1] == 1:
        return x[..., 0].astype(np.complex128)
    if x.shape[-1] == 2:
        return x[..., 0] + 1j * x[..., 1].astype(np.float64)
    raise ValueError(f"{op}: the last axis must hold 1 (real) or 2 (complex) values, got {x.shape[-1]}")


def _split(z, dtype):
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


def _dft(input, dft_length, axis: int, inverse: int, onesided: int):
    signal_rank = input.ndim - 1
    if not -signal_rank <= axis < signal_rank:
        raise ValueError(f"DFT: axis {axis} is out of range for a signal of rank {signal_rank}")
    axis = axis + signal_rank if axis < 0 else axis
    if onesided and inverse:
        raise ValueError("DFT: onesided inverse transforms are not supported")
    z = _complex("DFT", input)
    n = z.shape[axis] if dft_length is None else int(np.asarray(dft_length).reshape(()))
    out = np.fft.ifft(z, n=n, axis=axis) if inverse else np.fft.fft(z, n=n, axis=axis)
    if onesided:
        out = np.take(out, np.arange(n // 2 + 1), axis=axis)
    return _split(out, input.dtype)


@kernel("DFT", since=17)
def DFT_17(input, dft_length=None, *, axis=1, inverse=0, onesided=0):
    return _dft(input, dft_length, axis, inverse, onesided)


@kernel("DFT", since=20)
def DFT_20(input, dft_length=None, axis=None, *, inverse=0, onesided=0):
    a = -2 if axis is None else int(np.asarray(axis).reshape(()))
    rank = input.ndim
    if not (-rank <= a <= -2 or 0 <= a <= rank - 2):
        raise ValueError(f"DFT: axis {a} is out of range for an input of rank {rank}")
    return _dft(input, dft_length, a + rank if a < 0 else a, inverse, onesided)


@kernel("STFT", since=17)
def STFT(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    step = int(np.asarray(frame_step).reshape(()))
    if frame_length is not None:
        length = int(np.asarray(frame_length).reshape(()))
    elif window is not None:
        length = window.shape[0]
    else:
        raise ValueError("STFT: give a window or a frame_length")
    if window is not None and window.shape[0] != length:
        raise ValueError(f"STFT: window of length {window.shape[0]} for frames of length {length}")
    z = _complex("STFT", signal)                                 # [batch, signal_length]
    if step <= 0 or length <= 0 or length > z.shape[1]:
        raise ValueError(f"STFT: frame_step {step} and frame_length {length} do not fit a signal of length "
                         f"{z.shape[1]}")
    frames = 1 + (z.shape[1] - length) // step
    starts = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    framed = z[:, starts]                                        # [batch, frames, length]
    if window is not None:
        framed = framed * window.astype(np.float64)
    out = np.fft.fft(framed, axis=-1)
    if onesided:
        out = out[..., :length // 2 + 1]
    return _split(out, signal.dtype)


def _window(op: str, size, output_datatype: int, periodic: int, terms):
    n = int(np.asarray(size).reshape(()))
    if n < 0:
        raise ValueError(f"{op}: size {n} is negative")
    denominator = n if periodic else n - 1
    k = np.arange(n, dtype=np.float64)
    w = np.zeros(n)
    for i, c in enumerate(terms):
        w += c * np.cos(2 * np.pi * i * k / denominator) if i else c
    return w.astype(dtypes.to_numpy(output_datatype))


@kernel("HannWindow", since=17)
def HannWindow(size, *, output_datatype=1, periodic=1):
    return _window("HannWindow", size, output_datatype, periodic, [0.5, -0.5])


@kernel("HammingWindow", since=17)
def HammingWindow(size, *, output_datatype=1, periodic=1):
    return _window("HammingWindow", size, output_datatype, periodic, [25 / 46, -21 / 46])


@kernel("BlackmanWindow", since=17)
def BlackmanWindow(size, *, output_datatype=1, periodic=1):
    return _window("BlackmanWindow", size, output_datatype, periodic, [0.42, -0.5, 0.08])


@kernel("MelWeightMatrix", since=17)
def MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *,
                    output_datatype=1):
    """Triangular filters between mel points spaced evenly from the lower to the upper edge (the spacing
    of onnx's reference and onnxruntime: (high - low) / (num_mel_bins + 2))."""
    bins, n_fft = int(np.asarray(num_mel_bins).reshape(())), int(np.asarray(dft_length).reshape(()))
    rate = int(np.asarray(sample_rate).reshape(()))
    low, high = float(np.asarray(lower_edge_hertz).reshape(())), float(np.asarray(upper_edge_hertz).reshape(()))
    low_mel, high_mel = 2595 * np.log10(1 + low / 700), 2595 * np.log10(1 + high / 700)
    mel = np.arange(bins + 2) * ((high_mel - low_mel) / (bins + 2)) + low_mel
    points = (((n_fft + 1) * (700 * (10 ** (mel / 2595) - 1))) // rate).astype(np.int64)
    out = np.zeros((n_fft // 2 + 1, bins))
    for i in range(bins):
        left, centre, right = points[i], points[i + 1], points[i + 2]
        if centre == left:
            out[centre, i] = 1
        else:
            j = np.arange(left, centre + 1)
            out[j, i] = (j - left) / (centre - left)
        if right > centre:
            j = np.arange(centre, right)
            out[j, i] = (right - j) / (right - centre)
    return out.astype(dtypes.to_numpy(output_datatype))
