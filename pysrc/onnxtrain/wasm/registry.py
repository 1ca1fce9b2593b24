"""The C kernel table of the wasm provider: (domain, op_type) -> a lowering function (runtime/program.py has the
lowering contract; the lowerings record executor calls through wasm/lowering.py)."""
from __future__ import annotations

from typing import Callable

from ..ops.registry import normalize_domain

WASM_KERNELS: dict = {}   # (domain, op_type) -> lowering


def wasm_kernel(op_type: str, domain: str = "") -> Callable:
    def register(fn: Callable) -> Callable:
        key = (normalize_domain(domain), op_type)
        if key in WASM_KERNELS:
            raise ValueError(f"C kernel {domain or 'ai.onnx'}::{op_type} registered twice")
        WASM_KERNELS[key] = fn
        return fn
    return register


def wasm_lookup(op_type: str, domain: str = ""):
    """The lowering of an op, or None when the op runs on the host."""
    from . import kernels  # noqa: F401  (importing the families fills the table)
    return WASM_KERNELS.get((normalize_domain(domain), op_type))


def wasm_ops() -> list:
    """[(domain, op_type)] with a C kernel, sorted."""
    from . import kernels  # noqa: F401
    return sorted(WASM_KERNELS)
