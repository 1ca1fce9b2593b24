"""One program on one thread (run_program) against the same program split over threads (run_program_threads,
web/kernels/program_threads.c, through onnxtrain.wasm.native_threads.NativeThreads) in CPython on the native build:
the wasm provider's train + optimizer programs, as the engine runs them (one executor call each, no Python between).

Models: ``mlp``, onnxruntime-training's MLP 784-128-10 artifacts at batch 64 (tests/ort_cases.py); ``lora``, the
text task's MiniLM LoRA step, rank 8, batch 4 (text/lora.py; needs the cached all-minilm-l6-v2 wheel).  Reported per
model: the records split at --threads, and the median ms of a step per way, measured alternately in --rounds rounds
(so that other processes' load hits both); then the barrier's cost (a program of tiny records, every one split).
Needs the native build (``python3 build.py native``).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "pysrc"), str(ROOT / ".cache" / "native"), str(ROOT), str(ROOT / "tests"),
                str(ROOT / "tests" / "text")]   # this checkout's package and native build, as the tests

from onnxtrain import api  # noqa: E402
from onnxtrain.ops import simd  # noqa: E402

TEXTS = ["The team won the match in overtime.", "She scored two goals in the final.",
         "Add the garlic and simmer for ten minutes.", "This soup needs more salt.",
         "The new phone has a faster chip.", "Update your browser to fix the bug.",
         "The coach praised the defenders after the game.", "We baked bread with rye flour."]


def mlp():
    import ort_cases
    files = ort_cases.files("mlp_full_ce_adamw")
    state = api.CheckpointState.load_checkpoint(files["checkpoint"])
    module = api.Module(files["training"], state, files["eval"], device="wasm")
    optimizer = api.Optimizer(files["optimizer"], module)
    module(*ort_cases.batches("mlp_full_ce_adamw", 1)[0])
    optimizer.step()
    module.lazy_reset_grad()
    return module, optimizer


def lora():
    import minilm
    from onnxtrain.tasks.text import Encoder, TextSession
    encoder, tokenizer = minilm.files()
    session = TextSession(Encoder(encoder, "wasm"), tokenizer, device="wasm")
    for k in range(2):
        session.add_class(f"class {k}")
        session.add_texts(TEXTS[k::2], k)
    session.setup(mode="lora", rank=8)
    session.step(4, 1e-3)
    return session.training.module, session.training.optimizer


MODELS = {"mlp": ("MLP 784-128-10, batch 64, train + AdamW", mlp),
          "lora": ("MiniLM LoRA r8, batch 4, train + AdamW", lora)}


def programs(module, optimizer) -> list:
    """The train and optimizer programs as fixed executor calls (FastStep's), the reset flag set (overwrite)."""
    update = optimizer._session.last_runner
    update.bind_feeds(optimizer._feeds())
    found = [module._train.last_runner.fixed(), update.fixed()]
    if None in found:
        sys.exit("bench_program_threads: a program has host nodes")
    module._overwrite[0] = True
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS), help=f"of {', '.join(MODELS)}")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--split-work", type=int, default=None, help="program_threads_split_work (default: the "
                        "build's SPLIT_WORK)")
    args = parser.parse_args()
    if not simd.available():
        sys.exit("bench_program_threads: the native kernels are not loaded (python3 build.py native)")
    from onnxtrain.wasm.native import library
    from onnxtrain.wasm.native_threads import NativeThreads
    lib, ops = library()
    if args.split_work is not None:
        lib.program_threads_split_work(args.split_work)
    pool = NativeThreads(args.threads)
    sync = np.zeros(lib.program_sync_words(), np.int32)
    print(f"{os.cpu_count()} cores here; {args.threads} threads; medians of {args.steps} steps in {args.rounds} "
          f"alternating rounds")
    print(f"{'model':42s} {'split':>9s} {'1 thread ms':>12s} {f'{args.threads} threads ms':>13s} {'ratio':>7s}")
    for key in args.models:
        label, make = MODELS[key]
        trainer = make()                                  # held: the programs run on its arrays
        calls = programs(*trainer)
        split = sum(lib.program_split_records(ctypes.c_void_p(p["words"]), p["n"], ctypes.c_void_p(p["table"]),
                                              args.threads) for p in calls)
        records = 0
        for p in calls:
            words = np.frombuffer(ctypes.string_at(p["words"], 4 * p["n"]), np.int32)
            at = 0
            while at < len(words):
                records, at = records + 1, at + 2 + int(words[at + 1])

        def one():
            for p in calls:
                if lib.run_program(ctypes.c_void_p(p["words"]), p["n"], ctypes.c_void_p(p["table"])):
                    sys.exit("bench_program_threads: a program failed")

        def threaded():
            for p in calls:
                if pool.run(p["words"], p["n"], p["table"], sync.ctypes.data):
                    sys.exit("bench_program_threads: a program failed")
        samples = {one: [], threaded: []}
        per_round = max(1, args.steps // args.rounds)
        for r in range(args.rounds + 1):                  # round 0 warms up
            for fn, times in samples.items():
                for _ in range(per_round if r else 3):
                    t = time.perf_counter()
                    fn()
                    if r:
                        times.append(time.perf_counter() - t)
        a, b = (statistics.median(samples[f]) * 1e3 for f in (one, threaded))
        print(f"{label:42s} {f'{split}/{records}':>9s} {a:12.3f} {b:13.3f} {b / a:7.2f}", flush=True)
    # the barrier: 2000 records of 64 floats, each split, one barrier between each two
    x = np.ones(64, np.float32)
    y = np.empty_like(x)
    words = np.array([ops["relu"], 3, 0, 1, x.size] * 2000, np.int32)
    table = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    lib.program_threads_split_work(0)
    costs = []
    for _ in range(20):
        t = time.perf_counter()
        pool.run(words.ctypes.data, len(words), ctypes.addressof(table), sync.ctypes.data)
        costs.append((time.perf_counter() - t) / 2000)
    empty = []
    for _ in range(200):
        t = time.perf_counter()
        pool.run(words.ctypes.data, 0, ctypes.addressof(table), sync.ctypes.data)
        empty.append(time.perf_counter() - t)
    print(f"a barrier (and a split record of 64 floats): median {statistics.median(costs) * 1e6:.2f} us; "
          f"an empty run (waking the workers and waiting for them): median {statistics.median(empty) * 1e6:.1f} us")
    pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
