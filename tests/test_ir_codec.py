"""The ONNX protobuf codec against the onnx package: decode -> encode gives an equal ModelProto."""
import os
import sys
import types

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxtrain import ir
from onnxtrain.ir import ModelDecodeError


def roundtrip(model: onnx.ModelProto, base_dir=None) -> onnx.ModelProto:
    data = model.SerializeToString()
    ours = ir.decode_model(data, base_dir=base_dir)
    back = onnx.load_from_string(ir.encode_model(ours))
    assert back == model
    return back


def mlp(opset=17):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "fc1.weight"),
             numpy_helper.from_array(np.zeros(8, np.float32), "fc1.bias"),
             numpy_helper.from_array(rng.standard_normal((3, 8)).astype(np.float32), "fc2.weight"),
             numpy_helper.from_array(np.zeros(3, np.float32), "fc2.bias")]
    nodes = [helper.make_node("Gemm", ["input", "fc1.weight", "fc1.bias"], ["fc1_out"], name="fc1", transB=1),
             helper.make_node("Relu", ["fc1_out"], ["hidden"], name="relu"),
             helper.make_node("Gemm", ["hidden", "fc2.weight", "fc2.bias"], ["output"], name="fc2", transB=1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("input", 1, ["batch", 4])],
                              [helper.make_tensor_value_info("output", 1, ["batch", 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def test_mlp_roundtrip_and_decoded_values():
    model = mlp()
    roundtrip(model)
    ours = ir.load(model.SerializeToString())
    assert [n.op_type for n in ours.graph.nodes] == ["Gemm", "Relu", "Gemm"]
    assert ours.graph.inputs[0].type.shape == ["batch", 4]
    assert ours.opset() == 17
    np.testing.assert_array_equal(ours.graph.initializers[0].data, numpy_helper.to_array(model.graph.initializer[0]))
    assert ours.graph.nodes[0].attr("transB") == 1
    onnx.checker.check_model(onnx.load_from_string(ir.to_bytes(ours)), full_check=True)


def every_attribute_kind():
    sub = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "sub",
                            [helper.make_tensor_value_info("a", 1, [2])], [helper.make_tensor_value_info("b", 1, [2])])
    t = numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3), "t")
    node = helper.make_node(
        "Custom", ["x"], ["y"], domain="com.example", name="n", doc_string="docs",
        f=1.5, i=-3, s="text", t=t, g=sub, floats=[1.0, -2.5], ints=[1, -2, 3], strings=["a", "bc"],
        tensors=[t, t], graphs=[sub],
        tp=helper.make_tensor_type_proto(1, [3]), tps=[helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(7, None))])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, None)],
                              [helper.make_tensor_value_info("y", 1, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])


def test_every_attribute_kind():
    roundtrip(every_attribute_kind())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.uint16,
                                   np.int32, np.int64, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128])
@pytest.mark.parametrize("raw", [True, False], ids=["raw_data", "typed_data"])
def test_tensor_dtypes(dtype, raw):
    rng = np.random.default_rng(1)
    values = (rng.standard_normal((2, 3)) * 10).astype(dtype)
    if dtype in (np.complex64, np.complex128):
        values = values + 1j * values
    if raw:
        tensor = numpy_helper.from_array(values, "v")
    else:
        tensor = helper.make_tensor("v", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), values.shape,
                                    values.ravel().tolist())
    graph = helper.make_graph([], "g", [], [helper.make_tensor_value_info("v", tensor.data_type, [2, 3])], [tensor])
    model = helper.make_model(graph)
    roundtrip(model)
    ours = ir.load(model.SerializeToString()).graph.initializers[0].data
    np.testing.assert_array_equal(ours, values)
    assert ours.dtype == values.dtype


def test_bfloat16_string_and_scalar_tensors():
    bf = helper.make_tensor("bf", TensorProto.BFLOAT16, [3], [1.0, -2.0, 0.5])
    st = helper.make_tensor("st", TensorProto.STRING, [2], [b"ab", b""])
    sc = numpy_helper.from_array(np.array(3.5, np.float32), "sc")
    graph = helper.make_graph([], "g", [], [helper.make_tensor_value_info("sc", 1, [])], [bf, st, sc])
    model = helper.make_model(graph)
    roundtrip(model)
    inits = ir.load(model.SerializeToString()).graph.initializers
    assert list(inits[1].data) == [b"ab", b""]
    assert inits[2].data.shape == () and inits[2].data == np.float32(3.5)
    # bfloat16 keeps its bit patterns: 1.0 is 0x3f80
    assert inits[0].data[0] == 0x3F80


