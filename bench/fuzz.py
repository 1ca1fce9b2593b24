"""A long mutation-fuzzing campaign over every reader of user files (the CI test, tests/ir/test_fuzz.py,
runs a fixed budget of the same targets).

    .venv/bin/python bench/fuzz.py --seconds 120 [--targets decode,checkpoint] [--seed 0]

Each target gets ``--seconds`` of random mutations (1 to 6 per input: bit flips, bytes, 32/64-bit and
varint values, inserts, deletes, duplicated ranges, truncation) of real files: the site's demo
artifacts and an onnxtrain-made CNN artifact set (models, checkpoints, whole artifact sets), a CSV, an
.npz (stored and deflated) and an image batch.  Prints, per target: inputs tried, clean errors,
unclean crashes (an exception class from outside onnxtrain), hangs (past the deadline), memory beyond
the bound, the largest tracemalloc peak as a ratio to the input's size (inputs of 1 KB or more) and
to the target's bound (fuzz_targets.BOUNDS); then the findings, numbers folded to N, most frequent
first.
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "pysrc"), str(ROOT / "tests")]

import fuzz_targets as F  # noqa: E402


def _onnx(rng):
    seed = rng.choice(F.onnx_seeds())
    data = F.mutate(seed, F.random_ops(rng))
    return F.decode_target, data, len(data)


def _checkpoint(rng):
    data = F.mutate(rng.choice(F.checkpoint_seeds()), F.random_ops(rng))
    return F.checkpoint_target, data, len(data)


def _artifacts(rng):
    arts = dict(rng.choice(F.artifact_sets()))
    name = rng.choice(F.ARTIFACT_NAMES)
    arts[name] = F.mutate(arts[name], F.random_ops(rng))
    return F.artifacts_target, arts, sum(map(len, arts.values()))


def _csv(rng):
    data = F.mutate(F.CSV_SEED, F.random_ops(rng))
    return F.csv_target, data, len(data)


def _npz(rng):
    data = F.mutate(rng.choice([F.npz_seed(), F.npz_compressed_seed()]), F.random_ops(rng))
    return F.npz_target, data, len(data)


def _images(rng):
    data = F.mutate(F.image_seed(), F.random_ops(rng))
    return F.image_target, data, len(data)


TARGETS = {"decode": _onnx, "checkpoint": _checkpoint, "artifacts": _artifacts, "csv": _csv, "npz": _npz,
           "images": _images}


def campaign(name: str, seconds: float, rng: random.Random) -> dict:
    make = TARGETS[name]
    factor, slack = F.BOUNDS[name]
    counts, findings = Counter(), Counter()
    worst_ratio = worst_bound = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        target, data, size = make(rng)
        counts["tried"] += 1
        try:
            outcome, ratio = F.run(target, data, size, factor, slack)
        except F.Finding as f:
            counts[f.kind] += 1
            findings[re.sub(r"-?\d+", "N", f"{f.kind}: {f.detail.splitlines()[0][:160]}")] += 1
            continue
        worst_bound = max(worst_bound, ratio * size / (factor * size + slack))
        if size >= 1024:
            worst_ratio = max(worst_ratio, ratio)
        counts["ok" if outcome == "ok" else "clean error"] += 1
    return {"counts": counts, "findings": findings, "worst_ratio": worst_ratio, "worst_bound": worst_bound}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per target")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = [n for n in args.targets.split(",") if n]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown targets {unknown}; choose from {list(TARGETS)}")
    F.onnx_seeds(), F.checkpoint_seeds()  # build the seeds outside the timed loops
    rng = random.Random(args.seed)
    warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow warnings on mutated weights
    print(f"{'target':<11} {'tried':>8} {'ok':>7} {'clean err':>9} {'unclean':>7} {'hangs':>5} {'memory':>6} "
          f"{'peak/size':>9} {'peak/bound':>10}")
    results = {}
    for name in names:
        r = results[name] = campaign(name, args.seconds, rng)
        c = r["counts"]
        print(f"{name:<11} {c['tried']:>8} {c['ok']:>7} {c['clean error']:>9} {c['unclean']:>7} {c['hang']:>5} "
              f"{c['memory']:>6} {r['worst_ratio']:>9.1f} {r['worst_bound']:>10.2f}", flush=True)
    total = Counter()
    for r in results.values():
        total.update(r["counts"])
    print(f"{'total':<11} {total['tried']:>8} {total['ok']:>7} {total['clean error']:>9} {total['unclean']:>7} "
          f"{total['hang']:>5} {total['memory']:>6}")
    for name, r in results.items():
        for finding, n in r["findings"].most_common(15):
            print(f"  [{name}] {n} x {finding}")
        if len(r["findings"]) > 15:
            print(f"  [{name}] ... and {len(r['findings']) - 15} more kinds")
    return 1 if total["unclean"] or total["hang"] or total["memory"] else 0


if __name__ == "__main__":
    sys.exit(main())
