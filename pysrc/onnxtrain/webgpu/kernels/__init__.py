"""The lowerings of the WGSL kernels, one module per family; importing them fills the table."""
from . import elementwise, matrix, reduce, layout, conv_pool, norm_resize, loss_training  # noqa: F401
