"""numpy kernels for ONNX ops, one registry keyed by (domain, op_type)."""
from .registry import KERNELS, UnsupportedOpError, kernel, lookup, registered_ops

# Importing a module registers its kernels.
from . import elementwise, reduce, shape, tensor, nn, conv, pool, norm, loss, training, resize  # noqa: E402,F401
from . import optimizers, control, sequence, indexing, vision, quantize, rnn, signal, strings, ml, random, image  # noqa: E402,F401
from . import rnn_training, fused  # noqa: E402,F401

__all__ = ["KERNELS", "UnsupportedOpError", "kernel", "lookup", "registered_ops"]
