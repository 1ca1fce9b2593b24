"""The wasm execution provider: the C kernel table (registry.py, kernels/) and the kernel library's program
executor as runtime's host (native.py).  In this placement the state's arrays are fed in place by pointer, so the
provider keeps no residents and the step guard works on the host arrays."""
from __future__ import annotations

import sys

import numpy as np

from ..runtime.program import Storage, Tensor
from ..runtime.provider import Provider
from .errors import WasmError
from .lowering import Call, WasmLowering
from .registry import wasm_lookup


class WasmProvider(Provider):
    name = "wasm"
    title = "wasm"
    kernel_language = "C"
    compiles = True
    resident = False
    defers = False
    plans_instead = True
    Lowering = WasmLowering
    Error = WasmError

    def lookup(self, op_type: str, domain: str = ""):
        return wasm_lookup(op_type, domain)

    def runner(self, program):
        from .native import NativeRunner
        return NativeRunner(program, self)

    def split_runner(self, plan, feeds: list, model):
        from .batches import batch_runner
        return batch_runner(plan, feeds, self, model)

    def variant(self):
        from ..ops import simd
        return simd._threads if simd._pool is not None else 1

    def describe(self) -> dict:
        return {"executor": "run_program (web/kernels/executor.c)"}


WASM = WasmProvider()


_pooled: dict = {}   # the pool providers made, by their memory


def open_provider(threads: int = 0) -> WasmProvider:
    """The wasm provider; WasmError when the kernel library with the executor is not loaded here.  Where the page
    has a kernel pool and uses two or more of its threads, or in CPython when ``threads`` is two or more, it is
    placed in the pool's memory and runs each program on the threads (WasmPoolProvider); else it runs on one
    thread in the library's own memory."""
    from ..ops import simd
    from .native import library
    library()
    if simd._pool is not None:
        if simd._threads < 2 or not hasattr(simd._pool, "exchange"):
            return WASM
        key = ("page", id(simd._pool))
    elif threads >= 2 and sys.platform != "emscripten":
        key = ("native", int(threads))
    else:
        return WASM
    provider = _pooled.get(key)
    if provider is None:
        from .pool import NativeMemory, PageMemory
        memory = PageMemory(simd._pool) if key[0] == "page" else NativeMemory(int(threads))
        provider = _pooled[key] = WasmPoolProvider(memory)
    return provider


class WasmPoolProvider(WasmProvider):
    """The wasm provider placed in the kernel pool's memory (pool.py): every program runs on all the pool's
    threads at once, and the state's arrays are residents there, read back only when the state is read."""
    resident = True

    def __init__(self, memory):
        from .pool import PoolDevice
        self.device = PoolDevice(memory)

    def runner(self, program):
        from .pool_runner import PoolRunner
        return PoolRunner(program, self)

    def guard_records(self, residents: list, shadows: list, what: str) -> tuple:
        if what in ("snapshot", "restore"):
            pairs = zip(residents, shadows) if what == "snapshot" else zip(shadows, residents)
            return [Call("copy", [src], [dst], [min(src.nbytes, dst.nbytes)]) for src, dst in pairs], []
        counter = Tensor((1,), np.dtype(np.int32), Storage(4))
        calls = [Call("fill", [], [counter.storage], [4, 0])]
        for r in residents:
            n = int(np.prod(r.resident.shape, dtype=np.int64))
            if n and r.resident.dtype == np.float32:
                calls.append(Call("nonfinite", [r], [counter.storage], [n]))
        return calls, [counter]

    def describe(self) -> dict:
        return {"executor": "run_program_threads (web/kernels/program_threads.c)",
                "threads": self.device.memory.threads, "pool_bytes": self.device.bytes_held}
