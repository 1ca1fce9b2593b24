"""The table of WGSL kernels: each op also has a CPU kernel (the planner binds one to every node, and the CPU
runs a node the GPU does not cover), each is exercised by a test in tests/webgpu, and docs/webgpu.md lists
exactly the table."""
import re
from pathlib import Path

from onnxtrain.ops import registered_ops
from onnxtrain.webgpu import gpu_ops
from onnxtrain.webgpu.kernels.elementwise import UNARY
from onnxtrain.webgpu.kernels.reduce import REDUCTIONS
from ops.test_kernel_coverage import kernel_list

HERE = Path(__file__).resolve().parent


def gpu_kernel_list() -> str:
    """docs/webgpu.md's list of WGSL kernels, by domain."""
    return kernel_list(gpu_ops())


def test_every_gpu_kernel_has_a_cpu_kernel():
    cpu = set(registered_ops())
    assert [op for op in gpu_ops() if op not in cpu] == []


def test_every_gpu_kernel_is_tested():
    text = "\n".join(p.read_text() for p in HERE.glob("test_*.py") if p.name != Path(__file__).name)
    named = set(re.findall(r'"([A-Za-z_0-9]+)"', text))
    named |= set(UNARY) | set(REDUCTIONS)   # test_elementwise and test_reduce run over these tables
    untested = [f"{d or 'ai.onnx'}::{op}" for d, op in gpu_ops() if op not in named]
    assert untested == [], "WGSL kernels no test in tests/webgpu names: " + ", ".join(untested)


def test_docs_list_exactly_the_gpu_kernel_table():
    text = (HERE.parent.parent / "docs" / "webgpu.md").read_text()
    listed = text.split("<!-- webgpu-kernels -->\n")[1].split("<!-- /webgpu-kernels -->")[0].strip()
    assert listed == gpu_kernel_list(), \
        "regenerate docs/webgpu.md's WGSL kernel list with tests/webgpu/test_gpu_kernel_list.py::gpu_kernel_list"
