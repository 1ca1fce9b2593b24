"""Buffers for a program's storages: each feed, resident and constant its own; temporaries pooled, a buffer
reused once the values in it are dead (the steps after their last use)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np


@dataclass(eq=False)
class Buffer:
    """A physical buffer of the program."""
    nbytes: int
    kind: str                 # "temp", "feed", "resident", "const"
    value: np.ndarray | None = None
    resident: object = None


def allocate(program) -> None:
    """Set ``index`` on every storage the program uses and fill ``program.buffers``."""
    buffers = program.buffers
    first, last, order = {}, {}, []
    for i, step in enumerate(program.steps):
        for s in step.storages():
            if id(s) not in first:
                first[id(s)] = i
                order.append(s)
            last[id(s)] = i
    end = len(program.steps)
    for t in _flat(program.outputs):
        if t is not None and t.storage is not None:
            if id(t.storage) not in first:
                first[id(t.storage)] = end
                order.append(t.storage)
            last[id(t.storage)] = end
    for _, _, s in program.feeds:
        if id(s) not in first:
            order.append(s)

    def new(storage, kind) -> None:
        storage.index = len(buffers)
        buffers.append(Buffer(storage.nbytes, kind, storage.value, storage.resident))

    free: list = []        # (nbytes, buffer index), sorted
    dying: dict = {}       # step -> [buffer index]
    for s in sorted(order, key=lambda s: first.get(id(s), -1)):
        if s.kind != "temp":
            new(s, s.kind)
            continue
        start = first[id(s)]
        for step in sorted(k for k in dying if k < start):
            for b in dying.pop(step):
                bisect.insort(free, (buffers[b].nbytes, b))
        at = bisect.bisect_left(free, (s.nbytes, -1))
        if at < len(free) and free[at][0] <= 2 * s.nbytes:
            s.index = free.pop(at)[1]
        else:
            new(s, "temp")
        dying.setdefault(last[id(s)], []).append(s.index)


def _flat(values) -> list:
    return [t for v in values for t in (v if isinstance(v, list) else [v])]
