"""The character classes of a byte-level BPE tokenizer, as the `tokenizers` package itself sees them, probed over
every code point: Oniguruma's ``\\p{L}``, ``\\p{N}`` and ``\\s`` (the regex engine of its ByteLevel pre-tokenizer)
and Rust's ``char::is_numeric`` (its Digits pre-tokenizer). Each has its own Unicode version, none of them this
Python's. ``python tests/text_prediction/bpe_classes.py`` prints the tables that onnxtrain.text.bpe holds."""
from __future__ import annotations

import textwrap

from tokenizers import Regex
from tokenizers import pre_tokenizers

POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def _onig(pattern: str) -> set:
    """The code points that Oniguruma's ``pattern`` (one character) matches: all, less the runs left when the
    matches are removed."""
    text = "".join(map(chr, POINTS))
    left = set()
    for piece, (start, end) in pre_tokenizers.Split(Regex(pattern), behavior="removed").pre_tokenize_str(text):
        assert end - start == len(piece), "offsets are not in characters"
        left.update(map(ord, piece))
    return set(POINTS) - left


def _digits() -> set:
    """The code points the Digits pre-tokenizer isolates: each is written between two x's, and comes back alone."""
    text = "".join(chr(c) + "x" for c in POINTS)
    pieces = pre_tokenizers.Digits(individual_digits=True).pre_tokenize_str(text)
    return {ord(piece) for piece, _ in pieces if len(piece) == 1 and piece != "x"}


def reference_classes() -> dict:
    """{"LETTER", "NUMBER", "SPACE", "DIGIT"}: the code points of each class, from the tokenizers package."""
    return {"LETTER": _onig(r"\p{L}"), "NUMBER": _onig(r"\p{N}"), "SPACE": _onig(r"\s"), "DIGIT": _digits()}


def ranges_text(points: set) -> str:
    """``points`` as hex ranges, ``41-5A 61-7A ...``, wrapped."""
    runs, start = [], None
    for c in sorted(points):
        if start is None or c != end + 1:
            if start is not None:
                runs.append((start, end))
            start = c
        end = c
    if start is not None:
        runs.append((start, end))
    words = [f"{a:X}" if a == b else f"{a:X}-{b:X}" for a, b in runs]
    return "\n".join(textwrap.wrap(" ".join(words), 116, break_on_hyphens=False, break_long_words=False))


if __name__ == "__main__":
    for name, points in reference_classes().items():
        print(f'{name} = """\n{ranges_text(points)}"""')
