"""Gradient rules for LSTM and GRU, as onnxruntime-training 1.19.2 builds them.

The forward node becomes com.microsoft LSTMTraining (GRUTraining), which also outputs every cell state and the
activated gates, and LSTMGrad (GRUGrad) walks the sequence backwards.  Those ops take the forward direction
with the default activations and no clip, sequence_lens, input_forget or peepholes; the rest is refused here,
by name, before the graph is touched.
"""
from __future__ import annotations

from ..ir.ort_names import MS_DOMAIN
from ..ops.rnn_training import check_supported
from .rules import rule, text

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
