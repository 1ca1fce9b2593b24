"""Checks on the data a run trains on and the numbers that drive it, before anything changes."""
from __future__ import annotations

import json
import math

import numpy as np

from .guard import bad_values


class DataError(ValueError):
    """The data cannot be used as it is; the message says what to change."""


def show(text, limit: int = 60) -> str:
    """User text quoted for a message, cut to ``limit`` characters."""
    text = str(text)
    return json.dumps(text if len(text) <= limit else text[:limit] + "…", ensure_ascii=False)


def _number(value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    return value


def batch_size(value) -> int:
    """``value`` as a batch size: an integer >= 1 (an integral float such as 64.0 counts)."""
    number = _number(value)
    whole = number is not None and (not isinstance(number, (float, np.floating))
                                    or (math.isfinite(number) and float(number).is_integer()))
    if not whole or number < 1:
        raise DataError(f"the batch size must be a whole number >= 1, got {value!r}")
    return int(number)


def seed(value) -> int:
    """``value`` as a random seed: a whole number >= 0 (an integral float such as 7.0 counts)."""
    number = _number(value)
    if number is None or not math.isfinite(number) or not float(number).is_integer() or number < 0:
        raise DataError(f"the seed must be a whole number >= 0, got {value!r}")
    return int(number)


def fraction(value, what: str = "validation fraction") -> float:
    """A number in [0, 1)."""
    number = _number(value)
    if number is None or not math.isfinite(number) or not 0 <= number < 1:
        raise DataError(f"the {what} must be a number from 0 up to (not including) 1, got {value!r}")
    return float(number)


def rows(names: list, arrays: list, what: str = "data") -> int:
    """The common number of rows (axis 0) of ``arrays`` (named ``names``), at least 1."""
    counts = []
    for name, array in zip(names, arrays):
        if np.ndim(array) == 0:
            raise DataError(f"the {what} array '{name}' is a single value; it needs rows along axis 0")
        counts.append(len(array))
    for name, count in zip(names[1:], counts[1:]):
        if count != counts[0]:
            raise DataError(f"the {what} arrays have different numbers of rows: '{names[0]}' has {counts[0]}, "
                             f"'{name}' has {count}")
    if counts and counts[0] == 0:
        raise DataError(f"the {what} has no rows: '{names[0]}' is empty")
    return counts[0] if counts else 0


def finite(names: list, arrays: list, what: str = "data") -> None:
    """DataError naming the first float array that holds NaN or inf, with the count and the first row."""
    for name, array in zip(names, arrays):
        array = np.asarray(array)
        if not bad_values(array):
            continue
        ok = np.isfinite(array)
        if not ok.all():
            flat = ok.reshape(len(array), -1).all(axis=1) if array.ndim > 1 else ok
            row = int(np.argmin(flat))
            raise DataError(f"the {what} array '{name}' holds {array.size - int(np.count_nonzero(ok))} nan or inf "
                             f"values (the first in row {row}); remove those rows or fill them in")
