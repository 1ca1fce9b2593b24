"""User values checked (whole numbers, the validation share) and user text quoted in messages."""
from __future__ import annotations

import json
import math

from ..train.data import DataError


def show(text, limit: int = 60) -> str:
    """User text quoted for a message, cut to ``limit`` characters."""
    text = str(text)
    return json.dumps(text if len(text) <= limit else text[:limit] + "…", ensure_ascii=False)


def names_text(names) -> str:
    """A list of user names as one unambiguous JSON list (for doc strings)."""
    return json.dumps([str(n) for n in names], ensure_ascii=False)


def whole(value, low: int, high=None):
    """``value`` as an int when it is a whole number in low..high (high None: no upper bound), else None."""
    try:
        number = int(value) if not isinstance(value, bool) and float(value) == int(value) else None
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number is not None and number >= low and (high is None or number <= high) else None


def check_whole(value, name: str, low: int, high) -> int:
    """``value`` as an int in low..high (high None: no upper bound), else a DataError naming ``name``."""
    number = whole(value, low, high)
    if number is None:
        bound = f"from {low} to {high}" if high is not None else f"of {low} or more"
        raise DataError(f"the {name} is {show(value)}; it must be a whole number {bound}")
    return number


def check_validation(validation) -> float:
    """The share of rows held out for validation: a number above 0 and below 1."""
    try:
        v = float(validation) if not isinstance(validation, bool) else math.nan
    except (TypeError, ValueError):
        v = math.nan
    if not 0 < v < 1:
        raise DataError(f"the validation share is {show(validation)}; it must be above 0 and below 1 (for example "
                        f"0.2)")
    return v
