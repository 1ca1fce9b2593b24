"""One full training step (train + optimizer + lazy_reset_grad), onnxtrain vs onnxruntime-training 1.19.2.

MLP 784-128-10 at batch 64 and the CNN (Conv 8x3x3, MaxPool, FC) at batch 32, AdamW, ORT-generated
artifacts.  onnxtrain runs twice: on numpy alone and with the native kernels (build.py native; that column is
absent without them).  One thread each (build.py bench sets OMP/OPENBLAS/MKL_NUM_THREADS=1; ORT gets
intra_op_num_threads=1).  Median of --steps timed steps after --warmup steps; both runtimes measured in
the same process run, alternating in rounds so that machine noise hits both.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import ort_cases as oc  # noqa: E402

from onnxtrain import api as ours  # noqa: E402
from onnxtrain.ops import simd  # noqa: E402

CASES = [("MLP 784-128-10, batch 64", "mlp_full_ce_adamw"), ("CNN conv8-pool-fc, batch 32", "cnn_full_ce_adamw")]


def make_step(api, name, device=None):
    """One full step (train, optimizer, lazy_reset_grad) of case ``name`` with ``api`` (onnxtrain's, on ``device``
    when given, or onnxruntime-training's on one thread)."""
    f = oc.files(name)
    kwargs = {} if device is None else {"device": device}
    if api is not ours:
        import onnxruntime
        so = onnxruntime.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        kwargs["session_options"] = so
    state = api.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    module = api.Module(str(f["training"]), state, str(f["eval"]), **kwargs)
    optimizer = api.Optimizer(str(f["optimizer"]), module)
    batch = oc.batches(name, 1)[0]

    def step():
        module(*batch)
        optimizer.step()
        module.lazy_reset_grad()
    return step


def measure(step, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    native = simd.available()
    # each onnxtrain column: whether the native kernels are on while it runs
    kernels = {"numpy": False, "native": True} if native else {"numpy": False}
    print(f"{'model':30s} " + " ".join(f"{k + ' ms':>10s}" for k in [*kernels, "ORT"])
          + " " + " ".join(f"{k + '/ORT':>11s}" for k in kernels))
    for label, name in CASES:
        steps = {k: make_step(ours, name) for k in kernels}
        steps["ORT"] = make_step(oc.ort_api(), name)
        samples = {k: [] for k in steps}
        per_round = max(1, args.steps // args.rounds)
        for r in range(args.rounds + 1):          # round 0 warms up
            for k, s in steps.items():
                simd.use(kernels.get(k, native))
                times = measure(s, args.warmup if r == 0 else per_round)
                if r:
                    samples[k] += times
        simd.use(native)
        med = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
        print(f"{label:30s} " + " ".join(f"{med[k]:10.3f}" for k in steps)
              + " " + " ".join(f"{med[k] / med['ORT']:10.2f}x" for k in kernels), flush=True)


if __name__ == "__main__":
    main()
