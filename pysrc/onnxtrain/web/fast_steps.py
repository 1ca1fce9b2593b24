"""onnxruntime-web's step loop without Python: what the engine needs to answer a session's ``runTrainStep`` and
``runEvalStep`` (with the ``runOptimizerStep`` and ``lazyResetGrad`` deferred before them) by calling the kernel
library's program executor itself.

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
    """The engine's view of one TrainingSession's steps, valid until Python next enters the session."""

    def __init__(self, session):
        self.session = session
        self.counters = np.zeros(2, np.int64)   # [the optimizer's step count, 1 if the next step accumulates]
        self.inputs: dict = {}                   # (model, name) -> the array the engine writes that input into
        self.described = None

    def describe(self):
        """The engine's description of the session's steps (a dict of plain values), or None where its train
        step cannot run without Python.  ``eval`` is None until Python ran an eval step of it."""
        session = self.session
        module, optimizer = session.module, session.optimizer
        if module._provider.name != "wasm" or optimizer is None or module._state.is_nominal:
            return None
        feeds = optimizer._feeds()   # the state's arrays as they are now (a load may replace them)
        runner = optimizer._session.runner_for(feeds)
        update = None
        if runner is not None:
            runner.bind_feeds(feeds)
            update = runner.fixed()
        train = self._part("train", module._train.last_runner, module._train_layout, module._train_user_inputs,
                           module._train_user_outputs, module._train_user_output_index)
        if train is None or update is None:
            return None
        evaluation = None
        if module._eval is not None:
            evaluation = self._part("eval", module._eval.last_runner, module._eval_layout, module._eval_user_inputs,
                                    module._eval.output_names, range(len(module._eval.output_names)))
        address, flag = runner.output_buffers([0])[0]
        self.counters[:] = [optimizer._group.step, int(module._accumulate)]
        train_runner = module._train.last_runner
        pool = module._provider.resident   # the programs lie in the kernel pool's memory (wasm/pool_runner.py)
        where = (lambda r, a: r.address_of(a)) if pool else (lambda r, a: _address(a))
        self.described = {
            "train": train, "eval": evaluation, "optimizer": update,
            "overwrite": where(train_runner, module._overwrite), "step": where(runner, optimizer._step),
            "updated": bool(np.asarray(flag).reshape(-1)[0]) if address is None else address,
            "counters": _address(self.counters)}
        if pool:
            self.described.update(pool=True, threads=module._provider.device.memory.parts)
        if None in (self.described["overwrite"], self.described["step"]):
            self.described = None
        return self.described

    def _part(self, model: str, runner, layout, names, output_names, output_index):
        """One model's program, its user inputs (each bound to a buffer of this object's, the state's arrays as
        they are now) and outputs; None when it has not run or does not run whole in the executor."""
        if runner is None or not hasattr(runner, "fixed"):   # none yet, or a batch split over the threads
            return None
        user = [None] * len(names)
        inputs = []
        pool = self.session.module._provider.resident
        for pos, (kind, key) in enumerate(layout):
            if kind == "user":
                shape, dtype = runner.feed_shape(pos)
                array = self.inputs.get((model, names[key]))
                if array is None or array.shape != shape or array.dtype != dtype:
                    array = self.inputs[(model, names[key])] = np.zeros(shape, dtype)
                user[key] = array
                # in the pool the engine writes the input into the program's own buffer for it
                inputs.append({"name": names[key], "type": TYPES[array.dtype], "dims": list(shape),
                               "address": runner.feed_address(pos) if pool else _address(array),
                               "nbytes": int(array.nbytes)})
        runner.bind_feeds(self.session.module._feeds(layout, user, self.session.module._overwrite))
        program = runner.fixed()
        if program is None:
            return None
        outputs = []
        for name, (address, array) in zip(output_names, runner.output_buffers(list(output_index))):
            if address is None or array.dtype not in TYPES:
                return None
            outputs.append({"name": name, "type": TYPES[array.dtype], "dims": list(array.shape),
                            "address": address, "nbytes": int(array.nbytes)})
        return {"inputs": inputs, "outputs": outputs, "program": program}

    def sync(self) -> None:
        """Take the engine's counters back into the Module and Optimizer (Python is about to act on them)."""
        if self.described is None:
            return
        session = self.session
        session.optimizer._group.step = int(self.counters[0])
        session.module._accumulate = bool(self.counters[1])
        self.described = None
