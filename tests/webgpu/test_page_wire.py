"""program_wire: a Program as the page's WebGPU host receives it (JSON and bytes); the runs in the page are in
tests/browser/test_webgpu_page.py."""
import json

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxtrain import ir
from onnxtrain.runtime.plan import Plan
from onnxtrain.webgpu import open_provider
from onnxtrain.webgpu.lowering import PARAMS_ALIGN
from onnxtrain.webgpu.page import program_wire
from onnxtrain.runtime.program import compile_program


def test_wire_of_a_program_with_a_cpu_node():
    nodes = [helper.make_node("Add", ["A", "c"], ["S"]), helper.make_node("Round", ["S"], ["R"]),
             helper.make_node("Relu", ["R"], ["Z"]), helper.make_node("Relu", ["Z"], ["Y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.arange(3, dtype=np.float32), "c")])
    model = ir.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    program = compile_program(Plan(model), [np.zeros((2, 3), np.float32)], open_provider(), model)
    desc, blob = program_wire(program)
    desc = json.loads(json.dumps(desc))
    assert [len(s) for s in desc["segments"]] == [1, 2]           # Add | Round on the CPU | Relu, Relu
    assert len(desc["shaders"]) == 2                               # both Relus share one shader
    relus = desc["segments"][1]
    assert relus[0]["shader"] == relus[1]["shader"] and relus[0]["io"] == [1, 1]
    assert [d["params"] for seg in desc["segments"] for d in seg] == [0, PARAMS_ALIGN, 2 * PARAMS_ALIGN]
    at, n = desc["params"]
    assert n == 3 * PARAMS_ALIGN and len(blob) >= at + n
    const = next(b for b in desc["buffers"] if b["kind"] == "const")
    assert np.frombuffer(blob[const["const"][0]:sum(const["const"])], np.float32).tolist() == [0, 1, 2]
    (feed,) = desc["feeds"]
    assert desc["buffers"][feed["buffer"]]["kind"] == "feed" and feed["input"] == 0 and feed["item"] is None
    (out,) = desc["outputs"]
    assert out["shape"] == [2, 3] and out["type"] == "f32" and out["buffer"] == relus[1]["bind"][1]
