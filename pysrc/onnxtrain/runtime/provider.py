"""Execution providers as the runtime sees them.  A provider is a kernel table (``lookup``: an op's lowering, or
None) and a host (``device``: allocate, write, read, release; ``runner``: a compiled Program bound to it), with
how it holds each element type.  The numpy provider is the default: it compiles nothing and runs the plan's
numpy kernels, the reference every other provider is checked against."""
from __future__ import annotations

import numpy as np

from .program import Lowering, ProgramError


class Provider:
    """The numpy provider, and the base of the compiling ones."""

    name = "cpu"               # the Module device it serves
    title = "numpy"            # how messages name it
    kernel_language = ""       # the fallbacks' "no <language> kernel for ..."
    compiles = False           # programs per feed shapes (else the plan runs as it is)
    resident = False           # the state's arrays get device copies (a Residency); else they are fed in place
    defers = False             # a run may leave its outputs to be read later (one submission per step)
    plans_instead = False      # feeds it cannot compile a program for run the plan (else an error)
    Lowering = Lowering
    Error = ProgramError
    device = None

    def lookup(self, op_type: str, domain: str = ""):
        """The lowering of an op, or None when it runs on the host."""
        return None

    def nbytes(self, shape, dtype) -> int:
        """The bytes of a buffer holding a tensor of ``shape`` and ``dtype`` (at least 4)."""
        return max(4, np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)))

    def held(self, array: np.ndarray, what: str) -> np.ndarray:
        """``array`` as the provider holds it (contiguous; a provider may narrow or widen its type)."""
        return np.ascontiguousarray(array)

    def from_held(self, data, dtype, shape) -> np.ndarray:
        """A host array of ``dtype`` and ``shape`` from a buffer's bytes."""
        return np.frombuffer(data, np.dtype(dtype), count=int(np.prod(shape, dtype=np.int64))).reshape(shape).copy()

    def runner(self, program):
        raise NotImplementedError(f"the {self.title} provider runs plans, not programs")

    def split_runner(self, plan, feeds: list, model):
        """A runner that splits ``feeds``' batch over threads, or None for one program (the default)."""
        return None

    def variant(self):
        """What, beside the feeds, the programs a session keeps depend on (e.g. the threads they run on)."""
        return None

    def guard_records(self, residents: list, shadows: list, what: str) -> tuple:
        """The records and outputs of the step guard's programs over residents (compiling providers only):
        ``what`` is "snapshot" (copy each into its shadow), "restore" (back) or "count" (how many NaN and
        infinite values, one int32 output)."""
        raise NotImplementedError

    def describe(self) -> dict:
        """What ``Module.device_report`` says of the provider beyond its name."""
        return {}


NUMPY = Provider()
