"""The C kernel table of the wasm provider: (domain, op_type) -> a lowering function (runtime/program.py has the
lowering contract; the lowerings record executor calls through wasm/lowering.py)."""
from __future__ import annotations

from ..runtime.kernel_table import KernelTable


def _families() -> None:
    from . import kernels  # noqa: F401  (importing the families fills the table)


TABLE = KernelTable("C", _families)
WASM_KERNELS = TABLE.lowerings   # (domain, op_type) -> lowering
wasm_kernel = TABLE.register
wasm_lookup = TABLE.lookup
wasm_ops = TABLE.ops
