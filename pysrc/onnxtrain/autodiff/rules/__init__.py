"""One gradient rule per op, written as arithmetic on graph values.

A rule gets the context ``c``, the node's inputs ``x`` and outputs ``y`` and the gradient of each output
``dy`` (None where no gradient flows), all as Values (values.py): ``dy[0] * (1 - y[0] * y[0])`` appends the
nodes that compute it.  It returns one gradient per input, or fewer (the rest are None).  The driver
(gradient.py) keeps the gradients of the inputs that need one; for rules registered with
``broadcasts=True`` it also sums each gradient over the axes its input was broadcast along.  A gradient
nobody needs is left unread, and the runtime's plan drops it; rules ask ``c.wants(i)`` only where that
gradient would be costly (matrix products, convolutions).  Rules emit standard ONNX ops, or com.microsoft
gradient ops that both onnxruntime-training 1.19.2 and onnxtrain execute.

The rules live in one module per family of ops, as the kernels do in ops/; _emit.py holds the ops that rules
emit differently by opset.
"""
from . import conv, elementwise, indexing, loss, matmul, nn, norm, pool, reduce, resize, rnn, shape  # noqa: F401
from ._emit import unbroadcast
from ._registry import GRADIENT_RULES, NO_GRADIENT, rule

__all__ = ["GRADIENT_RULES", "NO_GRADIENT", "rule", "unbroadcast"]
