"""The lowerings of the WGSL kernels, one module per family; importing them fills the table."""
from . import elementwise  # noqa: F401
