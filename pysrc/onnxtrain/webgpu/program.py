"""Compile a planned graph, for the shapes of one set of feeds, into a Program: the dispatches and copies of the
WGSL kernels in order, the nodes that run on the CPU between them, and the buffers, pooled by liveness.

Values known before the run (shapes, constants and what only they feed) are computed here, once, by the CPU
kernels.  A node with a WGSL kernel is lowered onto the GPU; any other node, or one its kernel does not cover,
runs on the CPU at its place in the step, with its inputs read back and its outputs uploaded (``fallbacks``
says which and why).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.model import AttrType
from ..ops.registry import normalize_domain
from ..runtime.plan import IN_PLACE_OPS, Plan, attribute_value, describe_node, subgraphs
from .allocate import Buffer, allocate
from .errors import NotLowered, WebGPUError
from .lowering import Copy, Dispatch, Lowering
from .shaders import MAX_PARAMS
from .registry import gpu_lookup
from .tensors import Storage, Tensor, gpu_type, to_gpu_array

PARAMS_ALIGN = 4 * MAX_PARAMS   # a parameter block's bytes: WebGPU's largest minUniformBufferOffsetAlignment
#: Ops whose result must differ from run to run: never computed ahead, even from known inputs.
RANDOM_OPS = {"Dropout", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli", "BiasDropout", "BitmaskDropout", "BitmaskBiasDropout"}


@dataclass(eq=False)
class HostStep:
    """A node that runs on the CPU during the step."""
    fn: object
    kwargs: dict
    node: object
    inputs: list      # per argument: a Tensor, a list of Tensors, or None
    outputs: list     # Tensors (uploaded after the kernel) or None for an unused output
    reason: str


@dataclass(eq=False)
class Program:
    steps: list                   # Dispatch, Copy and HostStep records, in order
    buffers: list                 # Buffer per index (Storage.index)
    feeds: list                   # (graph input position, index in a sequence or None, Storage)
    outputs: list                 # the graph outputs' Tensors
    fallbacks: list = field(default_factory=list)   # "node: reason" for each node on the CPU

    def param_blocks(self) -> tuple:
        """The dispatches' parameter blocks as one buffer's bytes, each at an offset aligned for a uniform
        binding, and those offsets (in dispatch order)."""
        data, offsets = bytearray(), []
        for step in self.steps:
            if isinstance(step, Dispatch):
                offsets.append(len(data))
                data += step.params + bytes(PARAMS_ALIGN - len(step.params))
        return bytes(data) or bytes(PARAMS_ALIGN), offsets

    @property
    def written_residents(self) -> list:
        """The residents a dispatch writes (once each): their host copies are stale after a run."""
        return list({s.index: s for step in self.steps if isinstance(step, Dispatch)
                     for s in step.outputs if s.kind == "resident"}.values())

    @property
    def dispatch_count(self) -> int:
        return sum(isinstance(s, Dispatch) for s in self.steps)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers if b.kind != "resident")


def feed_signature(value) -> tuple:
    """What a program depends on in a feed: shape and dtype of an array, the identity of a resident."""
    if isinstance(value, (list, tuple)):
        return ("seq",) + tuple(feed_signature(v) for v in value)
    if hasattr(value, "gpu_buffer"):
        return ("resident", value.serial)
    value = np.asarray(value)
    return ("array", value.shape, value.dtype.str)


def compile_program(plan: Plan, feeds: list, model=None) -> Program:
    """The program of ``plan`` for ``feeds`` (arrays, residents or lists of them, in input order); ``model``
    gives the lowerings the opset of their node's domain."""
    return _Compiler(plan, model).compile(feeds)


