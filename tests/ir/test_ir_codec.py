"""The ONNX protobuf codec against the onnx package: decode -> encode gives an equal ModelProto, and
the decoded values are what onnx sees."""
import copy
import dataclasses
import glob
import os
import time

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from onnxtrain import ir
from onnxtrain.ir import AttrType, ModelDecodeError, dtypes
from onnxtrain.ir.decode import decode_tensor
from onnxtrain.ir.encode import encode_tensor
from onnxtrain.ir.wire import FIXED32, FIXED64, LEN, VARINT, Reader, Writer, read_packed_varints, varint_bytes


def roundtrip(model: onnx.ModelProto, check=True) -> ir.Model:
    """Decode the model's bytes, encode again, and require the same bytes (and so an equal ModelProto)."""
    data = model.SerializeToString()
    ours = ir.decode_model(data)
    assert ir.encode_model(ours) == data
    if check:
        onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    return ours


def mlp(sizes=(4, 8, 3), opset=17, seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "input"
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        inits += [numpy_helper.from_array(rng.standard_normal((n_out, n_in)).astype(np.float32), f"fc{i}.weight"),
                  numpy_helper.from_array(rng.standard_normal(n_out).astype(np.float32), f"fc{i}.bias")]
        nodes.append(helper.make_node("Gemm", [x, f"fc{i}.weight", f"fc{i}.bias"], [f"fc{i}"], name=f"fc{i}",
                                      transB=1))
        x = f"fc{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"relu{i}"], name=f"relu{i}"))
            x = f"relu{i}"
    nodes.append(helper.make_node("Identity", [x], ["output"]))
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("input", 1, ["batch", sizes[0]])],
                              [helper.make_tensor_value_info("output", 1, ["batch", sizes[-1]])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def test_mlp_decoded_values_match_onnx():
    model = mlp()
    ours = roundtrip(model)
    assert [(n.op_type, n.name, n.inputs, n.outputs) for n in ours.graph.nodes] == \
        [(n.op_type, n.name, list(n.input), list(n.output)) for n in model.graph.node]
    assert ours.graph.inputs[0].type == ir.TensorType(TensorProto.FLOAT, ["batch", 4])
    assert ours.opset() == 17 and ours.ir_version == 8
    assert ours.graph.nodes[0].attr("transB") == 1
    for t, ref in zip(ours.graph.initializers, model.graph.initializer):
        assert t.name == ref.name and t.dims == tuple(ref.dims) and t.data_type == ref.data_type
        np.testing.assert_array_equal(t.data, numpy_helper.to_array(ref))


def test_raw_data_is_a_read_only_view_of_the_input_when_aligned():
    data = mlp().SerializeToString()
    shared = 0
    for pad in range(4):  # move the payloads across 4-byte alignments
        buf = bytearray(pad) + data  # a writable buffer: the views must still be read-only
        for t in ir.decode_model(memoryview(buf)[pad:]).graph.initializers:
            assert t.data.flags.aligned
            if np.shares_memory(t.data, np.frombuffer(buf, np.uint8)):
                assert not t.data.flags.writeable
                shared += 1
    assert shared == 4  # each tensor once, at the padding that aligns it


# ---- every kind of content ----------------------------------------------------------------------

def sub_graph(name="sub"):
    return helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], name,
                             [helper.make_tensor_value_info("a", 1, [2])], [helper.make_tensor_value_info("b", 1, [2])])


def sparse(name="sp"):
    return helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -2], np.float32), name),
                                     numpy_helper.from_array(np.array([1, 4], np.int64), name + "_idx"), [6])


def every_attribute_kind():
    t = numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3), "t")
    node = helper.make_node(
        "Custom", ["x"], ["y"], domain="com.example", name="n", doc_string="docs",
        f=1.5, i=-3, zero=0, s="text", empty_s="", t=t, g=sub_graph(), sp=sparse(),
        floats=[1.0, -2.5, 1e-30], ints=[1, -2, 2**62], strings=["a", "bc", ""], tensors=[t, t],
        graphs=[sub_graph("g1"), sub_graph("g2")], sps=[sparse("a"), sparse("b")],
        tp=helper.make_tensor_type_proto(1, [3]),
        tps=[helper.make_sequence_type_proto(helper.make_tensor_type_proto(7, None)),
             helper.make_optional_type_proto(helper.make_tensor_type_proto(1, ["n"]))])
    node.attribute.append(helper.make_attribute("documented", 2.0, doc_string="attr doc"))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, None)],
                              [helper.make_tensor_value_info("y", 1, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])


def test_every_attribute_kind():
    model = every_attribute_kind()
    attrs = roundtrip(model, check=False).graph.nodes[0].attributes
    assert {name: a.type for name, a in attrs.items()} == {a.name: a.type for a in model.graph.node[0].attribute}
    assert attrs["f"].value == 1.5 and attrs["i"].value == -3 and attrs["zero"].value == 0
    assert attrs["s"].value == b"text" and attrs["strings"].value == [b"a", b"bc", b""]
    assert attrs["ints"].value == [1, -2, 2**62]
    assert attrs["floats"].value == [1.0, -2.5, float(np.float32(1e-30))]
    np.testing.assert_array_equal(attrs["t"].value.data, np.arange(6).reshape(2, 3))
    assert attrs["g"].value.nodes[0].op_type == "Identity" and [g.name for g in attrs["graphs"].value] == ["g1", "g2"]
    by_name = {a.name: a for a in model.graph.node[0].attribute}
    assert attrs["sp"].value == by_name["sp"].sparse_tensor.SerializeToString()
    assert attrs["sps"].value == [x.SerializeToString() for x in by_name["sps"].sparse_tensors]
    assert attrs["tps"].value == [ir.SequenceType(ir.TensorType(7, None)), ir.OptionalType(ir.TensorType(1, ["n"]))]
    assert attrs["documented"].doc_string == "attr doc"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.uint16,
                                   np.int32, np.int64, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128])
