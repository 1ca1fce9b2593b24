"""Mutation fuzzing of everything that reads a user's file: the seeds (real files), the mutations, the
targets, and the check that a run was clean.  Used by tests/ir/test_fuzz.py (Hypothesis, a fixed budget)
and bench/fuzz.py (a long random campaign).

Clean means: the target returned, or raised an exception class defined in onnxtrain, within the
deadline, with a tracemalloc peak inside the target's bound.  Anything else is a finding.
"""
from __future__ import annotations

import io
import signal
import threading
import tracemalloc
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SITE_MLP = ROOT / "site" / "artifacts" / "mlp"
ARTIFACT_NAMES = ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint")

# ---- mutations -----------------------------------------------------------------------------------

INTERESTING = (0, 1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40,
               2**62, 2**63 - 1, 2**64 - 1)
KINDS = ("flip", "byte", "int32", "int64", "varint", "insert", "delete", "duplicate", "truncate")


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def mutate(data: bytes, ops) -> bytes:
    """``data`` changed by each (kind, position, amount, value) in ``ops``; positions and amounts wrap."""
    b = bytearray(data)
    for kind, pos, amount, value in ops:
        if not b:
            b = bytearray(_varint(value))
            continue
        pos %= len(b)
        if kind == "flip":
            b[pos] ^= 1 << (amount % 8)
        elif kind == "byte":
            b[pos] = value & 0xFF
        elif kind in ("int32", "int64"):
            width = 4 if kind == "int32" else 8
            b[pos:pos + width] = (value % (1 << 8 * width)).to_bytes(width, "little")
        elif kind == "varint":
            end = pos
            while end < len(b) and b[end] & 0x80 and end - pos < 9:
                end += 1
            b[pos:end + 1] = _varint(value)
        elif kind == "insert":
            b[pos:pos] = bytes([value & 0xFF]) * (1 + amount % 64)
        elif kind == "delete":
            del b[pos:pos + 1 + amount % 64]
        elif kind == "duplicate":
            n = 1 + amount % 256
            b[pos:pos] = b[pos:pos + n] * (1 + value % 4)
        elif kind == "truncate":
            del b[pos:]
    return bytes(b)


def random_ops(rng, max_ops: int = 6) -> list:
    return [(KINDS[rng.randrange(len(KINDS))], rng.randrange(1 << 31), rng.randrange(1 << 16),
             INTERESTING[rng.randrange(len(INTERESTING))] if rng.random() < 0.7 else rng.randrange(1 << 64))
            for _ in range(1 + rng.randrange(max_ops))]


# ---- seeds: real files ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def site_artifacts() -> dict:
    """The site's demo artifact set (the MLP the page trains)."""
    return {name: (SITE_MLP / name).read_bytes() for name in ARTIFACT_NAMES}


@lru_cache(maxsize=None)
def cnn_artifacts() -> dict:
    """A small CNN (Conv, Relu, MaxPool, Gemm) artifact set made by onnxtrain, with a checkpoint that holds
    AdamW state after two steps."""
    from onnxtrain import artifacts
    from onnxtrain.api import CheckpointState, Module, Optimizer
    from onnxtrain.tasks.images import cnn_model
    forward = cnn_model(8, 3, channels=(4,))
    arts = artifacts.generate_artifacts(forward, requires_grad=[t.name for t in forward.graph.initializers],
                                        loss=artifacts.LossType.CrossEntropyLoss,
                                        optimizer=artifacts.OptimType.AdamW)
    state = CheckpointState.load_checkpoint(arts["checkpoint"])
    module = Module(arts["training_model.onnx"], state, arts["eval_model.onnx"])
    optimizer = Optimizer(arts["optimizer_model.onnx"], module)
    for _ in range(2):
        module(*feeds_for(arts["training_model.onnx"], module))
        optimizer.step()
        module.lazy_reset_grad()
    out = dict(arts)
    out["checkpoint"] = CheckpointState.save_checkpoint(state, None, include_optimizer_state=True)
    return {name: out[name] for name in ARTIFACT_NAMES}


def onnx_seeds() -> list:
    return [arts[name] for arts in (site_artifacts(), cnn_artifacts()) for name in ARTIFACT_NAMES[:3]]


def checkpoint_seeds() -> list:
    return [site_artifacts()["checkpoint"], cnn_artifacts()["checkpoint"]]


def artifact_sets() -> list:
    return [site_artifacts(), cnn_artifacts()]


CSV_SEED = (b"age,income,city,bought\n34,52000,Paris,yes\n28,,Lyon,no\n45,61000.5,Paris,yes\n"
            b"51,73000,Nice,no\n23,31000,Lyon,no\n39,58000,Nice,yes\n62,80000,Paris,yes\n31,45000,Lyon,no\n"
            b"27,39000,Nice,no\n44,66000,Paris,yes\n36,54000,Lyon,yes\n")


@lru_cache(maxsize=None)
def npz_seed() -> bytes:
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    np.savez(buf, input=rng.standard_normal((12, 20)).astype(np.float32),
             labels=rng.integers(0, 5, 12).astype(np.int64))
    return buf.getvalue()


@lru_cache(maxsize=None)
def npz_compressed_seed() -> bytes:
    rng = np.random.default_rng(1)
    buf = io.BytesIO()
    np.savez_compressed(buf, input=rng.standard_normal((12, 20)).astype(np.float32),
                        labels=rng.integers(0, 5, 12).astype(np.int64))
    return buf.getvalue()


