"""The wasm provider's errors."""
from __future__ import annotations

from ..runtime.execute import RunError
from ..runtime.program import ProgramError


class WasmError(ProgramError):
    """The wasm provider cannot run what was asked (no kernel library with the executor, a value it cannot hold)."""


class WasmMemoryError(WasmError, MemoryError):
    """A program's buffers do not fit in the kernel library's memory; nothing was run, the session stays usable."""


class KernelInputError(RunError, ValueError):
    """A kernel found bad input during the run (a label or an index out of range) that the node's numpy kernel
    does not report; the message names the node."""
