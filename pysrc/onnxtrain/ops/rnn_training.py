"""Kernels: com.microsoft LSTMTraining, LSTMGrad, GRUTraining and GRUGrad, as onnxruntime-training 1.19.2 has them.

The training forms run the forward direction with the default activations and no clip, sequence_lens or
(LSTM) input_forget, and also output what the gradient needs: every hidden state (and, for LSTM, every cell
state) as [seq, 1, batch, hidden] and the activated gates per step (LSTM: i, o, f, c; GRU: z, r, h).  The
gradient kernels walk the sequence backwards.  Attributes beyond that subset are refused by name.
"""
from __future__ import annotations

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from .registry import kernel
from .rnn import _sigmoid


def check_supported(op: str, *, activations, clip, direction, defaults, sequence_lens=None, input_forget=0,
                    activation_alpha=None, activation_beta=None):
    """Raise for what onnxruntime-training's recurrent training kernels do not take."""
    if direction != "forward":
        raise NotImplementedError(f"{op}: direction '{direction}' is not supported (forward only, as in "
                                  f"onnxruntime-training)")
    if activations and [a.lower() for a in activations] != defaults:
        raise NotImplementedError(f"{op}: activations {list(activations)} are not supported (only {defaults})")
    if activation_alpha or activation_beta:
        raise NotImplementedError(f"{op}: activation_alpha and activation_beta are not supported")
    if clip is not None:
        raise NotImplementedError(f"{op}: clip is not supported")
    if input_forget:
        raise NotImplementedError(f"{op}: input_forget is not supported")
    if sequence_lens is not None:
        raise NotImplementedError(f"{op}: sequence_lens (varying sequence lengths) is not supported")


def _bias(B, gates, hidden, dtype):
    if B is None:
        return np.zeros(gates * hidden, dtype), np.zeros(gates * hidden, dtype)
    return B[0, :gates * hidden], B[0, gates * hidden:]


def _start(state, batch, hidden, dtype):
    return np.zeros((batch, hidden), dtype) if state is None else state[0]


@kernel("LSTMTraining", MS_DOMAIN)
def LSTMTraining(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *,
                 activation_alpha=None, activation_beta=None, activations=None, clip=None, direction="forward",
                 hidden_size=None, input_forget=0):
    check_supported("LSTMTraining", activations=activations, clip=clip, direction=direction,
                    defaults=["sigmoid", "tanh", "tanh"], sequence_lens=sequence_lens, input_forget=input_forget,
                    activation_alpha=activation_alpha, activation_beta=activation_beta)
    seq, batch, _ = X.shape
    n = R.shape[-1]
    wb, rb = _bias(B, 4, n, X.dtype)
    pi, po, pf = (np.zeros(n, X.dtype),) * 3 if P is None else (P[0, :n], P[0, n:2 * n], P[0, 2 * n:])
    xw = X @ W[0].T + wb + rb
    h, c = _start(initial_h, batch, n, X.dtype), _start(initial_c, batch, n, X.dtype)
    hs, cs, gates = (np.zeros((seq, 1, batch, k * n), X.dtype) for k in (1, 1, 4))
    for t in range(seq):
        pre = xw[t] + h @ R[0].T
        i = _sigmoid(pre[:, :n] + pi * c)
        f = _sigmoid(pre[:, 2 * n:3 * n] + pf * c)
        cand = np.tanh(pre[:, 3 * n:])
        c = (f * c + i * cand).astype(X.dtype)
        o = _sigmoid(pre[:, n:2 * n] + po * c)
        h = (o * np.tanh(c)).astype(X.dtype)
        hs[t, 0], cs[t, 0], gates[t, 0] = h, c, np.concatenate([i, o, f, cand], axis=1)
    return hs, hs[-1], cs[-1], cs, gates


