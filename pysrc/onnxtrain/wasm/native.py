"""The wasm provider's host where the kernel library is loaded with ctypes (the native build in CPython; the side
module in Pyodide's heap): a compiled Program bound to the arena of its temporaries and a table of buffer
pointers, run as one ``run_program`` call per segment between host nodes.

The fed arrays (the batch, and the state's parameters, gradients and moments) are used in place: their addresses
go into the pointer table each run, so in-place ops update the caller's arrays and nothing is copied in or out but
the outputs.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..ops import simd
from ..ops.registry import normalize_domain
from ..runtime import runner
from ..runtime.execute import run_error
from ..runtime.plan import IN_PLACE_OPS, describe_node
from .errors import KernelInputError, WasmError, WasmMemoryError
from .fuse import fuse_gradient_gemms
from .lowering import Call

ALIGN = 64   # bytes between the arena's buffers

_library: dict = {}


def library():
    """(the loaded kernel library, {op name: id}) from ops/simd.py's library, which has set gemm's scratch."""
    lib = simd._lib
    if lib is None or not simd.available():
        raise WasmError("the wasm provider runs on onnxtrain's kernel library, which is not loaded here, or turned "
                        "off (in CPython build it with `python3 build.py native`, and leave ONNXTRAIN_NATIVE unset "
                        "or 1)")
    found = _library.get(id(lib))
    if found is None:
        if not hasattr(lib, "run_program"):
            raise WasmError("the loaded kernel library predates the program executor (web/kernels/executor.c): "
                            "rebuild it (`python3 build.py native`)")
        lib.executor_op_name.restype = ctypes.c_char_p
        ops = {lib.executor_op_name(i).decode(): i for i in range(lib.executor_op_count())}
        found = _library[id(lib)] = (lib, ops)
    return found


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def program_segments(program, ops: dict) -> list:
    """The program as ("calls", its words (int32), the Calls) for each run of executor calls between host nodes,
    and ("host", the HostStep, None) for each host node, in order."""
    segments, calls = [], []
    for step in fuse_gradient_gemms(program.steps, program.outputs) + [None]:
        if isinstance(step, Call):
            calls.append(step)
            continue
        if calls:
            segments.append(("calls", np.array([w for c in calls for w in c.words(ops)], np.int32), calls))
            calls = []
        if step is not None:
            segments.append(("host", step, None))
    return segments


def output_buffers(runner, wanted: list) -> list:
    """Per graph output at ``wanted``: ``runner._located(t)`` of its Tensor (its buffer's address, and an array of
    its shape and dtype), or (None, its value) for an output known before the run."""
    out = []
    for i in wanted:
        t = runner.program.outputs[i]
        if isinstance(t, list) or t.storage is None or t.storage.kind == "const":
            out.append((None, None if isinstance(t, list) else t.value))
        else:
            out.append(runner._located(t))
    return out


class KernelFailures:
    """The error of an executor call that found bad input, for a runner with ``view(tensor)`` and
    ``storage_bytes(storage)`` (a buffer's bytes, uint8)."""

    def _failure(self, call: Call) -> Exception:
        """The error the call's node's numpy kernel raises on the same inputs (a RunError naming the node and its
        inputs, as the numpy provider's), else a KernelInputError."""
        origin = getattr(call, "origin", None)
        if origin is not None:
            step, args = origin
            in_place = (normalize_domain(step.node.domain), step.node.op_type) in IN_PLACE_OPS
            values = runner.host_arguments(step.node, args, lambda t: self.view(t).copy() if in_place
                                           else self.view(t))
            try:
                with np.errstate(all="ignore"):
                    step.fn(*values, **step.kwargs)
            except Exception as e:
                error = run_error(step, values, e)
                error.__cause__ = e
                return error
        return KernelInputError(self._described(call))

    def _described(self, call: Call) -> str:
        where = describe_node(call.node) if call.node is not None else call.op
        if call.op in ("softmax_ce", "softmax_ce_grad"):
            labels = call.inputs[1 if call.op == "softmax_ce" else 2]
            classes, has_ignore = call.params[1], call.params[3]
            ignore = (call.params[5] << 32) | (call.params[4] & 0xFFFFFFFF)
            raw = self.storage_bytes(labels)
            values = raw[:raw.size - raw.size % 8].view(np.int64)[:call.params[0]]
            bad = values[((values < 0) | (values >= classes)) & ~((values == ignore) & bool(has_ignore))]
            label = int(bad[0]) if bad.size else "?"
            return (f"{where}: label {label} is outside [0, {classes})"
                    + (f" and is not ignore_index={ignore}" if has_ignore else ""))
        if call.op == "maxpool_grad":
            return f"{where}: an index of the pooling's indices lies outside its input"
        return f"{where}: the C kernel ({call.op}) found bad input"


class NativeRunner(KernelFailures, runner.Runner):
    """A Program bound to the kernel library: its buffers made once, ``run`` per step."""

    def __init__(self, program, provider):
        super().__init__(program, provider)
        self.lib, ops = library()
        count = len(program.buffers)
        self.table = (ctypes.c_void_p * max(1, count))()
        self.raw: list = [None] * count          # per buffer its bytes, a flat uint8 array
        self._fed: list = [None] * count         # the array fed into each feed buffer last
        self._arena(program)
        for i, b in enumerate(program.buffers):
            if b.kind == "const":
                self._bind(i, np.ascontiguousarray(b.value))
            elif b.kind == "resident":
                raise WasmError("the wasm provider in this process feeds the state's arrays in place, not as "
                                "residents")
        self.segments = [("calls", (words, ctypes.c_void_p(_address(words)), len(words)), calls)
                         if kind == "calls" else (kind, words)
                         for kind, words, calls in program_segments(program, ops)]
        self._read_plans: dict = {}

    def _arena(self, program) -> None:
        """One block for the temporaries, each buffer ALIGN-aligned in it."""
        offsets, total = {}, 0
        for i, b in enumerate(program.buffers):
            if b.kind == "temp":
                offsets[i] = total
                total += -(-b.nbytes // ALIGN) * ALIGN
        try:
            if total + ALIGN > np.iinfo(np.intp).max:   # wasm32: numpy's arrays stop at 2 GiB
                raise MemoryError
            block = np.empty(total + ALIGN, np.uint8)
        except (MemoryError, ValueError):               # ValueError: numpy's "array is too big"
            raise WasmMemoryError(self._too_big(program, total)) from None
        start = -_address(block) % ALIGN
        self.arena = block
        for i, at in offsets.items():
            self._bind(i, block[start + at:start + at + program.buffers[i].nbytes])

    def _too_big(self, program, total: int) -> str:
        largest, name = 0, "?"
        for step in program.steps:
            tensors = step.tensors if isinstance(step, Call) else [t for out in step.outputs if out is not None
                                                                    for t in (out if isinstance(out, list) else [out])]
            for t in tensors:
                if t.storage is not None and t.storage.kind == "temp" and t.storage.nbytes > largest:
                    node = step.node
                    largest, name = t.storage.nbytes, f"{t.describe()}, an output of {describe_node(node)}"
        return (f"the wasm provider cannot allocate {total} bytes for the program's temporaries (the largest, "
                f"{largest} bytes: {name}); nothing was run")

    def _bind(self, i: int, array: np.ndarray) -> None:
        self.raw[i] = array.reshape(-1).view(np.uint8)
        self.table[i] = _address(array) if array.size else None

    def view(self, t) -> np.ndarray:
        """The buffer of Tensor ``t`` as a numpy array of its dtype and shape (no copy)."""
        raw = self.raw[t.storage.index]
        return raw[:t.size * t.dtype.itemsize].view(t.dtype).reshape(t.shape)

    def _reads(self, wanted: list) -> tuple:
        """(the outputs at ``wanted``, per Tensor to read its (buffer, bytes, dtype, shape)), made once per
        ``wanted``."""
        key = tuple(wanted)
        found = self._read_plans.get(key)
        if found is None:
            outputs, reads = runner.outputs_to_read(self.program, wanted)
            found = self._read_plans[key] = (outputs, {id(t): (t.storage.index, t.size * t.dtype.itemsize,
                                                                t.dtype, t.shape) for t in reads})
        return found

    def release(self) -> None:
        self.arena = None
        self.raw = []

    # -- a run without Python (onnxtrain.web.fast_steps) ------------------------------------------------

    def fixed(self):
        """The program as one executor call on fixed addresses, {"words", "n", "table"}, while every feed is the
        array bound last (in place, not a copy); None when host nodes split it."""
        if len(self.segments) != 1 or self.segments[0][0] != "calls":
            return None
        if any(self._fed[storage.index] is None for _, _, storage in self.program.feeds):
            return None
        words, address, count = self.segments[0][1]
        return {"words": int(address.value), "n": int(count), "table": ctypes.addressof(self.table)}

    def _feed_storage(self, pos: int):
        return next(storage for p, index, storage in self.program.feeds if p == pos and index is None)

    output_buffers = output_buffers

    def feed_shape(self, pos: int) -> tuple:
        """(shape, dtype) of the array bound last for graph input ``pos``."""
        array = self._fed[self._feed_storage(pos).index]
        return tuple(array.shape), array.dtype

    def _located(self, t) -> tuple:
        return int(self.table[t.storage.index] or 0), self.view(t)

    def bind_feeds(self, feeds: list) -> list:
        """Put the feeds' addresses into the pointer table (an array not C-contiguous and aligned, or written but
        read-only, as a copy); the (array, copy) pairs to write back after the run."""
        program = self.program
        write_back = []
        for pos, index, storage in program.feeds:
            value = feeds[pos] if index is None else feeds[pos][index]
            i = storage.index
            if value is self._fed[i]:
                continue
            array = value if isinstance(value, np.ndarray) else np.asarray(value)
            if not (array.flags.c_contiguous and array.flags.aligned) or (storage.written
                                                                          and not array.flags.writeable):
                copy = np.ascontiguousarray(array).copy()
                if storage.written:
                    write_back.append((array, copy))
                self._fed[i] = None
                self._bind(i, copy)
                continue
            self._fed[i] = value
            self._bind(i, array)
        return write_back

    def run(self, feeds: list, wanted: list, defer: bool = False):
        """Bind the feeds, run the program, and return the values of the outputs at ``wanted`` (indices into the
        graph's outputs) as numpy arrays."""
        program = self.program
        write_back = self.bind_feeds(feeds)
        table = ctypes.byref(self.table)
        for segment in self.segments:
            if segment[0] == "host":
                self._host(segment[1])
                continue
            (_, words, count), calls = segment[1], segment[2]
            failed = self.lib.run_program(words, count, table)
            if failed:
                raise self._failure(calls[failed - 1])
        for array, copy in write_back:
            np.copyto(array, copy.reshape(array.shape))
        outputs, reads = self._reads(wanted)
        raw = self.raw

        def value(t):
            read = reads.get(id(t))
            if read is None:
                return t.value.copy()
            index, nbytes, dtype, shape = read
            return raw[index][:nbytes].view(dtype).reshape(shape).copy()
        results = [[value(t) for t in out] if isinstance(out, list) else value(out) for out in outputs]
        return (lambda: results) if defer else results

    def storage_bytes(self, storage) -> np.ndarray:
        return self.raw[storage.index]

    def _host(self, step) -> None:
        """A node without a C kernel: its inputs as numpy views of the buffers (known values as they are), the
        numpy kernel, its outputs copied into their buffers."""
        for t, x in runner.host_results(self.provider, step, runner.host_arguments(step.node, step.inputs,
                                                                                   self.view)):
            np.copyto(self.view(t), x, casting="unsafe")
