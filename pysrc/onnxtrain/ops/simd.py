"""onnxtrain's SIMD kernels (web/kernels: C compiled to a WebAssembly side module) behind numpy-shaped functions.

In the page's worker the module is loaded into Pyodide's own memory, so ctypes calls it on numpy arrays in
place, without copies.  In CPython the same sources built for the host (the optional onnxtrain_native package,
``python3 build.py native``) load at import unless ONNXTRAIN_NATIVE=0 (or a path: that build).  Without either
``available()`` is False and the op kernels keep their numpy code.  Every function here returns None for a case
it does not take (a dtype, a layout), and the caller falls back to numpy.

On a cross-origin isolated page the engine also starts a kernel pool (web/lib/threads.mjs, ``use_pool``): GEMM,
convolution, pooling and the optimizers with enough work (POOL_MIN, POOL_INTENSITY) run there on several threads,
their operands copied into the pool's shared memory and back; each thread computes a slice of the outputs, every
output as one thread computes it, so results are the same at any thread count.
"""
from __future__ import annotations

import ctypes
import operator
import os
import sys

import numpy as np

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)
_lib = None
_on = False
_keep = []          # arrays the library holds pointers to (gemm's packing scratch)
_tables = {}        # optimizer name -> (the arrays, their pointer table), reused while they are the same arrays
_pool = None        # the kernel pool (web/lib/threads.mjs's forPython) when the page has one
_threads = 1        # how many of its threads the ops use
#: an op goes to the pool when its work (multiply-adds, or elements touched) is at least POOL_MIN (waking the
#: threads costs tens of microseconds) and the work the other threads take off the calling one, work * (1 - 1 /
#: threads), is at least POOL_INTENSITY per byte copied into and out of the pool's memory: POOL_INTENSITY is the
#: work one thread does while a byte is copied.  bench/bench_threads.py measures both: copying runs at about 3.3
#: GB/s, one thread's GEMM at about 19G multiply-adds a second, so about 6: a GEMM pays from about 12
#: multiply-adds a byte on 2 threads, 8 on 4.  The kernels that only move memory (im2col, col2im, max pooling, the
#: optimizers, depthwise convolution) stay on the calling thread; large GEMMs with enough reuse go to the pool.
POOL_MIN = dict.fromkeys(["gemm_f32_part", "adamw_f32_part", "sgd_f32_part", "im2col_f32_part", "col2im_f32_part",
                          "maxpool_f32_part", "depthwise_f32_part", "depthwise_grad_f32_part"], 1 << 20)
POOL_INTENSITY = 6
_POOL_FILTERS = 1 << 16  # the most filter weights a pooled depthwise gradient sums on a thread's stack (1 MiB)


def load(path: str) -> bool:
    """Load the kernel library (a wasm side module already in Pyodide's file system, or the host build) and turn
    it on."""
    global _lib, _on
    lib = ctypes.CDLL(path)
    scratch = np.empty(lib.gemm_scratch_floats() + 4, F32)
    offset = (-scratch.__array_interface__["data"][0] % 16) // 4
    lib.gemm_set_scratch(_ptr(scratch[offset:]))
    _keep[:] = [scratch]
    _lib, _on = lib, True
    return True


def use(enabled: bool = True) -> bool:
    """Turn the kernels on or off (when loaded); whether they are on."""
    global _on
    _on = bool(enabled) and _lib is not None
    return _on


def available() -> bool:
    return _on


def _addr(a: np.ndarray) -> int:
    flags = a.flags     # a failed buffer view raises, which costs more than __array_interface__
    if flags.writeable and (flags.c_contiguous or flags.f_contiguous):
        try:            # a buffer view: a few times faster than __array_interface__ (which builds a dict)
            return ctypes.addressof(ctypes.c_char.from_buffer(a if flags.c_contiguous else a.T))
        except (TypeError, ValueError, BufferError):   # empty
            pass
    return a.__array_interface__["data"][0]


# Kernel arguments go without argtypes (ctypes converts those per call, several times slower): ints as C int, so an
# address is passed as the C int it is in wasm32 and as a c_void_p on a 64-bit host; NULL is None.
if ctypes.sizeof(ctypes.c_void_p) == 4:
    def _c(p: int) -> int:
        return p if p < 0x80000000 else p - 0x100000000
else:
    _c = ctypes.c_void_p