@pytest.mark.parametrize("raw", [True, False], ids=["raw_data", "typed_data"])
def test_numpy_dtypes(dtype, raw):
    rng = np.random.default_rng(1)
    values = (rng.standard_normal((2, 3)) * 100).astype(dtype)
    if dtype in (np.complex64, np.complex128):
        values = values - 1j * values[::-1]
    code = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    tensor = (numpy_helper.from_array(values, "v") if raw else
              helper.make_tensor("v", code, values.shape, values.ravel()))
    assert tensor.HasField("raw_data") == raw
    graph = helper.make_graph([], "g", [], [helper.make_tensor_value_info("v", code, [2, 3])], [tensor])
    ours = roundtrip(helper.make_model(graph)).graph.initializers[0].data
    # onnx 1.16's to_array fails on typed complex data (float_data/double_data pairs)
    np.testing.assert_array_equal(ours, values if code in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) and not raw
                                  else numpy_helper.to_array(tensor))
    assert ours.dtype == values.dtype and ours.shape == (2, 3)


FLOAT8 = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ]


@pytest.mark.parametrize("code", [TensorProto.BFLOAT16] + FLOAT8)
def test_bit_pattern_types(code):
    values = [1.0, -2.0, 0.5, 3.0, 0.0]
    typed = helper.make_tensor("typed", code, [5], values)
    if code == TensorProto.BFLOAT16:
        bits = (np.array(values, np.float32).view(np.uint32) >> 16).astype("<u2")
    else:
        bits = np.array(typed.int32_data, np.uint8)
    raw = helper.make_tensor("raw", code, [5], bits.tobytes(), raw=True)
    graph = helper.make_graph([], "g", [], [helper.make_tensor_value_info("raw", code, [5])], [typed, raw])
    inits = roundtrip(helper.make_model(graph)).graph.initializers
    for t in inits:
        np.testing.assert_array_equal(t.data, bits)
        assert t.data.dtype == bits.dtype and t.data_type == code
    # onnx decodes these to float32 (ours are the bit patterns of the same numbers); onnx 1.16's
    # to_array misreads raw float8 data as int8, so only the typed tensor is compared that way
    np.testing.assert_array_equal(numpy_helper.to_array(typed), values)
    assert inits[1].data.tobytes() == raw.raw_data


@pytest.mark.parametrize("count", [1, 4, 5])
@pytest.mark.parametrize("code", [TensorProto.INT4, TensorProto.UINT4])
def test_4bit_types(code, count):
    values = np.arange(count) - (3 if code == TensorProto.INT4 else 0)
    typed = helper.make_tensor("typed", code, [count], values.tolist())
    packed = dtypes.pack_4bit(values.astype(np.uint8))
    raw = helper.make_tensor("raw", code, [count], packed.tobytes(), raw=True)
    graph = helper.make_graph([], "g", [], [helper.make_tensor_value_info("raw", code, [count])], [typed, raw])
    inits = roundtrip(helper.make_model(graph), check=False).graph.initializers
    for t, ref in zip(inits, (typed, raw)):
        assert t.dims == (count,)
        # ours are the 4-bit patterns; onnx gives the values as float32
        np.testing.assert_array_equal(t.data, numpy_helper.to_array(ref).astype(np.int8).astype(np.uint8) & 0xF)


def test_string_scalar_and_empty_tensors():
    inits = [helper.make_tensor("st", TensorProto.STRING, [2], [b"ab", b""]),
             numpy_helper.from_array(np.array(3.5, np.float32), "scalar"),
             numpy_helper.from_array(np.zeros((0, 3), np.float32), "empty_raw"),  # raw_data "" present
             helper.make_tensor("empty_typed", TensorProto.INT64, [0], []),       # no data field at all
             numpy_helper.from_array(np.array(["x", "yz"], dtype=object), "st2")]
    graph = helper.make_graph([], "g", [], [helper.make_tensor_value_info("scalar", 1, [])], inits)
    ours = roundtrip(helper.make_model(graph)).graph.initializers
    assert ours[0].data.tolist() == [b"ab", b""] and ours[4].data.tolist() == [b"x", b"yz"]
    assert ours[1].data.shape == () and ours[1].data == np.float32(3.5)
    assert ours[2].data.shape == (0, 3) and ours[3].data.shape == (0,) and ours[3].data.dtype == np.int64


def test_value_info_kinds_symbolic_dims_and_denotations():
    tensor_type = helper.make_tensor_type_proto(1, ["batch", None, 3])
    tensor_type.tensor_type.shape.dim[2].denotation = "CHANNEL"
    tensor_type.denotation = "IMAGE"
    infos = [helper.make_value_info("t", tensor_type),
             helper.make_tensor_value_info("rank_unknown", 1, None),
             helper.make_tensor_value_info("scalar", 7, []),
             helper.make_tensor_sequence_value_info("s", 1, ["n", None]),
             helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(7, []))),
             helper.make_value_info("m", helper.make_map_type_proto(7, helper.make_tensor_type_proto(1, [2]))),
             helper.make_value_info("sp", helper.make_sparse_tensor_type_proto(1, [4, "k"])),
             helper.make_value_info("untyped", onnx.TypeProto()),
             helper.make_tensor_value_info("documented", 1, [1], doc_string="vi doc")]
    infos[-1].metadata_props.add(key="k", value="v")
    graph = helper.make_graph([helper.make_node("Identity", ["t"], ["y"])], "g", infos,
                              [helper.make_tensor_value_info("y", 1, None)])
    ours = {v.name: v for v in roundtrip(helper.make_model(graph), check=False).graph.inputs}
    assert ours["t"].type == ir.TensorType(1, ["batch", None, 3], "IMAGE", ["", "", "CHANNEL"])
    assert ours["rank_unknown"].type.shape is None and ours["scalar"].type.shape == []
    assert ours["s"].type == ir.SequenceType(ir.TensorType(1, ["n", None]))
    assert ours["o"].type == ir.OptionalType(ir.TensorType(7, []))
    assert ours["m"].type == ir.MapType(7, ir.TensorType(1, [2]))
    assert ours["sp"].type == ir.SparseTensorType(1, [4, "k"])
    assert ours["untyped"].type.elem_type is None
    assert ours["documented"].doc_string == "vi doc" and ours["documented"].metadata_props == {"k": "v"}


