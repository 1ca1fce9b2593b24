"""Run a planned graph: check the feeds once, then loop over the prepared steps."""
from __future__ import annotations

from ..ir.model import Model
from .execute import run_steps
from .feeds import FeedError, check_feed
from .memory import keep_freed_memory
from .plan import Plan


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
            unknown = [n for n in feeds if n not in plan.input_set]
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
        run_steps(self.plan.steps, values)
