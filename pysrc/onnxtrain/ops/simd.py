"""onnxtrain's SIMD kernels (web/kernels: C compiled to a WebAssembly side module) behind numpy-shaped functions.

In the page's worker the module is loaded into Pyodide's own memory, so ctypes calls it on numpy arrays in
place, without copies.  In CPython the same sources built for the host (the optional onnxtrain_native package,
``python3 build.py native``) load at import unless ONNXTRAIN_NATIVE=0 (or a path: that build).  Without either
``available()`` is False and the op kernels keep their numpy code.  Every function here returns None for a case
it does not take (a dtype, a layout), and the caller falls back to numpy.
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


def _ptr(a: np.ndarray):
    """The address of a's first element, as a kernel argument."""
    return _c(_addr(a))


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
    pa, pb, pc = _addr(a), _addr(b), _addr(out)
    if not batch:
        _lib.gemm_f32(1, m, n, k, _float(alpha), _c(pa), 0, sa[0] >> 2, sa[1] >> 2, _c(pb), 0, sb[0] >> 2, sb[1] >> 2,
                      _float(beta), _c(pc), 0, n)
        return out
    sc = out.strides
    dims, (ba, bb, bc) = _merge_batch(batch, *[[x >> 2 for x in st[:-2]] for st in (sa, sb, sc)])
    count, step = (dims[-1], (ba[-1], bb[-1], bc[-1])) if dims else (1, (0, 0, 0))
    for index in np.ndindex(*dims[:-1]):
        oa = sum(i * s for i, s in zip(index, ba))
        ob = sum(i * s for i, s in zip(index, bb))
        oc = sum(i * s for i, s in zip(index, bc))
        _lib.gemm_f32(count, m, n, k, _float(alpha), _c(pa + 4 * oa), step[0], sa[-2] >> 2, sa[-1] >> 2,
                      _c(pb + 4 * ob), step[1], sb[-2] >> 2, sb[-1] >> 2, _float(beta), _c(pc + 4 * oc), step[2], n)
    return out


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
    _lib.adamw_f32(len(groups), _ptr(table), mode, _ptr(values))
    return True


def sgd(weights, gradients, neg_lr) -> bool:
    """w += neg_lr * g for every pair, in place, in one call; False when not taken."""
    groups = list(zip(weights, gradients))
    table = _table("sgd", groups) if _on else None
    if table is None:
        return False
    _lib.sgd_f32(len(groups), _ptr(table), _float(float(neg_lr)))
    return True


def _elementwise(kernel: str, *arrays) -> np.ndarray | None:
    """kernel(n, *inputs, out) over same-shaped float32 arrays; None for anything else."""
    if not _on or any(a.dtype != F32 or a.shape != arrays[0].shape for a in arrays):
        return None
    arrays = [_contiguous(a) for a in arrays]
    out = np.empty(arrays[0].shape, F32)
    getattr(_lib, kernel)(out.size, *[_ptr(a) for a in arrays], _ptr(out))
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
        _lib.im2col_f32(n * c, *_window_args(x.shape, out, kernel_shape, strides, pads, dilations), _ptr(x),
                        _ptr(cols))
    return cols


def col2im(cols: np.ndarray, x_shape, kernel_shape, pads, out, strides, dilations) -> np.ndarray | None:
    """The adjoint of im2col for a 2-D float32 input of ``x_shape``; None for anything else."""
    if not _on or len(x_shape) != 4 or cols.dtype != F32:
        return None
    cols = _contiguous(cols)
    x = np.empty(tuple(x_shape), F32)
    if x.size:
        _lib.col2im_f32(x_shape[0] * x_shape[1], *_window_args(x_shape, out, kernel_shape, strides, pads,
                                                               dilations), _ptr(cols), _ptr(x))
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
        _lib.maxpool_f32(n * c, *_window_args(x.shape, out, kernel_shape, strides, pads, dilations), _ptr(x),
                         _ptr(y), _ptr(where) if indices else None)
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
