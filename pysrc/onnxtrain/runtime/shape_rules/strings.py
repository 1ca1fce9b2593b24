"""String ops: StringNormalizer, StringConcat, RegexFullMatch, StringSplit."""
from __future__ import annotations

from ._context import BOOL, INT64
from ._registry import Out, rule

STRING = 8


@rule("StringNormalizer")
def string_normalizer(c):
    dims = c.shape(0)
    if not c.attr("stopwords"):
        return Out(STRING, dims)
    return Out(STRING, dims[:-1] + [c.fresh()])


@rule("StringConcat")
def string_concat(c):
    return Out(STRING, c.broadcast([0, 1]))


@rule("RegexFullMatch")
def regex_full_match(c):
    return Out(BOOL, c.shape(0))


@rule("StringSplit")
def string_split(c):
    dims = c.shape(0)
    return [Out(STRING, dims + [c.fresh()]), Out(INT64, dims)]
