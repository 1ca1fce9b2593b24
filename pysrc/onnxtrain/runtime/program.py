"""Compile a planned graph, for the shapes of one set of feeds, into a Program for an execution provider: the
provider's records (kernel calls, copies) in order, the nodes that run on the host between them, and the
buffers, pooled by liveness (allocate.py).

Values known before the run (shapes, constants and what only they feed) are computed here, once, by the numpy
kernels.  A node with a lowering in the provider's table becomes its records; any other node, or one its
lowering does not cover, runs on the host at its place in the step, with its inputs read and its outputs written
back (``fallbacks`` says which and why).

A lowering is a plain function named like the op.  It takes the provider's ``Lowering`` context first, then the
node's inputs (Tensors; an omitted optional input is None; a sequence input is a list of Tensors) and the node's
attributes as keyword arguments with the spec's defaults, exactly as the numpy kernel of the op.  It records its
work on the context and returns the output Tensor, or a tuple of them.  It raises ``NotLowered`` for what it
does not cover (the node then runs on the host), before recording anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.model import AttrType
from ..ops.registry import normalize_domain
from .allocate import allocate
from .plan import IN_PLACE_OPS, Plan, attribute_value, describe_node, subgraphs
from .residency import Resident

#: Ops whose output shapes follow the values of inputs that need not be integers (a float scale, a float range, the
#: data itself): on the host with such an input computed during the step, a program could not stay right.
VALUE_SHAPED = {"Resize", "Upsample", "Range", "NonZero", "Unique", "Compress", "NonMaxSuppression",
                "CenterCropPad", "Col2Im"}
#: Ops whose result must differ from run to run: never computed ahead, even from known inputs.
RANDOM_OPS = {"Dropout", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli", "BiasDropout", "BitmaskDropout", "BitmaskBiasDropout"}


class NotLowered(Exception):
    """A provider's kernel cannot run this node (an attribute or shape it does not cover): the node runs on the
    host instead.  The message says why, for the session's list of fallbacks."""


class ProgramError(RuntimeError):
    """A graph cannot be compiled into a program for these feeds (a node on the host whose output shapes cannot
    be found, a value the provider cannot hold)."""


class NeedsPlan(ProgramError):
    """A program for these feeds might not stay right: a node on the host whose output shapes may follow the data
    (an integer input computed during the step, a subgraph), or a value the provider cannot hold.  A provider that
    ``plans_instead`` has the session run the plan's numpy kernels for these feeds; others raise."""


@dataclass(eq=False)
class Storage:
    """A buffer as the compiler sees it.  ``kind`` is "temp" (pooled by liveness), "feed" (written from a fed
    array each run), "resident" (a buffer that outlives the run: parameters, gradients, moments) or "const" (a
    value known when compiling, written once)."""
    nbytes: int
    kind: str = "temp"
    value: np.ndarray | None = None      # a const's contents, already as the provider holds it
    resident: object = None              # a resident's handle
    written: bool = False                # a record writes into it
    index: int = -1                      # its buffer in the program, set by the allocator


@dataclass(eq=False)
class Tensor:
    """A value of the graph at compile time.  ``storage`` is None while it lives only on the host; ``value``
    is its contents when known before the run."""
    shape: tuple
    dtype: np.dtype
    storage: Storage | None = None
    value: np.ndarray | None = None
    name: str = field(default="", compare=False)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rank(self) -> int:
        return len(self.shape)

    def describe(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


@dataclass(eq=False)
class HostStep:
    """A node that runs on the host during the step."""
    fn: object
    kwargs: dict
    node: object
    inputs: list      # per argument: a Tensor, a list of Tensors, or None
    outputs: list     # Tensors (written after the kernel) or None for an unused output
    reason: str
    kernel_call = False

    def storages(self) -> list:
        return [t.storage for arg in self.inputs + self.outputs for t in (arg if isinstance(arg, list) else [arg])
                if t is not None and t.storage is not None]

    def written(self) -> list:
        return [t.storage for arg in self.outputs for t in (arg if isinstance(arg, list) else [arg])
                if t is not None and t.storage is not None]


@dataclass(eq=False)
class Program:
    steps: list                   # the provider's records and HostSteps, in order
    buffers: list                 # Buffer per index (Storage.index)
    feeds: list                   # (graph input position, index in a sequence or None, Storage)
    outputs: list                 # the graph outputs' Tensors
    fallbacks: list = field(default_factory=list)   # "node: reason" for each node on the host

    @property
    def written_residents(self) -> list:
        """The residents a record writes (once each): their host copies are stale after a run."""
        return list({s.index: s for step in self.steps for s in step.written() if s.kind == "resident"}.values())

    @property
    def dispatch_count(self) -> int:
        """The kernel calls of a run."""
        return sum(step.kernel_call for step in self.steps)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers if b.kind != "resident")


