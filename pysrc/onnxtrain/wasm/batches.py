"""Forward programs split by the batch over the kernel pool's threads (a cross-origin isolated page): the program of
one sub-batch runs on every thread at once, each on its own rows, in the pool's shared memory (web/lib/threads.mjs's
``runProgram``).  Nothing reduces across rows in a forward pass, so each row is computed as the whole batch's run
computes it; embeddings of a backbone or an encoder scale with the threads.  Each run copies the constants, the
rows and the outputs between Pyodide's heap and the pool's memory: small against a backbone's arithmetic.

A graph is split only when it writes nothing in place (no training step: those keep one program, its reductions
over the batch in one order), draws nothing at random, every feed is an array of the same batch of at least two
rows that the threads divide evenly, and the sub-batch's program runs whole in the executor with every output
carrying the rows.
"""
from __future__ import annotations

import numpy as np

from ..ops import simd
from ..ops.registry import normalize_domain
from ..runtime.plan import IN_PLACE_OPS
from ..runtime.program import RANDOM_OPS, compile_program
from .errors import KernelInputError, WasmError
from .native import NativeRunner

ALIGN = 64


def batch_parts(plan, feeds: list) -> int:
    """How many sub-batches to run ``feeds`` as (0: one program, as usual)."""
    pool, threads = simd._pool, simd._threads
    if pool is None or threads < 2 or not hasattr(pool, "runProgram") or not feeds:
        return 0
    if any((normalize_domain(s.node.domain), s.node.op_type) in IN_PLACE_OPS or s.node.op_type in RANDOM_OPS
           for s in plan.steps):
        return 0
    if not all(type(f) is np.ndarray and f.ndim >= 1 for f in feeds):
        return 0
    rows = feeds[0].shape[0]
    if rows < 2 or any(f.shape[0] != rows for f in feeds):
        return 0
    parts = max(p for p in range(1, min(threads, rows) + 1) if rows % p == 0)
    return parts if parts > 1 else 0


def batch_runner(plan, feeds: list, provider, model):
    """A BatchRunner for ``feeds``, or None where the graph or the feeds do not split."""
    parts = batch_parts(plan, feeds)
    if not parts:
        return None
    rows = feeds[0].shape[0] // parts
    program = compile_program(plan, [f[:rows] for f in feeds], provider, model)
    sub = NativeRunner(program, provider)
    if len(sub.segments) != 1 or sub.segments[0][0] != "calls":
        return None
    if not all(not isinstance(t, list) and t.storage is not None and t.storage.kind in ("temp", "feed")
               and t.shape[:1] == (rows,) for t in program.outputs):
        return None
    return BatchRunner(sub, parts, rows)


class BatchRunner:
    """The program of ``rows`` rows run as ``parts`` sub-batches on the pool's threads, one call a run."""

    def __init__(self, sub: NativeRunner, parts: int, rows: int):
        self.sub, self.program, self.parts, self.rows = sub, sub.program, parts, rows
        program = sub.program
        at = 0

        def take(nbytes: int) -> int:
            nonlocal at
            start = at
            at += -(-int(nbytes) // ALIGN) * ALIGN
            return start
        words = sub.segments[0][1][0]
        self.words_at, self.n_words = take(words.nbytes), int(words.size)
        self.copies_in = [(int(words.ctypes.data), self.words_at, int(words.nbytes))]
        self._held = [words]   # what the copies read from, kept alive
        shared = {}   # buffer index -> its offset, for what all parts share (the constants)
        for i, b in enumerate(program.buffers):
            if b.kind == "const":
                raw = sub.raw[i]
                shared[i] = take(raw.nbytes)
                self.copies_in.append((int(raw.ctypes.data), shared[i], int(raw.nbytes)))
                self._held.append(raw)
        arena = sub.arena
        start = int(arena.ctypes.data) + (-int(arena.ctypes.data) % ALIGN)
        temps = {i: int(sub.raw[i].ctypes.data) - start for i, b in enumerate(program.buffers) if b.kind == "temp"}
        arena_bytes = arena.nbytes
        feeds = {storage.index: (pos, storage) for pos, index, storage in program.feeds}
        width = max(1, len(program.buffers))
        self.table_length = width
        self.tables_at = take(4 * width * parts)
        self.failed_at = take(4 * parts)
        tables = np.full((parts, width), -1, np.int32)
        self.part_feeds = []     # per part: (graph input, offset, bytes)
        self.part_arenas = []
        for p in range(parts):
            base = take(arena_bytes)
            self.part_arenas.append(base)
            for i, offset in shared.items():
                tables[p, i] = offset
            for i, offset in temps.items():
                tables[p, i] = base + offset
            for i, (pos, storage) in feeds.items():
                place = take(storage.nbytes)
                tables[p, i] = place
                self.part_feeds.append((p, pos, place))
        self.tables = tables
        self.copies_in.append((int(tables.ctypes.data), self.tables_at, int(tables.nbytes)))
        self.outputs = []        # per output: per part the offset its rows are read from
        for t in program.outputs:
            i = t.storage.index
            self.outputs.append([int(tables[p, i]) for p in range(parts)])
        self.total = at
        sub.release()          # its temporaries live in the pool's memory, not in Pyodide's heap

    def run(self, feeds: list, wanted: list, defer: bool = False):
        """The outputs at ``wanted`` for ``feeds`` (the whole batch), each thread computing its rows."""
        program, rows = self.program, self.rows
        arrays = [np.ascontiguousarray(f) for f in feeds]
        words = list(self.copies_in)
        for p, pos, place in self.part_feeds:
            a = arrays[pos]
            size = a[:rows].nbytes
            words.append((int(a.ctypes.data) + p * size, place, size))
        outputs = [np.empty((rows * self.parts,) + tuple(t.shape[1:]), t.dtype) for t in program.outputs]
        back = []
        for out, t, places in zip(outputs, program.outputs, self.outputs):
            size = t.size * t.dtype.itemsize
            back += [(place, int(out.ctypes.data) + p * size, size) for p, place in enumerate(places)]
        descriptor = np.array([self.total, self.parts, len(words), len(back), self.words_at, self.n_words,
                               self.tables_at, self.table_length, self.failed_at]
                              + [w for c in words for w in c] + [w for c in back for w in c], np.int64)
        if descriptor.min() < -2 ** 31 or descriptor.max() >= 2 ** 31:
            raise WasmError("a split program's buffers do not fit in 32-bit addresses")
        descriptor = descriptor.astype(np.int32)
        failed = int(simd._pool.runProgram(simd._c(int(descriptor.ctypes.data)), self.parts))
        if failed < 0:
            raise WasmError(f"the kernel pool's memory cannot hold a split program of {self.total} bytes")
        if failed:
            raise KernelInputError(f"the C kernel of record {failed - 1} of a split program found bad input")
        results = [outputs[i] for i in wanted]
        return (lambda: results) if defer else results

    def release(self) -> None:
        self._held = []