def test_value_info_kinds_metadata_and_functions():
    seq = helper.make_tensor_sequence_value_info("s", 1, ["n", None])
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(7, [])))
    mp = helper.make_value_info("m", helper.make_map_type_proto(7, helper.make_tensor_type_proto(1, [2])))
    fn = helper.make_function("local", "MyFn", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                              [helper.make_opsetid("", 17)], attributes=["alpha"])
    graph = helper.make_graph([helper.make_node("MyFn", ["x"], ["y"], domain="local")], "g",
                              [helper.make_tensor_value_info("x", 1, [1]), seq, opt, mp],
                              [helper.make_tensor_value_info("y", 1, [1])], doc_string="graph docs")
    model = helper.make_model(graph, functions=[fn], producer_name="test", doc_string="model docs",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    helper.set_model_props(model, {"author": "me", "empty": ""})
    roundtrip(model)
    ours = ir.load(model.SerializeToString())
    assert ours.metadata_props == {"author": "me", "empty": ""}
    assert ours.functions[0].name == "MyFn" and ours.functions[0].nodes[0].op_type == "Relu"


def test_nested_if_graphs():
    branch = lambda v: helper.make_graph(  # noqa: E731
        [helper.make_node("Constant", [], ["out"], value=numpy_helper.from_array(np.array([v], np.float32)))],
        f"b{v}", [], [helper.make_tensor_value_info("out", 1, [1])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch(1), else_branch=branch(0))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", 1, [1])])
    roundtrip(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_external_data(tmp_path):
    model = mlp()
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    ours = ir.load(path)
    np.testing.assert_array_equal(ours.graph.initializers[0].data, numpy_helper.to_array(mlp().graph.initializer[0]))
    assert ours.graph.initializers[0].external_data["location"] == "weights.bin"
    with pytest.raises(ModelDecodeError, match="external file 'weights.bin'"):
        ir.load(path.read_bytes())
    (tmp_path / "weights.bin").write_bytes(b"\0" * 10)
    with pytest.raises(ModelDecodeError, match="weights.bin has only"):
        ir.load(path)


def test_ort_training_artifacts_roundtrip(tmp_path):
    if "torch" not in sys.modules:
        sys.modules.setdefault("onnxruntime.training.optim", types.ModuleType("onnxruntime.training.optim"))
    import onnxruntime as ort
    from onnxruntime.training import artifacts
    ort.set_default_logger_severity(3)
    artifacts.generate_artifacts(mlp(), requires_grad=["fc2.weight", "fc2.bias"], frozen_params=["fc1.weight"],
                                 loss=artifacts.LossType.CrossEntropyLoss, optimizer=artifacts.OptimType.AdamW,
                                 artifact_directory=str(tmp_path))
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        back = roundtrip(onnx.load(str(tmp_path / name)))
        onnx.checker.check_model(back)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "m.onnx"
    ir.save(ir.load(mlp().SerializeToString()), path)
    before = path.read_bytes()

    def fail(*a):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        ir.save(ir.load(every_attribute_kind().SerializeToString()), path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.onnx"]


# ---- malformed input ---------------------------------------------------------------------------

def test_truncated_models_raise_decode_errors():
    data = mlp().SerializeToString()
    for cut in range(0, len(data) - 1, 7):
        try:
            ir.decode_model(data[:cut])
        except ModelDecodeError:
            continue
        # a cut exactly on a field boundary may still parse; it must then be a complete-looking model
        assert cut > 0


def test_random_corruption_never_raises_anything_else():
    data = bytearray(mlp().SerializeToString())
    rng = np.random.default_rng(42)
    for _ in range(300):
        corrupt = bytearray(data)
        for pos in rng.integers(0, len(corrupt), size=rng.integers(1, 6)):
            corrupt[pos] = rng.integers(0, 256)
        try:
            ir.decode_model(bytes(corrupt))
        except ModelDecodeError:
            pass


def test_lying_length_and_non_onnx_files(tmp_path):
    lying = bytes([0x3A]) + bytes([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20])  # field 7, length 2**41
    with pytest.raises(ModelDecodeError, match="exceeds"):
        ir.decode_model(lying)
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    with pytest.raises(ModelDecodeError, match="image.png"):
        ir.load(png)
    with pytest.raises(ModelDecodeError):
        ir.decode_model(b"hello, this is a text file\n")
    with pytest.raises(OSError, match="missing.onnx"):
        ir.load(tmp_path / "missing.onnx")
