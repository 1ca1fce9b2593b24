"""Kernels: the recurrent layers RNN, GRU and LSTM (opsets 7 and 14), one time step at a time per direction."""
from __future__ import annotations

import numpy as np

from .registry import kernel


def _sigmoid(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


# name -> (function of (x, alpha, beta), default alpha, default beta); None: the function takes no such value.
_ACTIVATIONS = {
    "relu": (lambda x, a, b: np.maximum(x, 0), None, None),
    "tanh": (lambda x, a, b: np.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: _sigmoid(x), None, None),
    "affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: np.where(x > a, x, 0), 1.0, None),
    "scaledtanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), 0.2, 0.5),
    "elu": (lambda x, a, b: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0)) - 1)), 1.0, None),
    "softsign": (lambda x, a, b: x / (1 + np.abs(x)), None, None),
    "softplus": (lambda x, a, b: np.logaddexp(x, 0), None, None),
}


def _activations(op: str, names, alphas, betas, defaults: list, n_dirs: int) -> list:
    """Per direction, the list of activation callables (alphas and betas consumed in order)."""
    names = list(names) if names else defaults * n_dirs
    if len(names) != len(defaults) * n_dirs:
        raise ValueError(f"{op}: {len(names)} activations given, expected {len(defaults) * n_dirs}")
    alphas, betas = list(alphas or []), list(betas or [])
    fns = []
    for name in names:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise ValueError(f"{op}: activation '{name}' is not supported")
        fn, da, db = _ACTIVATIONS[key]
        a = (alphas.pop(0) if alphas else da) if da is not None else None
        b = (betas.pop(0) if betas else db) if db is not None else None
        fns.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    k = len(defaults)
    return [fns[d * k:(d + 1) * k] for d in range(n_dirs)]


class _Inputs:
    """The shared inputs of a recurrent layer in layout 0 ([seq, batch, ...]), split per direction."""

    def __init__(self, op, X, W, R, B, sequence_lens, initial_h, *, hidden_size, direction, layout, gates):
        if direction not in ("forward", "reverse", "bidirectional"):
            raise ValueError(f"{op}: direction '{direction}' is not supported")
        self.n_dirs = 2 if direction == "bidirectional" else 1
        self.reverse = [False, True] if self.n_dirs == 2 else [direction == "reverse"]
        if layout:
            X = X.swapaxes(0, 1)
            initial_h = None if initial_h is None else initial_h.swapaxes(0, 1)
        self.X = X
        seq, batch, _ = X.shape
        hidden = W.shape[1] // gates
        if hidden_size is not None and hidden_size != hidden:
            raise ValueError(f"{op}: hidden_size {hidden_size} does not match W of shape {list(W.shape)}")
        if W.shape[0] != self.n_dirs:
            raise ValueError(f"{op}: W has {W.shape[0]} directions, direction '{direction}' needs {self.n_dirs}")
        self.hidden, self.seq, self.batch, self.layout = hidden, seq, batch, layout
        self.W, self.R = W, R
        zeros = np.zeros((self.n_dirs, 2 * gates * hidden), X.dtype)
        B = zeros if B is None else B
        self.Wb, self.Rb = B[:, :gates * hidden], B[:, gates * hidden:]
        self.lens = (np.full(batch, seq, np.int64) if sequence_lens is None
                     else np.asarray(sequence_lens, np.int64))
        self.h0 = np.zeros((self.n_dirs, batch, hidden), X.dtype) if initial_h is None else initial_h

    def steps(self, d):
        """(time index, batch mask of the sequences still running) in the direction's order."""
        order = range(self.seq - 1, -1, -1) if self.reverse[d] else range(self.seq)
        return [(t, (t < self.lens)[:, None]) for t in order]

    def outputs(self, ys: list, finals: list):
        """Y [seq, dirs, batch, hidden] and the final states [dirs, batch, hidden] (layout 1: batch first)."""
        Y = np.stack(ys, axis=1)
        finals = [np.stack(f) for f in finals]
        if self.layout:
            Y = Y.transpose(2, 0, 1, 3)
            finals = [f.swapaxes(0, 1) for f in finals]
        return (Y, *finals)


def _clip(x, clip):
    return x if clip is None else np.clip(x, -clip, clip)


def _rnn(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip, direction,
         hidden_size, layout):
    io = _Inputs("RNN", X, W, R, B, sequence_lens, initial_h, hidden_size=hidden_size, direction=direction,
                 layout=layout, gates=1)
    acts = _activations("RNN", activations, activation_alpha, activation_beta, ["Tanh"], io.n_dirs)
    ys, hs = [], []
    for d in range(io.n_dirs):
        (f,) = acts[d]
        xw = io.X @ W[d].T + io.Wb[d] + io.Rb[d]
        h = io.h0[d]
        y = np.zeros((io.seq, io.batch, io.hidden), X.dtype)
        for t, running in io.steps(d):
            new = f(_clip(xw[t] + h @ R[d].T, clip)).astype(X.dtype)
            h = np.where(running, new, h)
            y[t] = np.where(running, new, 0)
        ys.append(y)
        hs.append(h)
    return io.outputs(ys, [hs])