class _Compiler:
    def __init__(self, plan: Plan, model=None):
        self.plan = plan
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
        if hasattr(value, "gpu_buffer"):
            storage = Storage(max(4, 4 * int(np.prod(value.shape, dtype=np.int64))), "resident", resident=value)
            return Tensor(tuple(value.shape), value.dtype, storage)
        value = np.asarray(value)
        gpu_type(value.dtype)
        storage = Storage(max(4, 4 * value.size), "feed")
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
        lower = gpu_lookup(node.op_type, node.domain)
        reason = f"no WGSL kernel for {node.domain or 'ai.onnx'}::{node.op_type}"
        if lower is not None and not subgraphs(node):
            opset = self.model.opset(normalize_domain(node.domain)) if self.model is not None else None
            ctx = Lowering(node, used, self._materialize, opset, step.kwargs.get("_output_shapes"))
            try:
                result = lower(ctx, *args, **_attributes(node))
            except NotLowered as e:
                reason = str(e)
            else:
                self.records.extend(ctx.records)
                return list(result) if isinstance(result, tuple) else [result]
        return self._host(step, args, used, reason)

    def _fold(self, step, args: list) -> list:
        """A node whose inputs are all known: computed now, by its CPU kernel."""
        values = [None if a is None else [t.value for t in a] if isinstance(a, list) else a.value for a in args]
        result = step.fn(*values, **step.kwargs)
        result = result if isinstance(result, tuple) else (result,)
        return [Lowering.known(r) if isinstance(r, np.ndarray) or np.isscalar(r) else _unknown(step, r)
                for r in result]

    def _host(self, step, args: list, used: tuple, reason: str) -> list:
        """A node that runs on the CPU during the step, with output shapes found by running it once on zeros
        of its inputs' shapes (or their known values)."""
        probe = [None if a is None else [_probe(t) for t in a] if isinstance(a, list) else _probe(a) for a in args]
        # a random op's probe draws from a generator of its own, leaving the node's for the runs
        kwargs = {**step.kwargs, "_generator": None} if "_generator" in step.kwargs else step.kwargs
        try:
            with np.errstate(all="ignore"):
                result = step.fn(*probe, **kwargs)
        except Exception as e:
            raise WebGPUError(f"{describe_node(step.node)} runs on the CPU ({reason}), and its output shapes could "
                              f"not be found: {type(e).__name__}: {e}") from e
        result = result if isinstance(result, tuple) else (result,)
        outs = [(([_host_output(x) for x in r] if isinstance(r, list) else _host_output(r))
                 if i < len(used) and used[i] else None) for i, r in enumerate(result[:len(step.outputs)])]
        self.records.append(HostStep(step.fn, step.kwargs, step.node, args, outs, reason))
        self.fallbacks.append(f"{describe_node(step.node)}: {reason}")
        return outs

    def _materialize(self, t: Tensor) -> Storage:
        if t.storage is not None:
            return t.storage
        known = self.consts.get(id(t.value))   # (storage, value): the value is kept, so its id stays unique
        if known is None:
            data = to_gpu_array(t.value, "a constant")
            known = self.consts[id(t.value)] = (Storage(max(4, data.nbytes), "const", value=data), t.value)
        t.storage = storage = known[0]
        return storage


def _probe(t: Tensor) -> np.ndarray:
    """A stand-in for ``t`` to find a CPU node's output shapes (a copy: in-place kernels write into it)."""
    return t.value.copy() if t.value is not None else np.zeros(t.shape, t.dtype)


def _host_output(r) -> Tensor:
    r = np.asarray(r)
    gpu_type(r.dtype)
    return Tensor(tuple(r.shape), r.dtype, Storage(max(4, 4 * r.size)))


def _unknown(step, r):
    raise WebGPUError(f"{describe_node(step.node)} gives a {type(r).__name__}, which WebGPU does not hold")


def _attributes(node) -> dict:
    return {name: attribute_value(a) for name, a in node.attributes.items()
            if a.type not in (AttrType.GRAPH, AttrType.GRAPHS)}


__all__ = ["Program", "HostStep", "Buffer", "Copy", "Dispatch", "compile_program", "feed_signature"]
