"""One full training step (train + optimizer + lazy_reset_grad) in CPython: the numpy provider (with the native
kernels), the wasm provider (the same kernels, the whole step in the C program executor: one call per program)
and onnxruntime-training 1.19.2, on ORT's artifacts.

MLP 784-128-10 at batch 64 and the CNN (Conv 8x3x3, MaxPool, FC) at batch 32, AdamW.  One thread each
(OMP_NUM_THREADS=1 before numpy loads; ORT's intra_op_num_threads=1).  Median of --steps timed steps after
--warmup, the three measured in the same process, alternating in rounds so that machine noise hits all of them.
Needs the native build (``python3 build.py native``).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parent.parent / d) for d in ("tests", "bench")]
import bench_train_step  # noqa: E402
import ort_cases as oc  # noqa: E402
from bench_train_step import measure  # noqa: E402

from onnxtrain import api as ours  # noqa: E402
from onnxtrain.ops import simd  # noqa: E402

CASES = [("MLP 784-128-10, batch 64", "mlp_full_ce_adamw"), ("CNN conv8-pool-fc, batch 32", "cnn_full_ce_adamw")]


def make_step(kind: str, name: str):
    """The step of ``kind``: onnxtrain on the numpy or wasm provider, or onnxruntime-training ("ORT")."""
    return bench_train_step.make_step(oc.ort_api(), name) if kind == "ORT" else \
        bench_train_step.make_step(ours, name, device=kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not simd.available():
        sys.exit("bench_cpython_wasm: the native kernels are not loaded (python3 build.py native)")
    kinds = ["numpy", "wasm", "ORT"]
    print(f"{'model':30s} " + " ".join(f"{k + ' ms':>10s}" for k in kinds)
          + f" {'wasm/numpy':>11s} {'wasm/ORT':>9s} {'numpy/ORT':>10s}")
    for label, name in CASES:
        steps = {k: make_step(k, name) for k in kinds}
        samples = {k: [] for k in kinds}
        per_round = max(1, args.steps // args.rounds)
        for r in range(args.rounds + 1):          # round 0 warms up
            for k, s in steps.items():
                times = measure(s, args.warmup if r == 0 else per_round)
                if r:
                    samples[k] += times
        med = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
        print(f"{label:30s} " + " ".join(f"{med[k]:10.3f}" for k in kinds)
              + f" {med['wasm'] / med['numpy']:11.2f} {med['wasm'] / med['ORT']:9.2f}"
              f" {med['numpy'] / med['ORT']:10.2f}", flush=True)


if __name__ == "__main__":
    main()
