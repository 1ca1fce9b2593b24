"""Host arrays kept in a provider's buffers across steps: a checkpoint state's parameters, gradients and optimizer
moments.  Each host array has one Resident.  A run that writes a resident leaves the host copy stale until
someone reads the state (``to_host``); a host write (``to_host(writing=True)``) re-sends the arrays before the
next run."""
from __future__ import annotations

import itertools
import weakref

import numpy as np

_serials = itertools.count()


class Resident:
    """A host array's copy in a provider's buffer.  ``serial`` identifies it in compiled programs (ids can be
    reused)."""
    __slots__ = ("buffer", "shape", "dtype", "serial", "device_newer", "host_newer", "host")

    def __init__(self, buffer, shape, dtype, host=None):
        self.buffer, self.shape, self.dtype = buffer, tuple(shape), np.dtype(dtype)
        self.host = host          # a function giving the host array made current (None for a device-only buffer)
        self.serial = next(_serials)
        self.device_newer = False
        self.host_newer = False


class Residency:
    """The residents of one checkpoint state on ``provider`` (its ``device`` holds the buffers)."""

    def __init__(self, provider):
        self.provider = provider
        self.device = provider.device
        self._mirrors: dict = {}   # id(host array) -> (weakref to it, Resident)

    def resident(self, array: np.ndarray) -> Resident:
        """The device copy of ``array``, made (and written) on first use; re-sent when the host changed it."""
        entry = self._mirrors.get(id(array))
        provider = self.provider
        if entry is None:
            buf = self.device.buffer(provider.nbytes(array.shape, array.dtype),
                                     f"a parameter of shape {list(array.shape)}")
            ref = weakref.ref(array, lambda _, key=id(array): self._forget(key))
            resident = Resident(buf, array.shape, array.dtype, lambda: self._on_host(ref))
            self.device.write(buf, provider.held(array, "a parameter"))
            self._mirrors[id(array)] = (ref, resident)
            return resident
        resident = entry[1]
        if resident.host_newer:
            self.device.write(resident.buffer, provider.held(array, "a parameter"))
            resident.host_newer = False
        return resident

    def _on_host(self, ref) -> np.ndarray:
        """A resident's host array, current, for a run on the host that may write it (so re-sent before its next
        use on the device)."""
        array = ref()
        resident = self._mirrors[id(array)][1]
        if resident.device_newer:
            raw = self.device.read([(resident.buffer, self.provider.nbytes(array.shape, array.dtype))])[0]
            array[...] = self.provider.from_held(raw, array.dtype, array.shape)
            resident.device_newer = False
        resident.host_newer = True
        return array

    def _forget(self, key) -> None:
        entry = self._mirrors.pop(key, None)
        if entry is not None:
            self.device.release_later(entry[1].buffer)

    def to_host(self, writing: bool = False) -> None:
        """Copy what the device changed into the host arrays (one read); with ``writing``, the host may now
        change them, so each is re-sent before its next use."""
        stale = [(ref(), r) for ref, r in self._mirrors.values() if r.device_newer and ref() is not None]
        if stale:
            data = self.device.read([(r.buffer, self.provider.nbytes(a.shape, a.dtype)) for a, r in stale])
            for (array, resident), raw in zip(stale, data):
                array[...] = self.provider.from_held(raw, array.dtype, array.shape)
                resident.device_newer = False
        if writing:
            for _, resident in self._mirrors.values():
                resident.host_newer = True

    @property
    def nbytes(self) -> int:
        return sum(r.buffer.size for _, r in self._mirrors.values())