def _contiguous(a: np.ndarray) -> np.ndarray:
    """a, or a C-contiguous copy (np.ascontiguousarray would make a 0-d array 1-d)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


if ctypes.sizeof(ctypes.c_void_p) == 4:
    def _ptr(a: np.ndarray, offset: int = 0):
        """A kernel argument pointing ``offset`` bytes past a's first element (which the caller holds): its address,
        an int in wasm32 (in the page a reference, as on hosts, made the MLP's step slower)."""
        return _c(_addr(a) + offset)
else:
    def _ptr(a: np.ndarray, offset: int = 0):
        """A kernel argument pointing ``offset`` bytes past a's first element: on a 64-bit host a reference to a
        buffer view of a where it has one (about twice as fast as a c_void_p of its address)."""
        flags = a.flags
        if flags.writeable and (flags.c_contiguous or flags.f_contiguous):
            try:
                return _byref(_char(a if flags.c_contiguous else a.T), offset)
            except (TypeError, ValueError, BufferError):   # empty
                pass
        return _c(a.__array_interface__["data"][0] + offset)


_byref, _char = ctypes.byref, ctypes.c_char.from_buffer


def use_pool(pool) -> int:
    """Run the large ops on ``pool`` (threads.mjs's forPython: run, threads), on all its threads."""
    global _pool, _threads
    _pool, _threads = pool, int(pool.threads)
    return _threads


def set_threads(count: int) -> int:
    """Use ``count`` of the pool's threads (1 to all of them); how many are used."""
    global _threads
    _threads = max(1, min(int(count), int(_pool.threads))) if _pool is not None else 1
    return _threads


class _Copy(int):
    """A pool call's argument: the address of the copy of the call's buffer number int(self)."""


IN, OUT, BOTH = 1, 2, 3
_COPIES = {IN: 1, OUT: 1, BOTH: 2}  # how often a buffer is copied (a table: once, in)


def _table_mode(width: int) -> int:
    """A buffer that is an optimizer's table of rows (size, addresses of the call's buffers...), `width` wide."""
    return 4 + 16 * width


def _pooled(entry: str, work: int, operands) -> bool:
    """Run the pool's ``entry`` when it is there and ``work`` is large enough (POOL_MIN, POOL_INTENSITY); whether it
    ran (not when the operands do not fit the pool's memory).  operands() gives (buffers, args), called only when
    the pool may take the op (finding the buffers' addresses costs more than a small kernel): buffers are (address
    in Pyodide's heap, bytes, IN / OUT / BOTH or a table mode); args are ints, floats (float32), _Copy(i)."""
    if _pool is None or _threads < 2 or work < POOL_MIN[entry]:
        return False
    buffers, args = operands()
    copied = sum(size * _COPIES.get(mode, 1) for _, size, mode in buffers)
    if work * (1 - 1 / _threads) < POOL_INTENSITY * copied:
        return False
    words = [len(buffers), len(args)]
    for address, size, mode in buffers:
        words += (address, size, mode)
    for a in args:
        if isinstance(a, _Copy):
            words += (2, int(a))
        elif isinstance(a, float):
            words += (1, int(np.array(a, F32).view(np.int32)))
        else:
            words += (0, int(a))
    descriptor = np.array(words, np.int32)
    return bool(_pool.run(entry, _c(_addr(descriptor)), _threads))


def _whole(a: np.ndarray, mode: int) -> tuple:
    """A contiguous array as a pool buffer."""
    return (_c(_addr(a)), a.nbytes, mode)


def _merge_batch(shape: tuple, *strides: list) -> tuple[list, list]:
    """Batch dims merged where every array steps through them as through one dim."""
    dims, steps = [], [[] for _ in strides]
    for i, size in enumerate(shape):
        if size == 1:
            continue
        if dims and all(s[-1] == st[i] * size for s, st in zip(steps, strides)):
            dims[-1] *= size
            for s, st in zip(steps, strides):
                s[-1] = st[i]
            continue
        dims.append(size)
        for s, st in zip(steps, strides):
            s.append(st[i])
    return dims, steps


_FLOATS = {1.0: ctypes.c_float(1.0), 0.0: ctypes.c_float(0.0)}


def _float(x: float):
    made = _FLOATS.get(x)
    return ctypes.c_float(x) if made is None else made


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, alpha: float = 1.0,
         beta: float = 1.0) -> np.ndarray | None:
    """alpha * (a @ b) + beta * c (c broadcast to the product's shape) for float32 matrices or stacks of them,
    with numpy's matmul broadcasting of the stack dims; None for anything else."""
    if not _on or a.dtype != F32 or b.dtype != F32 or a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        return None
    if c is not None and c.dtype != F32:
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    if a.ndim == b.ndim == 2:
        batch, sa, sb = (), a.strides, b.strides       # the common case, kept short: no broadcasting
    else:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        sa = np.broadcast_to(a, batch + (m, k)).strides
        sb = np.broadcast_to(b, batch + (k, n)).strides
    if any(x & 3 for x in sa) or any(x & 3 for x in sb):
        return None                                     # not whole floats apart
    out = np.empty(batch + (m, n), F32)
    if c is not None and beta != 0.0:
        out[...] = c
    else:
        beta = 0.0
    if out.size == 0:
        return out
    if not batch and (_pool is None or _threads < 2):      # the common case, kept short: no pool
        _lib.gemm_f32(1, m, n, k, _float(alpha), _ptr(a), 0, sa[0] >> 2, sa[1] >> 2, _ptr(b), 0, sb[0] >> 2,
                      sb[1] >> 2, _float(beta), _ptr(out), 0, n)
        return out
    pa, pb, pc = _addr(a), _addr(b), _addr(out)
    if not batch:
        _gemm(1, m, n, k, alpha, pa, 0, sa[0] >> 2, sa[1] >> 2, pb, 0, sb[0] >> 2, sb[1] >> 2, beta, pc, 0, n)
        return out
    sc = out.strides
    dims, (ba, bb, bc) = _merge_batch(batch, *[[x >> 2 for x in st[:-2]] for st in (sa, sb, sc)])
    count, step = (dims[-1], (ba[-1], bb[-1], bc[-1])) if dims else (1, (0, 0, 0))
    for index in np.ndindex(*dims[:-1]):
        oa = sum(i * s for i, s in zip(index, ba))
        ob = sum(i * s for i, s in zip(index, bb))
        oc = sum(i * s for i, s in zip(index, bc))
        _gemm(count, m, n, k, alpha, pa + 4 * oa, step[0], sa[-2] >> 2, sa[-1] >> 2, pb + 4 * ob, step[1],
              sb[-2] >> 2, sb[-1] >> 2, beta, pc + 4 * oc, step[2], n)
    return out


