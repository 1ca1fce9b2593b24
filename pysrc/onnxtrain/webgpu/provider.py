"""The WebGPU execution provider: the WGSL kernel table and the GPU as runtime's host, on ``wgpu`` in CPython
(device.py) or ``navigator.gpu`` in the page (page.py)."""
from __future__ import annotations

import sys
import threading

import numpy as np

from ..runtime.program import Storage, Tensor
from ..runtime.provider import Provider
from .errors import WebGPUError
from .lowering import Copy, Dispatch, GPULowering, pack_params
from .registry import gpu_lookup
from .shaders import shader
from .tensors import from_gpu_bytes, gpu_nbytes, to_gpu_array

_shared: dict = {}
_lock = threading.Lock()


class WebGPUProvider(Provider):
    name = "webgpu"
    title = "WebGPU"
    kernel_language = "WGSL"
    compiles = resident = defers = True
    Lowering = GPULowering
    Error = WebGPUError

    def __init__(self, device):
        self.device = device

    def lookup(self, op_type: str, domain: str = ""):
        return gpu_lookup(op_type, domain)

    def nbytes(self, shape, dtype) -> int:
        return gpu_nbytes(shape, dtype)

    def held(self, array: np.ndarray, what: str) -> np.ndarray:
        return to_gpu_array(array, what)

    def from_held(self, data, dtype, shape) -> np.ndarray:
        return from_gpu_bytes(data, dtype, shape)

    def runner(self, program):
        if sys.platform == "emscripten":
            from .page import PageRunner
            return PageRunner(program, self)
        from .device import Runner
        return Runner(program, self)

    def guard_records(self, residents: list, shadows: list, what: str) -> tuple:
        if what == "snapshot":
            return [Copy(r, s, r.nbytes) for r, s in zip(residents, shadows)], []
        if what == "restore":
            return [Copy(s, r, r.nbytes) for r, s in zip(residents, shadows)], []
        counter = Tensor((1,), np.dtype(np.int32), Storage(4))
        steps = [Dispatch(shader("layout_fill", T="u32"), [], [counter.storage], pack_params([1, 0]), (1, 1, 1),
                          [4])]
        for r in residents:
            resident = r.resident
            n = int(np.prod(resident.shape, dtype=np.int64))
            if n and resident.dtype == np.float32:
                steps.append(Dispatch(shader("nonfinite"), [r], [counter.storage], pack_params([n]),
                                      GPULowering.grid(n), [4 * n, 4]))
        return steps, [counter]

    def describe(self) -> dict:
        info = self.device.adapter_info
        adapter = info.get("device") or " ".join(str(info[k]) for k in ("vendor", "architecture") if info.get(k))
        return {"adapter": adapter, "submissions": self.device.submissions,
                "bridge_calls": getattr(self.device, "bridge_calls", 0)}


def open_provider() -> WebGPUProvider:
    """The process's WebGPU provider (its device made on first use): ``wgpu`` in CPython, the page's
    ``navigator.gpu`` under Pyodide."""
    with _lock:
        if "provider" not in _shared:
            if sys.platform == "emscripten":
                from .page import open_page_device
                device = open_page_device()
            else:
                from .device import Device, _wgpu
                device = Device(_wgpu())
            _shared["provider"] = WebGPUProvider(device)
        return _shared["provider"]
