"""The executor's own math in the page's build: the threaded wasm module (plain SIMD128, no FMA anywhere) run by
Node gives the native build's bits for exp, log, pow and the executor records that use them (softmax
cross-entropy and its gradient, AdamW at several steps), so the page's wasm provider equals CPython's."""
from __future__ import annotations

import ctypes
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onnxtrain.wasm.lowering import word
from onnxtrain.wasm.native import library

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
from buildsys.kernels import CLANG, KERNEL_BUILDS, KERNEL_SOURCES, THREADED_LINK, WASM_LD  # noqa: E402

NODE = shutil.which("node")
LIB, OPS = library()
RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> Path:
    """The threaded wasm build of web/kernels, as buildsys/kernels.py links it (plain SIMD128)."""
    if NODE is None or not CLANG.exists() or not WASM_LD.exists():
        pytest.fail("these tests need node, clang-16 and wasm-ld-16 (python3 build.py installs the last two)")
    out = tmp_path_factory.mktemp("wasm")
    flags = ["--target=wasm32-unknown-unknown", "-matomics", "-mbulk-memory", *KERNEL_BUILDS["onnxtrain_kernels.so"]]
    objects = []
    for source in sorted(KERNEL_SOURCES.glob("*.c")):
        obj = out / f"{source.stem}.o"
        subprocess.run([CLANG, "-O3", *flags, "-ffreestanding", "-nostdlib", "-ffp-contract=off", "-Wall", "-Werror",
                        "-c", source, "-o", obj], check=True)
        objects.append(obj)
    subprocess.run([WASM_LD, *THREADED_LINK, "-o", out / "kernels.wasm", *objects], check=True)
    return out / "kernels.wasm"


class Blob:
    """Arrays laid out one after another (64-byte aligned), as offsets into one block of bytes."""

    def __init__(self):
        self.arrays, self.size = [], 0

    def add(self, a: np.ndarray) -> int:
        at = self.size
        self.arrays.append((at, np.ascontiguousarray(a)))
        self.size = -(-(at + a.nbytes) // 64) * 64
        return at

    def bytes(self) -> bytes:
        data = bytearray(self.size)
        for at, a in self.arrays:
            data[at:at + a.nbytes] = a.tobytes()
        return bytes(data)


def run_wasm(module: Path, tmp_path: Path, blob: Blob, calls: list, tables=()) -> tuple:
    (tmp_path / "in.bin").write_bytes(blob.bytes())
    (tmp_path / "job.json").write_text(json.dumps({"calls": calls, "tables": list(tables)}))
    out = subprocess.run([NODE, HERE / "wasm_run.mjs", module, tmp_path / "job.json", tmp_path / "in.bin",
                          tmp_path / "out.bin"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout), (tmp_path / "out.bin").read_bytes()


def region(data: bytes, at: int, like: np.ndarray) -> np.ndarray:
    return np.frombuffer(data, like.dtype, like.size, at).reshape(like.shape)


def test_exp_log_pow_match_the_native_build(module, tmp_path):
    x = np.concatenate([RNG.uniform(-104, 89, 50_000), RNG.uniform(-3, 3, 50_000)]).astype(np.float32)
    pos = np.exp(RNG.uniform(-80, 80, 100_000)).astype(np.float32)
    blob = Blob()
    ax, ae, ap, al = blob.add(x), blob.add(np.empty_like(x)), blob.add(pos), blob.add(np.empty_like(pos))
    powers = [(float(np.float32(a)), int(t)) for a in (0.9, 0.999, 0.37) for t in (1, 2, 3, 10, 999, 123456, 10 ** 7)]
    calls = [{"fn": "exp_f32", "args": [["i", x.size], ["p", ax], ["p", ae]]},
             {"fn": "log_f32", "args": [["i", pos.size], ["p", ap], ["p", al]]}]
    calls += [{"fn": "pow_f64_int", "args": [["d", a], ["l", t]]} for a, t in powers]
    results, data = run_wasm(module, tmp_path, blob, calls)
    native_exp, native_log = np.empty_like(x), np.empty_like(pos)
    LIB.exp_f32(x.size, ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(native_exp.ctypes.data))
    LIB.log_f32(pos.size, ctypes.c_void_p(pos.ctypes.data), ctypes.c_void_p(native_log.ctypes.data))
    np.testing.assert_array_equal(region(data, ae, x).view(np.uint32), native_exp.view(np.uint32))
    np.testing.assert_array_equal(region(data, al, pos).view(np.uint32), native_log.view(np.uint32))
    LIB.pow_f64_int.restype = ctypes.c_double
    LIB.pow_f64_int.argtypes = [ctypes.c_double, ctypes.c_longlong]
    for (a, t), got in zip(powers, results[2:]):
        assert struct.pack("<d", got) == struct.pack("<d", LIB.pow_f64_int(a, t)), (a, t)


def _program(rows=64, classes=10, n=1000, step=7):
    """A softmax cross-entropy step and an AdamW update as executor records over their buffers."""
    scores = (RNG.standard_normal((rows, classes)) * 4).astype(np.float32)
    labels = RNG.integers(0, classes, rows).astype(np.int64)
    labels[::5] = -100
    weights = RNG.random(classes).astype(np.float32)
    buffers = [scores, labels, weights, np.zeros(1, np.float32), np.zeros((rows, classes), np.float32),
               np.zeros(2 * rows + classes, np.float32), np.array([1.5], np.float32),
               np.zeros((rows, classes), np.float32), np.zeros(rows, np.float32),
               np.array([1e-3], np.float32), np.array([step], np.int64), RNG.standard_normal(n).astype(np.float32),
               RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32) * 0.1,
               RNG.random(n).astype(np.float32) * 0.01, np.zeros(1, np.bool_)]
    ce = [rows, classes, 2, 1, word(-100), -1, 0.0, 0.0]
    words = [OPS["softmax_ce"], 6 + len(ce), 0, 1, 2, 3, 4, 5, *map(word, ce),
             OPS["softmax_ce_grad"], 6 + len(ce), 6, 4, 1, 2, 7, 8, *map(word, ce),
             OPS["adamw"], 17, 9, 10, -1, 11, 12, 13, 14, 15,
             *map(word, [1, 1, 1, 1, 0.9, 0.999, 1e-8, 0.01, n])]
    return np.array(words, np.int32), buffers


@pytest.mark.parametrize("step", [1, 7, 100000])
def test_executor_records_match_the_native_build(module, tmp_path, step):
    words, buffers = _program(step=step)
    blob = Blob()
    offsets = [blob.add(b) for b in buffers]
    table_at = blob.add(np.zeros(len(buffers), np.uint32))
    words_at = blob.add(words)
    calls = [{"fn": "run_program", "args": [["p", words_at], ["i", words.size], ["p", table_at]]}]
    results, data = run_wasm(module, tmp_path, blob, calls, [(table_at, offsets)])
    assert results == [0]
    table = (ctypes.c_void_p * len(buffers))(*[b.ctypes.data for b in buffers])
    assert LIB.run_program(ctypes.c_void_p(words.ctypes.data), words.size, table) == 0
    for i, (at, b) in enumerate(zip(offsets, buffers)):
        got = region(data, at, b)
        assert got.tobytes() == b.tobytes(), f"buffer {i} differs between the wasm and the native build"
    assert buffers[15][0]                                  # AdamW ran and said so
