"""The CPython side: onnxtrain's CheckpointState, Module and Optimizer on the artifacts, step by step."""
from __future__ import annotations

import numpy as np

from .. import ir
from ..api import CheckpointState, Module, Optimizer
from .errors import SetupError
from .inputs import Artifacts
from .trajectory import Layout, Trajectory


class Reference:
    """The artifacts loaded in CPython onnxtrain, ready to train."""

    def __init__(self, artifacts: Artifacts, learning_rate=None):
        try:
            self.model = ir.load(str(artifacts.training))
            state = CheckpointState.load_checkpoint(str(artifacts.checkpoint))
            if state.is_nominal:
                raise SetupError(f"{artifacts.checkpoint} is a nominal checkpoint (no parameter values): give the "
                                 f"full checkpoint")
            self.module = Module(self.model, state, None if artifacts.eval is None else str(artifacts.eval))
            self.optimizer = Optimizer(str(artifacts.optimizer), self.module)
            if learning_rate is not None:
                self.optimizer.set_learning_rate(learning_rate)
        except SetupError:
            raise
        except (OSError, ValueError, TypeError, RuntimeError) as e:
            raise SetupError(f"CPython onnxtrain cannot load the artifacts in {artifacts.training.parent}: {e}") \
                from None
        params = self.module.get_contiguous_parameters(True)
        names = [v.name for v in self.model.graph.inputs if v.name in state.parameters
                 and state.parameters[v.name].requires_grad]
        self.layout = Layout(names, [int(state.parameters[n].data.size) for n in names])
        if self.layout.total != params.size:
            raise SetupError(f"the trainable parameters {names} hold {self.layout.total} values, "
                             f"getContiguousParameters {params.size}")

    def input_names(self) -> list:
        return self.module.input_names()

    def learning_rate(self) -> float:
        return self.optimizer.get_learning_rate()

    def run(self, data, compare_at: set) -> Trajectory:
        """Train ``len(data.batches)`` steps; the parameters after the steps in ``compare_at`` (1-based)."""
        out = Trajectory()
        for step in range(len(data.batches)):
            try:
                outputs = self.module(*data.batch(step))
                loss = outputs[0] if isinstance(outputs, tuple) else outputs
                out.losses.append(float(np.asarray(loss).reshape(-1)[0]))
                self.optimizer.step()
                self.module.lazy_reset_grad()
            except Exception as e:  # noqa: BLE001 - any failure of the reference is reported, not raised
                raise SetupError(f"CPython onnxtrain failed at step {step + 1}: {type(e).__name__}: {e}") from None
            if step + 1 in compare_at:
                out.parameters[step + 1] = self.module.get_contiguous_parameters(True).copy()
        return out