class Lowering:
    """What a lowering calls: make outputs and views, read values known before the run; a provider's subclass
    adds the methods that record its work.  Records go to ``records``; the compiler keeps them only when the
    lowering returns."""

    def __init__(self, provider, node, used: tuple, materialize, opset: int | None = None, output_shapes=None):
        self.provider = provider
        self.node = node
        self.opset = opset                # the model's opset of the node's domain (None when unknown)
        self.output_shapes = output_shapes  # per output, the static shape in the graph's value_info, or None
        self._used = used
        self._materialize = materialize   # Tensor -> its Storage (writes a known value once)
        self.records: list = []

    def used(self, i: int) -> bool:
        """Whether the node's i-th output is read by anything (an omitted output is not)."""
        return i < len(self._used) and self._used[i]

    def output(self, shape, dtype=np.float32) -> Tensor:
        shape = tuple(int(d) for d in shape)
        dtype = np.dtype(dtype)
        return Tensor(shape, dtype, Storage(self.provider.nbytes(shape, dtype)))

    def view(self, t: Tensor, shape) -> Tensor:
        """``t`` with another shape of the same size, sharing its buffer (Reshape, Flatten, Squeeze ...)."""
        shape = tuple(int(d) for d in shape)
        if int(np.prod(shape, dtype=np.int64)) != t.size:
            raise ValueError(f"cannot view {t.describe()} as {list(shape)}")
        value = None if t.value is None else t.value.reshape(shape)
        return Tensor(shape, t.dtype, t.storage, value)

    @staticmethod
    def known(array) -> Tensor:
        """A value known before the run (no device work until a kernel reads it)."""
        array = np.asarray(array)
        return Tensor(tuple(array.shape), array.dtype, None, array)

    def value(self, t: Tensor | None, what: str):
        """The value of ``t`` known before the run (shapes, axes, constants), or NotLowered when the step
        computes it; None for an omitted input."""
        if t is None:
            return None
        if t.value is None:
            raise NotLowered(f"{what} is computed during the step, and the {self.provider.name} kernel needs it "
                             f"before")
        return t.value

    def storage(self, t: Tensor) -> Storage:
        """``t``'s buffer (a known value is written into one, once)."""
        return self._materialize(t)


def is_resident(value) -> bool:
    """Whether a feed is a resident (a buffer that outlives runs) or a list of them."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(isinstance(v, Resident) for v in value)
    return isinstance(value, Resident)


def feed_signature(value) -> tuple:
    """What a program depends on in a feed: shape and dtype of an array, the identity of a resident."""
    if isinstance(value, (list, tuple)):
        return ("seq",) + tuple(feed_signature(v) for v in value)
    if is_resident(value):
        return ("resident", value.serial)
    value = np.asarray(value)
    return ("array", value.shape, value.dtype.str)


def array_signature(value) -> tuple:
    """``feed_signature`` for a provider without residents: shape and dtype of an array (or of each in a list)."""
    if type(value) is np.ndarray:
        return value.shape, value.dtype
    if isinstance(value, (list, tuple)):
        return tuple(map(array_signature, value))
    value = np.asarray(value)
    return value.shape, value.dtype


def compile_program(plan: Plan, feeds: list, provider, model=None) -> Program:
    """The program of ``plan`` on ``provider`` for ``feeds`` (arrays, residents or lists of them, in input
    order); ``model`` gives the lowerings the opset of their node's domain."""
    return _Compiler(plan, provider, model).compile(feeds)


