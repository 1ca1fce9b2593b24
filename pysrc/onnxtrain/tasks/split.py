"""Training and validation rows: stratified by class, or at random; both deterministic by a seed."""
from __future__ import annotations

import math

import numpy as np

from ..train.data import DataError


def stratified_split(y, validation: float, seed: int) -> tuple:
    """(training rows, validation rows) of the positions of ``y`` (class ids), both sorted: each class gives
    round(its count × ``validation``) rows to validation, but keeps at least one for training; deterministic by
    ``seed``.  When every class rounds to none, one row of the largest class with two or more goes."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    classes = sorted(set(y.tolist()))
    shuffled = {c: rng.permutation(np.flatnonzero(y == c)) for c in classes}
    share = {c: min(int(math.floor(len(m) * validation + 0.5)), len(m) - 1) for c, m in shuffled.items()}
    if sum(share.values()) == 0:
        largest = max(classes, key=lambda c: (len(shuffled[c]), -classes.index(c)))
        if len(shuffled[largest]) < 2:
            raise DataError(f"each class has a single example ({len(classes)} in all), so none can be kept for "
                            f"validation: add more examples")
        share[largest] = 1
    val = np.concatenate([m[:share[c]] for c, m in shuffled.items()])
    train = np.concatenate([m[share[c]:] for c, m in shuffled.items()])
    return sorted(train.tolist()), sorted(val.tolist())


def random_split(n_rows: int, validation: float, seed: int, rows=None) -> tuple:
    """(training rows, validation rows) of ``rows`` (default all), sorted; at least one of each."""
    rows = np.arange(n_rows) if rows is None else np.asarray(rows)
    order = np.random.default_rng(seed).permutation(rows)
    n_val = min(max(1, int(round(len(order) * validation))), len(order) - 1)
    return sorted(order[n_val:].tolist()), sorted(order[:n_val].tolist())
