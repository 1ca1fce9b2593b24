"""One executor program run on several threads at once in CPython: the kernel pool's stand-in (web/lib/threads.mjs
runs the same entry, ``run_program_threads`` of web/kernels/program_threads.c, on its workers).

``threads - 1`` persistent daemon threads each call the kernel library's ``run_program_threads`` through ctypes,
which releases the GIL, so that the parts run concurrently; the calling thread runs part 0.  A run hands the
workers its addresses and wakes them through a lock each (a futex: no Python thread spins, since a spinning
thread would hold the GIL the others need to enter C); inside the program the parts meet at the C barrier.
"""
from __future__ import annotations

import ctypes
import threading

from .native import library


class NativeThreads:
    """``threads`` parts for ``run(words, n_words, buffers, sync)``: part 0 on the calling thread, the others on
    workers of this object's; one run at a time."""

    def __init__(self, threads: int):
        if threads < 1:
            raise ValueError(f"NativeThreads: threads must be at least 1, not {threads}")
        lib, _ = library()
        fn = lib.run_program_threads
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        fn.restype = None
        self.threads = threads
        self.sync_words = int(lib.program_sync_words())
        self._fn = fn
        self._job = None                          # (words, n_words, buffers, sync) of the run under way
        self._closed = False
        self._start = [threading.Lock() for _ in range(threads - 1)]   # released: go
        self._done = [threading.Lock() for _ in range(threads - 1)]    # released: the part has returned
        for lock in self._start + self._done:
            lock.acquire()
        self._workers = [threading.Thread(target=self._work, args=(part,), daemon=True,
                                          name=f"onnxtrain-program-part-{part}") for part in range(1, threads)]
        for worker in self._workers:
            worker.start()

    def _work(self, part: int) -> None:
        start, done, fn, parts = self._start[part - 1], self._done[part - 1], self._fn, self.threads
        while True:
            start.acquire()
            if self._closed:
                done.release()
                return
            words, n_words, buffers, sync = self._job
            fn(part, parts, words, n_words, buffers, sync)
            done.release()

    def run(self, words: int, n_words: int, buffers: int, sync: int) -> int:
        """Run the program (``words``: the address of its ``n_words`` int32 words; ``buffers``: of its pointer
        table; ``sync``: of a zeroed block of ``sync_words`` int32s, reused run after run) on every part; 0, or 1 +
        the index of the failing record, as ``run_program`` returns."""
        if self._closed:
            raise RuntimeError("NativeThreads: run after close()")
        self._job = (words, n_words, buffers, sync)
        for start in self._start:
            start.release()
        self._fn(0, self.threads, words, n_words, buffers, sync)
        for done in self._done:
            done.acquire()
        return ctypes.c_int.from_address(sync).value

    def close(self) -> None:
        """Stop the workers (after the run under way, if any)."""
        if self._closed:
            return
        self._closed = True
        for start in self._start:
            start.release()
        for done, worker in zip(self._done, self._workers):
            done.acquire()
            worker.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
