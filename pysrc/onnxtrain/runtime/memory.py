"""Keep freed memory in the process for the next step (CPython on glibc; elsewhere nothing changes).

A training step allocates and frees the same large arrays every time.  glibc's malloc hands large freed
blocks back to the kernel (unmapped, or trimmed from the top of the heap) and every step then pays page
faults to get them back: the CNN step of bench/bench_train_step.py ran about 2x slower for it.
onnxruntime keeps such memory in its own arena.  Here glibc is told up front the limits its own adaptive
scheme can reach (blocks up to 32 MiB come from the heap, up to 64 MiB of free heap top is kept).
"""
from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_state = {}


def keep_freed_memory() -> bool:
    """Set glibc's malloc thresholds once per process; whether they are set."""
    if "kept" not in _state:
        _state["kept"] = _set_thresholds()
    return _state["kept"]


def _set_thresholds() -> bool:
    if sys.platform != "linux":
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ValueError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 64 << 20))
