"""A graph on the WebGPU provider: runtime.Session's interface, with programs compiled per feed shapes."""
from __future__ import annotations

from collections import OrderedDict

from ..ir.model import Model
from ..runtime.feeds import FeedError, check_feed
from ..runtime.plan import Plan
from .device import Runner, open_device
from .program import compile_program, feed_signature

PROGRAMS_KEPT = 4   # feed shapes whose compiled programs a session keeps (a run's last, smaller batch is one)


class WebGPUSession:
    """Runs ``model`` on WebGPU.  Feeds are numpy arrays (uploaded per run) or residents (GPU buffers that
    outlive runs: parameters, gradients, moments); outputs are read back only when asked for."""

    def __init__(self, model: Model, device=None):
        self.model = model
        self.plan = Plan(model)
        self.device = device or open_device()
        self._checks = [check_feed(vi) for vi in self.plan.input_info]
        self._programs: OrderedDict = OrderedDict()
        self.last_program = None

    @property
    def input_names(self) -> list:
        return self.plan.input_names

    @property
    def output_names(self) -> list:
        return self.plan.output_names

    def run(self, feeds, output_names=None, defer: bool = False):
        """The outputs named (all when None) as numpy arrays; with ``defer`` a function that gives them (the
        work is recorded, and submitted when they are asked for or something else is read)."""
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
        feeds = [v if _resident_like(v) else check(v) for check, v in zip(self._checks, feeds)]
        if output_names is None:
            wanted = list(range(len(plan.output_names)))
        else:
            wanted = []
            for name in output_names:
                if name not in plan.output_names:
                    raise ValueError(f"'{name}' is not an output of the graph (outputs: {plan.output_names})")
                wanted.append(plan.output_names.index(name))
        return self._runner(feeds).run(feeds, wanted, defer)

    def _runner(self, feeds: list) -> Runner:
        key = tuple(feed_signature(v) for v in feeds)
        runner = self._programs.get(key)
        if runner is None:
            runner = self.device.runner(compile_program(self.plan, feeds, self.model))
            self._programs[key] = runner
            while len(self._programs) > PROGRAMS_KEPT:
                self._programs.popitem(last=False)[1].release()
        else:
            self._programs.move_to_end(key)
        self.last_program = runner.program
        return runner

    @property
    def fallbacks(self) -> list:
        """The nodes of the last run's program that ran on the CPU, each with the reason."""
        return [] if self.last_program is None else list(self.last_program.fallbacks)

    @property
    def gpu_bytes(self) -> int:
        """Bytes of GPU buffers this session's programs hold (residents not included)."""
        return sum(r.program.nbytes for r in self._programs.values())

    def release(self) -> None:
        for runner in self._programs.values():
            runner.release()
        self._programs.clear()


def _resident_like(value) -> bool:
    if isinstance(value, (list, tuple)):
        return bool(value) and all(hasattr(v, "gpu_buffer") for v in value)
    return hasattr(value, "gpu_buffer")
