"""The cost of the trainer's finite check: one full training step with and without it (train.StepGuard), on
onnxruntime-training 1.19.2's artifacts for the MLP 784-128-10 at batch 64 and the CNN at batch 32, AdamW.

The checked step copies the parameters and moments the optimizer writes in place before the update, and checks
the loss and those arrays after it.  Both kinds of step run in the same process, alternating, so that machine
noise hits both; the figure is the median of the paired differences.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import ort_cases as oc  # noqa: E402

from onnxtrain import api  # noqa: E402
from onnxtrain.train import StepGuard  # noqa: E402

CASES = [("MLP 784-128-10, batch 64", "mlp_full_ce_adamw"), ("CNN conv8-pool-fc, batch 32", "cnn_full_ce_adamw")]


def guard(name: str, check: bool) -> StepGuard:
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"])
    optimizer = api.Optimizer(f["optimizer"], module)
    optimizer.set_learning_rate(1e-4)
    g = StepGuard(module, optimizer)
    g.check = check
    return g


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    args, _ = parser.parse_known_args()
    print("finite check per training step (ms): plain, checked, median paired difference")
    for label, name in CASES:
        batches = [list(b) for b in oc.batches(name, 16)]
        plain, checked = guard(name, False), guard(name, True)
        values = sum(a.size for _, _, a in checked.optimizer._updated_arrays())
        times = {False: [], True: []}
        for i in range(args.steps + 20):
            for g in ((plain, checked) if i % 2 else (checked, plain)):
                start = time.perf_counter()
                g.step(batches[i % len(batches)])
                if i >= 20:
                    times[g.check].append(time.perf_counter() - start)
        diff = statistics.median(c - p for c, p in zip(times[True], times[False]))
        base = statistics.median(times[False])
        print(f"  {label}: {base * 1e3:.3f}  {statistics.median(times[True]) * 1e3:.3f}  "
              f"+{diff * 1e3:.3f} ({diff / base:+.0%}; {values} values copied and checked)")


if __name__ == "__main__":
    main()
