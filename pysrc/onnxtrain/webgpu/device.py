"""The GPU in CPython: a WebGPU device from the ``wgpu`` package (the ``webgpu`` extra), and the run of a Program
on it.  In the page the same Programs run on ``navigator.gpu`` (web/lib/webgpu.mjs); both hosts do the same.

A run records its dispatches into the device's pending commands.  They are submitted when something must be
read back (an output someone asked for, or the inputs of a node that runs on the CPU), so a train step and the
optimizer step before it reach the GPU as one submission.
"""
from __future__ import annotations

import functools

import numpy as np

from ..runtime import runner
from ..runtime.runner import output_values, outputs_to_read
from .errors import GPUMemoryError, NoAdapterError
from .lowering import PARAMS_ALIGN, Copy, Dispatch, param_blocks
from .tensors import to_gpu_array


def _wgpu():
    try:
        import wgpu
    except ImportError as e:
        raise NoAdapterError("WebGPU in CPython needs the 'wgpu' package: pip install onnxtrain[webgpu]") from e
    return wgpu


class Device:
    def __init__(self, wgpu):
        self.wgpu = wgpu
        try:
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        except Exception as e:  # wgpu raises its own errors when no backend finds an adapter
            raise NoAdapterError(f"WebGPU: no adapter ({type(e).__name__}: {e})") from e
        if adapter is None:
            raise NoAdapterError("WebGPU: no adapter")
        self.adapter_info = dict(adapter.info)
        limits = {k.replace("_", "-"): v for k, v in adapter.limits.items()}
        wanted = {k: limits[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size",
                                         "max-storage-buffers-per-shader-stage", "max-compute-workgroup-storage-size",
                                         "max-compute-invocations-per-workgroup") if k in limits}
        self.device = adapter.request_device_sync(required_limits=wanted)
        self.limits = wanted
        self.queue = self.device.queue
        self._pipelines: dict = {}
        self._layouts: dict = {}
        self._encoder = None
        self._pass = None
        self._doomed: list = []
        self._probe = None
        self.bytes_held = 0
        self.submissions = 0

    # -- resources ------------------------------------------------------------------------------------

    def buffer(self, nbytes: int, what: str = "a tensor"):
        wgpu = self.wgpu
        nbytes = max(16, -(-int(nbytes) // 16) * 16)
        limit = self.limits.get("max-storage-buffer-binding-size")
        if limit is not None and nbytes > limit:
            raise GPUMemoryError(f"WebGPU: {what} needs a buffer of {nbytes} bytes, over this adapter's limit of "
                                 f"{limit} bytes per storage buffer")
        try:
            buf = self.device.create_buffer(size=nbytes, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                                            | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.UNIFORM)
        except Exception as e:
            raise GPUMemoryError(f"WebGPU: cannot allocate {nbytes} bytes for {what}: {e}") from e
        self.bytes_held += nbytes
        return buf

    def release(self, buf) -> None:
        self.bytes_held -= buf.size
        buf.destroy()

    def release_later(self, buf) -> None:
        """Release ``buf`` once the pending commands (which may use it) are submitted."""
        if self._encoder is None:
            self.release(buf)
        else:
            self._doomed.append(buf)

    def write(self, buf, data: np.ndarray) -> None:
        """Write ``data`` at the start of ``buf``, after the pending commands (a queue write would overtake
        them, so with commands pending the data goes through a staging buffer copied in order)."""
        if not data.nbytes:
            return
        if self._encoder is None:
            self.queue.write_buffer(buf, 0, data)
            return
        data = np.frombuffer(data.tobytes() + bytes(-data.nbytes % 4), np.uint8)
        staging = self.device.create_buffer_with_data(data=data, usage=self.wgpu.BufferUsage.COPY_SRC)
        self._end_pass()
        self._encoder.copy_buffer_to_buffer(staging, 0, buf, 0, data.nbytes)

    def pipeline(self, source: str, n_in: int, n_out: int):
        key = (source, n_in, n_out)
        found = self._pipelines.get(key)
        if found is None:
            layout = self._layout(n_in, n_out)
            module = self.device.create_shader_module(code=source)
            pipe = self.device.create_compute_pipeline(
                layout=self.device.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": "main"})
            found = self._pipelines[key] = (pipe, layout)
        return found

    def _layout(self, n_in: int, n_out: int):
        layout = self._layouts.get((n_in, n_out))
        if layout is None:
            wgpu = self.wgpu
            stage = wgpu.ShaderStage.COMPUTE
            entries = [{"binding": 0, "visibility": stage, "buffer": {"type": wgpu.BufferBindingType.uniform}}]
            entries += [{"binding": 1 + i, "visibility": stage,
                         "buffer": {"type": wgpu.BufferBindingType.read_only_storage if i < n_in
                                    else wgpu.BufferBindingType.storage}} for i in range(n_in + n_out)]
            layout = self._layouts[(n_in, n_out)] = self.device.create_bind_group_layout(entries=entries)
        return layout

    def bind_group(self, layout, params, params_offset: int, buffers: list, sizes: list):
        entries = [{"binding": 0, "resource": {"buffer": params, "offset": params_offset, "size": PARAMS_ALIGN}}]
        entries += [{"binding": 1 + i, "resource": {"buffer": b, "offset": 0, "size": -(-n // 4) * 4}}
                    for i, (b, n) in enumerate(zip(buffers, sizes))]
        return self.device.create_bind_group(layout=layout, entries=entries)

    # -- commands -------------------------------------------------------------------------------------

    def _encoder_(self):
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def _end_pass(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None

    def dispatch(self, pipeline, group, groups) -> None:
        if self._pass is None:
            self._pass = self._encoder_().begin_compute_pass()
        self._pass.set_pipeline(pipeline)
        self._pass.set_bind_group(0, group)
        self._pass.dispatch_workgroups(*groups)

    def copy(self, src, dst, nbytes: int) -> None:
        self._end_pass()
        self._encoder_().copy_buffer_to_buffer(src, 0, dst, 0, -(-nbytes // 4) * 4)

    def flush(self) -> None:
        """Submit the pending commands."""
        self._end_pass()
        if self._encoder is not None:
            self.queue.submit([self._encoder.finish()])
            self._encoder = None
            self.submissions += 1
        for buf in self._doomed:
            self.release(buf)
        self._doomed.clear()

    def finish(self) -> None:
        """Submit the pending commands and wait until the GPU has run them."""
        if self._probe is None:
            self._probe = self.buffer(16, "a completion probe")
        self.read([(self._probe, 4)])

    def read(self, buffers: list) -> list:
        """The bytes of ``[(buffer, nbytes)]``, after the pending commands: one submission."""
        return self.stage(buffers).result()

    def stage(self, buffers: list) -> "Staged":
        """Copy ``[(buffer, nbytes)]`` for reading after the pending commands, without submitting them."""
        wgpu = self.wgpu
        staging = []
        for buf, n in buffers:
            n = -(-max(n, 4) // 4) * 4
            s = self.device.create_buffer(size=n, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            self._end_pass()
            self._encoder_().copy_buffer_to_buffer(buf, 0, s, 0, n)
            staging.append(s)
        return Staged(self, staging)

    def clear(self, buf, nbytes: int) -> None:
        """Zero the first ``nbytes`` of ``buf``, in order with the pending commands."""
        self._end_pass()
        self._encoder_().clear_buffer(buf, 0, -(-nbytes // 4) * 4)


class Staged:
    """Bytes staged for reading: ``result()`` submits the pending commands (if not yet) and returns them."""

    def __init__(self, device: Device, staging: list):
        self.device, self.staging, self.out = device, staging, None

    def result(self) -> list:
        if self.out is None:
            self.device.flush()
            self.out = []
            for s in self.staging:
                s.map_sync(self.device.wgpu.MapMode.READ)
                self.out.append(bytes(s.read_mapped()))
                s.unmap()
                s.destroy()
        return self.out


class Runner(runner.Runner):
    """A Program bound to a device: its buffers, pipelines and bind groups, made once; ``run`` per step."""

    def __init__(self, program, provider):
        super().__init__(program, provider)
        device = self.device
        try:
            for i, b in enumerate(program.buffers):
                if b.kind == "resident":
                    self.buffers.append(None)
                    continue
                self.buffers.append(device.buffer(b.nbytes, f"buffer {i} of the program ({b.kind})"))
                if b.kind == "const":
                    device.write(self.buffers[-1], b.value)
            self._prepare()
        except Exception:
            self.release()
            raise

    def _prepare(self) -> None:
        device, program = self.device, self.program
        params, offsets = param_blocks(program)
        self.params = device.buffer(len(params), "the dispatches' parameters")
        device.write(self.params, np.frombuffer(params, np.uint8))
        self.written_residents = program.written_residents
        self.commands = []
        at = iter(offsets)
        for step in program.steps:
            if isinstance(step, Dispatch):
                pipe, layout = device.pipeline(step.source, len(step.inputs), len(step.outputs))
                group = device.bind_group(layout, self.params, next(at),
                                          [self._buffer(s) for s in step.inputs + step.outputs], step.sizes)
                self.commands.append(("dispatch", pipe, group, step.groups))
            elif isinstance(step, Copy):
                self.commands.append(("copy", step.src, step.dst, step.nbytes))
            else:
                self.commands.append(("host", step))

    def release(self) -> None:
        for b in self.buffers:
            if b is not None:
                self.device.release(b)
        self.buffers = []
        if getattr(self, "params", None) is not None:
            self.device.release(self.params)
            self.params = None

    def run(self, feeds: list, wanted: list, defer: bool = False):
        """Upload the feeds, record the program, and return the values of the outputs at ``wanted`` (indices
        into the graph's outputs): numpy arrays, read back in the one submission.  With ``defer``, return a
        function that gives them, so that more work can join the submission first."""
        device, program = self.device, self.program
        for pos, index, storage in program.feeds:
            value = feeds[pos] if index is None else feeds[pos][index]
            device.write(self.buffers[storage.index], to_gpu_array(np.asarray(value), "a fed value"))
        for command in self.commands:
            kind = command[0]
            if kind == "dispatch":
                device.dispatch(command[1], command[2], command[3])
            elif kind == "copy":
                device.copy(self._buffer(command[1]), self._buffer(command[2]), command[3])
            else:
                self._host(command[1])
        for storage in self.written_residents:
            storage.resident.device_newer = True
        outputs, reads = outputs_to_read(program, wanted)
        staged = device.stage([(self._buffer(t.storage), 4 * t.size) for t in reads]) if reads else None
        results = functools.partial(output_values, self.provider, staged, reads, outputs)
        return results if defer else results()
