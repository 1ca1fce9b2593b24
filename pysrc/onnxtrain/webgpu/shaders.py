"""The WGSL sources (shaders/*.wgsl, package data), with ``${NAME}`` placeholders filled in per use.

Every shader starts with the prelude: the parameter block ``P`` that a dispatch's ``params`` fill (read with
``pu(i)``, ``pi(i)`` and ``pf(i)``: the i-th value as u32, i32 or f32) and ``flat(g, n)``, the linear index of
an invocation in a grid made by ``Lowering.grid``.
"""
from __future__ import annotations

import functools
import string
from importlib import resources

WORKGROUP = 256   # invocations per workgroup of the one-dimensional kernels
MAX_PARAMS = 64   # 32-bit values in a dispatch's parameter block


@functools.lru_cache(maxsize=None)
def _file(name: str) -> str:
    return resources.files(__package__).joinpath("shaders", f"{name}.wgsl").read_text()


@functools.lru_cache(maxsize=None)
def shader(name: str, **subs) -> str:
    """The WGSL of ``shaders/<name>.wgsl`` after the prelude, with ``${KEY}`` replaced by ``subs[KEY]``."""
    body = string.Template(_file(name)).substitute({k: str(v) for k, v in subs.items()})
    return _file("prelude") + body
