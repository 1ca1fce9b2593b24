"""The WebGPU provider's errors."""
from __future__ import annotations

from ..runtime.program import NotLowered, ProgramError


class WebGPUError(ProgramError):
    """WebGPU cannot run what was asked (no adapter, a limit, a value it cannot hold)."""


class NoAdapterError(WebGPUError):
    """There is no WebGPU adapter here."""


class GPUMemoryError(WebGPUError, MemoryError):
    """The model does not fit in the GPU's memory or buffer limits; nothing was changed."""


__all__ = ["GPUMemoryError", "NoAdapterError", "NotLowered", "WebGPUError"]
