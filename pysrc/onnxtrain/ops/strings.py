"""Kernels: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer.

STRING tensors are object arrays: of bytes when read from a file, of str when fed.  These kernels take
either and return bytes.
"""
from __future__ import annotations

import re

import numpy as np

from .registry import kernel


def _text(v) -> str:
    return v.decode("utf-8") if isinstance(v, (bytes, bytearray)) else str(v)


def _strings(values, shape) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode("utf-8") for v in values]
    return out.reshape(shape)


def _per_char(word: str, change) -> str:
    """Case change one character at a time, as onnxruntime's (a character that would become two, like ß,
    stays as it is)."""
    return "".join(c2 if len(c2 := change(c)) == 1 else c for c in word)


def _check_strings(op: str, x):
    if x.dtype != object:
        raise ValueError(f"{op}: the input must be a STRING tensor, got {x.dtype}")


@kernel("StringNormalizer", since=10)
def StringNormalizer(X, *, case_change_action="NONE", is_case_sensitive=0, locale="", stopwords=None):
    """Drops the elements that are stop words, then changes case (onnxruntime's definition: an element is one
    word).  An input of [C] or [1, C]; when every element is dropped the output holds one empty string."""
    _check_strings("StringNormalizer", X)
    if case_change_action not in ("NONE", "LOWER", "UPPER"):
        raise ValueError(f"StringNormalizer: case_change_action '{case_change_action}' is not supported")
    if X.ndim not in (1, 2) or (X.ndim == 2 and X.shape[0] != 1):
        raise ValueError(f"StringNormalizer: the input must have shape [C] or [1, C], got {list(X.shape)}")
    words = [_text(v) for v in X.ravel()]
    stops = set(stopwords or [])
    if is_case_sensitive:
        kept = [w for w in words if w not in stops]
    else:
        folded = {_per_char(s, str.lower) for s in stops}
        kept = [w for w in words if _per_char(w, str.lower) not in folded]
    if case_change_action == "LOWER":
        kept = [_per_char(w, str.lower) for w in kept]
    elif case_change_action == "UPPER":
        kept = [_per_char(w, str.upper) for w in kept]
    if not kept:
        kept = [""]
    return _strings(kept, (len(kept),) if X.ndim == 1 else (1, len(kept)))


@kernel("StringSplit", since=20)
def StringSplit(X, *, delimiter="", maxsplit=None):
    """Y: the parts, padded with empty strings to the most parts of any element; Z: each element's count.
    An empty delimiter splits at runs of whitespace."""
    _check_strings("StringSplit", X)
    parts = [_text(v).split(delimiter or None, -1 if maxsplit is None else maxsplit) for v in X.ravel()]
    width = max((len(p) for p in parts), default=0)
    padded = [w for p in parts for w in p + [""] * (width - len(p))]
    counts = np.array([len(p) for p in parts], np.int64).reshape(X.shape)
    return _strings(padded, X.shape + (width,)), counts


@kernel("StringConcat", since=20)
def StringConcat(X, Y):
    _check_strings("StringConcat", X)
    _check_strings("StringConcat", Y)
    x, y = np.broadcast_arrays(X, Y)
    return _strings([_text(a) + _text(b) for a, b in zip(x.ravel(), y.ravel())], x.shape)


@kernel("RegexFullMatch", since=20)
def RegexFullMatch(X, *, pattern):
    """Python's re in place of RE2: the same for the common syntax (RE2-only constructs raise)."""
    _check_strings("RegexFullMatch", X)
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise ValueError(f"RegexFullMatch: pattern {pattern!r} is not supported: {e}") from None
    return np.array([compiled.fullmatch(_text(v)) is not None for v in X.ravel()], bool).reshape(X.shape)


def _ngram_table(pool: list, ngram_counts: list, ngram_indexes: list, min_n: int, max_n: int) -> dict:
    """{n-gram tuple: output column} for the pool's n-grams with min_n <= n <= max_n."""
    table, position = {}, 0
    for i, start in enumerate(ngram_counts):
        end = ngram_counts[i + 1] if i + 1 < len(ngram_counts) else len(pool)
        n = i + 1
        for j in range(start, end, n):
            if min_n <= n <= max_n:
                table[tuple(pool[j:j + n])] = ngram_indexes[position]
            position += 1
    return table


@kernel("TfIdfVectorizer", since=9)
def TfIdfVectorizer(X, *, max_gram_length, max_skip_count, min_gram_length, mode, ngram_counts, ngram_indexes,
                    pool_int64s=None, pool_strings=None, weights=None):
    """Counts the pool's n-grams in each row (items ``skip + 1`` apart for every skip up to max_skip_count;
    unigrams once), then weights them by ``mode``."""
    if mode not in ("TF", "IDF", "TFIDF"):
        raise ValueError(f"TfIdfVectorizer: mode '{mode}' is not supported")
    if (pool_int64s is None) == (pool_strings is None):
        raise ValueError("TfIdfVectorizer: give exactly one of pool_int64s and pool_strings")
    if X.ndim not in (1, 2):
        raise ValueError(f"TfIdfVectorizer: the input must be 1-D or 2-D, got shape {list(X.shape)}")
    as_key = _text if pool_strings is not None else int
    pool = [as_key(v) for v in (pool_strings if pool_strings is not None else pool_int64s)]
    table = _ngram_table(pool, list(ngram_counts), list(ngram_indexes), min_gram_length, max_gram_length)
    size = max(ngram_indexes) + 1
    rows = X.reshape(1, -1) if X.ndim == 1 else X
    counts = np.zeros((rows.shape[0], size), np.float32)
    for r, row in enumerate(rows):
        items = [as_key(v) for v in row]
        for skip in range(max_skip_count + 1):
            step = skip + 1
            first = min_gram_length if skip == 0 else max(min_gram_length, 2)
            for start in range(len(items)):
                for n in range(first, max_gram_length + 1):
                    last = start + (n - 1) * step
                    if last >= len(items):
                        break
                    column = table.get(tuple(items[start:last + 1:step]))
                    if column is not None:
                        counts[r, column] += 1
    w = np.ones(size, np.float32) if not weights else np.asarray(weights, np.float32)
    if mode == "IDF":
        out = (counts > 0) * w
    elif mode == "TFIDF":
        out = counts * w
    else:
        out = counts
    return out.astype(np.float32).reshape(size) if X.ndim == 1 else out.astype(np.float32)
