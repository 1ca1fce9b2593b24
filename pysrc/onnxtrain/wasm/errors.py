"""The wasm provider's errors."""
from __future__ import annotations

from ..runtime.program import ProgramError


class WasmError(ProgramError):
    """The wasm provider cannot run what was asked (no kernel library with the executor, a value it cannot hold)."""


class WasmMemoryError(WasmError, MemoryError):
    """A program's buffers do not fit in the kernel library's memory; nothing was run, the session stays usable."""


class KernelInputError(WasmError, ValueError):
    """A kernel found bad input during the run (a label or an index out of range); the message names the node."""