@kernel("LSTMGrad", MS_DOMAIN)
def LSTMGrad(X, W, R, sequence_lens=None, initial_h=None, initial_c=None, HAll=None, CAll=None, IOFC=None,
             grad_HAll=None, grad_Ht=None, grad_Ct=None, *, activation_alpha=None, activation_beta=None,
             activations=None, clip=None, direction="forward", hidden_size=None, input_forget=0, _outputs=()):
    """Gradients of X, W, R, B, initial_h and initial_c.  Like onnxruntime's kernel it has no peephole input,
    so it cannot give the peephole gradient (output 6)."""
    check_supported("LSTMGrad", activations=activations, clip=clip, direction=direction,
                    defaults=["sigmoid", "tanh", "tanh"], sequence_lens=sequence_lens, input_forget=input_forget,
                    activation_alpha=activation_alpha, activation_beta=activation_beta)
    if len(_outputs) > 6 and _outputs[6]:
        raise NotImplementedError("LSTMGrad: the peephole gradient (output 6) is not supported")
    if HAll is None or CAll is None or IOFC is None:
        raise ValueError("LSTMGrad: the all hidden states, all cell states and iofc inputs are required")
    seq, batch, _ = X.shape
    n = R.shape[-1]
    c_prev_all = np.concatenate([_start(initial_c, batch, n, X.dtype)[None], CAll[:-1, 0]])
    h_prev_all = np.concatenate([_start(initial_h, batch, n, X.dtype)[None], HAll[:-1, 0]])
    dh = np.zeros((batch, n), X.dtype) if grad_Ht is None else grad_Ht[0].copy()
    dc = np.zeros((batch, n), X.dtype) if grad_Ct is None else grad_Ct[0].copy()
    da_all = np.zeros((seq, batch, 4 * n), X.dtype)
    for t in range(seq - 1, -1, -1):
        if grad_HAll is not None:
            dh = dh + grad_HAll[t, 0]
        i, o, f, cand = (IOFC[t, 0, :, k * n:(k + 1) * n] for k in range(4))
        tanh_c = np.tanh(CAll[t, 0])
        dc = dc + dh * o * (1 - tanh_c * tanh_c)
        da = np.concatenate([dc * cand * i * (1 - i), dh * tanh_c * o * (1 - o),
                             dc * c_prev_all[t] * f * (1 - f), dc * i * (1 - cand * cand)], axis=1)
        da_all[t] = da
        dc = dc * f
        dh = da @ R[0]
    flat = da_all.reshape(seq * batch, 4 * n)
    dX = da_all @ W[0]
    dW = (flat.T @ X.reshape(seq * batch, -1))[None]
    dR = (flat.T @ h_prev_all.reshape(seq * batch, n))[None]
    db = flat.sum(axis=0)
    dB = np.concatenate([db, db])[None]
    return (dX.astype(X.dtype), dW.astype(X.dtype), dR.astype(X.dtype), dB.astype(X.dtype), dh[None], dc[None],
            np.zeros((1, 3 * n), X.dtype))


@kernel("GRUTraining", MS_DOMAIN)
def GRUTraining(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
                activations=None, clip=None, direction="forward", hidden_size=None, linear_before_reset=0):
    check_supported("GRUTraining", activations=activations, clip=clip, direction=direction,
                    defaults=["sigmoid", "tanh"], sequence_lens=sequence_lens,
                    activation_alpha=activation_alpha, activation_beta=activation_beta)
    seq, batch, _ = X.shape
    n = R.shape[-1]
    wb, rb = _bias(B, 3, n, X.dtype)
    xw = X @ W[0].T + wb
    rzr, rh = R[0][:2 * n], R[0][2 * n:]
    h = _start(initial_h, batch, n, X.dtype)
    hs, gates = np.zeros((seq, 1, batch, n), X.dtype), np.zeros((seq, 1, batch, 3 * n), X.dtype)
    for t in range(seq):
        zr = _sigmoid(xw[t, :, :2 * n] + h @ rzr.T + rb[:2 * n])
        z, r = zr[:, :n], zr[:, n:]
        if linear_before_reset:
            cand = np.tanh(xw[t, :, 2 * n:] + r * (h @ rh.T + rb[2 * n:]))
        else:
            cand = np.tanh(xw[t, :, 2 * n:] + (r * h) @ rh.T + rb[2 * n:])
        h = ((1 - z) * cand + z * h).astype(X.dtype)
        hs[t, 0], gates[t, 0] = h, np.concatenate([z, r, cand], axis=1)
    return hs, hs[-1], gates