def _gemm(count, m, n, k, alpha, pa, sa, rsa, csa, pb, sb, rsb, csb, beta, pc, sc, ldc) -> None:
    """gemm_f32 on the pool when it takes it (strides not negative), else on this thread."""
    def span(step, rows, rs, cols, cs):  # bytes from a matrix stack's first element to its last
        return 4 * ((count - 1) * step + (rows - 1) * rs + (cols - 1) * cs + 1)

    def operands():
        buffers = [(_c(pa), span(sa, m, rsa, k, csa), IN), (_c(pb), span(sb, k, rsb, n, csb), IN),
                   (_c(pc), span(sc, m, ldc, n, 1), OUT if beta == 0.0 else BOTH)]
        return buffers, [count, m, n, k, float(alpha), _Copy(0), sa, rsa, csa, _Copy(1), sb, rsb, csb, float(beta),
                         _Copy(2), sc, ldc]

    if min(sa, rsa, csa, sb, rsb, csb) >= 0 and _pooled("gemm_f32_part", count * m * n * k, operands):
        return
    _lib.gemm_f32(count, m, n, k, _float(alpha), _c(pa), sa, rsa, csa, _c(pb), sb, rsb, csb, _float(beta), _c(pc), sc,
                  ldc)


def _table(key: str, groups: list) -> np.ndarray | None:
    """(size, address, address, ...) per group of same-shaped float32 C-contiguous arrays, pointer-sized; None when
    an array is not one.  Checked and rebuilt only when the arrays change (the cache holds them, so an id cannot be
    reused while cached, and an array keeps its dtype and layout)."""
    arrays = [x for g in groups for x in g]
    cached = _tables.get(key)
    if cached is not None and len(cached[0]) == len(arrays) and all(map(operator.is_, cached[0], arrays)):
        return cached[1]
    if not _takes(groups):
        return None
    table = np.array([v for g in groups for v in [g[0].size] + [_addr(x) for x in g]], np.uintp)
    _tables[key] = (arrays, table)
    return table