def image_seed() -> bytes:
    """The inputs of ImageSession for 6 images of 8x8 in 2 classes, as one byte string: a 16-byte header
    (n, size as int64) then labels (int32 each) then RGBA pixels."""
    n, size = 6, 8
    rng = np.random.default_rng(2)
    labels = np.array([0, 1, 0, 1, 0, 1], np.int32)
    pixels = rng.integers(0, 256, (n, size, size, 4), dtype=np.uint8)
    return np.array([n, size], "<i8").tobytes() + labels.tobytes() + pixels.tobytes()


# ---- targets -------------------------------------------------------------------------------------

def decode_target(data: bytes):
    """ir decode, then plan the model (a Session) when it decodes."""
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    model = ir.load(data)
    Session(model)


def checkpoint_target(data: bytes):
    from onnxtrain.checkpoint import read_checkpoint
    read_checkpoint(data)


def feeds_for(training_model: bytes, module) -> list:
    """Small inputs (batch 4) for the training model's user inputs, from their declared types."""
    from onnxtrain import ir
    from onnxtrain.ir.model import TensorType
    types = {v.name: v.type for v in ir.load(training_model).graph.inputs}
    rng = np.random.default_rng(0)
    out = []
    for name in module.input_names():
        t = types.get(name)
        if not isinstance(t, TensorType) or t.shape is None or t.elem_type not in (1, 7):
            return None
        shape = [d if isinstance(d, int) and 0 < d <= 64 else 4 for d in t.shape]
        out.append(rng.standard_normal(shape).astype(np.float32) if t.elem_type == 1
                   else rng.integers(0, 3, shape).astype(np.int64))
    return out


def artifacts_target(arts: dict):
    """CheckpointState, Module, Optimizer from the (mutated) artifact set, then one train step."""
    from onnxtrain.api import CheckpointState, Module, Optimizer
    state = CheckpointState.load_checkpoint(arts["checkpoint"])
    module = Module(arts["training_model.onnx"], state, arts["eval_model.onnx"])
    optimizer = Optimizer(arts["optimizer_model.onnx"], module)
    feeds = feeds_for(arts["training_model.onnx"], module)
    if feeds is None:
        return
    module(*feeds)
    optimizer.step()
    module.lazy_reset_grad()


def csv_target(data: bytes):
    from onnxtrain.tasks import tabular
    table = tabular.parse_csv(data, "fuzz.csv")
    tabular.describe(table)
    if table.header:
        label = table.header[-1]
        tabular.prepare(table, label, tabular.detect_task(table, label))


def npz_target(data: bytes):
    from onnxtrain.tasks.training import Run
    from onnxtrain.train.npz import load_npz
    run = Run(site_artifacts(), None)
    run.trainer.set_data(load_npz(data, run.trainer.names), 0.1)


def image_target(data: bytes):
    from onnxtrain.tasks.images import ImageSession
    head = np.frombuffer(data[:16].ljust(16, b"\0"), "<i8")
    n, size = int(head[0]), int(head[1])
    rest = data[16:]
    n_labels = max(0, min(n, len(rest) // 4, 1 << 16))
    labels = np.frombuffer(rest[:4 * n_labels], np.int32).tolist()
    ImageSession.from_rgba(rest[4 * n_labels:], [n, size, size, 4], labels, ["cats", "dogs"])


# ---- running one input ---------------------------------------------------------------------------

class Finding(Exception):
    """An unclean outcome: an exception from outside onnxtrain, a hang, or memory beyond the bound."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class _Deadline(BaseException):
    pass


def _on_alarm(signum, frame):
    raise _Deadline()


def is_clean(error: BaseException) -> bool:
    return type(error).__module__.split(".")[0] == "onnxtrain"


def run(target, data, size: int, factor: float, slack: int, deadline: float = 10.0):
    """Run ``target(data)``; returns (outcome, peak/size) or raises Finding.  ``size`` is the input's
    size in bytes; the memory bound is ``factor * size + slack``."""
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, deadline)
    tracemalloc.start()
    error = None
    try:
        target(data)
    except _Deadline:
        error = _Deadline()
    except Exception as e:  # noqa: BLE001  (classified below)
        error = e
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    if isinstance(error, _Deadline):
        raise Finding("hang", f"{target.__name__} ran past its {deadline} s deadline")
    if peak > factor * size + slack:
        raise Finding("memory", f"{target.__name__} peaked at {peak} bytes for a {size}-byte input "
                                f"(bound {factor} x size + {slack})")
    if error is not None and not is_clean(error):
        raise Finding("unclean", f"{target.__name__}: {type(error).__module__}.{type(error).__name__}: "
                                 f"{str(error)[:300]}") from error
    return ("ok" if error is None else type(error).__name__), peak / max(size, 1)


# Memory bounds: decoding stays within 100x the file (ir.decode), a checkpoint within its size plus
# the tensor copies (at most its size again); training within the objects of the artifacts plus the
# small batch's activations.
BOUNDS = {"decode": (100, 4 << 20), "checkpoint": (3, 1 << 20), "artifacts": (100, 48 << 20),
          "csv": (200, 8 << 20), "npz": (20, 32 << 20), "images": (50, 32 << 20)}

