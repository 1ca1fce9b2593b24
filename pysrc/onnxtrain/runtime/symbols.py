"""Symbolic dims that unify: union-find over symbol names, where a class may be pinned to an int."""
from __future__ import annotations

INTERNAL = "?"   # prefix of the symbols inference invents; they leave it as None


class Symbols:
    def __init__(self):
        self.parent, self.pinned, self.order = {}, {}, {}
        self.count = 0

    def named(self, name: str) -> str:
        if name not in self.parent:
            self.parent[name] = name
            self.order[name] = len(self.order)
        return name

    def fresh(self) -> str:
        self.count += 1
        return self.named(f"{INTERNAL}{self.count}")

    def _root(self, s: str) -> str:
        self.named(s)
        while self.parent[s] != s:
            self.parent[s] = self.parent[self.parent[s]]
            s = self.parent[s]
        return s

    def find(self, d):
        """A dim as it stands: an int, a symbol (its class's first name), or None."""
        if not isinstance(d, str):
            return d
        root = self._root(d)
        return self.pinned.get(root, root)

    def public(self, d):
        d = self.find(d)
        return None if isinstance(d, str) and d.startswith(INTERNAL) else d

    def unify(self, a, b):
        """The one dim ``a`` and ``b`` must be; ValueError when they are different ints."""
        a, b = self.find(a), self.find(b)
        if a is None:
            return b
        if b is None or a == b:
            return a
        if isinstance(a, int) and isinstance(b, int):
            raise ValueError(f"{a} != {b}")
        if isinstance(a, int) or isinstance(b, int):
            sym, value = (b, a) if isinstance(a, int) else (a, b)
            self.pinned[self._root(sym)] = value
            return value
        ra, rb = self._root(a), self._root(b)
        named_a, named_b = not ra.startswith("?"), not rb.startswith("?")
        keep, drop = (ra, rb) if (named_a, -self.order[ra]) >= (named_b, -self.order[rb]) else (rb, ra)
        self.parent[drop] = keep
        return keep