def _takes(groups) -> bool:
    return all(x.dtype == F32 and x.flags.c_contiguous and x.shape == g[0].shape for g in groups for x in g)


def adamw(weights, gradients, m1, m2, mode: int, scalars: list) -> bool:
    """AdamW over every (weight, gradient, moment 1, moment 2), in place, in one call; False when not taken.
    scalars: lr, alpha, beta, 1 - alpha, 1 - beta, epsilon, weight_decay, ac, bc, lr_c, lr * weight_decay."""
    groups = list(zip(weights, gradients, m1, m2))
    table = _table("adamw", groups) if _on else None
    if table is None:
        return False
    values = np.array(scalars, F32)
    if not _pooled("adamw_f32_part", sum(g[0].size for g in groups), lambda: (
            [_whole(x, kind) for g in groups for x, kind in zip(g, (BOTH, IN, BOTH, BOTH))]
            + [_whole(table, _table_mode(5)), _whole(values, IN)],
            [len(groups), _Copy(4 * len(groups)), mode, _Copy(4 * len(groups) + 1)])):
        _lib.adamw_f32(len(groups), _ptr(table), mode, _ptr(values))
    return True


def sgd(weights, gradients, neg_lr) -> bool:
    """w += neg_lr * g for every pair, in place, in one call; False when not taken."""
    groups = list(zip(weights, gradients))
    table = _table("sgd", groups) if _on else None
    if table is None:
        return False
    if not _pooled("sgd_f32_part", sum(g[0].size for g in groups), lambda: (
            [_whole(x, kind) for g in groups for x, kind in zip(g, (BOTH, IN))] + [_whole(table, _table_mode(3))],
            [len(groups), _Copy(2 * len(groups)), float(neg_lr)])):
        _lib.sgd_f32(len(groups), _ptr(table), _float(float(neg_lr)))
    return True


def _elementwise(kernel: str, *arrays) -> np.ndarray | None:
    """kernel(n, *inputs, out) over same-shaped float32 arrays; None for anything else, or when the loaded
    library predates the kernel (a native build older than this package)."""
    if not _on or any(a.dtype != F32 or a.shape != arrays[0].shape for a in arrays):
        return None
    run = getattr(_lib, kernel, None)
    if run is None:
        return None
    arrays = [_contiguous(a) for a in arrays]
    out = np.empty(arrays[0].shape, F32)
    run(out.size, *[_ptr(a) for a in arrays], _ptr(out))
    return out


def relu(x: np.ndarray) -> np.ndarray | None:
    """np.maximum(x, 0)"""
    return _elementwise("relu_f32", x)


