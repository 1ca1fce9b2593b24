"""What the trainer's guarded step needs on the GPU: a snapshot of the arrays an optimizer step writes (buffer
copies, recorded in order with the step), a count of their non-finite values after it, and the way back.  All
of it joins the step's one submission; only the count is read back, with the loss."""
from __future__ import annotations

import numpy as np

from .lowering import Lowering
from .shaders import shader
from .device import PARAMS_ALIGN


class DeviceGuard:
    def __init__(self, residency):
        self.device = residency.device
        self._copies: dict = {}    # resident serial -> (resident, its snapshot buffer)
        self._params: dict = {}    # element count -> parameter block buffer
        self._groups: dict = {}    # resident serial -> bind group of its count
        self._counter = self.device.buffer(16, "the non-finite counter")
        self._pipeline, self._layout = self.device.pipeline(shader("nonfinite"), 1, 1)

    def snapshot(self, residents: list) -> None:
        for r in residents:
            copy = self._copies.get(r.serial)
            if copy is None:
                copy = self._copies[r.serial] = (r, self.device.buffer(r.gpu_buffer.size, "a step's snapshot"))
            self.device.copy(r.gpu_buffer, copy[1], r.gpu_buffer.size)

    def restore(self, residents: list) -> None:
        """Put back what ``snapshot`` kept; the host copies are stale until the state is read."""
        for r in residents:
            self.device.copy(self._copies[r.serial][1], r.gpu_buffer, r.gpu_buffer.size)
            r.device_newer = True

    def count_nonfinite(self, residents: list):
        """A Staged read of how many NaN and infinite values the residents hold."""
        device = self.device
        device.clear(self._counter, 4)
        for r in residents:
            n = int(np.prod(r.shape, dtype=np.int64))
            if n == 0 or r.dtype != np.float32:
                continue
            group = self._groups.get(r.serial)
            if group is None:
                group = self._groups[r.serial] = device.bind_group(self._layout, self._param_block(n), 0,
                                                                   [r.gpu_buffer, self._counter], [4 * n, 4])
            device.dispatch(self._pipeline, group, Lowering.grid(n))
        return device.stage([(self._counter, 4)])

    def _param_block(self, n: int):
        block = self._params.get(n)
        if block is None:
            block = self._params[n] = self.device.buffer(PARAMS_ALIGN, "a parameter block")
            self.device.write(block, np.array([n] + [0] * (PARAMS_ALIGN // 4 - 1), np.uint32))
        return block
