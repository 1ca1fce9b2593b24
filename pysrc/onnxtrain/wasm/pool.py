"""The kernel pool's memory as runtime's device: where the wasm provider places a whole program (its temporaries,
constants, feeds, and the state's parameters, gradients and moments as residents) so that every thread of the
pool runs each record on the same memory, with no copies between records.

``PoolDevice`` allocates buffers (offsets from the memory's ``base``) and copies arrays in and out.  Its memory is
the page's kernel pool (``PageMemory``: the shared WebAssembly.Memory of web/lib/threads.mjs), or in CPython a
block of this process's memory whose programs run on native threads (``NativeMemory``, the pool's stand-in, which
runs the same kernels and the same executor).
"""
from __future__ import annotations

import bisect
import gc
import mmap
import weakref

import numpy as np

from .errors import WasmMemoryError

ALIGN = 64


class PoolBuffer:
    """A block of the pool's memory: ``offset`` from its base, ``size`` bytes.  One that PoolDevice allocated is
    freed when released or when nothing refers to it any more (as numpy's memory is)."""
    __slots__ = ("offset", "size", "_free", "__weakref__")

    def __init__(self, offset: int, size: int):
        self.offset, self.size, self._free = offset, size, None


class PoolDevice:
    """Buffers in a pool memory: first fit over the free blocks, neighbours merged when released."""

    def __init__(self, memory):
        self.memory = memory
        self._free: list = []     # (offset, size), by offset
        self._top = 0             # the end of what was ever allocated
        self.bytes_held = 0

    def address(self, buf: PoolBuffer) -> int:
        """Where the kernels see ``buf``."""
        return self.memory.base + buf.offset

    def buffer(self, nbytes: int, what: str = "a tensor") -> PoolBuffer:
        size = max(ALIGN, -(-int(nbytes) // ALIGN) * ALIGN)
        offset = self._first_fit(size)
        if offset is None and self.memory.reserve(self._top + size):
            offset, self._top = self._top, self._top + size
        if offset is None:
            gc.collect()                           # buffers of sessions dropped but not yet collected
            offset = self._first_fit(size)
        if offset is None:
            raise WasmMemoryError(f"the kernel pool's memory cannot hold {what} ({int(nbytes)} bytes beside the "
                                  f"{self.bytes_held} it holds, at most {self.memory.capacity}); nothing was run")
        self.bytes_held += size
        buf = PoolBuffer(offset, size)
        buf._free = weakref.finalize(buf, self._release, offset, size)
        return buf

    def _first_fit(self, size: int):
        for i, (offset, free) in enumerate(self._free):
            if free >= size:
                if free == size:
                    del self._free[i]
                else:
                    self._free[i] = (offset + size, free - size)
                return offset
        return None

    def release(self, buf: PoolBuffer) -> None:
        if buf._free is not None:
            buf._free()

    def _release(self, offset: int, size: int) -> None:
        self.bytes_held -= size
        free = self._free
        i = bisect.bisect(free, (offset, 0))
        if i < len(free) and free[i][0] == offset + size:
            size += free.pop(i)[1]
        if i and free[i - 1][0] + free[i - 1][1] == offset:
            offset, size = free[i - 1][0], free[i - 1][1] + size
            i -= 1
            free.pop(i)
        if offset + size == self._top:             # the end of what is in use comes down
            self._top = offset
        else:
            free.insert(i, (offset, size))

    release_later = release       # nothing runs after the call returns: the block is free at once

    def write(self, buf: PoolBuffer, data: np.ndarray) -> None:
        self.memory.put([(buf.offset, np.ascontiguousarray(data))])

    def read(self, buffers: list) -> list:
        """The bytes of each (buffer, nbytes), as uint8 arrays."""
        return self.memory.take([(buf.offset, int(nbytes)) for buf, nbytes in buffers])


class NativeMemory:
    """CPython's stand-in for the page's pool: a block of this process's memory (reserved, touched as used) and
    ``threads`` native threads running ``run_program_threads`` on it."""

    pointer = np.dtype(np.uint64)

    def __init__(self, threads: int, capacity: int = 1 << 31):
        from .native_threads import NativeThreads
        self.capacity = capacity
        self._map = mmap.mmap(-1, capacity + ALIGN)
        self._block = np.frombuffer(self._map, np.uint8)
        start = -self._block.ctypes.data % ALIGN
        self._block = self._block[start:start + capacity]
        self.base = int(self._block.ctypes.data)
        self.threads = int(threads)
        self._threads = NativeThreads(self.threads)

    @property
    def parts(self) -> int:
        """The threads a program runs on."""
        return self.threads

    def reserve(self, end: int) -> bool:
        return end <= self.capacity

    def put(self, copies: list) -> None:
        """Write each (offset, array) into the memory."""
        block = self._block
        for offset, array in copies:
            raw = array.reshape(-1).view(np.uint8)
            block[offset:offset + raw.size] = raw

    def take(self, reads: list) -> list:
        """Per (offset, nbytes) a copy of those bytes."""
        return [self._block[offset:offset + n].copy() for offset, n in reads]

    def step(self, copies: list, program, reads: list) -> tuple:
        """put(copies), run ``program`` ((words, n, table, sync) offsets) on the threads, take(reads): (the run's
        result, the bytes read)."""
        self.put(copies)
        words, n, table, sync = program
        base = self.base
        failed = self.run_at(base + words, n, base + table, base + sync)
        return failed, (self.take(reads) if not failed else [])

    def run_at(self, words: int, n: int, table: int, sync: int) -> int:
        """Run the program at these addresses on the threads (as the engine does in the page)."""
        return self._threads.run(words, n, table, sync)

    def close(self) -> None:
        self._threads.close()


class PageMemory:
    """The page's kernel pool (web/lib/threads.mjs's ``forPython``) seen from Pyodide: copies go between Pyodide's
    heap and the pool's shared memory in one call of the pool each (a descriptor of int32 words)."""

    pointer = np.dtype(np.uint32)

    def __init__(self, pool):
        self._pool = pool
        self.base = int(pool.base)
        self.capacity = int(pool.capacity)
        self.threads = int(pool.threads)

    @property
    def parts(self) -> int:
        """The threads a program runs on: those the page uses now (``simd.set_threads``)."""
        from ..ops import simd
        return simd._threads

    def reserve(self, end: int) -> bool:
        return bool(self._pool.reserve(end))

    def put(self, copies: list) -> None:
        self.step(copies, None, [])

    def take(self, reads: list) -> list:
        return self.step([], None, reads)[1]

    def step(self, copies: list, program, reads: list) -> tuple:
        if not (copies or program or reads):
            return 0, []
        arrays = [np.ascontiguousarray(a) for _, a in copies]
        out = [np.empty(n, np.uint8) for _, n in reads]
        words = [len(copies), len(reads), *(program or (0, 0, 0, 0)), self.parts if program else 0]
        for (offset, _), a in zip(copies, arrays):
            words += (a.__array_interface__["data"][0], offset, a.nbytes)
        for (offset, n), o in zip(reads, out):
            words += (offset, o.__array_interface__["data"][0], n)
        descriptor = np.array(words, np.int32)
        failed = int(self._pool.exchange(int(descriptor.__array_interface__["data"][0])))
        return failed, (out if not failed else [])
