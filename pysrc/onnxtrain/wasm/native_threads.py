"""One executor program run on several threads at once in CPython: the kernel pool's stand-in (web/lib/threads.mjs
runs the same entry, ``run_program_threads`` of web/kernels/program_threads.c, on its workers).

``threads - 1`` persistent daemon threads each call the kernel library's ``run_program_threads`` through ctypes,
which releases the GIL, so that the parts run concurrently; the calling thread runs part 0.  The workers wait for a
run, and the caller for the workers, in C (``program_threads_wait``: spinning briefly, then asleep on a futex),
never in Python, where a waiting thread would take the GIL from the others; inside the program the parts meet at
the C barrier.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from .native import library

RUNS, FINISHED = 0, 1      # the control words: runs posted, workers finished with the current run


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
        lib.program_threads_wait.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.program_threads_post.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.program_threads_post.restype = None
        self.threads = threads
        self.sync_words = int(lib.program_sync_words())
        self._fn, self._wait, self._post = fn, lib.program_threads_wait, lib.program_threads_post
        self._control = np.zeros(16, np.int32)
        self._words = [self._control.ctypes.data + 4 * i for i in (RUNS, FINISHED)]
        self._job = None                          # (words, n_words, buffers, sync) of the run under way
        self._closed = False
        self._workers = [threading.Thread(target=self._work, args=(part,), daemon=True,
                                          name=f"onnxtrain-program-part-{part}") for part in range(1, threads)]
        for worker in self._workers:
            worker.start()

    def _work(self, part: int) -> None:
        fn, wait, post, parts = self._fn, self._wait, self._post, self.threads
        runs, finished = self._words
        seen = 0
        while True:
            seen = wait(runs, seen)
            if self._closed:
                return
            words, n_words, buffers, sync = self._job
            fn(part, parts, words, n_words, buffers, sync)
            post(finished, 1)

    def run(self, words: int, n_words: int, buffers: int, sync: int) -> int:
        """Run the program (``words``: the address of its ``n_words`` int32 words; ``buffers``: of its pointer
        table; ``sync``: of a zeroed block of ``sync_words`` int32s, reused run after run) on every part; 0, or 1 +
        the index of the failing record, as ``run_program`` returns."""
        if self._closed:
            raise RuntimeError("NativeThreads: run after close()")
        runs, finished = self._words
        self._job = (words, n_words, buffers, sync)
        self._control[FINISHED] = 0               # every worker has finished the last run
        if self._workers:
            self._post(runs, 1)
        self._fn(0, self.threads, words, n_words, buffers, sync)
        done = int(self._control[FINISHED])
        while done != self.threads - 1:
            done = self._wait(finished, done)
        return ctypes.c_int.from_address(sync).value

    def close(self) -> None:
        """Stop the workers (call it between runs)."""
        if self._closed:
            return
        self._closed = True
        if self._workers:
            self._post(self._words[0], 1)
        for worker in self._workers:
            worker.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
