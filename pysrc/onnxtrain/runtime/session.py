"""Run a planned graph: check the feeds once, then loop over the prepared steps."""
from __future__ import annotations

import numpy as np

from ..ir.model import Model
from .feeds import FeedError, check_feed
from .memory import keep_freed_memory
from .plan import Plan


class RunError(RuntimeError):
    """A kernel failed; the message names the node and the shapes it was given."""


def _shape_text(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, list):
        return "seq[" + ", ".join(_shape_text(x) for x in v[:3]) + (", ...]" if len(v) > 3 else "]")
    if isinstance(v, np.ndarray):
        return f"{v.dtype}{list(v.shape)}"
    return type(v).__name__


class Session:
    """An executable graph.  ``run`` takes feeds in input order (or by name)."""

    def __init__(self, model: Model):
        keep_freed_memory()
        self.model = model
        self.plan = Plan(model)
        self._checks = [check_feed(vi) for vi in self.plan.input_info]

    @property
    def input_names(self) -> list:
        return self.plan.input_names

    @property
    def output_names(self) -> list:
        return self.plan.output_names

    def run(self, feeds, output_names=None) -> list:
        plan = self.plan
        values = list(plan.template)
        if isinstance(feeds, dict):
            unknown = [n for n in feeds if n not in plan.slot_of]
            if unknown:
                raise FeedError(f"'{unknown[0]}' is not an input of the graph (inputs: {plan.input_names})")
            for i, (name, slot) in enumerate(zip(plan.input_names, plan.input_slots)):
                if name in feeds:
                    values[slot] = self._checks[i](feeds[name])
                elif values[slot] is None:
                    raise FeedError(f"missing input '{name}'")
        else:
            if len(feeds) != len(plan.input_slots):
                raise FeedError(f"expected {len(plan.input_slots)} inputs {plan.input_names}, got {len(feeds)}")
            for check, slot, value in zip(self._checks, plan.input_slots, feeds):
                values[slot] = check(value)
        slots = plan.output_slots if output_names is None else [self._slot(n) for n in output_names]
        self._execute(values)
        return [values[s] for s in slots]

    def _slot(self, name: str) -> int:
        slot = self.plan.slot_of.get(name)
        if slot is None:
            raise ValueError(f"'{name}' is not a value the graph computes (outputs: {self.plan.output_names})")
        return slot

    def _execute(self, values: list) -> None:
        step = None
        try:
            for step in self.plan.steps:
                result = step.fn(*step.read(values), **step.kwargs)
                if type(result) is tuple:
                    for s, r in zip(step.write, result):
                        values[s] = r
                else:
                    values[step.write[0]] = result
                for s in step.clear:
                    values[s] = None
        except (FeedError, RunError):
            raise
        except Exception as e:
            args = [values[i] if i >= 0 else None for i in step.inputs] if step else []
            shapes = ", ".join(f"{n or '<none>'}: {_shape_text(a)}" for n, a in zip(step.node.inputs, args))
            raise RunError(f"{step.describe()} failed on inputs ({shapes}): {type(e).__name__}: {e}") from e
