"""The kernel table: (domain, op_type) -> kernels by the opset version they start at.

A kernel is a plain function named like the op.  Inputs come positionally
(an omitted optional input is None), attributes as keyword arguments with the
spec's defaults.  It returns one array or a tuple of outputs (the runtime
takes as many as the node has).  Three keyword-only parameters are filled in
by the runtime when a kernel declares them:

    _outputs        tuple of bools, which of the node's outputs are used
    _output_shapes  per output, the static shape from the graph's value_info
                    (a list of int | str | None), or None when unknown
    _generator      the node's own random generator (random.node_generator of
                    its seed), made once per plan and advanced by every run

Kernels never modify their inputs, except where the op is in place by
definition (InPlaceAccumulatorV2, the optimizers, InplaceClipGradNorm).
"""
from __future__ import annotations

import bisect
from typing import Callable

DEFAULT_DOMAINS = ("", "ai.onnx")

KERNELS: dict = {}  # (domain, op_type) -> sorted [(since_version, fn)]


class UnsupportedOpError(NotImplementedError):
    pass


def normalize_domain(domain: str) -> str:
    return "" if domain in DEFAULT_DOMAINS else domain


def kernel(op_type: str, domain: str = "", since: int = 1) -> Callable:
    """Register ``fn`` as the kernel of ``op_type`` for opsets >= ``since``."""
    def register(fn: Callable) -> Callable:
        entries = KERNELS.setdefault((normalize_domain(domain), op_type), [])
        if any(v == since for v, _ in entries):
            raise ValueError(f"kernel {domain or 'ai.onnx'}::{op_type} since {since} registered twice")
        bisect.insort(entries, (since, fn), key=lambda e: e[0])
        return fn
    return register


def lookup(op_type: str, domain: str = "", opset: int | None = None) -> Callable:
    """The kernel for ``op_type`` at ``opset`` (the newest when opset is None)."""
    entries = KERNELS.get((normalize_domain(domain), op_type))
    if not entries:
        raise UnsupportedOpError(f"onnxtrain has no kernel for op {domain or 'ai.onnx'}::{op_type}")
    if opset is None:
        return entries[-1][1]
    chosen = None
    for since, fn in entries:
        if since <= opset:
            chosen = fn
    if chosen is None:
        raise UnsupportedOpError(
            f"onnxtrain has no kernel for op {domain or 'ai.onnx'}::{op_type} at opset {opset} "
            f"(kernels start at {entries[0][0]})")
    return chosen


def registered_ops() -> list:
    """[(domain, op_type)] in sorted order, for docs and tests."""
    return sorted(KERNELS)
