"""browser-check: train training artifacts in headless Chromium with the onnxtrain JavaScript library and compare
the losses and parameters with CPython onnxtrain, step by step.

``check(...)`` returns a Report; ``main(argv)`` is ``python -m onnxtrain browser-check``; the pytest plugin
(``pytest_plugin``) offers the fixture ``onnxtrain_browser_check``.  Playwright (the optional extra
``onnxtrain[browser]``) is imported only when a check runs the browser.
"""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

from . import browser as browser_side
from .compare import ATOL_PER_LEARNING_RATE, RTOL, Mismatch, Report, compare
from .errors import SetupError
from .inputs import find_artifacts, load_data
from .reference import Reference
from .site import Server, find_library, stage

DEFAULT_STEPS = 20
DEFAULT_TIMEOUT = 600.0

__all__ = ["ATOL_PER_LEARNING_RATE", "RTOL", "Mismatch", "Report", "SetupError", "check", "main"]


def _positive(value, what: str, kind=float):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not math.isfinite(number) or number <= 0 or number != value:
        raise SetupError(f"{what} must be a {'whole ' if kind is int else ''}number > 0, got {value!r}")
    return number


def _tolerance(value, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if not math.isfinite(number) or number < 0:
        raise SetupError(f"{what} must be a number >= 0, got {value!r}")
    return number


def check(artifacts, data, steps: int = DEFAULT_STEPS, batch_size=None, library=None, chromium=None,
          rtol: float = RTOL, atol: float | None = None, timeout: float = DEFAULT_TIMEOUT, learning_rate=None,
          prefix=None, params_every: int = 1) -> Report:
    """Train the artifacts in ``artifacts`` (a folder) for ``steps`` steps in CPython onnxtrain and in headless
    Chromium (the library ``library``: a folder with onnxtrain.mjs or the npm package's .tgz), on the batches of
    ``data`` (a .npz path or a mapping, one array per training-model input), and compare them.

    The parameters are compared after every ``params_every``-th step and after the last.  SetupError when the check
    cannot run (bad arguments, missing files, no Playwright or Chromium); otherwise a Report whose ``ok`` says
    whether every value matched within ``atol + rtol * |cpython value|``; ``atol=None`` is
    ATOL_PER_LEARNING_RATE x the learning rate of the run.
    """
    steps = _positive(steps, "the number of steps", int)
    params_every = _positive(params_every, "params_every", int)
    timeout = _positive(timeout, "the timeout")
    rtol = _tolerance(rtol, "rtol")
    atol = None if atol is None else _tolerance(atol, "atol")
    found = find_artifacts(artifacts, prefix)
    reference = Reference(found, learning_rate)
    if atol is None:
        atol = ATOL_PER_LEARNING_RATE * reference.learning_rate()
    batches = load_data(data, reference.model, reference.input_names(), steps, batch_size)
    chromium = browser_side.find_chromium(chromium)
    compare_at = {s for s in range(1, steps + 1) if s % params_every == 0} | {steps}
    with tempfile.TemporaryDirectory(prefix="onnxtrain-browser-check-") as scratch:
        scratch = Path(scratch)
        library_folder, library_name = find_library(library, scratch)
        cpython = reference.run(batches, compare_at)
        root = scratch / "site"
        root.mkdir()
        manifest = stage(root, library_folder, found, batches, sorted(compare_at),
                         None if learning_rate is None else float(learning_rate), timeout)
        with Server(root) as server:
            browser, facts = browser_side.run_in_browser(server.url, manifest, chromium)
    start, stop = batches.batches[0]
    page_rate = facts["learningRate"]
    info = {"artifacts": str(found.training.parent), "library": library_name,
            "browser": f"{facts['browser']} ({chromium or 'Playwright Chromium'})", "batch size": stop - start,
            "learning rate": f"cpython {reference.learning_rate():g}, browser "
                             f"{'unknown' if page_rate is None else format(page_rate, 'g')}"}
    if facts.get("offOrigin"):
        info["requests off the page's origin"] = facts["offOrigin"]
    return compare(cpython, browser, reference.layout, rtol, atol, info)


def main(argv=None) -> int:
    from .cli import main as cli_main
    return cli_main(argv)