@kernel("GRUGrad", MS_DOMAIN)
def GRUGrad(X, W, R, B=None, sequence_lens=None, initial_h=None, HAll=None, ZRH=None, grad_HAll=None,
            grad_Ht=None, *, activation_alpha=None, activation_beta=None, activations=None, clip=None,
            direction="forward", hidden_size=None, linear_before_reset=0):
    """Gradients of X, W, R, B and initial_h."""
    check_supported("GRUGrad", activations=activations, clip=clip, direction=direction,
                    defaults=["sigmoid", "tanh"], sequence_lens=sequence_lens,
                    activation_alpha=activation_alpha, activation_beta=activation_beta)
    if HAll is None or ZRH is None:
        raise ValueError("GRUGrad: the all hidden states and zrh inputs are required")
    seq, batch, _ = X.shape
    n = R.shape[-1]
    _, rb = _bias(B, 3, n, X.dtype)
    rz, rr, rh = R[0][:n], R[0][n:2 * n], R[0][2 * n:]
    h_prev_all = np.concatenate([_start(initial_h, batch, n, X.dtype)[None], HAll[:-1, 0]])
    dh = np.zeros((batch, n), X.dtype) if grad_Ht is None else grad_Ht[0].copy()
    da_all = np.zeros((seq, batch, 3 * n), X.dtype)
    # the recurrent-side gradient of the candidate's pre-activation differs from its input side when the
    # reset gate applies after the linear map (linear_before_reset)
    dah_rec_all = np.zeros((seq, batch, n), X.dtype)
    for t in range(seq - 1, -1, -1):
        if grad_HAll is not None:
            dh = dh + grad_HAll[t, 0]
        z, r, cand = (ZRH[t, 0, :, k * n:(k + 1) * n] for k in range(3))
        h_prev = h_prev_all[t]
        daz = dh * (h_prev - cand) * z * (1 - z)
        dah = dh * (1 - z) * (1 - cand * cand)
        if linear_before_reset:
            dr = dah * (h_prev @ rh.T + rb[2 * n:])
            dah_rec = dah * r
            dh_prev_h = dah_rec @ rh
        else:
            dr = (dah @ rh) * h_prev
            dah_rec = dah
            dh_prev_h = (dah @ rh) * r
        dar = dr * r * (1 - r)
        da_all[t] = np.concatenate([daz, dar, dah], axis=1)
        dah_rec_all[t] = dah_rec
        dh = dh * z + daz @ rz + dar @ rr + dh_prev_h
    flat = da_all.reshape(seq * batch, 3 * n)
    dX = da_all @ W[0]
    dW = (flat.T @ X.reshape(seq * batch, -1))[None]
    h_flat = h_prev_all.reshape(seq * batch, n)
    rec_h = dah_rec_all.reshape(seq * batch, n)
    if linear_before_reset:
        dR_h = rec_h.T @ h_flat
    else:
        dR_h = rec_h.T @ (ZRH[:, 0, :, n:2 * n].reshape(seq * batch, n) * h_flat)
    dR = np.concatenate([flat[:, :2 * n].T @ h_flat, dR_h])[None]
    db = flat.sum(axis=0)
    dB = np.concatenate([db, db[:2 * n], rec_h.sum(axis=0)])[None]
    return dX.astype(X.dtype), dW.astype(X.dtype), dR.astype(X.dtype), dB.astype(X.dtype), dh[None]
