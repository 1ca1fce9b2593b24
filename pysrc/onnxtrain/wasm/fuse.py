"""Rewrites of a compiled program's executor calls that keep every bit: a weight gradient's GEMM and the
InPlaceAccumulatorV2 that takes its product become one call, which writes the product straight into the
gradient buffer when the step overwrites it (after lazy_reset_grad: the usual step), and adds it as before when
it accumulates."""
from __future__ import annotations

from .lowering import Call

BETA, C_OFFSET = 13, 14   # positions among a gemm call's parameters (wasm/kernels/matrix.py)


def _flat(values) -> list:
    return [t for v in values for t in (v if isinstance(v, list) else [v]) if t is not None]


def fuse_gradient_gemms(steps: list, outputs: list) -> list:
    """``steps`` with each (gemm into a temporary, ..., accumulate that temporary into a buffer) pair fused, where
    the temporary has no other use, the GEMM writes all of it in one call with beta 0, and nothing between the two
    touches the accumulator's buffer or its output, or writes its flag."""
    kept = {id(t.storage) for t in _flat(outputs) if t.storage is not None}
    touched: dict = {}                       # id(storage) -> indices of the steps that use it
    written: dict = {}                       # id(storage) -> indices of the steps that write it
    for i, step in enumerate(steps):
        for s in step.storages():
            touched.setdefault(id(s), []).append(i)
        for s in step.written():
            written.setdefault(id(s), []).append(i)
    fused, dropped = {}, set()
    for j, acc in enumerate(steps):
        if not (isinstance(acc, Call) and acc.op == "accumulate"):
            continue
        buf, product, flag = acc.inputs
        users = touched.get(id(product), [])
        if product.kind != "temp" or id(product) in kept or len(users) != 2 or users[1] != j:
            continue
        i = users[0]
        gemm = steps[i]
        if not (isinstance(gemm, Call) and gemm.op == "gemm" and gemm.outputs == [product]):
            continue
        count, m, n = gemm.params[:3]
        if gemm.params[BETA] != 0 or gemm.params[C_OFFSET] != 0 or count * m * n != acc.params[0]:
            continue
        between = [k for s in [buf, *acc.outputs] if s is not None for k in touched.get(id(s), [])]
        if flag is not None:
            between += written.get(id(flag), [])          # the flag may be read in between, not written
        if any(i < k < j for k in between):
            continue
        fused[i] = Call("gemm_accumulate", [*gemm.inputs, product, buf, flag], acc.outputs,
                        gemm.params + acc.params, acc.node, [product, buf], gemm.tensors + acc.tensors)
        dropped.add(j)
    return [fused.get(i, step) for i, step in enumerate(steps) if i not in dropped]
