"""Checks of what a client sends back: the parameter vector and its metrics.  Each returns the reason it is
refused (a sentence naming what is wrong), or None when it is fine."""
from __future__ import annotations

import json
import math

import numpy as np

NUM_EXAMPLES = "num-examples"


def vector_problem(arrays: list, size: int):
    """``arrays`` (a reply's numpy arrays) must be one float32 vector of ``size`` finite values."""
    if len(arrays) != 1:
        return f"{len(arrays)} arrays instead of one parameter vector"
    a = arrays[0]
    if a.dtype != np.float32 or a.shape != (size,):
        return f"wrong size or type: {a.dtype.name}{list(a.shape)} instead of float32[{size}]"
    bad = int(a.size - np.count_nonzero(np.isfinite(a)))
    if bad:
        return f"non-finite values: {bad} of {a.size} parameters are NaN or infinite"
    return None


def body_problem(body: bytes, size: int):
    """A page's result body must hold exactly ``size`` finite float32 values."""
    if len(body) != 4 * size:
        return (f"wrong size: the body has {len(body)} bytes, a parameter vector has {4 * size} ({size} float32 "
                f"values)")
    return vector_problem([np.frombuffer(body, np.float32)], size)


def metrics_problem(metrics) -> str | None:
    """Metrics are an object of finite numbers with an integer ``num-examples`` > 0."""
    if not isinstance(metrics, dict):
        return f"the metrics must be a JSON object, not {type(metrics).__name__}"
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"metric {key!r} is not a finite number: {value!r}"
    n = metrics.get(NUM_EXAMPLES)
    if not isinstance(n, int) and not (isinstance(n, float) and n.is_integer()):
        return f"the metrics lack an integer {NUM_EXAMPLES!r}"
    if n <= 0:
        return f"{NUM_EXAMPLES!r} must be > 0, got {n}"
    return None


def parse_metrics(text):
    """(metrics, None) from an X-Metrics header's JSON, or (None, the reason it is refused)."""
    if not text:
        return None, "the X-Metrics header is missing"
    try:
        metrics = json.loads(text)
    except ValueError as e:
        return None, f"the X-Metrics header is not JSON ({e})"
    problem = metrics_problem(metrics)
    if problem:
        return None, problem
    metrics[NUM_EXAMPLES] = int(metrics[NUM_EXAMPLES])
    return metrics, None
