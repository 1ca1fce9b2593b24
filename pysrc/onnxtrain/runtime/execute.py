"""The run loop over a plan's steps, and compiled subgraphs (If, Loop, Scan bodies) bound to the values
of their enclosing scope."""
from __future__ import annotations

import numpy as np


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


def run_steps(steps, values: list) -> None:
    """Run ``steps`` over ``values`` (the slot list), in place."""
    step = None
    try:
        for step in steps:
            result = step.fn(*step.read(values), **step.kwargs)
            if type(result) is tuple:
                for s, r in zip(step.write, result):
                    values[s] = r
            else:
                values[step.write[0]] = result
            for s in step.clear:
                values[s] = None
    except RunError:
        raise
    except Exception as e:
        raise run_error(step, [values[i] if i >= 0 else None for i in step.inputs] if step else [], e) from e


def run_error(step, args: list, e: Exception) -> RunError:
    """The RunError of a plan step whose kernel raised ``e`` on ``args``: the node, its inputs' shapes, the cause."""
    shapes = ", ".join(f"{n or '<none>'}: {_shape_text(a)}" for n, a in zip(step.node.inputs, args))
    return RunError(f"{step.describe()} failed on inputs ({shapes}): {type(e).__name__}: {e}")


class Branch:
    """A compiled subgraph with the values it reads from enclosing scopes: ``branch(*inputs)`` runs it on
    the subgraph's formal inputs and returns its outputs as a list.  ``output_types`` are the subgraph's
    declared output types (for empty scan outputs)."""

    __slots__ = ("plan", "outer", "where")

    def __init__(self, plan, outer: list, where: str):
        self.plan, self.outer, self.where = plan, outer, where

    @property
    def output_types(self) -> list:
        return [v.type for v in self.plan.graph.outputs]

    @property
    def input_count(self) -> int:
        return len(self.plan.input_slots)

    def __call__(self, *inputs) -> list:
        plan = self.plan
        if len(inputs) != len(plan.input_slots):
            raise ValueError(f"{self.where} declares {len(plan.input_slots)} inputs, but {len(inputs)} are given")
        values = list(plan.template)
        for s, v in zip(plan.input_slots, inputs):
            values[s] = v
        for s, v in zip(plan.outer_slots, self.outer):
            values[s] = v
        try:
            run_steps(plan.steps, values)
        except RunError as e:
            raise RunError(f"in {self.where}: {e}") from e
        return [values[s] for s in plan.output_slots]


class ScopedKernel:
    """A kernel with subgraph attributes.  Its step reads the node's inputs followed by the enclosing-scope
    values its subgraphs read that are not among them (``read_names`` names them all); each call binds the
    compiled subgraphs to those values and passes them to the kernel as ``Branch`` keyword arguments."""

    __slots__ = ("fn", "n_inputs", "kwargs", "bodies", "__name__")

    def __init__(self, fn, n_inputs: int, kwargs: dict, bodies: dict, read_names: list, where: str):
        self.fn, self.n_inputs, self.kwargs = fn, n_inputs, kwargs
        self.__name__ = fn.__name__
        position = {}
        for i, name in enumerate(read_names):
            position.setdefault(name, i)
        # attribute -> (compiled subgraph, positions of its outer values among the step's arguments, where)
        self.bodies = {attr: (plan, [position[n] for n in plan.outer_names], f"{attr} of {where}")
                       for attr, plan in bodies.items()}

    def __call__(self, *args):
        kwargs = dict(self.kwargs)
        for attr, (plan, picks, where) in self.bodies.items():
            kwargs[attr] = Branch(plan, [args[i] for i in picks], where)
        return self.fn(*args[:self.n_inputs], **kwargs)
