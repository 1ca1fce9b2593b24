"""Recurrent layers: RNN, GRU, LSTM (layout 0: [seq, batch, input]; layout 1: [batch, seq, input]).  The
weights pin the input size and the hidden size."""
from __future__ import annotations

from ._dims import divide
from ._registry import Out, rule

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@rule("RNN", "GRU", "LSTM")
def recurrent(c):
    xs = c.shape(0)
    layout = c.attr("layout", 0)
    c.same(0, 2, 1, 2)
    c.same(1, 0, 2, 0)
    w = c.shape(1)
    directions = 2 if (c.attr("direction", "forward") or "forward") == "bidirectional" else 1
    c.pin(1, 0, directions, " (directions)")
    hidden = c.attr("hidden_size")
    gates = GATES[c.node.op_type]
    if hidden is None:
        hidden = divide(c, w[1], gates, "the weight's gate axis")
    else:
        c.pin(1, 1, gates * hidden, f" ({gates} gates of hidden_size {hidden})")
    xs = c.shape(0)
    seq, batch = (xs[1], xs[0]) if layout else (xs[0], xs[1])
    y = [batch, seq, directions, hidden] if layout else [seq, directions, batch, hidden]
    state = [batch, directions, hidden] if layout else [directions, batch, hidden]
    return [Out(c.elem(0), y)] + [Out(c.elem(0), list(state)) for _ in c.node.outputs[1:]]
