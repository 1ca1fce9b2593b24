"""What the trainer's guarded step needs on the GPU: a snapshot of the arrays an optimizer step writes, a count of
their non-finite values after it, and the way back.  Each is a small Program (copies into or out of shadow
residents, counting dispatches), so both hosts run them as they run a graph's, and all of it joins the step's
one submission; only the count is read back, with the loss."""
from __future__ import annotations

import numpy as np

from .allocate import allocate
from .lowering import Copy, Dispatch, Lowering, pack_params
from .program import Program
from .residency import Resident
from .shaders import shader
from .tensors import Storage, Tensor


class DeviceGuard:
    def __init__(self, residency):
        self.residency = residency
        self._shadows: dict = {}    # resident serial -> a Resident of its own (no host array) holding its snapshot
        self._runners: dict = {}    # (what, the residents' serials) -> the device's runner of that program

    def snapshot(self, residents: list) -> None:
        self._run("snapshot", residents)

    def restore(self, residents: list) -> None:
        """Put back what ``snapshot`` kept; the host copies are stale until the state is read."""
        self._run("restore", residents)
        for r in residents:
            r.device_newer = True

    def count_nonfinite(self, residents: list):
        """A function giving how many NaN and infinite values the residents hold, read with the next read."""
        counted = self._run("count", residents, defer=True)
        return lambda: int(counted()[0].reshape(-1)[0])

    def _run(self, what: str, residents: list, defer: bool = False):
        key = (what, tuple(r.serial for r in residents))
        runner = self._runners.get(key)
        if runner is None:
            program = getattr(self, f"_{what}_program")(residents)
            allocate(program)
            runner = self._runners[key] = self.residency.device.runner(program)
        return runner.run([], list(range(len(runner.program.outputs))), defer)

    def _shadow(self, r) -> Storage:
        shadow = self._shadows.get(r.serial)
        if shadow is None:
            buf = self.residency.device.buffer(r.gpu_buffer.size, "a step's snapshot")
            shadow = self._shadows[r.serial] = Resident(buf, r.shape, r.dtype)
        return _held(shadow)

    def _snapshot_program(self, residents: list) -> Program:
        return Program([Copy(_held(r), self._shadow(r), r.gpu_buffer.size) for r in residents], [], [], [])

    def _restore_program(self, residents: list) -> Program:
        return Program([Copy(self._shadow(r), _held(r), r.gpu_buffer.size) for r in residents], [], [], [])

    def _count_program(self, residents: list) -> Program:
        counter = Tensor((1,), np.dtype(np.int32), Storage(4))
        steps = [Dispatch(shader("layout_fill", T="u32"), [], [counter.storage], pack_params([1, 0]), (1, 1, 1),
                          [4])]
        for r in residents:
            n = int(np.prod(r.shape, dtype=np.int64))
            if n and r.dtype == np.float32:
                steps.append(Dispatch(shader("nonfinite"), [_held(r)], [counter.storage], pack_params([n]),
                                      Lowering.grid(n), [4 * n, 4]))
        return Program(steps, [], [], [counter])


def _held(r) -> Storage:
    return Storage(r.gpu_buffer.size, "resident", resident=r)
