"""Run a graph on an execution provider: check the feeds once, then loop over the plan's prepared steps (the
numpy provider) or run the program compiled for the feeds' shapes (a compiling provider)."""
from __future__ import annotations

from collections import OrderedDict

from ..ir.model import Model
from .execute import run_steps
from .feeds import FeedError, check_feed
from .memory import keep_freed_memory
from .plan import Plan
from .program import NeedsPlan, array_signature, compile_program, feed_signature, is_resident
from .provider import NUMPY

PROGRAMS_KEPT = 4   # feed shapes whose compiled programs a session keeps (a run's last, smaller batch is one)


class Session:
    """An executable graph on ``provider`` (numpy when None).  ``run`` takes feeds in input order (or by name)."""

    def __init__(self, model: Model, provider=None):
        keep_freed_memory()
        self.model = model
        self.provider = provider if provider is not None else NUMPY
        self.plan = Plan(model)
        self._checks = [check_feed(vi) for vi in self.plan.input_info]
        self._programs: OrderedDict = OrderedDict()
        self.last_program = None
        self.last_runner = None
        self.planned = None   # why the last run ran the plan instead of a program (plans_instead), or None

    @property
    def input_names(self) -> list:
        return self.plan.input_names

    @property
    def output_names(self) -> list:
        return self.plan.output_names

    def run(self, feeds, output_names=None, defer: bool = False):
        """The outputs named (the graph's outputs when None; on the numpy provider any value the graph
        computes); with ``defer`` a function that gives them (a deferring provider records the work and
        submits it when they are asked for or something else is read)."""
        if self.provider.compiles:
            return self._run_program(feeds, output_names, defer)
        outputs = self._run_plan(feeds, output_names)
        return (lambda: outputs) if defer else outputs

    # -- the numpy provider ---------------------------------------------------------------------------

    def _run_plan(self, feeds, output_names) -> list:
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
        run_steps(plan.steps, values)
        return [values[s] for s in slots]

    def _slot(self, name: str) -> int:
        slot = self.plan.slot_of.get(name)
        if slot is None:
            raise ValueError(f"'{name}' is not a value the graph computes (outputs: {self.plan.output_names})")
        return slot

    # -- compiling providers --------------------------------------------------------------------------

    def _run_program(self, feeds, output_names, defer: bool):
        plan = self.plan
        if isinstance(feeds, dict):
            unknown = [n for n in feeds if n not in plan.input_names]
            if unknown:
                raise FeedError(f"'{unknown[0]}' is not an input of the graph (inputs: {plan.input_names})")
            missing = [n for n in plan.input_names if n not in feeds]
            if missing:
                raise FeedError(f"missing input '{missing[0]}'")
            feeds = [feeds[n] for n in plan.input_names]
        if len(feeds) != len(plan.input_slots):
            raise FeedError(f"expected {len(plan.input_slots)} inputs {plan.input_names}, got {len(feeds)}")
        if self.provider.resident:
            feeds = [v if is_resident(v) else check(v) for check, v in zip(self._checks, feeds)]
        else:
            feeds = [check(v) for check, v in zip(self._checks, feeds)]
        if output_names is None:
            wanted = list(range(len(plan.output_names)))
        else:
            wanted = []
            for name in output_names:
                if name not in plan.output_names:
                    raise ValueError(f"'{name}' is not an output of the graph (outputs: {plan.output_names})")
                wanted.append(plan.output_names.index(name))
        runner = self._runner(feeds)
        if isinstance(runner, _Planned):
            if self.provider.resident:   # the plan runs on the host arrays, which the device takes again after
                feeds = [[r.host() for r in v] if isinstance(v, (list, tuple)) and is_resident(v)
                         else v.host() if is_resident(v) else v for v in feeds]
            outputs = self._run_plan(feeds, [plan.output_names[i] for i in wanted])
            return (lambda: outputs) if defer else outputs
        return runner.run(feeds, wanted, defer)

    def _key(self, feeds: list) -> tuple:
        provider = self.provider
        return (provider.variant(), *map(feed_signature if provider.resident else array_signature, feeds))

    def runner_for(self, feeds: list):
        """The runner a run on ``feeds`` (in input order) would take, if it has been made; else None."""
        runner = self._programs.get(self._key(feeds))
        return None if runner is None or isinstance(runner, _Planned) else runner

    def _runner(self, feeds: list):
        provider = self.provider
        key = self._key(feeds)
        runner = self._programs.get(key)
        if runner is None:
            try:
                runner = (provider.split_runner(self.plan, feeds, self.model)
                          or provider.runner(compile_program(self.plan, feeds, provider, self.model)))
            except NeedsPlan as e:
                if not self.provider.plans_instead:
                    raise
                runner = _Planned(str(e))
            self._programs[key] = runner
            while len(self._programs) > PROGRAMS_KEPT:
                self._programs.popitem(last=False)[1].release()
        else:
            self._programs.move_to_end(key)
        self.last_program, self.last_runner = runner.program, None if isinstance(runner, _Planned) else runner
        self.planned = runner.reason if isinstance(runner, _Planned) else None
        return runner

    @property
    def fallbacks(self) -> list:
        """The nodes of the last run's program that ran on the host, each with the reason (the whole graph, when
        it ran the plan)."""
        if self.planned is not None:
            return [f"the whole graph, on the numpy provider: {self.planned}"]
        return [] if self.last_program is None else list(self.last_program.fallbacks)

    @property
    def device_bytes(self) -> int:
        """Bytes of device buffers this session's programs hold (residents not included)."""
        return sum(r.program.nbytes for r in self._programs.values() if r.program is not None)

    def release(self) -> None:
        for runner in self._programs.values():
            runner.release()
        self._programs.clear()


class _Planned:
    """A feed signature whose runs take the plan: no program, and why."""

    program = None

    def __init__(self, reason: str):
        self.reason = reason

    def release(self) -> None:
        pass