def rich_model():
    leaky = helper.make_node("LeakyRelu", ["a"], ["b"])
    leaky.attribute.append(helper.make_attribute_ref("alpha", AttributeProto.FLOAT))
    leaky.attribute[0].ref_attr_name = "alpha"
    leaky.attribute.append(helper.make_attribute_ref("no_value", AttributeProto.INT))  # type but no value
    fn = helper.make_function("local", "MyFn", ["a"], ["b"], [leaky], [helper.make_opsetid("", 17)],
                              attributes=["unused"],
                              attribute_protos=[helper.make_attribute("alpha", 0.1)], doc_string="fn doc")
    fn.value_info.append(helper.make_tensor_value_info("b", 1, None))
    fn.metadata_props.add(key="fk", value="fv")
    fn.overload = "v2"
    node = helper.make_node("MyFn", ["x"], ["y"], domain="local", overload="v2")
    node.metadata_props.add(key="nk", value="nv")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [1])],
                              [helper.make_tensor_value_info("y", 1, [1])], doc_string="graph docs")
    graph.metadata_props.add(key="gk", value="gv")
    graph.initializer.append(numpy_helper.from_array(np.ones(1, np.float32), "w"))
    graph.initializer[0].metadata_props.add(key="tk", value="tv")
    graph.initializer[0].doc_string = "tensor doc"
    graph.sparse_initializer.append(sparse("spi"))
    graph.quantization_annotation.add(tensor_name="x").quant_parameter_tensor_names.add(key="SCALE", value="w")
    model = helper.make_model(graph, functions=[fn], producer_name="test", producer_version="1.0", domain="ai.test",
                              model_version=3, doc_string="model docs",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    helper.set_model_props(model, {"author": "me", "empty": ""})
    model.training_info.add().algorithm.node.append(helper.make_node("Relu", ["x"], ["z"]))
    return model


def test_metadata_functions_and_model_fields():
    model = rich_model()
    ours = roundtrip(model, check=False)
    assert ours.metadata_props == {"author": "me", "empty": ""}
    assert (ours.producer_name, ours.producer_version, ours.domain, ours.model_version) == ("test", "1.0", "ai.test", 3)
    assert ours.graph.metadata_props == {"gk": "gv"} and ours.graph.nodes[0].metadata_props == {"nk": "nv"}
    assert ours.graph.initializers[0].metadata_props == {"tk": "tv"}
    f = ours.functions[0]
    assert (f.name, f.domain, f.overload, f.inputs, f.outputs, f.attributes) == \
        ("MyFn", "local", "v2", ["a"], ["b"], ["unused"])
    assert f.attribute_protos[0].value == pytest.approx(0.1)
    ref = f.nodes[0].attributes["alpha"]
    assert (ref.ref_attr_name, ref.type, ref.value) == ("alpha", AttrType.FLOAT, None)
    assert f.nodes[0].attributes["no_value"].value is None
    assert ours.training_info == [model.training_info[0].SerializeToString()]



def test_explicit_empty_and_zero_fields_are_kept():
    model = mlp()
    model.model_version = 0            # present although zero
    model.domain = ""                   # present although empty
    model.graph.node[0].domain = ""
    model.graph.initializer[0].data_location = TensorProto.DEFAULT
    model.graph.initializer[1].doc_string = ""
    assert model.HasField("model_version") and model.graph.node[0].HasField("domain")
    roundtrip(model)


def test_nested_if_and_loop_graphs():
    def branch(v):
        return helper.make_graph([helper.make_node("Constant", [], [f"out{v}"],
                                                   value=numpy_helper.from_array(np.array([v], np.float32)))],
                                 f"b{v}", [], [helper.make_tensor_value_info(f"out{v}", 1, [1])])
    loop_body = helper.make_graph(
        [helper.make_node("If", ["cond_in"], ["x_if"], then_branch=branch(1), else_branch=branch(0)),
         helper.make_node("Add", ["x_in", "x_if"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("x_in", 1, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", 1, [1])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "x"], ["y"], body=loop_body)], "g",
        [helper.make_tensor_value_info("n", TensorProto.INT64, []), helper.make_tensor_value_info("c", 9, []),
         helper.make_tensor_value_info("x", 1, [1])], [helper.make_tensor_value_info("y", 1, [1])])
    ours = roundtrip(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    body = ours.graph.nodes[0].attr("body")
    assert [n.op_type for n in body.nodes] == ["If", "Add", "Identity"]
    np.testing.assert_array_equal(body.nodes[0].attr("then_branch").nodes[0].attr("value").data, [1.0])


def test_hand_built_model_encodes_to_a_valid_onnx_model():
    w = ir.Tensor("w", np.arange(6, dtype=np.float64).reshape(2, 3), dtypes.FLOAT)  # converted to float32
    graph = ir.Graph("g", [ir.Node("MatMul", ["x", "w"], ["y"])], [ir.ValueInfo("x", ir.TensorType(1, ["n", 2]))],
                     [ir.ValueInfo("y", ir.TensorType(1, ["n", 3]))], [w])
    proto = onnx.load_from_string(ir.to_bytes(ir.Model(graph)))
    onnx.checker.check_model(proto, full_check=True)
    np.testing.assert_array_equal(numpy_helper.to_array(proto.graph.initializer[0]), np.arange(6).reshape(2, 3))
    assert proto.ir_version == 8 and proto.opset_import[0].version == 17


UNKNOWN = (varint_bytes(99 << 3 | 0) + varint_bytes(7) + varint_bytes(98 << 3 | 2) + varint_bytes(3) + b"xyz"
           + varint_bytes(97 << 3 | 5) + bytes(4) + varint_bytes(96 << 3 | 1) + bytes(8))


def test_unknown_fields_are_kept_where_they_were():
    model = mlp()
    model.metadata_props.add(key="k", value="v")
    for message in (model.graph.node[0], model.graph.node[0].attribute[0], model.graph.initializer[0],
                    model.graph.input[0], model.graph.input[0].type, model.graph.input[0].type.tensor_type,
                    model.graph.input[0].type.tensor_type.shape, model.graph.input[0].type.tensor_type.shape.dim[0],
                    model.opset_import[0], model.metadata_props[0], model.graph):
        message.ParseFromString(message.SerializeToString() + UNKNOWN)  # protobuf keeps them as unknown fields
    data = model.SerializeToString() + UNKNOWN
    ours = ir.decode_model(data)
    assert ir.encode_model(ours) == data
    assert ours.graph.nodes[0].attr("transB") == 1 and ours.graph.inputs[0].type == ir.TensorType(1, ["batch", 4])
    assert ours.opset_imports == {"": 17} and ours.metadata_props == {"k": "v"}

# ---- external data -------------------------------------------------------------------------------

@pytest.mark.parametrize("one_file", [True, False])
def test_external_data(tmp_path, one_file):
    path = tmp_path / "model.onnx"
    onnx.save_model(mlp(), str(path), save_as_external_data=True, all_tensors_to_one_file=one_file,
                    location="weights.bin" if one_file else None, size_threshold=0)
    ours = ir.load(path)
    for t, ref in zip(ours.graph.initializers, mlp().graph.initializer):
        np.testing.assert_array_equal(t.data, numpy_helper.to_array(ref))
    assert ours.graph.initializers[1].external_data["location"] == \
        ("weights.bin" if one_file else "fc0.bias")
    # onnx.load reads the external data inline and marks data_location DEFAULT; we encode the same
    assert onnx.load_from_string(ir.to_bytes(ours)) == onnx.load(str(path))
    assert ir.decode_model(path.read_bytes(), base_dir=tmp_path).graph.initializers[0].dims == (8, 4)


def test_external_data_errors(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save_model(mlp(), str(path), save_as_external_data=True, location="weights.bin", size_threshold=0)
    with pytest.raises(ModelDecodeError, match="'fc0.weight' keeps its data in the external file 'weights.bin'"):
        ir.load(path.read_bytes())
    (tmp_path / "weights.bin").write_bytes(b"\0" * 10)
    with pytest.raises(ModelDecodeError, match="model.onnx: TensorProto 'fc0.weight': external data file .*weights.bin "
                                               "has only 10 bytes at offset 0, 128 needed"):
        ir.load(path)
    os.remove(tmp_path / "weights.bin")
    with pytest.raises(ModelDecodeError, match="cannot read external data file .*weights.bin"):
        ir.load(path)

    def with_location(location, dims=(4,), extra=()):
        t = TensorProto(name="big", data_type=1, dims=dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location),) + extra:
            t.external_data.add(key=k, value=v)
        return helper.make_model(helper.make_graph([], "g", [], [], [t])).SerializeToString()
    for location in ("../outside.bin", "/etc/passwd", "a/../../x"):
        with pytest.raises(ModelDecodeError, match="outside the model's folder"):
            ir.decode_model(with_location(location), base_dir=tmp_path)
    (tmp_path / "small.bin").write_bytes(bytes(16))
    with pytest.raises(ModelDecodeError, match="has only 16 bytes at offset 0, 4398046511104 needed"):
        ir.decode_model(with_location("small.bin", dims=(2**40,)), base_dir=tmp_path)  # no 4 TB read
    with pytest.raises(ModelDecodeError, match="offset/length are not integers"):
        ir.decode_model(with_location("small.bin", extra=(("offset", "x"),)), base_dir=tmp_path)
    with pytest.raises(ModelDecodeError, match="length 8, but its dims need 16 bytes"):
        ir.decode_model(with_location("small.bin", extra=(("length", "8"),)), base_dir=tmp_path)


# ---- real training artifacts ----------------------------------------------------------------------

def test_ort_training_artifacts(tmp_path):
    import onnxruntime as ort
    from onnxruntime.training import artifacts
    ort.set_default_logger_severity(3)
    artifacts.generate_artifacts(mlp((4, 8, 8, 3)), requires_grad=["fc1.weight", "fc1.bias", "fc2.weight",
                                                                     "fc2.bias"],
                                 frozen_params=["fc0.weight", "fc0.bias"], loss=artifacts.LossType.CrossEntropyLoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory=str(tmp_path))
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        proto = onnx.load(str(tmp_path / name))
        ours = roundtrip(proto)
        assert ir.load(tmp_path / name) == ours
        assert [n.op_type for n in ours.graph.nodes] == [n.op_type for n in proto.graph.node]
        assert [(n.domain, n.inputs) for n in ours.graph.nodes] == [(n.domain, list(n.input)) for n in proto.graph.node]
        assert ours.opset_imports == {o.domain: o.version for o in proto.opset_import}
        for t, ref in zip(ours.graph.initializers, proto.graph.initializer):
            assert t.name == ref.name and t.dims == tuple(ref.dims)
            np.testing.assert_array_equal(t.data, numpy_helper.to_array(ref))
        assert [v.name for v in ours.graph.inputs] == [v.name for v in proto.graph.input]


def test_decoding_a_400kb_mlp_is_fast():
    data = mlp((784, 128, 10)).SerializeToString()
    assert 400_000 < len(data) < 420_000
    best = min(_timed(ir.decode_model, data) for _ in range(20))
    assert best < 0.010, f"decoding took {best * 1000:.1f} ms"


def _timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def test_save_and_load_files(tmp_path, monkeypatch):
    path = tmp_path / "m.onnx"
    ir.save(ir.load(mlp().SerializeToString()), path)
    assert onnx.load(str(path)) == mlp()
    before = path.read_bytes()

    def fail(*a):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        ir.save(ir.load(every_attribute_kind().SerializeToString()), path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.onnx"]
    with pytest.raises(OSError, match="cannot read ONNX model .*missing.onnx"):
        ir.load(tmp_path / "missing.onnx")
    assert ir.to_bytes(ir.load(str(path))) == ir.to_bytes(ir.load(memoryview(before))) == before


# ---- malformed input ---------------------------------------------------------------------------

def top_level_boundaries(data):
    r = Reader(memoryview(data), 0, len(data), "ModelProto")
    return {r.pos for _ in r.fields()}


def test_truncated_models_raise_decode_errors():
    data = rich_model().SerializeToString()
    boundaries = top_level_boundaries(data)
    for cut in range(len(data)):
        try:
            ir.decode_model(data[:cut])
        except ModelDecodeError:
            continue
        assert cut in boundaries, f"a model cut at byte {cut} decoded"


def test_random_corruption_raises_only_decode_errors():
    data = every_attribute_kind().SerializeToString()
    for seed in range(400):
        rng = np.random.default_rng(seed)
        corrupt = bytearray(data)
        for pos in rng.integers(0, len(corrupt), size=rng.integers(1, 6)):
            corrupt[pos] = rng.integers(0, 256) if seed % 2 else corrupt[pos] ^ (1 << rng.integers(0, 8))
        try:
            ir.decode_model(bytes(corrupt))
        except ModelDecodeError:
            pass


def test_lying_lengths_and_non_onnx_files(tmp_path):
    lying = bytes([0x3A]) + varint_bytes(2**40)  # ModelProto.graph, 2**40 bytes long
    with pytest.raises(ModelDecodeError, match=f"ModelProto.graph: length {2**40} exceeds the 0 bytes left at "
                                               f"offset 7"):
        ir.decode_model(lying)
    tensor = Writer()
    tensor.packed_varints(1, [3])
    tensor.varint(2, TensorProto.FLOAT)
    tensor.parts.append(varint_bytes(9 << 3 | 2) + varint_bytes(1_000_000) + bytes(12))  # raw_data, lying length
    graph, model = Writer(), Writer()
    graph.message(5, tensor)
    model.message(7, graph)
    with pytest.raises(ModelDecodeError, match="^TensorProto.raw_data: length 1000000 exceeds the 12 bytes left at "
                                               "offset 13$"):
        ir.decode_model(model.getvalue())
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    with pytest.raises(ModelDecodeError, match="image.png: not an ONNX model \\(it starts with bytes 89 50 4e 47"):
        ir.load(png)
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is a text file\n")
    with pytest.raises(ModelDecodeError, match="notes.txt: not an ONNX model"):
        ir.load(text)
    with pytest.raises(ModelDecodeError, match="not an ONNX model"):
        ir.decode_model(b"")
    with pytest.raises(ModelDecodeError, match="ModelProto has no graph"):
        ir.decode_model(varint_bytes(1 << 3) + varint_bytes(8))


def tensor_model(tensor: TensorProto) -> bytes:
    return helper.make_model(helper.make_graph([], "g", [], [], [tensor])).SerializeToString()


@pytest.mark.parametrize("make, message", [
    (lambda: TensorProto(name="t", data_type=1, dims=[2**40], float_data=[1, 2, 3]),
     "TensorProto 't': holds 3 values, but dims \\[1099511627776\\] need 1099511627776"),
    (lambda: TensorProto(name="t", data_type=1, dims=[2**40], raw_data=bytes(12)),
     "TensorProto 't': raw_data has 12 bytes, but 1099511627776 float values need 4398046511104"),
    (lambda: TensorProto(name="t", data_type=1, dims=[-1]), "negative dimension"),
    (lambda: TensorProto(name="t", data_type=99, dims=[1], raw_data=b"\0"), "TensorProto 't': unknown data_type 99"),
    (lambda: TensorProto(name="t", data_type=1, dims=[1], int64_data=[1]), "a float tensor cannot hold int64_data"),
    (lambda: TensorProto(name="t", data_type=8, dims=[1], raw_data=b"x"), "a string tensor cannot use raw_data"),
    (lambda: TensorProto(name="t", data_type=1, dims=[1] * 70, float_data=[1]), "dims \\[1, 1, "),
    (lambda: TensorProto(name="t", data_type=1, dims=[1], segment=TensorProto.Segment(begin=0, end=1)),
     "TensorProto.segment: segmented tensors are not supported"),
])
def test_invalid_tensors(make, message):
    with pytest.raises(ModelDecodeError, match=message):
        ir.decode_model(tensor_model(make()))


def test_invalid_utf8_and_attribute_without_type():
    model = mlp()
    model.graph.node[0].name = "MARK"
    data = model.SerializeToString().replace(b"MARK", b"MA\xffK")
    with pytest.raises(ModelDecodeError, match="NodeProto.name: not valid UTF-8"):
        ir.decode_model(data)
    model = mlp()
    model.graph.node[0].attribute[0].ClearField("type")
    with pytest.raises(ModelDecodeError, match="AttributeProto 'transB' has no type"):
        ir.decode_model(model.SerializeToString())


def nested_type(depth: int) -> Writer:
    t = Writer()
    inner = Writer()
    inner.varint(1, TensorProto.FLOAT)
    t.message(1, inner)
    for _ in range(depth):  # TypeProto{sequence_type{elem_type: t}}
        seq = Writer()
        seq.message(1, t)
        t = Writer()
        t.message(4, seq)
    return t


def nested_graph(depth: int) -> Writer:
    g = Writer()
    for _ in range(depth):  # GraphProto{node{attribute{g: g}}}
        attr, node, outer = Writer(), Writer(), Writer()
        attr.string(1, "then_branch")
        attr.message(6, g)
        attr.varint(20, AttributeProto.GRAPH)
        node.string(4, "If")
        node.message(5, attr)
        outer.message(1, node)
        g = outer
    return g


def test_deep_nesting_is_an_error_not_a_crash():
    ok = nested_type(30)  # 61 protobuf levels; upb (onnx) refuses more than 100
    vi = Writer()
    vi.string(1, "x")
    vi.message(2, ok)
    graph = Writer()
    graph.message(11, vi)
    model = Writer()
    model.message(7, graph)
    ours = ir.decode_model(model.getvalue())  # deep but allowed
    assert onnx.load_from_string(ir.encode_model(ours)).SerializeToString() == model.getvalue()
    vi.message(2, nested_type(200))
    graph.message(11, vi)
    model = Writer()
    model.message(7, graph)
    with pytest.raises(ModelDecodeError, match="TypeProto: nested more than 64 levels deep"):
        ir.decode_model(model.getvalue())
    model = Writer()
    model.message(7, nested_graph(100))
    with pytest.raises(ModelDecodeError, match="GraphProto: nested more than 64 levels deep"):
        ir.decode_model(model.getvalue())


# ---- byte-exact re-encoding -------------------------------------------------------------------------

BACKEND = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator", "light"]


def suite_models(suite):
    if suite == "light":
        return sorted(glob.glob(os.path.join(BACKEND, "light", "*.onnx")))
    return sorted(glob.glob(os.path.join(BACKEND, suite, "*", "model.onnx")))


def test_the_backend_suites_are_all_there():
    assert sum(len(suite_models(s)) for s in SUITES) >= 1431  # onnx 1.16.2


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_every_backend_model_re_encodes_byte_for_byte(suite):
    differ = []
    for path in suite_models(suite):
        with open(path, "rb") as f:
            data = f.read()
        if ir.encode_model(ir.decode_model(data)) != data:
            differ.append(os.path.relpath(path, BACKEND))
    assert differ == []


def tensor_files(suite):
    """The TensorProto files of a suite (not the Sequence/Optional ones), by the model's declared types."""
    if suite == "light":
        return sorted(glob.glob(os.path.join(BACKEND, "light", "*.pb")))
    out = []
    for path in suite_models(suite):
        graph = onnx.load(path, load_external_data=False).graph
        initialized = {t.name for t in graph.initializer}
        kinds = {"input": [v.type.WhichOneof("value") for v in graph.input if v.name not in initialized],
                 "output": [v.type.WhichOneof("value") for v in graph.output]}
        for pb in glob.glob(os.path.join(os.path.dirname(path), "test_data_set_*", "*.pb")):
            kind, index = os.path.basename(pb)[:-3].split("_")
            if kinds[kind][int(index)] == "tensor_type":
                out.append(pb)
    return sorted(out)


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_every_backend_tensor_re_encodes_byte_for_byte(suite):
    files = tensor_files(suite)
    assert files
    differ, values_differ = [], []
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        ours = decode_tensor(data)
        if encode_tensor(ours) != data:
            differ.append(os.path.relpath(path, BACKEND))
        ref = onnx.TensorProto.FromString(data)
        if ref.data_type == TensorProto.STRING:
            same = ours.data.shape == tuple(ref.dims) and ours.data.ravel().tolist() == list(ref.string_data)
        elif ref.data_type in dtypes._NATIVE:
            expected = numpy_helper.to_array(ref)
            same = ours.data.dtype == expected.dtype and np.array_equal(
                ours.data, expected, equal_nan=ref.data_type != TensorProto.BOOL)
        else:  # bit patterns (see test_bit_pattern_types)
            same = True
        if not same:
            values_differ.append(os.path.relpath(path, BACKEND))
    assert differ == [] and values_differ == []


def test_ort_training_artifact_files_re_encode_byte_for_byte(tmp_path):
    import onnxruntime as ort
    from onnxruntime.training import artifacts
    ort.set_default_logger_severity(3)
    artifacts.generate_artifacts(mlp((4, 8, 3)), requires_grad=["fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"],
                                 loss=artifacts.LossType.CrossEntropyLoss, optimizer=artifacts.OptimType.AdamW,
                                 artifact_directory=str(tmp_path))
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        data = (tmp_path / name).read_bytes()
        assert ir.encode_model(ir.load(tmp_path / name)) == data


# Rewriting a model's bytes message by message: which fields are sub-messages, by message and field number.
SUB = {
    "ModelProto": {7: "GraphProto", 8: "OperatorSetIdProto", 14: "StringStringEntryProto", 25: "FunctionProto"},
    "GraphProto": {1: "NodeProto", 5: "TensorProto", 11: "ValueInfoProto", 12: "ValueInfoProto",
                   13: "ValueInfoProto", 16: "StringStringEntryProto"},
    "NodeProto": {5: "AttributeProto", 9: "StringStringEntryProto"},
    "AttributeProto": {5: "TensorProto", 6: "GraphProto", 10: "TensorProto", 11: "GraphProto", 14: "TypeProto",
                       15: "TypeProto"},
    "ValueInfoProto": {2: "TypeProto", 4: "StringStringEntryProto"},
    "TypeProto": {1: "TypeProto.Tensor", 4: "TypeProto.Sequence", 5: "TypeProto.Map", 8: "TypeProto.Tensor",
                  9: "TypeProto.Sequence"},
    "TypeProto.Tensor": {2: "TensorShapeProto"}, "TypeProto.Sequence": {1: "TypeProto"},
    "TypeProto.Map": {2: "TypeProto"}, "TensorShapeProto": {1: "TensorShapeProto.Dimension"},
    "TensorProto": {13: "StringStringEntryProto", 16: "StringStringEntryProto"},
    "FunctionProto": {7: "NodeProto", 9: "OperatorSetIdProto", 11: "AttributeProto", 12: "ValueInfoProto",
                      14: "StringStringEntryProto"},
}


def fields_of(data, message):
    """[(number, wire type, payload bytes or int)] of a message, sub-messages rewritten by the caller."""
    buf = memoryview(data)
    return [(n, w, bytes(buf[v[0]:v[1]]) if w == LEN else v) for n, w, v in Reader(buf, 0, len(buf), message).fields()]


def field_bytes(n, w, v):
    key = varint_bytes(n << 3 | w)
    if w == LEN:
        return key + varint_bytes(len(v)) + v
    if w == VARINT:
        return key + varint_bytes(v)
    return key + v.to_bytes(4 if w == FIXED32 else 8, "little")


def rewrite(data, change, message="ModelProto"):
    """``data`` with ``change(message, fields) -> fields`` applied to every message, innermost first."""
    fields = []
    for n, w, v in fields_of(data, message):
        sub = SUB.get(message, {}).get(n)
        fields.append((n, w, rewrite(v, change, sub)) if sub and w == LEN else (n, w, v))
    return b"".join(field_bytes(*f) for f in change(message, fields))


PACKED_FIXED = {("TensorProto", 4): 4, ("TensorProto", 10): 8, ("AttributeProto", 7): 4}
PACKED_VARINTS = {("TensorProto", n) for n in (1, 5, 7, 11)} | {("AttributeProto", 8)}


def unpack(message, fields):
    """Every packed repeated scalar as one field per value."""
    out = []
    for n, w, v in fields:
        if w == LEN and (message, n) in PACKED_FIXED:
            size = PACKED_FIXED[message, n]
            out += [(n, FIXED32 if size == 4 else FIXED64, int.from_bytes(v[i:i + size], "little"))
                    for i in range(0, len(v), size)]
        elif w == LEN and (message, n) in PACKED_VARINTS:
            out += [(n, VARINT, x) for x in read_packed_varints(memoryview(v), (0, len(v)), "x").tolist()]
        else:
            out.append((n, w, v))
    return out


def pack(message, fields):
    """Every repeated scalar packed into one field, where the first value was."""
    out, runs = [], {}
    for n, w, v in fields:
        if w != LEN and ((message, n) in PACKED_FIXED or (message, n) in PACKED_VARINTS):
            if n not in runs:
                runs[n] = []
                out.append((n, LEN, runs[n]))
            runs[n].append(varint_bytes(v) if w == VARINT else v.to_bytes(4 if w == FIXED32 else 8, "little"))
        else:
            out.append((n, w, v))
    return [(n, w, b"".join(v)) if isinstance(v, list) else (n, w, v) for n, w, v in out]


def reverse(message, fields):
    """Fields in descending number order (a repeated field's values keep their order)."""
    return sorted(fields, key=lambda f: -f[0])


def shuffle(seed):
    """Fields in random order, repeated ones interleaved with others (their values keep their order)."""
    rng = np.random.default_rng(seed)

    def change(message, fields):
        slots = [fields[i][0] for i in rng.permutation(len(fields))]
        by_number = {}
        for f in fields:
            by_number.setdefault(f[0], []).append(f)
        return [by_number[n].pop(0) for n in slots]
    return change


def plain(model: ir.Model) -> bytes:
    """The model's bytes in the codec's own order (its content, whatever the layout it was read with)."""
    def clear(x):
        if isinstance(x, list):
            for y in x:
                clear(y)
        elif isinstance(x, dict):
            for y in x.values():
                clear(y)
        elif dataclasses.is_dataclass(x):
            if hasattr(x, "layout"):
                x.layout = None
            for f in dataclasses.fields(x):
                clear(getattr(x, f.name))
    model = copy.deepcopy(model)
    clear(model)
    return ir.encode_model(model)


def varied_model():
    """A model with most kinds of fields: typed and raw tensors, ints/floats attributes, a subgraph,
    a function, metadata and every kind of type."""
    model = every_attribute_kind()
    model.graph.initializer.extend([helper.make_tensor("typed_f", TensorProto.FLOAT, [2, 2], [1, -2, 3.5, 0]),
                                    helper.make_tensor("typed_i", TensorProto.INT64, [3], [-1, 2**40, 0]),
                                    helper.make_tensor("typed_d", TensorProto.DOUBLE, [1, 2], [0.25, -1e300]),
                                    helper.make_tensor("typed_u", TensorProto.UINT64, [2], [2**63, 1]),
                                    helper.make_tensor("typed_h", TensorProto.FLOAT16, [2], [1.5, -2]),
                                    numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "raw")])
    model.graph.input.extend([helper.make_tensor_sequence_value_info("s", 1, ["n", None]),
                              helper.make_value_info("m", helper.make_map_type_proto(
                                  7, helper.make_tensor_type_proto(1, [2]))),
                              helper.make_tensor_value_info("shaped", 1, ["batch", 3])])
    model.metadata_props.add(key="author", value="me")
    model.functions.append(helper.make_function("com.example", "F", ["a"], ["b"],
                                                [helper.make_node("Neg", ["a"], ["b"])],
                                                [helper.make_opsetid("", 17)], attributes=["alpha"]))
    return model


@pytest.mark.parametrize("change", [unpack, pack, reverse, shuffle(0), shuffle(1)],
                         ids=["unpacked", "packed", "reversed", "shuffled0", "shuffled1"])
def test_packing_and_field_order_are_kept(change):
    model = varied_model()
    data = rewrite(model.SerializeToString(), change)
    assert data != model.SerializeToString()
    assert onnx.load_from_string(data) == model  # the same model to protobuf
    ours = ir.decode_model(data)
    assert ir.encode_model(ours) == data
    assert plain(ours) == plain(ir.decode_model(model.SerializeToString()))


def test_how_onnx_and_the_codec_write_repeated_scalars():
    """onnx.proto is proto2: dims, ints and floats are unpacked, the typed data fields packed.  Both that
    and the codec's own writing (all packed) re-encode as they were."""
    model = varied_model()
    keys = [n << 3 | w for n, w, _ in fields_of(model.graph.initializer[1].SerializeToString(), "TensorProto")]
    assert keys == [1 << 3 | VARINT, 2 << 3 | VARINT, 7 << 3 | LEN, 8 << 3 | LEN]  # dims unpacked, int64_data packed
    decoded = ir.decode_model(model.SerializeToString())
    built = ir.Model(decoded.graph, decoded.ir_version, dict(decoded.opset_imports))
    for x in [built.graph, *built.graph.nodes, *built.graph.initializers, *built.graph.nodes[0].attributes.values()]:
        x.layout = None  # as if built in code
    ours = ir.encode_model(built)  # the codec's own order: dims, ints and floats packed
    t = fields_of(ours, "ModelProto")
    graph = fields_of([v for n, w, v in t if n == 7][0], "GraphProto")
    tensor = fields_of([v for n, w, v in graph if n == 5][1], "TensorProto")
    assert [(n, w) for n, w, _ in tensor] == [(1, LEN), (2, VARINT), (8, LEN), (7, LEN)]
    assert ir.encode_model(ir.decode_model(ours)) == ours


def test_edits_to_a_decoded_model_are_encoded():
    """A model decoded from unusual bytes (unpacked typed data, fields reversed, unknown fields) and then
    edited encodes to the edited model: the kept layout brings back no old value."""
    model = varied_model()
    model.graph.input[3].type.tensor_type.shape.dim[0].denotation = "BATCH"
    data = rewrite(model.SerializeToString(), lambda m, f: reverse(m, unpack(m, f)) + (
        [(99, VARINT, 7)] if m in ("NodeProto", "TensorProto", "TypeProto") else []))
    ours = ir.decode_model(data)
    expected = onnx.load_from_string(data)
    assert ir.encode_model(ours) == data

    node, ref = ours.graph.nodes[0], expected.graph.node[0]
    node.inputs += ["x2", "x3"]
    ref.input.extend(["x2", "x3"])
    node.outputs.clear()
    del ref.output[:]
    node.name = ""                                  # was "n": not written any more
    ref.ClearField("name")
    node.attributes["ints"].value = [5, 6, 7, 8]    # longer than before
    [a for a in ref.attribute if a.name == "ints"][0].ints[:] = [5, 6, 7, 8]
    node.attributes["floats"].value = [2.0]         # shorter
    [a for a in ref.attribute if a.name == "floats"][0].floats[:] = [2.0]
    del node.attributes["s"]
    ref.attribute.remove([a for a in ref.attribute if a.name == "s"][0])
    node.attributes["added"] = ir.Attribute("added", AttrType.INTS, [1, 2])
    ref.attribute.append(helper.make_attribute("added", [1, 2]))

    typed = ours.graph.initializer_map()["typed_f"]
    typed.data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)  # more dims and values
    ref_typed = [t for t in expected.graph.initializer if t.name == "typed_f"][0]
    del ref_typed.dims[:]
    ref_typed.dims.extend([2, 3, 4])
    ref_typed.float_data[:] = np.arange(24, dtype=np.float32).tolist()
    ints = ours.graph.initializer_map()["typed_i"]
    ints.data = np.array([], np.int64)               # no values left
    ref_ints = [t for t in expected.graph.initializer if t.name == "typed_i"][0]
    del ref_ints.dims[:]
    ref_ints.dims.append(0)
    ref_ints.ClearField("int64_data")
    ours.graph.initializers.append(ir.Tensor("new", np.ones((2,), np.float32), dtypes.FLOAT))
    expected.graph.initializer.append(numpy_helper.from_array(np.ones((2,), np.float32), "new"))

    ours.graph.inputs[3].type.shape = ["n", 3, 4]   # its TypeProto had an unknown field and a denotation
    ours.graph.inputs[3].type.dim_denotations = None
    ref_type = expected.graph.input[3].type
    ref_type.Clear()
    ref_type.CopyFrom(helper.make_tensor_type_proto(1, ["n", 3, 4]))
    ours.opset_imports["com.example"] = 2
    [o for o in expected.opset_import if o.domain == "com.example"][0].version = 2
    ours.metadata_props["author"] = "you"
    expected.metadata_props[0].value = "you"
    ours.graph.doc_string = "graph doc"
    expected.graph.doc_string = "graph doc"

    back = onnx.load_from_string(ir.encode_model(ours))
    assert back == expected
    assert plain(ir.decode_model(back.SerializeToString())) == plain(ours)


@pytest.mark.slow
def test_mutated_models_that_decode_encode_to_the_same_model():
    """Random byte changes to real models: whatever decodes encodes, and the result decodes to the same
    content and re-encodes to itself."""
    seeds = [every_attribute_kind().SerializeToString(), varied_model().SerializeToString(),
             rewrite(varied_model().SerializeToString(), shuffle(2))]
    rng = np.random.default_rng(0)
    decoded = 0
    for i in range(2000):
        data = bytearray(seeds[i % len(seeds)])
        for _ in range(rng.integers(1, 3)):
            at = int(rng.integers(len(data)))
            kind = rng.integers(3)
            if kind == 0:
                data[at] = int(rng.integers(256))
            elif kind == 1:
                data[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 4)), dtype=np.uint8))
            else:
                del data[at:at + int(rng.integers(1, 4))]
        try:
            ours = ir.decode_model(bytes(data))
        except (ModelDecodeError, dtypes.DataTypeError):
            continue
        decoded += 1
        once = ir.encode_model(ours)
        again = ir.decode_model(once)
        assert plain(again) == plain(ours)
        assert ir.encode_model(again) == once
    assert decoded > 150


def test_attribute_values_of_another_type_are_kept_until_that_field_is_written():
    model = mlp()
    attr = model.graph.node[0].attribute[0]  # transB: INT 1
    attr.f = 2.5                              # ignored by readers: the type is INT
    attr.floats.extend([1.0, 2.0])
    data = model.SerializeToString()
    ours = ir.decode_model(data)
    assert ours.graph.nodes[0].attr("transB") == 1
    assert ir.encode_model(ours) == data
    ours.graph.nodes[0].attributes["transB"].value = 0
    attr.i = 0
    assert onnx.load_from_string(ir.encode_model(ours)) == model
    decoded = ours.graph.nodes[0].attributes["transB"]
    decoded.type, decoded.value = AttrType.FLOAT, 0.5  # now f is the value: the old one is not written
    attr.Clear()
    attr.CopyFrom(helper.make_attribute("transB", 0.5))
    attr.floats.extend([1.0, 2.0])
    assert onnx.load_from_string(ir.encode_model(ours)) == model


@pytest.mark.parametrize("change", [unpack, pack])
def test_nan_bits_in_typed_float_data_are_kept(change):
    bits32 = np.array([0x7F800001, 0x7FC00001, 0xFFA00000, 0x3F800000], np.uint32)  # signalling and payload NaNs
    bits64 = np.array([0x7FF0000000000001, 0xFFF8000000000123], np.uint64)
    model = helper.make_model(helper.make_graph([], "g", [], [helper.make_tensor_value_info("f", 1, [4])]))
    tensors = [field_bytes(1, VARINT, 4) + field_bytes(2, VARINT, 1) + field_bytes(4, LEN, bits32.tobytes())
               + field_bytes(8, LEN, b"f"),
               field_bytes(1, VARINT, 2) + field_bytes(2, VARINT, 11) + field_bytes(10, LEN, bits64.tobytes())
               + field_bytes(8, LEN, b"d")]
    data = rewrite(model.SerializeToString(), lambda m, f: f + [(5, LEN, t) for t in tensors] if m == "GraphProto"
                   else f)
    data = rewrite(data, change)  # the typed data unpacked (one fixed-size field per value) or packed
    ours = ir.decode_model(data)
    f, d = ours.graph.initializers
    assert f.data.view(np.uint32).tolist() == bits32.tolist() and d.data.view(np.uint64).tolist() == bits64.tolist()
    assert ir.encode_model(ours) == data
