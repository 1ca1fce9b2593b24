"""Control flow and sequences: If (both branches, or the one a known condition picks), Loop and Scan (their
bodies inferred once: a carried dim that the body changes is unknown), the sequence and optional ops."""
from __future__ import annotations

from ...ir.model import OptionalType, SequenceType, TensorType
from ._context import BOOL, INT64
from ._registry import Out, rule


def _join(c, a: Out, b: Out) -> Out:
    """What two values that may each be the result have in common."""
    if a.type is not None or b.type is not None:
        return a if a.type == b.type else Out(None, None, type=a.type or b.type)
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return Out(a.elem or b.elem, None)
    find = c.symbols.find
    return Out(a.elem or b.elem, [find(x) if find(x) == find(y) else c.fresh() for x, y in zip(a.shape, b.shape)])


@rule("If")
def if_(c):
    cond = c.value(0)
    then, other = c.node.attributes["then_branch"].value, c.node.attributes["else_branch"].value
    if cond is not None:
        return c.graphs(then if bool(cond.reshape(-1)[0]) else other, [])
    return [_join(c, a, b) for a, b in zip(c.graphs(then, []), c.graphs(other, []))]


def _carried(c, before: Out, after: Out) -> Out:
    return _join(c, before, after)


@rule("Loop")
def loop(c):
    body = c.node.attributes["body"].value
    carried = [c.state(i) for i in range(2, c.n_inputs)]
    outs = c.graphs(body, [Out(INT64, []), Out(BOOL, [])] + carried)
    n = len(carried)
    trips = c.ints(0)
    count = trips[0] if trips is not None and not c.has(1) else c.fresh()
    final = [_carried(c, a, b) for a, b in zip(carried, outs[1:1 + n])]
    scans = [Out(s.elem, None if s.shape is None else [count] + list(s.shape)) for s in outs[1 + n:]]
    return final + scans


@rule("Scan")
def scan(c):
    body = c.node.attributes["body"].value
    m = c.attr("num_scan_inputs")
    n_states = c.n_inputs - m
    axes_in = c.attr("scan_input_axes") or [0] * m
    slices, lengths = [], []
    for k in range(m):
        i = n_states + k
        dims = c.shape(i)
        a = c.axis(axes_in[k], len(dims))
        lengths.append(dims[a])
        slices.append(Out(c.elem(i), dims[:a] + dims[a + 1:]))
    length = lengths[0] if lengths else c.fresh()
    for d in lengths[1:]:
        length = c.unify(length, d, "the scan inputs' scanned axes")
    states = [c.state(i) for i in range(n_states)]
    outs = c.graphs(body, states + slices)
    final = [_carried(c, a, b) for a, b in zip(states, outs[:n_states])]
    axes_out = c.attr("scan_output_axes") or [0] * (len(outs) - n_states)
    scans = []
    for s, a in zip(outs[n_states:], axes_out):
        dims = list(s.shape)
        a = a + len(dims) + 1 if a < 0 else a
        scans.append(Out(s.elem, dims[:a] + [length] + dims[a:]))
    return final + scans


def _tensor(c, s: Out):
    return s.type if s.type is not None else TensorType(s.elem, None if s.shape is None else
                                                        [c.symbols.public(d) for d in s.shape])


@rule("SequenceConstruct")
def sequence_construct(c):
    first = c.state(0)
    joined = first
    for i in c.present()[1:]:
        joined = _join(c, joined, c.state(i))
    return Out(None, None, type=SequenceType(_tensor(c, joined)))


@rule("SequenceEmpty")
def sequence_empty(c):
    return Out(None, None, type=SequenceType(TensorType(c.attr("dtype", 1), None)))


@rule("SequenceInsert", "SequenceErase")
def sequence_same(c):
    return Out(None, None, type=c.state(0).type)


@rule("SequenceLength")
def sequence_length(c):
    return Out(INT64, [])


def _element(c, t) -> Out:
    inner = getattr(t, "elem_type", None)
    if isinstance(inner, TensorType):
        shape = None if inner.shape is None else [d if d is not None else c.fresh() for d in inner.shape]
        return Out(inner.elem_type, shape)
    return Out(None, None, type=inner)


@rule("SequenceAt")
def sequence_at(c):
    return _element(c, c.state(0).type)


@rule("OptionalGetElement")
def optional_get_element(c):
    t = c.state(0).type
    if isinstance(t, OptionalType):
        return _element(c, t)
    return c.like(0)


@rule("SplitToSequence")
def split_to_sequence(c):
    dims = c.shape(0)
    axis = c.axis(c.attr("axis", 0), len(dims))
    keep = c.attr("keepdims", 1) or c.has(1)
    inner = [c.symbols.public(d) for d in dims]
    inner[axis] = None
    if not keep:
        inner.pop(axis)
    return Out(None, None, type=SequenceType(TensorType(c.elem(0), inner)))


@rule("ConcatFromSequence")
def concat_from_sequence(c):
    element = _element(c, c.state(0).type)
    if element.shape is None:
        return Out(element.elem, None)
    dims = list(element.shape)
    axis = c.attr("axis")
    if c.attr("new_axis", 0):
        axis = axis + len(dims) + 1 if axis < 0 else axis
        return Out(element.elem, dims[:axis] + [c.fresh()] + dims[axis:])
    axis = c.axis(axis, len(dims))
    dims[axis] = c.fresh()
    return Out(element.elem, dims)
