"""Gradient rules for LSTM and GRU, as onnxruntime-training 1.19.2 builds them, and for RNN.

The forward node becomes com.microsoft LSTMTraining (GRUTraining), which also outputs every cell state and the
activated gates, and LSTMGrad (GRUGrad) walks the sequence backwards.  Those ops take the forward direction
with the default activations and no clip, sequence_lens, input_forget or peepholes; the rest is refused here,
by name, before the graph is touched.
"""
from __future__ import annotations

import numpy as np

from ...ir.model import Attribute, AttrType, Graph, Node, Tensor, TensorType, ValueInfo
from ...ir.ort_names import MS_DOMAIN
from ...ops.rnn_training import check_supported
from ..values import Value
from ._emit import reduce_sum, reshape, text, unsqueeze
from ._registry import rule

_COMMON = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size")


def _training_form(c, x, op: str, defaults: list, extra_attrs: tuple) -> dict:
    """Check the node against the training ops' subset, turn it into ``op``Training; returns its attributes."""
    n = c.node
    if n.attr("layout", 0):
        raise NotImplementedError(f"{c.where()}: no gradient for layout=1 (batch-first); onnxruntime's "
                                  f"{op}Training takes [seq, batch, ...] only")
    if op == "LSTM" and len(x) > 7 and x[7]:
        raise NotImplementedError(f"{c.where()}: no gradient for the peephole weights P (onnxruntime's LSTMGrad "
                                  f"does not differentiate through them)")
    attrs = {k: n.attr(k) for k in _COMMON + extra_attrs if k in n.attributes}
    try:
        check_supported(f"{op} gradient", activations=[text(a) for a in attrs.get("activations") or []],
                        clip=attrs.get("clip"), direction=text(attrs.get("direction", "forward")), defaults=defaults,
                        sequence_lens=x[4] if len(x) > 4 and x[4] else None, input_forget=attrs.get("input_forget", 0),
                        activation_alpha=attrs.get("activation_alpha"), activation_beta=attrs.get("activation_beta"))
    except NotImplementedError as e:
        raise NotImplementedError(f"{c.where()}: {e}") from None
    n.op_type, n.domain = f"{op}Training", MS_DOMAIN
    n.attributes = {k: a for k, a in n.attributes.items() if k in attrs}
    return attrs


def _optional(x, count):
    return list(x) + [""] * (count - len(x))


@rule("LSTM")
def _lstm(c, x, y, dy):
    attrs = _training_form(c, x, "LSTM", ["sigmoid", "tanh", "tanh"], ("input_forget",))
    X, W, R, _, SL, H0, C0, _ = _optional(x, 8)
    h_all, c_all, iofc = (c.extra_output(i, base) for i, base in ((0, "HAll"), (3, "CAll"), (4, "IOFC")))
    grads = _optional(dy, 3)
    dX, dW, dR, dB, dH0, dC0 = c.op("LSTMGrad", X, W, R, SL, H0, C0, h_all, c_all, iofc, *grads, domain=MS_DOMAIN,
                                    n_outputs=6, **attrs)
    return [dX, dW, dR, dB, None, dH0, dC0][:len(x)]


@rule("GRU")
def _gru(c, x, y, dy):
    attrs = _training_form(c, x, "GRU", ["sigmoid", "tanh"], ("linear_before_reset",))
    X, W, R, B, SL, H0 = _optional(x, 6)
    h_all, zrh = (c.extra_output(i, base) for i, base in ((0, "HAll"), (2, "ZRH")))
    grads = _optional(dy, 2)
    dX, dW, dR, dB, dH0 = c.op("GRUGrad", X, W, R, B, SL, H0, h_all, zrh, *grads, domain=MS_DOMAIN, n_outputs=5,
                               **attrs)
    return [dX, dW, dR, dB, None, dH0][:len(x)]


# ---- RNN: onnxruntime-training has no RNN gradient; this one is standard ONNX (a Scan back through time) ----

#: d activation / d pre-activation, from the activation's output h
_RNN_SLOPES = {"tanh": lambda one, h: ("Sub", one, ("Mul", h, h)),
               "sigmoid": lambda one, h: ("Mul", h, ("Sub", one, h)),
               "relu": lambda one, h: ("Cast", ("Greater", h, "zero"))}


