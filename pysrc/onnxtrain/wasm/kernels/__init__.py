"""The lowerings of the C kernels, one module per family (as in ops/); importing them fills the table."""
from . import elementwise, layout, matrix, reduce, loss, training, conv_pool, norm, resize, logic  # noqa: F401
