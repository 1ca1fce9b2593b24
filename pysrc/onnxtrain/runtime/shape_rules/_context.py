"""What a shape rule sees: the node, its inputs' types, dims and known values, the symbol table, and the
helpers that unify dims or refuse the node with a message that names it, its inputs and the axis."""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ..plan import attribute_value
from ._registry import Out, ShapeInferenceError
from ._symbols import FRESH

INT64 = 7
BOOL = 9


class NoRule(Exception):
    """The op's rule does not cover this form of it (``why``): the driver treats the node as ruleless."""


class UnknownRank(Exception):
    """An input the rule reads has no known rank: the node's outputs get no shape."""


def type_text(elem) -> str:
    try:
        return dtypes.name(elem).lower()
    except Exception:  # noqa: BLE001 - an unknown code is shown as it is
        return str(elem)


class Context:
    def __init__(self, node, states: dict, symbols, opset: int, graphs):
        self.node, self.states, self.symbols, self.opset, self.graphs = node, states, symbols, opset, graphs

    # ---- the node's inputs -----------------------------------------------------------------------------
    @property
    def n_inputs(self) -> int:
        return len(self.node.inputs)

    @property
    def n_outputs(self) -> int:
        return len(self.node.outputs)

    def has(self, i: int) -> bool:
        return i < len(self.node.inputs) and bool(self.node.inputs[i])

    def present(self) -> list:
        return [i for i in range(self.n_inputs) if self.has(i)]

    def state(self, i: int) -> Out:
        return self.states[self.node.inputs[i]]

    def elem(self, i: int):
        return self.state(i).elem

    def shape(self, i: int) -> list:
        s = self.state(i).shape
        if s is None:
            raise UnknownRank(self.node.inputs[i])
        find = self.symbols.find
        return [find(d) for d in s]

    def rank(self, i: int) -> int:
        return len(self.shape(i))

    def value(self, i: int):
        """Input ``i``'s value as a numpy array when it is known exactly, else None."""
        if not self.has(i):
            return None
        v = self.state(i).value
        if isinstance(v, np.ndarray):
            return v
        if isinstance(v, list):
            dims = [self.symbols.find(d) for d in v]
            if all(isinstance(d, int) for d in dims):
                return np.array(dims, np.int64).reshape(self.state(i).shape)
        return None

    def dims(self, i: int):
        """Input ``i``'s elements as dims (ints and symbols) when it is a known 0-D or 1-D int tensor."""
        if not self.has(i):
            return None
        v = self.state(i).value
        if isinstance(v, list):
            return [self.symbols.find(d) for d in v]
        if isinstance(v, np.ndarray) and v.ndim <= 1 and v.dtype.kind in "iub":
            return [int(x) for x in v.reshape(-1)]
        return None

    def ints(self, i: int):
        """Input ``i``'s elements as Python ints when all are known, else None."""
        d = self.dims(i)
        return d if d is not None and all(isinstance(x, int) for x in d) else None

    def attr(self, name: str, default=None):
        a = self.node.attributes.get(name)
        return default if a is None or a.value is None else attribute_value(a)

    # ---- dims ------------------------------------------------------------------------------------------
    def fresh(self) -> str:
        return self.symbols.fresh()

    def unsupported(self, why: str):
        raise NoRule(why)

    def fail(self, why: str):
        raise ShapeInferenceError(f"{self.where()}: {why}")

    def where(self) -> str:
        node = self.node
        named = f" '{node.name}'" if node.name else f" (output '{next((o for o in node.outputs if o), '')}')"
        inputs = ", ".join(f"{n}: {self.describe(n)}" for n in node.inputs if n)
        return f"{node.op_type} node{named} with inputs {inputs or '(none)'}"

    def describe(self, name: str) -> str:
        s = self.states.get(name)
        if s is None:
            return "unknown"
        if s.type is not None:
            return type(s.type).__name__
        if s.shape is None:
            return f"{type_text(s.elem)}[rank unknown]"
        return f"{type_text(s.elem)}[{', '.join(self.dim_text(d) for d in s.shape)}]"

    def dim_text(self, d) -> str:
        r = self.symbols.find(d)
        text = "?" if isinstance(r, str) and r.startswith(FRESH) else str(r)
        if isinstance(d, str) and not d.startswith(FRESH) and r != d:
            return f"{d}={text}"
        return text

    def unify(self, a, b, why: str):
        """One dim from ``a`` and ``b`` (``why`` says which axes they are, for the error)."""
        if not self.symbols.unify(a, b):
            self.fail(f"{why} must agree, but are {self.symbols.find(a)} and {self.symbols.find(b)}")
        return self.symbols.find(a)

    def same(self, i: int, ai: int, j: int, aj: int):
        """Axis ``ai`` of input ``i`` and axis ``aj`` of input ``j`` are one dim."""
        si, sj = self.shape(i), self.shape(j)
        return self.unify(si[ai], sj[aj], f"axis {ai} of '{self.node.inputs[i]}' and axis {aj} of "
                                          f"'{self.node.inputs[j]}'")

    def pin(self, i: int, axis: int, size, why: str = ""):
        """Axis ``axis`` of input ``i`` is ``size`` (an int or a dim)."""
        return self.unify(self.shape(i)[axis], size, f"axis {axis} of '{self.node.inputs[i]}'{why} and {size}")

    def axis(self, axis: int, rank: int, what: str = "axis") -> int:
        if not -rank <= axis < max(rank, 1):
            self.fail(f"{what} {axis} is out of range for rank {rank}")
        return axis + rank if axis < 0 else axis

    def broadcast(self, inputs=None) -> list:
        """The shape of the inputs ``inputs`` (all present ones by default) broadcast as numpy does: 1 against
        d is d, a symbol against an int > 1 is the int (as onnx infers), two different symbols are unknown."""
        idx = self.present() if inputs is None else [i for i in inputs if self.has(i)]
        return broadcast(self, [(self.node.inputs[i], self.shape(i)) for i in idx])

    def out(self, elem, shape, value=None) -> Out:
        return Out(elem, shape, value)

    def like(self, i: int, elem=None) -> Out:
        """An output of input ``i``'s shape (and element type unless ``elem``)."""
        return Out(self.elem(i) if elem is None else elem, self.shape(i))


def broadcast(c, named: list) -> list:
    """``named``: [(name, dims)]."""
    rank = max((len(s) for _, s in named), default=0)
    out = []
    for axis in range(rank):
        dims = [(n, s[axis - rank + len(s)]) for n, s in named if axis - rank + len(s) >= 0]
        ints = {d for _, d in dims if isinstance(d, int) and d != 1}
        if len(ints) > 1:
            c.fail(f"the inputs cannot be broadcast: axis {axis} of the result (aligned from the last axis) is "
                   + ", ".join(f"{d} in '{n}'" for n, d in dims))
        if ints:
            out.append(ints.pop())
            continue
        symbols = {d for _, d in dims if isinstance(d, str)}
        out.append(1 if not symbols else symbols.pop() if len(symbols) == 1 else c.fresh())
    return out
