"""The WGSL kernel table: (domain, op_type) -> a lowering function (runtime/program.py has the lowering contract;
the lowerings record dispatches through webgpu/lowering.py)."""
from __future__ import annotations

from ..runtime.kernel_table import KernelTable

TABLE = KernelTable("WGSL")
GPU_KERNELS = TABLE.lowerings   # (domain, op_type) -> lowering
gpu_kernel = TABLE.register
gpu_lookup = TABLE.lookup
gpu_ops = TABLE.ops             # the README's list is generated from it
