"""What every provider's runner does the same: the nodes that run on the host between its records, and the
outputs read back after a run."""
from __future__ import annotations

import numpy as np

from ..ops.registry import normalize_domain
from .plan import IN_PLACE_OPS, describe_node


def outputs_to_read(program, wanted: list) -> tuple:
    """The graph outputs at ``wanted`` (a Tensor, or a list for a sequence), and the Tensors among them to read
    back (the others' values are known)."""
    outputs = [program.outputs[i] for i in wanted]
    tensors = [t for out in outputs for t in (out if isinstance(out, list) else [out])]
    return outputs, [t for t in tensors if t.value is None or (t.storage is not None and t.storage.kind != "const")]


def output_values(provider, staged, reads: list, outputs: list) -> list:
    """The outputs as host arrays: those in ``reads`` from ``staged``'s bytes, the known ones copied."""
    return values_of(provider, staged.result() if staged is not None else [], reads, outputs)


def values_of(provider, data: list, reads: list, outputs: list) -> list:
    """The outputs as host arrays: those in ``reads`` from their bytes in ``data``, the known ones copied."""
    got = {id(t): provider.from_held(raw, t.dtype, t.shape) for t, raw in zip(reads, data)}

    def value(t):
        return got[id(t)] if id(t) in got else t.value.copy()
    return [[value(t) for t in out] if isinstance(out, list) else value(out) for out in outputs]


def host_arguments(node, args: list, value) -> list:
    """A host node's arguments: ``value(t)`` of each Tensor (None stays None), a known value as it is, copied for
    a node that writes into its inputs."""
    in_place = (normalize_domain(node.domain), node.op_type) in IN_PLACE_OPS

    def host(t):
        if t is None:
            return None
        if t.value is not None:
            return t.value.copy() if in_place else t.value
        return value(t)
    return [[host(t) for t in a] if isinstance(a, list) else host(a) for a in args]


def host_results(provider, step, args: list):
    """Run a HostStep's numpy kernel on ``args``: (its output Tensor, the array) for each output it writes, the
    shape checked against the compiled one."""
    result = step.fn(*args, **step.kwargs)
    result = result if isinstance(result, tuple) else (result,)
    for out, r in zip(step.outputs, result):
        if out is None:
            continue
        for t, x in (zip(out, r) if isinstance(out, list) else [(out, r)]):
            x = np.asarray(x)
            if x.shape != t.shape:
                raise provider.Error(f"{describe_node(step.node)} (on the host) gave shape {list(x.shape)} this "
                                     f"time, {list(t.shape)} when the step was compiled: its output shape "
                                     f"depends on the data, which a {provider.title} program cannot follow")
            yield t, x


class Runner:
    """A Program bound to a provider's device; a subclass makes its buffers and runs its records."""

    def __init__(self, program, provider):
        self.program, self.provider, self.device = program, provider, provider.device
        self.buffers = []

    def _buffer(self, storage):
        buf = self.buffers[storage.index]
        return buf if buf is not None else storage.resident.buffer

    def _host(self, step) -> None:
        """Run a HostStep: its inputs read from the device, the numpy kernel, its outputs written back."""
        provider = self.provider
        needed = [t for arg in step.inputs for t in (arg if isinstance(arg, list) else [arg])
                  if t is not None and t.value is None]
        data = self.device.read([(self._buffer(t.storage), provider.nbytes(t.shape, t.dtype)) for t in needed])
        got = {id(t): provider.from_held(raw, t.dtype, t.shape) for t, raw in zip(needed, data)}
        in_place = (normalize_domain(step.node.domain), step.node.op_type) in IN_PLACE_OPS
        args = host_arguments(step.node, step.inputs, lambda t: got[id(t)])
        for t, x in host_results(provider, step, args):
            self.device.write(self._buffer(t.storage), provider.held(x.astype(t.dtype, copy=False), "a host result"))
        # in-place host nodes (optimizers on the host) wrote into host copies of device buffers: write them back
        for arg in step.inputs:
            for t in (arg if isinstance(arg, list) else [arg]):
                if t is not None and t.value is None and id(t) in got and in_place:
                    self.device.write(self._buffer(t.storage), provider.held(got[id(t)], "a host result"))
                    if t.storage.kind == "resident":
                        t.storage.resident.device_newer = True
