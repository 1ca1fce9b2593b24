"""onnx's backend test suite on onnxtrain and on onnxruntime, the same tests, counted per category.

    OMP_NUM_THREADS=1 .venv/bin/python bench/backend_counts.py [--markdown]

Runs onnx.backend.test.BackendTest (node, simple, pytorch-converted, pytorch-operator and the real models,
which onnx 1.16 runs on its bundled light versions; CPU tests only) with ``onnxtrain.backend`` and with
``onnxruntime.backend`` in this one process, and prints passed / failed / skipped per category for both.
No expected-failure marks are applied: a test counts as passed only if its outputs match.  onnxtrain skips
only the tests tests/backend_exclusions.py says cannot run; onnxruntime skips those its backend calls
incompatible (its ``is_compatible``: opset or op it does not implement).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import unittest
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ["ONNX_HOME"] = str(ROOT / ".cache" / "onnx")
sys.path[:0] = [str(ROOT / "pysrc"), str(ROOT / "tests"), str(ROOT / "tests" / "runtime")]

import onnx.backend.test  # noqa: E402

CATEGORIES = {"OnnxBackendNodeModelTest": "node", "OnnxBackendSimpleModelTest": "simple",
              "OnnxBackendPyTorchConvertedModelTest": "pytorch-converted",
              "OnnxBackendPyTorchOperatorModelTest": "pytorch-operator",
              "OnnxBackendRealModelTest": "real (light models)"}


class _Counts(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.status = {}   # test name -> (category, "passed" | "failed" | "skipped")

    def _record(self, test, status):
        self.status[test._testMethodName] = (CATEGORIES[type(test).__name__], status)

    def addSuccess(self, test):
        self._record(test, "passed")

    def addFailure(self, test, err):
        self._record(test, "failed")

    def addError(self, test, err):
        self._record(test, "failed")

    def addSkip(self, test, reason):
        self._record(test, "skipped")


def run(backend, exclude=()) -> tuple:
    """(Counter of (category, status), seconds) for every CPU test of onnx's suite on ``backend``."""
    suite = onnx.backend.test.BackendTest(backend, __name__)
    for pattern in exclude:
        suite.exclude(pattern)
    result = _Counts()
    start = time.perf_counter()
    for case in suite.test_cases.values():
        for name in sorted(n for n in vars(case) if n.startswith("test_") and n.endswith("_cpu")):
            case(name).run(result)
    return Counter(result.status.values()), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()

    import onnxruntime
    import onnxruntime.backend
    from test_backend_suite import RULES   # tests/backend_exclusions.py and the rule for remote 'real' data
    from onnxtrain import backend
    cannot_run = [p for p, r in RULES.items() if r.kind == "cannot_run"]

    ours, t_ours = run(backend, cannot_run)
    theirs, t_theirs = run(onnxruntime.backend)
    cats = list(CATEGORIES.values())

    def cell(c: Counter, cat) -> str:
        keys = [(k, s) for k in ([cat] if cat else cats) for s in ("passed", "failed", "skipped")]
        p, f, s = (sum(c[(k, st)] for k, st in keys if st == want) for want in ("passed", "failed", "skipped"))
        return f"{p} / {f} / {s}"

    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}; passed / failed / skipped, CPU tests")
    if args.markdown:
        print("\n| category | onnxtrain | onnxruntime |\n|---|---|---|")
        for cat in cats + [None]:
            print(f"| {cat or 'all'} | {cell(ours, cat)} | {cell(theirs, cat)} |")
    else:
        print(f"{'category':22} {'onnxtrain':>20} {'onnxruntime':>20}")
        for cat in cats + [None]:
            print(f"{cat or 'all':22} {cell(ours, cat):>20} {cell(theirs, cat):>20}")
    print(f"\nseconds: onnxtrain {t_ours:.1f}, onnxruntime {t_theirs:.1f}")


if __name__ == "__main__":
    main()
