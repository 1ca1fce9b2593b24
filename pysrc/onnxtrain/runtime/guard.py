"""What a guarded training step needs of the state's arrays, on any provider: a snapshot of the arrays an
optimizer step writes, a count of their non-finite values after it, and the way back.

``HostGuard`` works on host arrays (the numpy provider, and providers that run on the host arrays in place).
``ResidentGuard`` works on a resident provider's buffers: each of its three actions is a small Program of the
provider's records (copies into or out of shadow residents, a counting kernel), so it joins the step's
submission, and only the count is read back, with the loss."""
from __future__ import annotations

import numpy as np

from ..ops import simd
from .allocate import allocate
from .program import Program, Storage
from .residency import Resident


def bad_values(array: np.ndarray) -> int:
    """How many values of ``array`` are NaN or infinite (0 for integer arrays)."""
    if array.dtype.kind not in "fc" or array.size == 0:
        return 0
    counted = simd.nonfinite(array)  # in the page: one SIMD pass instead of numpy's isfinite and a bool array
    if counted is not None:
        return counted
    finite = np.isfinite(array)
    return 0 if finite.all() else int(array.size - np.count_nonzero(finite))


class HostGuard:
    """The guard over host arrays: the snapshot is a copy kept between steps."""

    defers = False

    def __init__(self):
        self._buffers: list = []

    def snapshot(self, arrays: list) -> None:
        buffers = self._buffers
        if len(buffers) != len(arrays) or any(b.shape != a.shape or b.dtype != a.dtype
                                              for b, a in zip(buffers, arrays)):
            buffers[:] = [np.empty_like(a) for a in arrays]
        for buffer, array in zip(buffers, arrays):
            np.copyto(buffer, array)

    def restore(self, arrays: list) -> None:
        for buffer, array in zip(self._buffers, arrays):
            np.copyto(array, buffer)

    def count_nonfinite(self, arrays: list):
        counted = sum(bad_values(a) for a in arrays)
        return lambda: counted


class ResidentGuard:
    """The guard over a Residency's buffers, run as programs on its provider."""

    defers = True

    def __init__(self, residency):
        self.residency = residency
        self.provider = residency.provider
        self._shadows: dict = {}    # resident serial -> a Resident of its own (no host array) holding its snapshot
        self._runners: dict = {}    # (what, the residents' serials) -> the provider's runner of that program

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
            shadows = [self._shadow(r) for r in residents] if what != "count" else []
            steps, outputs = self.provider.guard_records([held(r) for r in residents], shadows, what)
            program = Program(steps, [], [], outputs)
            allocate(program)
            runner = self._runners[key] = self.provider.runner(program)
        return runner.run([], list(range(len(runner.program.outputs))), defer)

    def _shadow(self, r: Resident) -> Storage:
        shadow = self._shadows.get(r.serial)
        if shadow is None:
            buf = self.residency.device.buffer(r.buffer.size, "a step's snapshot")
            shadow = self._shadows[r.serial] = Resident(buf, r.shape, r.dtype)
        return held(shadow)


def held(r: Resident) -> Storage:
    """A resident as a program's storage."""
    return Storage(r.buffer.size, "resident", resident=r)
