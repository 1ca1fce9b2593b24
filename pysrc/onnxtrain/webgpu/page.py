"""The GPU in the page: the same Programs, run on ``navigator.gpu`` by web/lib/webgpu.mjs in the engine's worker
(which registers it as the Python module ``_onnxtrain_webgpu``).  ``PageDevice`` and ``PageRunner`` have the
interface of device.py's ``Device`` and ``Runner``; provider.py's ``open_provider()`` gives a PageDevice under
Pyodide.

A program is sent to the page once (``program_wire``: a JSON description and the bytes of its constants and
parameter blocks); each run is then one call into JavaScript, which writes the feeds, records every dispatch into
one command encoder and, when outputs are wanted, submits once and reads them back.  Python waits for that read
(a Promise) with ``pyodide.ffi.run_sync``: this needs JSPI (WebAssembly stack switching, in Chromium 137 and
later) and Python entered through ``callPromising`` or ``runPythonAsync``, as the engine does.  A program with
nodes on the CPU runs in segments, one call each, with the reads and writes of those nodes between them.
"""
from __future__ import annotations

import functools
import json

import numpy as np

from ..runtime.program import HostStep
from ..runtime.runner import Runner, output_values, outputs_to_read
from .errors import GPUMemoryError, NoAdapterError, WebGPUError
from .lowering import PARAMS_ALIGN, Copy, Dispatch, param_blocks
from .tensors import gtype

JS_MODULE = "_onnxtrain_webgpu"
_shared: dict = {}


def program_wire(program) -> tuple:
    """``program`` as (description, bytes): the description is JSON-able and refers to the bytes by [offset,
    length].  Shaders are listed once; buffers by index (a resident by its page handle); dispatches with their
    shader, (inputs, outputs) count, bound buffer indices and byte sizes, parameter block offset and workgroups;
    copies as [src, dst, nbytes]; the steps split into segments by the nodes that run on the CPU."""
    blob = bytearray()

    def put(data: bytes) -> list:
        at = len(blob)
        blob.extend(data)
        blob.extend(bytes(-len(blob) % 4))
        return [at, len(data)]

    buffers = []
    for b in program.buffers:
        entry = {"nbytes": b.nbytes, "kind": b.kind}
        if b.kind == "resident":
            entry["resident"] = b.resident.buffer.handle
        elif b.kind == "const":
            entry["const"] = put(np.ascontiguousarray(b.value).tobytes())
        buffers.append(entry)
    shaders: dict = {}
    params, offsets = param_blocks(program)
    at = iter(offsets)
    segments: list = [[]]
    for step in program.steps:
        if isinstance(step, Dispatch):
            segments[-1].append({"shader": shaders.setdefault(step.source, len(shaders)),
                                 "io": [len(step.inputs), len(step.outputs)],
                                 "bind": [s.index for s in step.inputs + step.outputs], "sizes": list(step.sizes),
                                 "params": next(at), "groups": list(step.groups)})
        elif isinstance(step, Copy):
            segments[-1].append({"copy": [step.src.index, step.dst.index, step.nbytes]})
        else:
            segments.append([])

    def output(t):
        if isinstance(t, list):
            return [output(x) for x in t]
        return {"buffer": None if t.storage is None else t.storage.index, "shape": list(t.shape),
                "dtype": t.dtype.name, "type": gtype(t)}
    return ({"shaders": list(shaders), "buffers": buffers, "params": put(params), "segments": segments,
             "feeds": [{"buffer": s.index, "input": pos, "item": item} for pos, item, s in program.feeds],
             "outputs": [output(t) for t in program.outputs]}, bytes(blob))


def _js_module():
    try:
        import _onnxtrain_webgpu
    except ImportError as e:
        raise NoAdapterError("WebGPU in the page needs onnxtrain's engine worker (web/lib/engine.mjs), which "
                             "provides its host") from e
    return _onnxtrain_webgpu


