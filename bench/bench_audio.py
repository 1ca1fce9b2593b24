"""The audio task (issue 36): few-shot accuracy on held-out voices, and embeddings per second in CPython.

Accuracy (tests/audio/few_shot.py): words spoken by Debian's espeak-ng, 8 clips a class to learn from (4 voices x 2
speeds) plus background noise, scored on 4 other voices by onnxruntime on the exported model; against raw log-mel
+ logistic regression (scikit-learn) on the same windows, in the same run.  --seeds runs it for several seeds
(they change the noise, not the voices); --fine-tune also trains the task with the backbone's last layer.

Speed: the backbone (embedding_model.onnx) on --windows windows in onnxtrain's runtime and in onnxruntime (one
thread), alternating rounds; the median per call, windows per second."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "audio"), str(ROOT / "pysrc")]


def speed(backbone: bytes, windows: int, rounds: int) -> dict:
    import onnxruntime
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    x = (np.random.default_rng(0).standard_normal((windows, 76, 32, 1)) + 2).astype(np.float32)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    ort = onnxruntime.InferenceSession(backbone, options, providers=["CPUExecutionProvider"])
    ours = Session(ir.load(backbone))
    runs = {"onnxruntime": lambda: ort.run(None, {"input_1": x}), "onnxtrain": lambda: ours.run([x])}
    times = {k: [] for k in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: {"median_s": round(statistics.median(t), 4),
                   "windows_per_s": round(windows / statistics.median(t), 1)} for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--windows", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fine-tune", action="store_true", help="also the task with the last layer fine-tuned")
    args = parser.parse_args()
    import few_shot
    import speech_backbone
    backbone = speech_backbone.embedding()
    results = {"accuracy": [], "speed": speed(backbone, args.windows, args.rounds), "windows": args.windows}
    for seed in args.seeds:
        start = time.perf_counter()
        numbers = few_shot.measure(backbone, seed=seed, fine_tune=args.fine_tune)
        numbers["seconds"] = round(time.perf_counter() - start, 1)
        results["accuracy"].append({"seed": seed, **numbers})
        print(f"seed {seed}: task (onnxruntime on the export) {numbers['task_onnxruntime']:.3f}, raw log-mel + "
              f"logistic regression {numbers['logmel_logistic_regression']:.3f}, chance {numbers['chance']:.3f} "
              f"({numbers['test_clips']} held-out clips, {numbers['seconds']} s)"
              + (f"; fine-tuned {numbers['task_fine_tune_onnxruntime']:.3f}" if args.fine_tune else ""), flush=True)
    for name, s in results["speed"].items():
        print(f"{name}: {s['windows_per_s']} windows/s ({args.windows} windows in {s['median_s']} s)")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
