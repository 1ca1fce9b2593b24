"""The rule table: op type -> gradient rule, and the ops that pass no gradient."""
from __future__ import annotations

GRADIENT_RULES: dict = {}

#: Ops whose outputs carry no gradient to their inputs.
NO_GRADIENT = {"Shape", "Size", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or",
               "Xor", "ArgMax", "ArgMin", "Floor", "Ceil", "Round", "Sign", "ConstantOfShape", "Range", "NonZero",
               "IsNaN", "IsInf", "OneHot", "EyeLike", "RandomNormalLike", "RandomUniformLike"}


def rule(*op_types, broadcasts: bool = False):
    """Register ``fn`` as the gradient rule of ``op_types``.  With ``broadcasts``, the driver sums each input's
    gradient (shaped like output 0) over the axes along which that input was broadcast."""
    def register(fn):
        fn.broadcasts = broadcasts
        for op in op_types:
            GRADIENT_RULES[op] = fn
        return fn
    return register