def _check_suspendable() -> None:
    from pyodide.ffi import can_run_sync
    if can_run_sync():
        return
    import pyodide_js
    if not getattr(pyodide_js._module, "jspiSupported", False):
        raise NoAdapterError("WebGPU in the page needs JSPI (WebAssembly stack switching) to wait for the GPU, and "
                             "this browser lacks it")
    raise WebGPUError("WebGPU in the page waits for the GPU with pyodide.ffi.run_sync: Python has to be entered "
                      "through callPromising or runPythonAsync (as onnxtrain's engine does)")


def _wait(promise):
    """The value of a JavaScript Promise, waited for (JSPI)."""
    from pyodide.ffi import JsException, run_sync
    try:
        return run_sync(promise)
    except JsException as e:
        raise WebGPUError(str(e)) from e


def open_page_device() -> "PageDevice":
    """The worker's WebGPU device (made on first use)."""
    if "device" not in _shared:
        js = _js_module()
        _check_suspendable()
        _shared["device"] = PageDevice(js)
    return _shared["device"]


def _held(nbytes: int) -> int:
    return max(16, -(-int(nbytes) // 16) * 16)


class PageBuffer:
    """A GPU buffer of the page, by handle."""
    __slots__ = ("handle", "size")

    def __init__(self, handle: int, size: int):
        self.handle, self.size = handle, size


class PageStaged:
    """Bytes staged for reading in the page: ``result()`` submits the pending commands (if not yet) and gives
    them."""

    def __init__(self, device: "PageDevice", stage: int, sizes: list):
        self.device, self.stage, self.sizes, self.out = device, stage, sizes, None

    def result(self) -> list:
        if self.out is None:
            self.out = _split(_wait(self.device.js.collect(self.stage)).to_bytes(), self.sizes)
        return self.out


def _split(data: bytes, sizes: list) -> list:
    out, at = [], 0
    for n in sizes:
        out.append(data[at:at + n])
        at += -(-max(n, 4) // 4) * 4
    return out


class PageDevice:
    def __init__(self, js):
        info = json.loads(_wait(js.open()))
        if "error" in info:
            raise NoAdapterError(f"WebGPU: {info['error']}")
        self.js = js
        self.limits = info.pop("limits")
        self.adapter_info = info
        self.bytes_held = 0

    @property
    def submissions(self) -> int:
        return json.loads(self.js.stats())["submissions"]

    @property
    def bridge_calls(self) -> int:
        """Calls from Python into the page's WebGPU host so far."""
        return json.loads(self.js.stats())["calls"]

    def check(self, nbytes: int, what: str) -> int:
        nbytes = _held(nbytes)
        limit = self.limits.get("max-storage-buffer-binding-size")
        if limit is not None and nbytes > limit:
            raise GPUMemoryError(f"WebGPU: {what} needs a buffer of {nbytes} bytes, over this adapter's limit of "
                                 f"{limit} bytes per storage buffer")
        return nbytes

    def buffer(self, nbytes: int, what: str = "a tensor") -> PageBuffer:
        nbytes = self.check(nbytes, what)
        buf = PageBuffer(self.js.buffer(nbytes), nbytes)
        self.bytes_held += nbytes
        return buf

    def release(self, buf: PageBuffer) -> None:
        self.bytes_held -= buf.size
        self.js.release(buf.handle)

    def release_later(self, buf: PageBuffer) -> None:
        """Release ``buf`` once the pending commands (which may use it) are submitted."""
        self.bytes_held -= buf.size
        self.js.releaseLater(buf.handle)

    def write(self, buf: PageBuffer, data: np.ndarray) -> None:
        """Write ``data`` at the start of ``buf``, after the pending commands."""
        if data.nbytes:
            self.js.write(buf.handle, np.ascontiguousarray(data))

    def copy(self, src: PageBuffer, dst: PageBuffer, nbytes: int) -> None:
        self.js.copy(src.handle, dst.handle, nbytes)

    def clear(self, buf: PageBuffer, nbytes: int) -> None:
        self.js.clear(buf.handle, nbytes)

    def flush(self) -> None:
        """Submit the pending commands."""
        self.js.flush()

    def stage(self, buffers: list) -> PageStaged:
        """Copy ``[(buffer, nbytes)]`` for reading after the pending commands, without submitting them."""
        from pyodide.ffi import to_js
        sizes = [int(n) for _, n in buffers]
        return PageStaged(self, self.js.stage(to_js([b.handle for b, _ in buffers]), to_js(sizes)), sizes)

    def read(self, buffers: list) -> list:
        """The bytes of ``[(buffer, nbytes)]``, after the pending commands: one submission."""
        from pyodide.ffi import to_js
        if not buffers:
            return []
        sizes = [int(n) for _, n in buffers]
        data = _wait(self.js.read(to_js([b.handle for b, _ in buffers]), to_js(sizes)))
        return _split(data.to_bytes(), sizes)

    def finish(self) -> None:
        """Submit the pending commands and wait until the GPU has run them."""
        if "probe" not in _shared:
            _shared["probe"] = self.buffer(16, "a completion probe")
        self.read([(_shared["probe"], 4)])


class PageRunner(Runner):
    """A Program in the page: made there once; ``run`` is one call into the page per segment.  The nodes on the
    host between segments run as runtime's Runner runs them (``_host``, inherited)."""

    def __init__(self, program, provider):
        from pyodide.ffi import to_js  # noqa: F401  (fails early outside Pyodide)
        super().__init__(program, provider)
        device, self.id = self.device, None
        sizes = [None if b.kind == "resident" else device.check(b.nbytes, f"buffer {i} of the program ({b.kind})")
                 for i, b in enumerate(program.buffers)]
        desc, blob = program_wire(program)
        self.id, handles = device.js.program(json.dumps(desc), blob).to_py()
        self.buffers = [None if h is None else PageBuffer(h, n) for h, n in zip(handles, sizes)]
        self.held = sum(n for n in sizes if n is not None) + _held(max(desc["params"][1], PARAMS_ALIGN))
        device.bytes_held += self.held
        self.hosts = [s for s in program.steps if isinstance(s, HostStep)]
        self.written_residents = program.written_residents
        self.params = None

    def release(self) -> None:
        if self.id is not None:
            self.device.js.releaseProgram(self.id)
            self.device.bytes_held -= self.held
            self.id, self.buffers = None, []

    def run(self, feeds: list, wanted: list, defer: bool = False):
        """As device.py's Runner.run: the values of the outputs at ``wanted``, read back in one submission (with
        ``defer``, a function that gives them)."""
        from pyodide.ffi import to_js
        from .tensors import to_gpu_array
        device, program = self.device, self.program
        arrays = [to_gpu_array(np.asarray(feeds[pos] if index is None else feeds[pos][index]), "a fed value")
                  for pos, index, _ in program.feeds]
        blob = np.concatenate([a.reshape(-1).view(np.uint8) for a in arrays]) if arrays else None
        blob_sizes = to_js([a.nbytes for a in arrays])
        outputs, reads = outputs_to_read(program, wanted)
        for k, step in enumerate(self.hosts):
            device.js.run(self.id, k, blob if k == 0 else None, blob_sizes, None, None, False)
            self._host(step)
        sizes = [4 * t.size for t in reads]
        result = device.js.run(self.id, len(self.hosts), None if self.hosts else blob, blob_sizes,
                               to_js([self._buffer(t.storage).handle for t in reads]), to_js(sizes), defer)
        for storage in self.written_residents:
            storage.resident.device_newer = True
        staged = None
        if reads:
            staged = PageStaged(device, result, sizes)
            if not defer:
                staged.out = _split(_wait(result).to_bytes(), sizes)

        results = functools.partial(output_values, self.provider, staged, reads, outputs)
        return results if defer else results()