def relu_grad(dy: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """dy where x > 0, else +0"""
    return _elementwise("relu_grad_f32", dy, x)


def _bound(value) -> float | None:
    """A Clip bound (a number or a one-element float array) as a float32 number; None for a NaN or anything else."""
    value = np.asarray(value)
    if value.size != 1 or value.dtype.kind != "f":
        return None
    bound = float(np.float32(value.reshape(())))
    return None if bound != bound else bound


def clip(x: np.ndarray, lo, hi) -> np.ndarray | None:
    """np.clip(x, lo, hi) for float32 x and two bounds that are not NaN.  (With one bound, numpy's clip is
    np.maximum or np.minimum, which keep -0.0 against a bound of 0; that case stays numpy's.)"""
    if not _on or x.dtype != F32 or lo is None or hi is None:
        return None
    lo, hi = _bound(lo), _bound(hi)
    if lo is None or hi is None:
        return None
    x = _contiguous(x)
    out = np.empty(x.shape, F32)
    _lib.clip_f32(out.size, _ptr(x), ctypes.c_float(lo), ctypes.c_float(hi), _ptr(out))
    return out


def sigmoid(x: np.ndarray) -> np.ndarray | None:
    return _elementwise("sigmoid_f32", x)


def sigmoid_grad(dy: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """dy * y * (1 - y)"""
    return _elementwise("sigmoid_grad_f32", dy, y)


def erf(x: np.ndarray) -> np.ndarray | None:
    """The error function, each element in double and rounded once (web/kernels/erf.c)"""
    return _elementwise("erf_f32", x)


def _by_rows(kernel: str, axis: int, *arrays) -> np.ndarray | None:
    """kernel(rows, cols, *inputs, out) over same-shaped float32 arrays whose rows run along ``axis``, the last
    axis; None for anything else."""
    x = arrays[0]
    if not _on or x.ndim == 0 or axis not in (-1, x.ndim - 1) or x.shape[-1] == 0:
        return None
    if any(a.dtype != F32 or a.shape != x.shape for a in arrays):
        return None
    arrays = [_contiguous(a) for a in arrays]
    out = np.empty(x.shape, F32)
    getattr(_lib, kernel)(x.size // x.shape[-1], x.shape[-1], *[_ptr(a) for a in arrays], _ptr(out))
    return out


def softmax(x: np.ndarray, axis: int) -> np.ndarray | None:
    return _by_rows("softmax_f32", axis, x)


def softmax_grad(dy: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray | None:
    """y * (dy - sum(dy * y)) along the rows"""
    return _by_rows("softmax_grad_f32", axis, dy, y)


def plane_sums(x: np.ndarray, axes: int) -> np.ndarray | None:
    """x summed over its last ``axes`` dims (float32), shaped x.shape[:-axes]; None for anything else."""
    if not _on or x.dtype != F32 or axes < 1 or x.ndim < axes:
        return None
    x = _contiguous(x)
    lead = x.shape[:x.ndim - axes]
    out = np.empty(lead, F32)
    planes, size = out.size, x.size // out.size if out.size else 0
    if planes:
        _lib.plane_sums_f32(planes, size, _ptr(x), _ptr(out))
    return out


def _sum_zeros() -> tuple:
    """numpy's float sums: (the initial value of np.add.reduce, the start of its pairwise sums of fewer than 8), as
    kernel arguments: +0 and +0 in numpy 1, -0 in numpy 2 (which keeps a sum of -0s -0)."""
    identity = float(np.add.reduce(np.full(9, -0.0, F32)))
    return ctypes.c_float(identity), ctypes.c_float(float(np.add.reduce(np.full(1, -0.0, F32))))


_IDENTITY, _ZERO = _sum_zeros()


def column_sums(x: np.ndarray) -> np.ndarray | None:
    """np.add.reduce(x, axis=0) of a C-contiguous float32 [rows, cols] array, cols > 1 (where numpy adds whole rows
    in order; it sums other layouts pairwise); None for anything else."""
    if not _on or x.dtype != F32 or x.ndim != 2 or x.shape[1] < 2 or x.shape[0] == 0 or not x.flags.c_contiguous:
        return None
    out = np.empty(x.shape[1], F32)
    _lib.column_sums_f32(x.shape[0], x.shape[1], _ptr(x), _IDENTITY, _ptr(out))
    return out


def _ce_rows(scores: np.ndarray, labels: np.ndarray) -> bool:
    """Whether softmax cross-entropy's kernels take these: float32 [N, C] scores (N, C > 0), int64 [N] labels."""
    return (_on and scores.dtype == F32 and scores.ndim == 2 and labels.dtype == I64
            and labels.shape == scores.shape[:1] and scores.size > 0)


def softmax_ce(scores: np.ndarray, labels: np.ndarray, mean: bool) -> tuple | None:
    """(loss, log_prob) of softmax cross-entropy without weights or ignored labels, bit for bit as the numpy kernel
    computes them (numpy's own exp and log, the rest in C): the loss summed over the rows, or their mean; None for
    anything else, for scores that are not C-contiguous (numpy sums their rows in another order), a row whose
    maximum is NaN, infinite or zero (numpy's order decides its bits), or a bad label."""
    if not _ce_rows(scores, labels) or not scores.flags.c_contiguous:
        return None
    rows, cols = scores.shape
    labels = _contiguous(labels)
    log_prob = np.empty((rows, cols), F32)
    if _lib.softmax_ce_shift_f32(rows, cols, _ptr(scores), _ptr(log_prob)):
        return None
    # exp writes an array of its own: into another view of its input's array numpy took 9 times as long
    e = np.exp(log_prob)
    work = np.empty(2 * rows + 1, F32)      # the rows' sums (then their logs), the picks, the loss
    _lib.softmax_ce_sums_f32(rows, cols, _ptr(e), _IDENTITY, _ZERO, _ptr(work))
    np.log(work[:rows], out=work[:rows])
    if _lib.softmax_ce_loss_f32(rows, cols, _ptr(log_prob), _ptr(work), _ptr(labels), _IDENTITY, _ZERO, int(mean),
                                _ptr(work, 4 * rows), _ptr(work, 8 * rows)) >= 0:
        return None
    return work[-1:].reshape(()), log_prob


def softmax_ce_grad(dy: float, log_prob: np.ndarray, labels: np.ndarray, mean: bool) -> np.ndarray | None:
    """The gradient of softmax_ce's loss for a scalar dy, (exp(log_prob) - onehot(labels)) * dy (/ rows when
    ``mean``), bit for bit as the numpy kernel; None for anything else or a bad label."""
    if not _ce_rows(log_prob, labels):
        return None
    grad, labels = np.exp(log_prob, order="C"), _contiguous(labels)
    if _lib.softmax_ce_grad_f32(grad.shape[0], grad.shape[1], _ptr(grad), _ptr(labels), ctypes.c_float(dy),
                                int(mean)) >= 0:
        return None
    return grad


def nonfinite(x: np.ndarray) -> int | None:
    """How many values of a contiguous float32 array are NaN or infinite; None for anything else."""
    if not _on or x.dtype != F32 or not x.flags.c_contiguous:
        return None
    return int(_lib.nonfinite_f32(x.size, _ptr(x))) if x.size else 0


def _window_args(x_shape, out, kernel_shape, strides, pads, dilations) -> list:
    h, w = x_shape[-2:]
    return [h, w, out[0], out[1], kernel_shape[0], kernel_shape[1], strides[0], strides[1], pads[0], pads[1],
            dilations[0], dilations[1]]


def im2col(x: np.ndarray, kernel_shape, pads, out, strides, dilations) -> np.ndarray | None:
    """cols (N, C, kh * kw, oh, ow) of a 2-D float32 NCHW input; None for anything else."""
    if not _on or x.ndim != 4 or x.dtype != F32:
        return None
    x = _contiguous(x)
    n, c = x.shape[:2]
    cols = np.empty((n, c, kernel_shape[0] * kernel_shape[1], out[0], out[1]), F32)
    if cols.size:
        window = _window_args(x.shape, out, kernel_shape, strides, pads, dilations)
        if not _pooled("im2col_f32_part", cols.size, lambda: ([_whole(x, IN), _whole(cols, OUT)],
                                                              [n * c, *window, _Copy(0), _Copy(1)])):
            _lib.im2col_f32(n * c, *window, _ptr(x), _ptr(cols))
    return cols


def col2im(cols: np.ndarray, x_shape, kernel_shape, pads, out, strides, dilations) -> np.ndarray | None:
    """The adjoint of im2col for a 2-D float32 input of ``x_shape``; None for anything else."""
    if not _on or len(x_shape) != 4 or cols.dtype != F32:
        return None
    cols = _contiguous(cols)
    x = np.empty(tuple(x_shape), F32)
    if x.size:
        planes, window = x_shape[0] * x_shape[1], _window_args(x_shape, out, kernel_shape, strides, pads, dilations)
        if not _pooled("col2im_f32_part", cols.size, lambda: ([_whole(cols, IN), _whole(x, OUT)],
                                                              [planes, *window, _Copy(0), _Copy(1)])):
            _lib.col2im_f32(planes, *window, _ptr(cols), _ptr(x))
    return x


def _depthwise_args(x, w, pads, out, strides, dilations):
    """The geometry arguments when x (N, C, H, W) and w (C, 1, kh, kw) are float32: one filter per channel."""
    if not _on or x.ndim != 4 or x.dtype != F32 or w.dtype != F32 or w.shape[:2] != (x.shape[1], 1):
        return None
    return [x.shape[0], x.shape[1], *_window_args(x.shape, out, w.shape[2:], strides, pads, dilations)]


def depthwise(x, w, b, pads, out, strides, dilations) -> np.ndarray | None:
    """Conv with group = channels and one filter per channel (2-D, float32), bias b or None; None otherwise."""
    args = _depthwise_args(x, w, pads, out, strides, dilations)
    if args is None or (b is not None and (b.dtype != F32 or b.shape != (x.shape[1],))):
        return None
    x, w = _contiguous(x), _contiguous(w)
    b = None if b is None else _contiguous(b)
    y = np.empty((x.shape[0], x.shape[1], out[0], out[1]), F32)
    if y.size:
        if not _pooled("depthwise_f32_part", y.size * w.shape[2] * w.shape[3], lambda: (
                [_whole(x, IN), _whole(w, IN), _whole(y, OUT)] + ([] if b is None else [_whole(b, IN)]),
                [*args, _Copy(0), _Copy(1), 0 if b is None else _Copy(3), _Copy(2)])):
            _lib.depthwise_f32(*args, _ptr(x), _ptr(w), None if b is None else _ptr(b), _ptr(y))
    return y


def depthwise_grad(dy, x, w, pads, out, strides, dilations, want_dx: bool, want_dw: bool):
    """(dX or None, dW or None) of depthwise; None when not taken."""
    args = _depthwise_args(x, w, pads, out, strides, dilations)
    if args is None or dy.dtype != F32 or dy.shape != (x.shape[0], x.shape[1], out[0], out[1]):
        return None
    dy, x, w = _contiguous(dy), _contiguous(x), _contiguous(w)
    dx = np.empty(x.shape, F32) if want_dx else None
    dw = np.empty(w.shape, F32) if want_dw else None
    if want_dw and not x.size:
        dw[...] = 0
    if x.size and (want_dx or want_dw):
        outputs = [a for a in (dx, dw) if a is not None]
        pooled = w.size <= _POOL_FILTERS and _pooled(
            "depthwise_grad_f32_part", dy.size * w.shape[2] * w.shape[3], lambda: (
                [_whole(dy, IN), _whole(x, IN), _whole(w, IN)] + [_whole(a, OUT) for a in outputs],
                [*args, _Copy(0), _Copy(1), _Copy(2), _Copy(3) if want_dx else 0,
                 _Copy(3 + want_dx) if want_dw else 0]))
        if not pooled:
            _lib.depthwise_grad_f32(*args, _ptr(dy), _ptr(x), _ptr(w), _ptr(dx) if want_dx else None,
                                    _ptr(dw) if want_dw else None)
    return dx, dw


def maxpool(x: np.ndarray, kernel_shape, pads, out, strides, dilations, indices: bool):
    """(Y, flat argmax indices or None) of 2-D max pooling over float32 NCHW; None for anything else."""
    if not _on or x.ndim != 4 or x.dtype != F32:
        return None
    x = _contiguous(x)
    n, c = x.shape[:2]
    y = np.empty((n, c, out[0], out[1]), F32)
    where = np.empty(y.shape, I64) if indices else None
    if y.size:
        window = _window_args(x.shape, out, kernel_shape, strides, pads, dilations)
        if not _pooled("maxpool_f32_part", y.size * kernel_shape[0] * kernel_shape[1], lambda: (
                [_whole(x, IN), _whole(y, OUT)] + ([_whole(where, OUT)] if indices else []),
                [n * c, *window, _Copy(0), _Copy(1), _Copy(2) if indices else 0])):
            _lib.maxpool_f32(n * c, *window, _ptr(x), _ptr(y), _ptr(where) if indices else None)
    return y, where


def maxpool_grad(dy: np.ndarray, indices: np.ndarray, shape) -> np.ndarray | None:
    """dX of ``shape``: zeros with dy added at the flat indices; None for anything else."""
    if not _on or dy.dtype != F32 or indices.dtype != I64 or dy.shape != indices.shape:
        return None
    dy, indices = _contiguous(dy), _contiguous(indices)
    dx = np.empty(tuple(shape), F32)
    bad = _lib.maxpool_grad_f32(dy.size, dx.size, _ptr(dy), _ptr(indices), _ptr(dx))
    return None if bad else dx


def native_library() -> str | None:
    """The host build of the kernels for this CPython: ONNXTRAIN_NATIVE's path if it names one, else the
    onnxtrain_native package's; None with ONNXTRAIN_NATIVE=0, without the package, or in Pyodide (whose worker
    loads the wasm build)."""
    setting = os.environ.get("ONNXTRAIN_NATIVE", "")
    if sys.platform == "emscripten" or setting == "0":
        return None
    if setting not in ("", "1"):
        return setting
    try:
        import onnxtrain_native
    except ImportError:
        return None
    return onnxtrain_native.LIBRARY


if native_library() is not None:
    load(native_library())
