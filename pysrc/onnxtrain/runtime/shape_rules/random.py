"""Random ops: the shape from the attribute or the input, the element type from ``dtype``."""
from __future__ import annotations

from ._registry import Out, rule


@rule("RandomNormal", "RandomUniform")
def random(c):
    return Out(c.attr("dtype", 1), list(c.attr("shape")))


@rule("RandomNormalLike", "RandomUniformLike", "Bernoulli")
def random_like(c):
    return Out(c.attr("dtype", c.elem(0)), c.shape(0))


@rule("Multinomial")
def multinomial(c):
    return Out(c.attr("dtype", 6), [c.shape(0)[0], c.attr("sample_size", 1)])
