"""Host arrays kept in GPU buffers across steps: a checkpoint state's parameters, gradients and optimizer
moments.  Each host array has one Resident.  A run that writes a resident leaves the host copy stale until
someone reads the state (``to_host``); a host write (``to_host(writing=True)``) re-sends the arrays before the
next run."""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from .tensors import from_gpu_bytes, to_gpu_array

_serials = itertools.count()


class Resident:
    """A host array's copy on the GPU.  ``serial`` identifies it in compiled programs (ids can be reused)."""
    __slots__ = ("gpu_buffer", "shape", "dtype", "serial", "device_newer", "host_newer")

    def __init__(self, gpu_buffer, shape, dtype):
        self.gpu_buffer, self.shape, self.dtype = gpu_buffer, tuple(shape), np.dtype(dtype)
        self.serial = next(_serials)
        self.device_newer = False
        self.host_newer = False


class Residency:
    def __init__(self, device):
        self.device = device
        self._mirrors: dict = {}   # id(host array) -> (weakref to it, Resident)

    def resident(self, array: np.ndarray) -> Resident:
        """The GPU copy of ``array``, made (and uploaded) on first use; re-sent when the host changed it."""
        entry = self._mirrors.get(id(array))
        if entry is None:
            buf = self.device.buffer(max(4, 4 * array.size), f"a parameter of shape {list(array.shape)}")
            resident = Resident(buf, array.shape, array.dtype)
            self.device.write(buf, to_gpu_array(array, "a parameter"))
            ref = weakref.ref(array, lambda _, key=id(array): self._forget(key))
            self._mirrors[id(array)] = (ref, resident)
            return resident
        resident = entry[1]
        if resident.host_newer:
            self.device.write(resident.gpu_buffer, to_gpu_array(array, "a parameter"))
            resident.host_newer = False
        return resident

    def _forget(self, key) -> None:
        entry = self._mirrors.pop(key, None)
        if entry is not None:
            self.device.release_later(entry[1].gpu_buffer)

    def to_host(self, writing: bool = False) -> None:
        """Copy what the GPU changed into the host arrays (one submission); with ``writing``, the host may now
        change them, so each is re-sent before its next use."""
        stale = [(ref(), r) for ref, r in self._mirrors.values() if r.device_newer and ref() is not None]
        if stale:
            data = self.device.read([(r.gpu_buffer, 4 * a.size) for a, r in stale])
            for (array, resident), raw in zip(stale, data):
                array[...] = from_gpu_bytes(raw, array.dtype, array.shape)
                resident.device_newer = False
        if writing:
            for _, resident in self._mirrors.values():
                resident.host_newer = True

    @property
    def nbytes(self) -> int:
        return sum(r.gpu_buffer.size for _, r in self._mirrors.values())