@kernel("RNN", since=7)
def RNN_7(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
          activations=None, clip=None, direction="forward", hidden_size=None):
    return _rnn(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, 0)


@kernel("RNN", since=14)
def RNN_14(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
           activations=None, clip=None, direction="forward", hidden_size=None, layout=0):
    return _rnn(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, layout)


def _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip, direction,
         hidden_size, layout, linear_before_reset):
    io = _Inputs("GRU", X, W, R, B, sequence_lens, initial_h, hidden_size=hidden_size, direction=direction,
                 layout=layout, gates=3)
    acts = _activations("GRU", activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh"], io.n_dirs)
    n = io.hidden
    ys, hs = [], []
    for d in range(io.n_dirs):
        f, g = acts[d]
        xw = io.X @ W[d].T + io.Wb[d]                               # [seq, batch, 3h], gates z, r, h
        rz, rh = R[d][:2 * n], R[d][2 * n:]
        rbz, rbh = io.Rb[d][:2 * n], io.Rb[d][2 * n:]
        h = io.h0[d]
        y = np.zeros((io.seq, io.batch, n), X.dtype)
        for t, running in io.steps(d):
            zr = f(_clip(xw[t, :, :2 * n] + h @ rz.T + rbz, clip))
            z, r = zr[:, :n], zr[:, n:]
            if linear_before_reset:
                cand = g(_clip(xw[t, :, 2 * n:] + r * (h @ rh.T + rbh), clip))
            else:
                cand = g(_clip(xw[t, :, 2 * n:] + (r * h) @ rh.T + rbh, clip))
            new = ((1 - z) * cand + z * h).astype(X.dtype)
            h = np.where(running, new, h)
            y[t] = np.where(running, new, 0)
        ys.append(y)
        hs.append(h)
    return io.outputs(ys, [hs])


@kernel("GRU", since=7)
def GRU_7(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
          activations=None, clip=None, direction="forward", hidden_size=None, linear_before_reset=0):
    return _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, 0, linear_before_reset)


@kernel("GRU", since=14)
def GRU_14(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
           activations=None, clip=None, direction="forward", hidden_size=None, layout=0, linear_before_reset=0):
    return _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, layout, linear_before_reset)


def _lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations, clip,
          direction, hidden_size, input_forget, layout):
    io = _Inputs("LSTM", X, W, R, B, sequence_lens, initial_h, hidden_size=hidden_size, direction=direction,
                 layout=layout, gates=4)
    acts = _activations("LSTM", activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh", "Tanh"],
                        io.n_dirs)
    n = io.hidden
    if initial_c is not None and layout:
        initial_c = initial_c.swapaxes(0, 1)
    c0 = np.zeros_like(io.h0) if initial_c is None else initial_c
    peep = np.zeros((io.n_dirs, 3 * n), X.dtype) if P is None else P
    ys, hs, cs = [], [], []
    for d in range(io.n_dirs):
        f, g, hact = acts[d]
        xw = io.X @ W[d].T + io.Wb[d] + io.Rb[d]                    # [seq, batch, 4h], gates i, o, f, c
        pi, po, pf = peep[d][:n], peep[d][n:2 * n], peep[d][2 * n:]
        h, c = io.h0[d], c0[d]
        y = np.zeros((io.seq, io.batch, n), X.dtype)
        for t, running in io.steps(d):
            pre = xw[t] + h @ R[d].T
            i = f(_clip(pre[:, :n] + pi * c, clip))
            fg = 1 - i if input_forget else f(_clip(pre[:, 2 * n:3 * n] + pf * c, clip))
            cand = g(_clip(pre[:, 3 * n:], clip))
            c_new = (fg * c + i * cand).astype(X.dtype)
            o = f(_clip(pre[:, n:2 * n] + po * c_new, clip))
            h_new = (o * hact(c_new)).astype(X.dtype)
            h = np.where(running, h_new, h)
            c = np.where(running, c_new, c)
            y[t] = np.where(running, h_new, 0)
        ys.append(y)
        hs.append(h)
        cs.append(c)
    return io.outputs(ys, [hs, cs])


@kernel("LSTM", since=7)
def LSTM_7(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha=None,
           activation_beta=None, activations=None, clip=None, direction="forward", hidden_size=None, input_forget=0):
    return _lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations,
                 clip, direction, hidden_size, input_forget, 0)


@kernel("LSTM", since=14)
def LSTM_14(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha=None,
            activation_beta=None, activations=None, clip=None, direction="forward", hidden_size=None, input_forget=0,
            layout=0):
    return _lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations,
                 clip, direction, hidden_size, input_forget, layout)
