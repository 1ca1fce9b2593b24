"""``quiet(kinds)``: np.errstate with the given floating-point error kinds ignored, for kernels that run every step.

On numpy 1.x np.errstate goes through np.seterr and np.geterr in Python (several microseconds a use); there the
error mask is set directly.  numpy 2 (Pyodide's) keeps np.errstate.
"""
from __future__ import annotations

import numpy as np

ALL = ("divide", "over", "under", "invalid")

if hasattr(np, "seterrobj"):
    from numpy.core import umath

    _SHIFTS = {"divide": umath.SHIFT_DIVIDEBYZERO, "over": umath.SHIFT_OVERFLOW, "under": umath.SHIFT_UNDERFLOW,
               "invalid": umath.SHIFT_INVALID}
    _KEEP = {}      # kinds -> the mask that keeps the other kinds' settings

    class quiet:
        """A context that ignores ``kinds`` (names as np.errstate's) and restores the error state after."""

        __slots__ = ("_keep", "_saved")

        def __init__(self, kinds: tuple):
            keep = _KEEP.get(kinds)
            if keep is None:
                keep = _KEEP[kinds] = ~sum(7 << _SHIFTS[k] for k in kinds)    # each kind's 3 bits at 0: ignore
            self._keep = keep

        def __enter__(self):
            saved = self._saved = np.geterrobj()
            np.seterrobj([saved[0], saved[1] & self._keep, saved[2]])

        def __exit__(self, *exc):
            np.seterrobj(self._saved)
else:
    def quiet(kinds: tuple):
        return np.errstate(**dict.fromkeys(kinds, "ignore"))
