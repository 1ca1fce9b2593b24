"""The wasm execution provider: the C kernel table (registry.py, kernels/) and the kernel library's program
executor as runtime's host (native.py).  In this placement the state's arrays are fed in place by pointer, so the
provider keeps no residents and the step guard works on the host arrays."""
from __future__ import annotations

from ..runtime.provider import Provider
from .errors import WasmError
from .lowering import WasmLowering
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


def open_provider() -> WasmProvider:
    """The wasm provider; WasmError when the kernel library with the executor is not loaded here."""
    from .native import library
    library()
    return WASM