def _backward_body(elem: int, dtype, activation: str, batch, hidden: int) -> Graph:
    """Scan body: (dh carried from the later step, R; dY_t, h_t) -> (da_t @ R, R; da_t), da_t = (dY_t + dh) * slope."""
    nodes, count = [], [0]

    def emit(expr):
        if isinstance(expr, str):
            return expr
        op, *args = expr
        out = f"v{count[0]}"
        count[0] += 1
        attrs = {"to": Attribute("to", AttrType.INT, elem)} if op == "Cast" else {}
        nodes.append(Node(op, [emit(a) for a in args], [out], name=f"step_{out}", attributes=attrs))
        return out

    slope = emit(_RNN_SLOPES[activation]("one", "h_t"))
    nodes.append(Node("Add", ["dy_t", "dh_later"], ["dh"], name="step_dh"))
    nodes.append(Node("Mul", ["dh", slope], ["da"], name="step_da"))
    nodes.append(Node("MatMul", ["da", "R"], ["dh_next"], name="step_back"))
    nodes.append(Node("Identity", ["R"], ["R_next"], name="step_R"))
    nodes.append(Node("Identity", ["da"], ["da_t"], name="step_out"))
    batch = batch if isinstance(batch, int) else "batch"

    def typed(name):
        return ValueInfo(name, TensorType(elem, [hidden if name.startswith("R") else batch, hidden]))
    return Graph(name="rnn_backward_step", nodes=nodes,
                 inputs=[typed(n) for n in ("dh_later", "R", "dy_t", "h_t")],
                 outputs=[typed(n) for n in ("dh_next", "R_next", "da_t")],
                 initializers=[Tensor("one", np.array(1, dtype), elem), Tensor("zero", np.array(0, dtype), elem)])


@rule("RNN")
def _rnn(c, x, y, dy):
    """Per direction: the Scan walks back through time for da_t = dL/d(pre-activation at t); then
    dX = da W, dW = sum da^T x, dR = sum da^T h_prev, dB = [sum da, sum da], d initial_h = da_first R."""
    n = c.node
    if c.opset < 11:
        raise NotImplementedError(f"{c.where()}: the RNN gradient needs opset 11 or later (it emits a Scan)")
    if n.attr("layout", 0):
        raise NotImplementedError(f"{c.where()}: no gradient for layout=1 (batch-first)")
    if n.attr("clip") is not None:
        raise NotImplementedError(f"{c.where()}: no gradient for clip")
    if len(x) > 4 and x[4]:
        raise NotImplementedError(f"{c.where()}: no gradient with sequence_lens (varying sequence lengths)")
    direction = text(n.attr("direction", "forward"))
    n_dirs = 2 if direction == "bidirectional" else 1
    activations = [text(a).lower() for a in n.attr("activations") or []] or ["tanh"] * n_dirs
    unknown = [a for a in activations if a not in _RNN_SLOPES]
    if unknown:
        raise NotImplementedError(f"{c.where()}: no gradient for the activation '{unknown[0]}' (tanh, sigmoid and "
                                  f"relu have one)")
    X, W, R, _, _, H0 = _optional(x, 6)
    x_shape, hidden = c.shape(X), c.shape(W)[1]
    if not isinstance(hidden, int) or not isinstance(x_shape[2], int):
        raise NotImplementedError(f"{c.where()}: the RNN gradient needs static hidden and input sizes")
    Y = Value(c.extra_output(0, "Y"), c, c.dtype(X))  # a name the model may have left out
    elem, dtype = c.onnx_type(X), c.dtype(X)
    reverse = [False, True] if n_dirs == 2 else [direction == "reverse"]
    pick = lambda v, d, axis: c.op("Gather", v, c.const(np.array(d, np.int64), "direction"), axis=axis)  # noqa: E731
    x_flat = reshape(c, X, [-1, x_shape[2]])
    per_dir = []
    for d, back in enumerate(reverse):
        hs = pick(Y, d, 1)                                                     # [seq, batch, hidden]
        zeros = hs * 0.0
        dys = pick(dy[0], d, 1) if len(dy) > 0 and dy[0] is not None else zeros
        first = pick(zeros, 0, 0)
        dh_last = pick(dy[1], d, 0) if len(dy) > 1 and dy[1] is not None else first
        h0 = unsqueeze(c, pick(H0, d, 0) if H0 else first, [0])
        R_d = pick(R, d, 0)
        dh0, _, das = c.op("Scan", dh_last, R_d, dys, hs, n_outputs=3, num_scan_inputs=2,
                           body=_backward_body(elem, dtype, activations[d], x_shape[1], hidden),
                           scan_input_directions=[0 if back else 1] * 2, scan_output_directions=[0 if back else 1])
        tail = c.op("Slice", hs, c.ints([1 if back else 0], "starts"),
                    c.ints([np.iinfo(np.int64).max if back else -1], "ends"), c.ints([0]))
        h_prev = c.op("Concat", tail, h0, axis=0) if back else c.op("Concat", h0, tail, axis=0)
        da_flat = reshape(c, das, [-1, hidden])
        db = reduce_sum(c, da_flat, [0], keepdims=0)
        per_dir.append((c.op("MatMul", das, pick(W, d, 0)),
                        c.op("Gemm", da_flat, x_flat, transA=1), c.op("Gemm", da_flat, reshape(c, h_prev, [-1, hidden]),
                                                                      transA=1),
                        c.op("Concat", db, db, axis=0), dh0))
    stack = lambda k: unsqueeze(c, per_dir[0][k], [0]) if n_dirs == 1 else c.op(  # noqa: E731
        "Concat", *(unsqueeze(c, p[k], [0]) for p in per_dir), axis=0)
    dX = per_dir[0][0] if n_dirs == 1 else per_dir[0][0] + per_dir[1][0]
    return [dX, stack(1), stack(2), stack(3), None, stack(4)][:len(x)]
