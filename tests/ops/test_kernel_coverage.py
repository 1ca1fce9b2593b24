"""Every registered kernel is checked against a reference: onnx's backend suite (a passing test whose
model uses the op) or a test that compares the op with onnxruntime (its name appears in that test file)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import onnx

from backend_exclusions import EXPECTED
from onnxtrain.ops import registered_ops

TESTS = Path(__file__).resolve().parents[1]
DATA = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data"
# Test files whose checks run the op in onnxruntime (or onnxruntime-training) and in onnxtrain.
ORT_COMPARISONS = sorted((TESTS / "ops").glob("test_ops_*.py")) + [TESTS / "autodiff" / "test_gradients.py"]


def _ops_of(graph, found: set) -> None:
    for node in graph.node:
        found.add((node.domain if node.domain not in ("", "ai.onnx") else "", node.op_type))
        for attr in node.attribute:
            for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                _ops_of(g, found)


def backend_checked() -> set:
    """(domain, op) of every node in the models of the backend tests onnxtrain passes."""
    found = set()
    for model_path in DATA.glob("*/*/model.onnx"):
        name = f"test_{model_path.parent.name}_cpu"
        if any(re.search(p, name) for p in EXPECTED):
            continue
        model = onnx.load(str(model_path), load_external_data=False)
        _ops_of(model.graph, found)
        for f in model.functions:
            for node in f.node:
                found.add((node.domain if node.domain not in ("", "ai.onnx") else "", node.op_type))
    return found


def named_in_comparisons() -> set:
    names = set()
    for path in ORT_COMPARISONS:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
    return names


def test_every_kernel_is_checked_against_a_reference():
    checked = backend_checked()
    named = named_in_comparisons()
    unchecked = [f"{d or 'ai.onnx'}::{op}" for d, op in registered_ops() if (d, op) not in checked and op not in named]
    assert not unchecked, ("kernels that neither a passing onnx backend test nor an onnxruntime comparison in "
                           f"{', '.join(p.name for p in ORT_COMPARISONS)} checks: {', '.join(unchecked)}")


def kernel_list(ops=None) -> str:
    """docs/compatibility.md's list of kernels (or of ``ops``, (domain, op_type) pairs), by domain."""
    by_domain = {}
    for domain, op in registered_ops() if ops is None else ops:
        by_domain.setdefault(domain or "ai.onnx", []).append(op)
    return "\n".join(f"- {d} ({len(ops)}): {', '.join(sorted(ops, key=str.lower))}"
                     for d, ops in sorted(by_domain.items(), key=lambda item: (item[0] != "ai.onnx", item[0])))


def test_docs_list_exactly_the_kernel_table():
    text = (TESTS.parent / "docs" / "compatibility.md").read_text()
    listed = text.split("<!-- kernels -->\n")[1].split("<!-- /kernels -->")[0].strip()
    assert listed == kernel_list(), \
        "regenerate docs/compatibility.md's kernel list with tests/ops/test_kernel_coverage.py::kernel_list"
