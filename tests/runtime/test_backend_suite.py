"""The onnx package's own backend tests (node, simple, pytorch-converted, pytorch-operator and the real
models, which onnx 1.16 runs on its bundled light versions) on onnxtrain's runtime through
``onnxtrain.backend``.  The tests onnxtrain does not pass are listed, each with its reason, in
tests/backend_exclusions.py; an expected failure that passes, or fails another way, turns the suite red.
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

# The light models' test data is written under ONNX_HOME when the tests run: keep it in the repo's
# ignored cache, not in $HOME.
os.environ["ONNX_HOME"] = str(Path(__file__).resolve().parents[2] / ".cache" / "onnx")

import onnx.backend.test  # noqa: E402
from onnx.backend.test.loader import load_model_tests  # noqa: E402

from backend_exclusions import EXPECTED, network_rule  # noqa: E402
from onnxtrain import backend  # noqa: E402

LIGHT_PREFIX = "onnx/backend/test/data/light/"
# whole models (ResNet-50, VGG-19, ...), seconds each: the node tests check the same kernels quickly
SLOW_CASES = {"OnnxBackendRealModelTest"}


def remote_real_tests() -> list:
    """'real' model tests whose data onnx would download (none in onnx 1.16: all use the light models)."""
    return [t.name + "_cpu" for t in load_model_tests(kind="real")
            if t.model_dir is None and not (t.url or "").startswith(LIGHT_PREFIX)]


RULES = {**EXPECTED, **network_rule([n[:-len("_cpu")] for n in remote_real_tests()])}


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def expect_failure(func, rules):
    """``func`` must fail with an error one of ``rules`` names; it is then reported as xfailed."""
    reasons = "; ".join(r.reason for r in rules)

    @functools.wraps(func)
    def test(self):
        try:
            func(self)
        except Exception as e:
            line = first_line(e)
            if any(re.search(r.error, line) for r in rules):
                pytest.xfail(reasons)
            raise AssertionError(f"fails, but not as tests/backend_exclusions.py expects ({reasons}): {line}") from e
        if any(r.kind != "either" for r in rules):
            pytest.fail(f"passes now: remove its entry from tests/backend_exclusions.py ({reasons})")
    return test


backend_test = onnx.backend.test.BackendTest(backend, __name__)
for pattern, rule in RULES.items():
    if rule.kind == "cannot_run":
        backend_test.exclude(pattern)

def _collect(test_cases: dict) -> set:
    """Put onnx's test case classes in this module (for pytest), with the expected failures marked."""
    names = set()
    for case_name, case in test_cases.items():
        for name in [n for n in vars(case) if n.startswith("test_")]:
            if not name.endswith("_cpu"):   # onnxtrain runs on the CPU only: drop the skipped CUDA twins
                delattr(case, name)
                continue
            names.add(name)
            rules = [r for p, r in RULES.items() if r.kind in ("fails", "either") and re.search(p, name)]
            if rules:
                setattr(case, name, expect_failure(getattr(case, name), rules))
        globals()[case_name] = case if case_name not in SLOW_CASES else pytest.mark.slow(case)
    return names


TEST_NAMES = _collect(backend_test.test_cases)

def test_every_rule_matches_a_test():
    stale = [p for p in RULES if not any(re.search(p, n) for n in TEST_NAMES)]
    assert not stale, f"tests/backend_exclusions.py has patterns that match no test: {stale}"
