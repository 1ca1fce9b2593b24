"""The WebGPU provider's errors."""
from __future__ import annotations


class WebGPUError(RuntimeError):
    """WebGPU cannot run what was asked (no adapter, a limit, a value it cannot hold)."""


class NoAdapterError(WebGPUError):
    """There is no WebGPU adapter here."""


class GPUMemoryError(WebGPUError, MemoryError):
    """The model does not fit in the GPU's memory or buffer limits; nothing was changed."""


class NotLowered(Exception):
    """A kernel cannot run this node on the GPU (an attribute or shape it does not cover): the node runs on the
    CPU instead.  The message says why, for the session's list of fallbacks."""
