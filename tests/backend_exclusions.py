"""The onnx backend tests (tests/runtime/test_backend_suite.py) that onnxtrain does not pass, each with its reason.

This is the one list.  A key is a regular expression searched in the test's name as onnx's runner
gives it (``test_<case>_cpu``).  A value is ``fails(reason, error)`` or ``cannot_run(reason)``:

- ``fails``: the test runs and must fail with an error whose first line (``Type: message``) matches
  the ``error`` expression.  If it passes, or fails some other way, the suite goes red: remove or
  correct the entry.
- ``cannot_run``: the test is not run at all (needs the network, crashes or hangs).
- ``either``: the outcome depends on the machine (float32 rounding in numpy's BLAS, whose kernels differ by
  CPU): the test may pass, and if it fails, it must fail with the ``error`` expression.
"""
from __future__ import annotations

import re
from typing import NamedTuple


class Expected(NamedTuple):
    kind: str      # "fails", "either" or "cannot_run"
    reason: str
    error: str     # a regular expression searched in the first line of the error ("" for cannot_run)


def fails(reason: str, error: str) -> Expected:
    return Expected("fails", reason, error)


def either(reason: str, error: str) -> Expected:
    return Expected("either", reason, error)


def cannot_run(reason: str) -> Expected:
    return Expected("cannot_run", reason, "")


def no_kernel(op: str, opset: int | None = None) -> Expected:
    at = f" at opset {opset}" if opset is not None else ""
    return fails(f"no kernel for op {op}{at}", rf"GraphError: .*has no kernel for op [\w.]*::{op}\b{at}")


def tests(*names: str) -> str:
    """A pattern matching exactly the tests ``test_<name>_cpu`` (names are regular expressions)."""
    return "^test_(" + "|".join(names) + ")_cpu$"


EXPECTED = {
    # ---- ops without a kernel: one entry per op, matching the tests whose model uses it --------------
    tests("gradient_of_add(_and_mul)?"): no_kernel("Gradient"),

    # ---- legacy opsets (pytorch-converted/-operator models at opset 6) ------------------------------
    # ---- wrong or missing results ------------------------------------------------------------------
    tests("loop16_seq_none"):
        fails("onnx 1.16's runner cannot compare a sequence holding a 0-d tensor (it calls len() on it); onnxtrain's "
              "output equals the expected one, and onnxruntime fails the same way",
              r"TypeError: Unable to compare expected type <class 'numpy.ndarray'> and runtime type"),
    tests("qlinearmatmul_[23]D_int8_float(16|32)"):
        fails("onnx's expected output wraps an out-of-range int8 result (-236 -> 20) where the spec saturates (-128), "
              "as onnxtrain does (onnx issues 6169 and 7835, fixed by onnx PR 7868)",
              r"AssertionError: \s*Not equal to tolerance"),
    tests("training_dropout(_default)?(_mask)?", "bernoulli(_double|_seed)?(_expanded)?"):
        fails("random: onnx's expected values come from numpy's RandomState(seed).uniform; onnxtrain draws from "
              "its own generator (onnxruntime fails too)",
              r"AssertionError: \s*Not equal to tolerance"),
    tests("image_decoder_decode_(jpeg|jpeg2k|webp)_.*"):
        fails("ImageDecoder decodes PNG, BMP, PNM and TIFF; JPEG, JPEG 2000 and WebP raise",
              r"ImageDecoder: decoding (JPEG|JPEG 2000|WebP) images is not supported"),
    tests("maxunpool_export_with_output_shape"):
        fails("onnx's expected output pads the unpooled 4x4 into the 5x5 output_shape; onnxtrain and onnxruntime "
              "scatter the flat indices straight into output_shape (onnx issue 2398, onnxruntime PR 2193)",
              r"AssertionError: \s*Not equal to tolerance"),
    tests("adam_multiple"):
        fails("onnx's expected outputs use epsilon=1e-2 but the model leaves epsilon out (default 0), as onnxtrain and "
              "onnx's ReferenceEvaluator run it (onnx issue 7749, fixed by onnx PR 7763)",
              r"AssertionError: \s*Not equal to tolerance"),
    tests("squeezenet"):
        either("ill-conditioned: the last Conv's 1000 output channels have identical weights, so the logits are "
               "equal (~9.5e9) in exact arithmetic and in onnxruntime; float32 GEMM may round channels differently "
               "(by ulps of 1024), and Softmax turns that into outputs of 0 or 0.002: numpy's OpenBLAS does so on "
               "some CPUs and not on others (it failed on one CI machine and passed on the next)",
               r"AssertionError: \s*Not equal to tolerance"),
}


def network_rule(remote_tests) -> dict:
    """The rule for 'real' model tests whose data onnx would download (no network here)."""
    if not remote_tests:
        return {}
    return {tests(*(re.escape(t[len("test_"):]) for t in sorted(remote_tests))):
            cannot_run("needs network: onnx downloads this model's data")}
