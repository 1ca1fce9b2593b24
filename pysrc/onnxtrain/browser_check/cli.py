"""python -m onnxtrain browser-check ARTIFACTS_DIR --data data.npz: exit 0 when the browser matches CPython, 1 on a
mismatch, 2 when the check cannot run."""
from __future__ import annotations

import argparse
import json
import sys

from . import DEFAULT_STEPS, DEFAULT_TIMEOUT, check
from .compare import ATOL_PER_LEARNING_RATE, RTOL
from .errors import SetupError

MATCH, MISMATCH, SETUP = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m onnxtrain browser-check",
        description="Train training artifacts in headless Chromium with the onnxtrain JavaScript library and "
                    "compare the losses and trainable parameters with CPython onnxtrain after every step. "
                    "Exit status: 0 match, 1 mismatch, 2 the check could not run.")
    p.add_argument("artifacts", metavar="ARTIFACTS_DIR",
                   help="folder with training_model.onnx, optimizer_model.onnx, checkpoint (and eval_model.onnx)")
    p.add_argument("--data", required=True, metavar="NPZ",
                   help="a .npz with one array per training-model input, named like the inputs")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"train steps (default {DEFAULT_STEPS})")
    p.add_argument("--batch-size", type=int, default=None,
                   help="rows per step, taken in order and cycling (default: the model's fixed batch dimension, "
                        "else 32)")
    p.add_argument("--learning-rate", type=float, default=None, help="default: the checkpoint's")
    p.add_argument("--prefix", default=None, help="the artifact files' prefix, when the folder holds several sets")
    p.add_argument("--library", default=None, metavar="PATH",
                   help="the JavaScript library: its folder (with onnxtrain.mjs) or the npm package .tgz "
                        "(default: $ONNXTRAIN_LIBRARY, then ./node_modules/onnxtrain)")
    p.add_argument("--chromium", default=None, metavar="PATH",
                   help="a Chromium executable (default: $ONNXTRAIN_CHROMIUM, else Playwright's own Chromium)")
    p.add_argument("--rtol", type=float, default=RTOL, help=f"relative tolerance (default {RTOL:g})")
    p.add_argument("--atol", type=float, default=None,
                   help=f"absolute tolerance (default {ATOL_PER_LEARNING_RATE:g} x the learning rate)")
    p.add_argument("--params-every", type=int, default=1, metavar="N",
                   help="compare the parameters after every N-th step and the last (default 1)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds for the browser's whole run (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:  # argparse's usage errors exit 2 already; --help exits 0
        return int(e.code or 0)
    try:
        report = check(args.artifacts, args.data, steps=args.steps, batch_size=args.batch_size,
                       library=args.library, chromium=args.chromium, rtol=args.rtol, atol=args.atol,
                       timeout=args.timeout, learning_rate=args.learning_rate, prefix=args.prefix,
                       params_every=args.params_every)
    except SetupError as e:
        if args.json:
            print(json.dumps({"ok": False, "error": str(e)}))
        print(f"browser-check: {e}", file=sys.stderr)
        return SETUP
    print(json.dumps(report.to_json(), indent=1) if args.json else report.summary())
    return MATCH if report.ok else MISMATCH
