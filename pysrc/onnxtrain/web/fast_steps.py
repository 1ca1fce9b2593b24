"""onnxruntime-web's step loop without Python: what the engine needs to answer a session's ``runTrainStep`` (with
the ``runOptimizerStep`` and ``lazyResetGrad`` deferred before it) by calling the kernel library's program
executor itself.

After a train step that Python ran, on the wasm provider, whose train and optimizer programs run whole in the
executor (no host node), ``FastStep.describe`` gives the engine the addresses of everything a step touches in
Pyodide's memory: a buffer per user input (bound into the train program's pointer table in place of the arrays
Python was fed), the programs' words and tables, the reset flag, the optimizer's step input and update flag,
the fetchable outputs, and two counters that stand for Python's own (the optimizer's step count, whether the
next train step accumulates).  The engine then runs steps of the same input shapes on its own and keeps the
counters; the next request for the session that Python answers first takes them back (``sync``), so the Module
and Optimizer are exactly as if Python had run every step.  Anything else (other shapes, names or types, an
optimizer program with host nodes, a failed step) is Python's, with Python's errors.
"""
from __future__ import annotations

import numpy as np

from .bridge import TYPES


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


class FastStep:
    """The engine's view of one TrainingSession's step, valid until Python next enters the session."""

    def __init__(self, session):
        self.session = session
        self.counters = np.zeros(2, np.int64)   # [the optimizer's step count, 1 if the next step accumulates]
        self.inputs: dict = {}                   # name -> the array the engine writes that input into
        self.described = None

    def describe(self):
        """The engine's description of the session's step (a dict of plain values), or None where the step
        cannot run without Python."""
        session = self.session
        module, optimizer = session.module, session.optimizer
        if module._provider.name != "wasm" or optimizer is None or module._state.is_nominal:
            return None
        train = module._train.last_runner
        if train is None or optimizer._session.last_runner is None:
            return None
        step = train.fixed()
        update = optimizer._session.last_runner.fixed()
        if step is None or update is None:
            return None
        names = module._train_user_inputs
        feeds = []
        for pos, (kind, key) in enumerate(module._train_layout):
            if kind == "user":
                shape, dtype = train.feed_shape(pos)
                array = self.inputs.get(names[key])
                if array is None or array.shape != shape or array.dtype != dtype:
                    array = self.inputs[names[key]] = np.zeros(shape, dtype)
                train.bind(pos, array)
                feeds.append({"name": names[key], "type": TYPES[array.dtype], "dims": list(shape),
                              "address": _address(array), "nbytes": int(array.nbytes)})
        outputs = []
        for name, (address, array) in zip(module._train_user_outputs, train.output_buffers(
                module._train_user_output_index)):
            if address is None or array.dtype not in TYPES:
                return None
            outputs.append({"name": name, "type": TYPES[array.dtype], "dims": list(array.shape),
                            "address": address, "nbytes": int(array.nbytes)})
        address, flag = optimizer._session.last_runner.output_buffers([0])[0]
        self.counters[:] = [optimizer._group.step, int(module._accumulate)]
        self.described = {
            "inputs": feeds, "outputs": outputs, "train": step, "optimizer": update,
            "overwrite": _address(module._overwrite), "step": _address(optimizer._step),
            "updated": bool(np.asarray(flag).reshape(-1)[0]) if address is None else address,
            "counters": _address(self.counters)}
        return self.described

    def sync(self) -> None:
        """Take the engine's counters back into the Module and Optimizer (Python is about to act on them)."""
        if self.described is None:
            return
        session = self.session
        session.optimizer._group.step = int(self.counters[0])
        session.module._accumulate = bool(self.counters[1])
        self.described = None
