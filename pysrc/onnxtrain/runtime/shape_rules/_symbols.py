"""The symbol table: dims unified by union-find.  A symbol unified with an int becomes that int everywhere;
two symbols unified become one, named by the user's symbol seen first (a fresh symbol never wins)."""
from __future__ import annotations

FRESH = "?"  # the prefix of the symbols inference invents for dims it cannot name (reported as unknown)


class Symbols:
    def __init__(self):
        self.parent: dict = {}
        self.order: dict = {}
        self.count = 0

    def see(self, symbol: str) -> str:
        if symbol not in self.parent:
            self.parent[symbol] = symbol
            self.order[symbol] = len(self.order)
        return symbol

    def fresh(self) -> str:
        self.count += 1
        return self.see(f"{FRESH}{self.count}")

    def find(self, dim):
        path = []
        while isinstance(dim, str):
            parent = self.parent.get(dim, dim)
            if parent == dim:
                break
            path.append(dim)
            dim = parent
        for symbol in path:
            self.parent[symbol] = dim
        return dim

    def unify(self, a, b) -> bool:
        """Make ``a`` and ``b`` one dim; False when they are two different ints."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return True
        if isinstance(a, int) and isinstance(b, int):
            return False
        if isinstance(a, int):
            a, b = b, a
        self.see(a)
        if isinstance(b, int):
            self.parent[a] = b
            return True
        self.see(b)
        if self._rank(b) < self._rank(a):
            a, b = b, a
        self.parent[b] = a
        return True

    def _rank(self, symbol: str) -> tuple:
        return symbol.startswith(FRESH), self.order[symbol]

    def public(self, dim):
        """``dim`` as a TensorType holds it: an int, a user's symbol, or None for an invented one."""
        dim = self.find(dim)
        return None if isinstance(dim, str) and dim.startswith(FRESH) else dim