class _Compiler:
    def __init__(self, plan: Plan, provider, model=None):
        self.plan = plan
        self.provider = provider
        self.model = model
        self.records: list = []
        self.consts: dict = {}
        self.fallbacks: list = []
        self.feeds: list = []

    def compile(self, feeds: list) -> Program:
        plan = self.plan
        values = [None] * len(plan.template)
        for slot, data in enumerate(plan.template):
            if data is not None:
                values[slot] = Lowering.known(data)
        for pos, (slot, value) in enumerate(zip(plan.input_slots, feeds)):
            values[slot] = self._feed(pos, value)
        used = self._used_slots()
        for step in plan.steps:
            args = [values[s] if s >= 0 else None for s in step.inputs]
            outs = self._run(step, args, tuple(s >= 0 and s in used for s in step.outputs))
            for s, t in zip(step.outputs, outs):
                if s >= 0:
                    values[s] = t
            for s in step.free:
                values[s] = None
        outputs = [values[s] for s in plan.output_slots]
        program = Program(self.records, [], self.feeds, outputs, self.fallbacks)
        allocate(program)
        return program

    def _used_slots(self) -> set:
        used = set(self.plan.output_slots)
        for step in self.plan.steps:
            used.update(s for s in step.inputs if s >= 0)
        return used

    def _feed(self, pos: int, value):
        if isinstance(value, (list, tuple)):
            return [self._feed_one(pos, i, v) for i, v in enumerate(value)]
        return self._feed_one(pos, None, value)

    def _feed_one(self, pos: int, index, value) -> Tensor:
        if is_resident(value):
            storage = Storage(self.provider.nbytes(value.shape, value.dtype), "resident", resident=value)
            return Tensor(tuple(value.shape), value.dtype, storage)
        value = np.asarray(value)
        self._holds(value.dtype, f"input {pos} of the graph")
        storage = Storage(self.provider.nbytes(value.shape, value.dtype), "feed")
        self.feeds.append((pos, index, storage))
        return Tensor(tuple(value.shape), value.dtype, storage)

    # -- one node -----------------------------------------------------------------------------------

    def _run(self, step, args: list, used: tuple) -> list:
        node = step.node
        key = (normalize_domain(node.domain), node.op_type)
        flat = [a for arg in args for a in (arg if isinstance(arg, list) else [arg]) if a is not None]
        in_place = key in IN_PLACE_OPS
        if (flat and all(t.value is not None for t in flat) and not in_place and node.op_type not in RANDOM_OPS
                and not subgraphs(node)):
            return self._fold(step, args)
        provider = self.provider
        lower = provider.lookup(node.op_type, node.domain)
        reason = f"no {provider.kernel_language} kernel for {node.domain or 'ai.onnx'}::{node.op_type}"
        if lower is not None and not subgraphs(node):
            opset = self.model.opset(normalize_domain(node.domain)) if self.model is not None else None
            ctx = provider.Lowering(provider, node, used, self._materialize, opset,
                                    step.kwargs.get("_output_shapes"))
            try:
                result = lower(ctx, *args, **_attributes(node))
            except NotLowered as e:
                reason = str(e)
            else:
                for record in ctx.records:
                    record.origin = (step, args)   # the node's numpy kernel and arguments, for its errors
                self.records.extend(ctx.records)
                return list(result) if isinstance(result, tuple) else [result]
        return self._host(step, args, used, reason)

    def _fold(self, step, args: list) -> list:
        """A node whose inputs are all known: computed now, by its numpy kernel."""
        values = [None if a is None else [t.value for t in a] if isinstance(a, list) else a.value for a in args]
        result = step.fn(*values, **step.kwargs)
        result = result if isinstance(result, tuple) else (result,)
        return [Lowering.known(r) if isinstance(r, np.ndarray) or np.isscalar(r) else self._unknown(step, r)
                for r in result]

    def _host(self, step, args: list, used: tuple, reason: str) -> list:
        """A node that runs on the host during the step, with output shapes found by running it once on zeros
        of its inputs' shapes (or their known values)."""
        flat = [t for a in args for t in (a if isinstance(a, list) else [a]) if t is not None]
        if self.provider.plans_instead and (subgraphs(step.node) or any(
                t.value is None and (t.dtype.kind in "iub" or step.node.op_type in VALUE_SHAPED) for t in flat)):
            raise NeedsPlan(f"{describe_node(step.node)} runs on the host ({reason}), and its output shapes may "
                            f"follow the data")
        probe = [None if a is None else [_probe(t) for t in a] if isinstance(a, list) else _probe(a) for a in args]
        # a random op's probe draws from a generator of its own, leaving the node's for the runs
        kwargs = {**step.kwargs, "_generator": None} if "_generator" in step.kwargs else step.kwargs
        try:
            with np.errstate(all="ignore"):
                result = step.fn(*probe, **kwargs)
        except Exception as e:
            error = NeedsPlan if self.provider.plans_instead else self.provider.Error
            raise error(f"{describe_node(step.node)} runs on the host ({reason}), and its output shapes could not "
                        f"be found: {type(e).__name__}: {e}") from e
        result = result if isinstance(result, tuple) else (result,)
        outs = [(([self._host_output(x) for x in r] if isinstance(r, list) else self._host_output(r))
                 if i < len(used) and used[i] else None) for i, r in enumerate(result[:len(step.outputs)])]
        self.records.append(HostStep(step.fn, step.kwargs, step.node, args, outs, reason))
        self.fallbacks.append(f"{describe_node(step.node)}: {reason}")
        return outs

    def _host_output(self, r) -> Tensor:
        r = np.asarray(r)
        self._holds(r.dtype, "a host node's output")
        return Tensor(tuple(r.shape), r.dtype, Storage(self.provider.nbytes(r.shape, r.dtype)))

    def _holds(self, dtype, what: str) -> None:
        if self.provider.plans_instead and np.dtype(dtype).kind in "OUSV":
            raise NeedsPlan(f"{what} is a {np.dtype(dtype).name} tensor, which {self.provider.title} does not hold")

    def _unknown(self, step, r):
        raise self.provider.Error(f"{describe_node(step.node)} gives a {type(r).__name__}, which "
                                  f"{self.provider.name} does not hold")

    def _materialize(self, t: Tensor) -> Storage:
        if t.storage is not None:
            return t.storage
        known = self.consts.get(id(t.value))   # (storage, value): the value is kept, so its id stays unique
        if known is None:
            data = self.provider.held(t.value, "a constant")
            known = self.consts[id(t.value)] = (Storage(max(4, data.nbytes), "const", value=data), t.value)
        t.storage = storage = known[0]
        return storage


def _probe(t: Tensor) -> np.ndarray:
    """A stand-in for ``t`` to find a host node's output shapes (a copy: in-place kernels write into it)."""
    return t.value.copy() if t.value is not None else np.zeros(t.shape, t.dtype)


def _attributes(node) -> dict:
    return {name: attribute_value(a) for name, a in node.attributes.items()
            if a.type not in (AttrType.GRAPH, AttrType.GRAPHS)}


def strides(shape) -> list:
    """Element strides of a C-contiguous array of ``shape``."""
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= int(d)
    return out[::-1]


def broadcast_strides(shape, out_shape) -> list:
    """Per dimension of ``out_shape``, the element stride into a C-contiguous array of ``shape`` broadcast to it
    (0 where it repeats)."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return [0 if d == 1 and o != 1 else s for d, o, s in zip(shape, out_shape, strides(shape))]
