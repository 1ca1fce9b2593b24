"""A compiled Program placed in the kernel pool's memory (pool.py) and run by all the pool's threads at once
(``run_program_threads``: each record split over the threads or run by one, bit for bit as ``run_program``).

The program's words, pointer table, constants, feeds and temporaries lie in one block of the pool's memory, made
once; the state's arrays are residents there (runtime's Residency), so a step copies in only its feeds and out
only the outputs read.  Nodes without a C kernel run on the host between the executor's calls (their inputs read
out of the pool, their outputs written back).
"""
from __future__ import annotations

import numpy as np

from ..runtime import runner
from .native import KernelFailures, library, output_buffers, program_segments
from .pool import ALIGN, PoolBuffer


class PoolRunner(KernelFailures, runner.Runner):
    """A Program bound to a PoolDevice: its block laid out once, ``run`` per step."""

    def __init__(self, program, provider):
        super().__init__(program, provider)
        lib, ops = library()
        device, memory = self.device, self.device.memory
        self.segments = program_segments(program, ops)
        words = [s[1] for s in self.segments if s[0] == "calls"]
        sync_bytes = 4 * int(lib.program_sync_words())
        table_bytes = memory.pointer.itemsize * max(1, len(program.buffers))
        at = 0
        layout = []                                # per buffer its offset in the block (None: a resident)
        for b in program.buffers:
            layout.append(None if b.kind == "resident" else at)
            if b.kind != "resident":
                at += -(-b.nbytes // ALIGN) * ALIGN
        words_at = []
        for w in words:
            words_at.append(at)
            at += -(-w.nbytes // ALIGN) * ALIGN
        table_at, sync_at = at, at + -(-table_bytes // ALIGN) * ALIGN
        total = sync_at + -(-sync_bytes // ALIGN) * ALIGN
        self.block = device.buffer(total, f"a program of {len(program.steps)} steps and {len(program.buffers)} "
                                          "buffers")
        base = self.block.offset
        self.buffers = [None if off is None else PoolBuffer(base + off, b.nbytes)
                        for off, b in zip(layout, program.buffers)]
        table = np.zeros(max(1, len(program.buffers)), memory.pointer)
        for i, b in enumerate(program.buffers):
            table[i] = device.address(self._buffer_of(i))
        self.table_offset, self.sync_offset = base + table_at, base + sync_at
        copies = [(base + table_at, table), (base + sync_at, np.zeros(sync_bytes, np.uint8))]
        copies += [(self.buffers[i].offset, np.ascontiguousarray(b.value)) for i, b in enumerate(program.buffers)
                   if b.kind == "const"]
        runs = iter(zip(words_at, words))
        self.steps = []                            # ("calls", (words, n, table, sync) offsets, Calls), ("host", step)
        for kind, w, calls in self.segments:
            if kind == "host":
                self.steps.append(("host", w))
                continue
            offset, w = next(runs)
            copies.append((base + offset, w))
            self.steps.append(("calls", (base + offset, int(w.size), self.table_offset, self.sync_offset), calls))
        memory.put(copies)
        self.written_residents = program.written_residents
        self._fed: dict = {}                       # buffer index -> the array written into it last
        self._read_plans: dict = {}

    def _buffer_of(self, i: int) -> PoolBuffer:
        buf = self.buffers[i]
        return buf if buf is not None else self.program.buffers[i].resident.buffer

    def release(self) -> None:
        if self.block is not None:
            self.device.release(self.block)
            self.block = None
        self.buffers = []

    def view(self, t) -> np.ndarray:
        """A host copy of Tensor ``t``'s buffer, of its dtype and shape."""
        raw = self.storage_bytes(t.storage)
        return raw[:t.size * t.dtype.itemsize].view(t.dtype).reshape(t.shape)

    def storage_bytes(self, storage) -> np.ndarray:
        buf = self._buffer_of(storage.index)
        return self.device.read([(buf, buf.size)])[0]

    def _reads(self, wanted: list) -> tuple:
        """(the outputs at ``wanted``, the Tensors among them to read, their (offset, bytes)), made once per
        ``wanted``."""
        key = tuple(wanted)
        found = self._read_plans.get(key)
        if found is None:
            outputs, reads = runner.outputs_to_read(self.program, wanted)
            places = [(self._buffer_of(t.storage.index).offset, t.size * t.dtype.itemsize) for t in reads]
            found = self._read_plans[key] = (outputs, reads, places)
        return found

    def feed_copies(self, feeds: list) -> tuple:
        """(the (offset, array) copies that write ``feeds`` into their buffers, the fed arrays a record writes)."""
        copies, written = [], []
        provider = self.provider
        for pos, index, storage in self.program.feeds:
            value = feeds[pos] if index is None else feeds[pos][index]
            array = provider.held(np.asarray(value), "a fed value")
            i = storage.index
            copies.append((self.buffers[i].offset, array))
            self._fed[i] = value
            if storage.written and isinstance(value, np.ndarray) and value.flags.writeable:
                written.append((value, storage))
        return copies, written

    def bind_feeds(self, feeds: list) -> list:
        """Write ``feeds`` into their buffers now (as a run would), for runs without Python."""
        self.device.memory.put(self.feed_copies(feeds)[0])
        return []

    def run(self, feeds: list, wanted: list, defer: bool = False):
        """Write the feeds, run the program on the pool's threads, and return the outputs at ``wanted``."""
        memory = self.device.memory
        copies, written = self.feed_copies(feeds)
        outputs, reads, places = self._reads(wanted)
        places = places + [(self.buffers[s.index].offset, s.nbytes) for _, s in written]
        got = None
        for k, step in enumerate(self.steps):
            if step[0] == "host":
                memory.put(copies)
                copies = []
                self._host(step[1])
                continue
            last = k == len(self.steps) - 1            # the outputs come back with the last run's call
            failed, data = memory.step(copies, step[1], places if last else [])
            copies = []
            if failed:
                for s in self.written_residents:   # the records before the failing one have run
                    s.resident.device_newer = True
                raise self._failure(step[2][failed - 1])
            if last:
                got = data
        for s in self.written_residents:
            s.resident.device_newer = True
        if got is None:
            memory.put(copies)
            got = memory.take(places)
        for (array, _), raw in zip(written, got[len(reads):]):
            np.copyto(array, raw[:array.nbytes].view(array.dtype).reshape(array.shape))
        results = runner.values_of(self.provider, got, reads, outputs)
        return (lambda: results) if defer else results

    # -- a run without Python (onnxtrain.web.fast_steps) ------------------------------------------------

    def fixed(self):
        """The program as one executor call in the pool's memory, {"words", "n", "table", "sync", "pool"} (its
        addresses there), once every feed has been written; None when host nodes split it."""
        if len(self.steps) != 1 or self.steps[0][0] != "calls":
            return None
        if any(storage.index not in self._fed for _, _, storage in self.program.feeds):
            return None
        words, n, table, sync = self.steps[0][1]
        base = self.device.memory.base
        return {"words": base + words, "n": n, "table": base + table, "sync": base + sync, "pool": True}

    def _feed_storage(self, pos: int):
        return next(storage for p, index, storage in self.program.feeds if p == pos and index is None)

    def feed_shape(self, pos: int) -> tuple:
        array = np.asarray(self._fed[self._feed_storage(pos).index])
        return tuple(array.shape), array.dtype

    def feed_address(self, pos: int) -> int:
        """The pool address of graph input ``pos``'s buffer."""
        return self.device.address(self.buffers[self._feed_storage(pos).index])

    def address_of(self, array) -> int | None:
        """The pool address of the feed buffer last written from ``array`` (that very object), or None."""
        for _, _, storage in self.program.feeds:
            if self._fed.get(storage.index) is array:
                return self.device.address(self.buffers[storage.index])
        return None

    output_buffers = output_buffers

    def _located(self, t) -> tuple:
        return self.device.address(self._buffer_of(t.storage.index)), np.empty(t.shape, t.dtype)
