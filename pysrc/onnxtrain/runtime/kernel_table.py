"""A compiling provider's kernel table: (domain, op_type) -> the op's lowering (program.py has the contract)."""
from __future__ import annotations

from typing import Callable

from ..ops.registry import normalize_domain


class KernelTable:
    """One lowering per op, registered by decorator; ``load`` (if given) imports the modules that fill the table,
    on the first lookup."""

    def __init__(self, language: str, load: Callable | None = None):
        self.language = language
        self.lowerings: dict = {}
        self._load = load

    def register(self, op_type: str, domain: str = "") -> Callable:
        def register(fn: Callable) -> Callable:
            key = (normalize_domain(domain), op_type)
            if key in self.lowerings:
                raise ValueError(f"{self.language} kernel {domain or 'ai.onnx'}::{op_type} registered twice")
            self.lowerings[key] = fn
            return fn
        return register

    def _loaded(self) -> dict:
        if self._load is not None:
            self._load()
            self._load = None
        return self.lowerings

    def lookup(self, op_type: str, domain: str = ""):
        """The lowering of an op, or None when the op runs on the host."""
        return self._loaded().get((normalize_domain(domain), op_type))

    def ops(self) -> list:
        """[(domain, op_type)] with a lowering, sorted."""
        return sorted(self._loaded())
