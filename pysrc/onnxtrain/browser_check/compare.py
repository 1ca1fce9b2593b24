"""Comparing the browser's run with CPython's: losses and each trainable parameter, step by step.

A value matches when |browser - cpython| <= atol + rtol * |cpython| (numpy.isclose; NaN matches NaN).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .trajectory import Layout, Trajectory

# Defaults, from measurements (docs/browser-check.md): losses and parameters agree to float32 rounding (about 1e-7
# relative) in stable runs, and a parameter's difference stays below 2e-4 x the learning rate for 20 steps (Adam
# normalizes each update to about the learning rate, so elements whose gradients nearly cancel carry rounding
# differences of that size).  atol is ATOL_PER_LEARNING_RATE x the run's learning rate unless given.
RTOL = 1e-5
ATOL_PER_LEARNING_RATE = 1e-3


@dataclass
class Mismatch:
    step: int  # 1-based
    what: str  # "loss", a parameter's name, or "browser error"
    max_abs: float = 0.0
    max_rel: float = 0.0
    index: int | None = None  # the worst element's flat index within the parameter
    cpython: float | None = None
    browser: float | None = None
    detail: str = ""

    def text(self) -> str:
        if self.what == "browser error":
            return f"step {self.step}: the browser failed: {self.detail}"
        where = self.what if self.index is None else f"parameter '{self.what}' element {self.index}"
        return (f"step {self.step}: {where} differs: cpython {self.cpython!r}, browser {self.browser!r} "
                f"(max abs difference {self.max_abs:.3g}, max rel difference {self.max_rel:.3g})")


@dataclass
class Report:
    steps: int
    rtol: float
    atol: float
    cpython_losses: list
    browser_losses: list
    mismatch: Mismatch | None = None
    max_abs_loss: float = 0.0
    max_rel_loss: float = 0.0
    max_abs_param: float = 0.0
    max_rel_param: float = 0.0
    compared_steps: list = field(default_factory=list)
    param_abs_by_step: dict = field(default_factory=dict)  # compared step -> largest parameter difference
    info: dict = field(default_factory=dict)  # what ran: library, browser, batch size, learning rate ...

    @property
    def ok(self) -> bool:
        return self.mismatch is None

    @property
    def text(self) -> str:
        return self.summary()

    def summary(self) -> str:
        lines = [f"browser-check: {'MATCH' if self.ok else 'MISMATCH'} over {self.steps} steps "
                 f"(rtol {self.rtol:g}, atol {self.atol:g})"]
        lines += [f"  {key}: {value}" for key, value in self.info.items()]
        lines.append("  step  cpython loss    browser loss    loss diff  parameters' largest diff")
        for i, c in enumerate(self.cpython_losses):
            b = self.browser_losses[i] if i < len(self.browser_losses) else None
            diff = "-" if b is None else f"{abs(b - c):.3g}"
            params = self.param_abs_by_step.get(i + 1)
            lines.append(f"  {i + 1:4d}  {c:<14.9g}  {'-' if b is None else format(b, '<14.9g')}  {diff:<9}  "
                         f"{'' if params is None else format(params, '.3g')}")
        lines.append(f"  largest differences: loss abs {self.max_abs_loss:.3g} rel {self.max_rel_loss:.3g}; "
                     f"parameters abs {self.max_abs_param:.3g} rel {self.max_rel_param:.3g} "
                     f"(over {len(self.compared_steps)} compared steps)")
        if self.mismatch is not None:
            lines.append("  first mismatch: " + self.mismatch.text())
        return "\n".join(lines)

    def to_json(self) -> dict:
        m = self.mismatch
        return {"ok": self.ok, "steps": self.steps, "rtol": self.rtol, "atol": self.atol,
                "cpython_losses": self.cpython_losses, "browser_losses": self.browser_losses,
                "compared_steps": self.compared_steps,
                "param_abs_by_step": {str(k): v for k, v in self.param_abs_by_step.items()},
                "max_abs_loss": self.max_abs_loss, "max_rel_loss": self.max_rel_loss,
                "max_abs_param": self.max_abs_param, "max_rel_param": self.max_rel_param,
                "mismatch": None if m is None else {
                    "step": m.step, "what": m.what, "max_abs": m.max_abs, "max_rel": m.max_rel, "index": m.index,
                    "cpython": m.cpython, "browser": m.browser, "detail": m.detail},
                "info": self.info}


def _differences(reference: np.ndarray, got: np.ndarray) -> tuple:
    """(max abs, max rel) difference, NaN-aware: a NaN on one side only is an infinite difference."""
    reference, got = np.asarray(reference, np.float64), np.asarray(got, np.float64)
    both_nan = np.isnan(reference) & np.isnan(got)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(both_nan, 0.0, np.abs(got - reference))
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = np.where(diff == 0, 0.0, diff / np.abs(reference))
    return (float(diff.max()) if diff.size else 0.0), (float(rel.max()) if rel.size else 0.0)


def _first_bad(reference: np.ndarray, got: np.ndarray, rtol: float, atol: float):
    """The flat index of the worst element that does not match, or None."""
    close = np.isclose(got, reference, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    with np.errstate(invalid="ignore"):
        excess = np.abs(got.astype(np.float64) - reference) - (atol + rtol * np.abs(reference.astype(np.float64)))
    excess = np.where(np.isnan(excess), np.inf, excess)
    excess[close] = -np.inf
    return int(np.argmax(excess))


def compare(cpython: Trajectory, browser: Trajectory, layout: Layout, rtol: float, atol: float,
            info: dict | None = None) -> Report:
    """The report on ``browser`` against ``cpython``: the first step (loss before parameters) that does not match,
    and the largest differences seen."""
    steps = len(cpython.losses)
    report = Report(steps, rtol, atol, list(cpython.losses), list(browser.losses), info=dict(info or {}))
    first = None
    for i in range(steps):
        step = i + 1
        if i >= len(browser.losses):
            if first is None:
                first = Mismatch(step, "browser error", detail=browser.error or "the browser reported no loss")
            break
        c, b = np.float64(cpython.losses[i]), np.float64(browser.losses[i])
        abs_, rel = _differences(c, b)
        report.max_abs_loss, report.max_rel_loss = max(report.max_abs_loss, abs_), max(report.max_rel_loss, rel)
        if first is None and _first_bad(np.array([c]), np.array([b]), rtol, atol) is not None:
            first = Mismatch(step, "loss", abs_, rel, None, float(c), float(b))
        if step not in cpython.parameters:
            continue
        if step not in browser.parameters:
            if first is None:
                first = Mismatch(step, "browser error", detail=browser.error or "the browser sent no parameters")
            continue
        report.compared_steps.append(step)
        got = np.asarray(browser.parameters[step], np.float32)
        if got.size != layout.total:
            if first is None:
                first = Mismatch(step, "browser error", detail=f"the browser sent {got.size} parameter values, "
                                 f"CPython has {layout.total} ({layout.names})")
            continue
        ref_parts, got_parts = layout.split(cpython.parameters[step]), layout.split(got)
        report.param_abs_by_step[step] = 0.0
        for name in layout.names:
            abs_, rel = _differences(ref_parts[name], got_parts[name])
            report.param_abs_by_step[step] = max(report.param_abs_by_step[step], abs_)
            report.max_abs_param, report.max_rel_param = max(report.max_abs_param, abs_), \
                max(report.max_rel_param, rel)
            if first is not None:
                continue
            bad = _first_bad(ref_parts[name], got_parts[name], rtol, atol)
            if bad is not None:
                first = Mismatch(step, name, abs_, rel, bad, float(ref_parts[name][bad]), float(got_parts[name][bad]))
    if first is None and browser.error is not None:
        first = Mismatch(len(browser.losses) + 1, "browser error", detail=browser.error)
    report.mismatch = first
    return report
