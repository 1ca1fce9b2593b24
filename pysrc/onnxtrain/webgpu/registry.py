"""The WGSL kernel table: (domain, op_type) -> a lowering function.

A lowering is a plain function named like the op.  It takes a ``Lowering`` context first, then the node's
inputs (Tensors; an omitted optional input is None; a sequence input is a list of Tensors) and the node's
attributes as keyword arguments with the spec's defaults, exactly as the numpy kernel of the op.  It records
dispatches on the context and returns the output Tensor, or a tuple of them.  It raises ``NotLowered`` for
what it does not cover (the node then runs on the CPU), before recording anything.
"""
from __future__ import annotations

from typing import Callable

from ..ops.registry import normalize_domain

GPU_KERNELS: dict = {}   # (domain, op_type) -> lowering


def gpu_kernel(op_type: str, domain: str = "") -> Callable:
    def register(fn: Callable) -> Callable:
        key = (normalize_domain(domain), op_type)
        if key in GPU_KERNELS:
            raise ValueError(f"WGSL kernel {domain or 'ai.onnx'}::{op_type} registered twice")
        GPU_KERNELS[key] = fn
        return fn
    return register


def gpu_lookup(op_type: str, domain: str = ""):
    """The lowering of an op, or None when the op runs on the CPU."""
    return GPU_KERNELS.get((normalize_domain(domain), op_type))


def gpu_ops() -> list:
    """[(domain, op_type)] with a WGSL kernel, sorted (the README's list is generated from it)."""
    return sorted(GPU_KERNELS)
