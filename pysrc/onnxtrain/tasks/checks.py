"""User values checked (whole numbers, the validation share), and user names in messages and class names."""
from __future__ import annotations

import json
import math
import unicodedata

import numpy as np

from ..train.data import DataError, show  # noqa: F401  (show: the tasks quote user text with it)

MAX_NAME = 40  # characters of a class name


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


def class_name(name, taken) -> str:
    """``name`` stripped, as a new class's name next to the names ``taken``: not empty, at most MAX_NAME
    characters, no control or invisible character, not one of ``taken`` up to case."""
    name = str(name).strip()
    if not name:
        raise DataError("a class needs a name")
    if len(name) > MAX_NAME:
        raise DataError(f"the class name {show(name)} has {len(name)} characters; at most {MAX_NAME}")
    # control, format and separator characters, but the zero-width joiner that emoji sequences use
    odd = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") and c != "\u200d"]
    if odd:
        raise DataError(f"the class name {show(name)} contains a control or invisible character "
                        f"(U+{ord(odd[0]):04X})")
    same = [c for c in taken if c.casefold() == name.casefold()]
    if same:
        raise DataError(f"the class name {show(name)} is taken (by {show(same[0])}); choose another")
    return name


def rgba(data: bytes, n: int, height: int, width: int, what: str) -> np.ndarray:
    """``n`` RGBA images of ``width`` x ``height`` px as uint8 bytes (a page's pixels) as [n, height, width, 4]."""
    need = n * height * width * 4
    if len(data) != need:
        raise DataError(f"{what}: the pixel buffer has {len(data):,} bytes, but {n} RGBA image{'s' * (n != 1)} of "
                        f"{width}×{height} px take {need:,}")
    return np.frombuffer(data, np.uint8).reshape(n, height, width, 4)
