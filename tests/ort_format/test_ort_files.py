"""onnxtrain's ORT format files against the ones onnxruntime 1.19.2 writes for the same graphs, and the
reader's round trip through onnxtrain's runtime."""
from __future__ import annotations

import contextlib
import os
import pathlib
import sys

import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import artifacts, onnxblock
from onnxtrain.checkpoint import read_checkpoint
from onnxtrain.ir import load
from onnxtrain.ort_format import OrtFormatError, decode_ort_model, encode_ort_model, read_ort
from onnxtrain.runtime.session import Session

CASES = ["mlp_ce_adamw", "cnn_ce_sgd", "mlp_bce_weights_adamw", "mlp_ce_adamw_wd_clip"]


def _ort_convert(onnx_path: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """ORT's converter on ``onnx_path`` with its optimizations off, so that it writes the graph as it is."""
    from onnxruntime.tools.convert_onnx_models_to_ort import OptimizationStyle, convert_onnx_models_to_ort
    os.environ["ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL"] = "disable"
    try:
        with contextlib.redirect_stdout(sys.stderr):
            convert_onnx_models_to_ort(onnx_path, output_dir=out, optimization_styles=[OptimizationStyle.Fixed])
    finally:
        del os.environ["ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL"]
    return out / (onnx_path.stem + ".disable.ort")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """Per case and model: (ours, ORT's) OrtFile of onnxtrain's artifact."""
    oc.ort_training()
    root = tmp_path_factory.mktemp("ortf")
    out = {}
    for name in CASES:
        folder = root / name
        oc.generate(oc.CASES[name], folder, onnxblock, artifacts)
        for stem in ("training_model", "eval_model", "optimizer_model"):
            path = folder / f"{stem}.onnx"
            ours = read_ort(encode_ort_model(load(path)))
            theirs = read_ort(_ort_convert(path, root / "ort" / name).read_bytes())
            out[f"{name}/{stem}"] = (ours, theirs, path)
    return out


def _attrs(node, extra) -> dict:
    return {n: (a.type, a.value) for n, a in node.attributes.items()}


def _schema_default(node, extra, name):
    """onnx's schema default of attribute ``name``; for onnxruntime's own domains, whose schemas onnx lacks,
    ORT's value itself (the attribute is still one we left out)."""
    import onnx
    if node.domain not in ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"):
        return _attrs(node, extra)[name]
    schema = onnx.defs.get_schema(node.op_type, extra["since_version"], node.domain)
    default = schema.attributes[name].default_value
    value = onnx.helper.get_attribute_value(default)
    return default.type, value


def _same_type(mine, theirs, where):
    """The same type; the same shape where both files give one (ORT keeps what its inference finds, which
    may be less than a model declares)."""
    a, b = _t(mine), _t(theirs)
    assert a[0] == b[0], where
    if a[1] is not None and b[1] is not None:
        assert len(a[1]) == len(b[1]), where
        assert all(x == y for x, y in zip(a[1], b[1]) if x is not None and y is not None), where


def _t(t):
    if t is None or not hasattr(t, "shape"):
        return None if t is None else (type(t).__name__, _t(t.elem_type))
    return t.elem_type, t.shape


def test_the_fields_orts_writer_fills_are_the_same(pairs):
    for key, (ours, theirs, _) in pairs.items():
        assert ours.ort_version == theirs.ort_version == "6", key
        mo, mt = ours.model, theirs.model
        assert mo.ir_version == mt.ir_version, key
        # ORT lists every domain it knows; the model's own imports are among them with the same versions
        assert all(mt.opset_imports.get(d) == v for d, v in mo.opset_imports.items()), key
        go, gt = mo.graph, mt.graph
        for side_o, side_t in ((go.inputs, gt.inputs), (go.outputs, gt.outputs)):
            assert [v.name for v in side_o] == [v.name for v in side_t], key
            for a, b in zip(side_o, side_t):
                _same_type(a.type, b.type, (key, a.name))
        inits_o, inits_t = (sorted(g.initializers, key=lambda t: t.name) for g in (go, gt))  # ORT: hash order
        assert [(t.name, t.data_type, t.dims) for t in inits_o] == [(t.name, t.data_type, t.dims) for t in inits_t]
        for a, b in zip(inits_o, inits_t):
            np.testing.assert_array_equal(a.data, b.data)
        assert len(go.nodes) == len(gt.nodes) and ours.max_node_index == theirs.max_node_index, key
        for no, nt, eo, et in zip(go.nodes, gt.nodes, ours.nodes, theirs.nodes):
            assert (no.name, no.op_type, no.domain, no.inputs, no.outputs) == \
                (nt.name, nt.op_type, nt.domain, nt.inputs, nt.outputs), key
            mine = {n: (a.type, a.value) for n, a in no.attributes.items()}
            assert mine == {n: v for n, v in _attrs(nt, et).items() if n in mine}, (key, no.name)
            for n, (t, v) in _attrs(nt, et).items():  # ORT adds what the schema defaults, which we leave out
                if n not in mine:
                    assert _schema_default(nt, et, n) == (t, v), (key, no.name, n)
            for field in ("index", "since_version", "type", "input_arg_counts", "implicit_inputs"):
                assert eo[field] == et[field], (key, no.name, field)
        assert ours.edges == theirs.edges, key
        assert ours.resolver == theirs.resolver, key
        assert ours.runtime_optimizations == theirs.runtime_optimizations == 0, key


def test_every_value_has_the_type_ort_infers(pairs):
    """Every value's element type is ORT's; where both know a shape, it is the same."""
    for key, (ours, theirs, _) in pairs.items():
        typed_o = {v.name: v.type for v in ours.model.graph.value_info}
        typed_t = {v.name: v.type for v in theirs.model.graph.value_info}
        assert set(typed_o) == set(typed_t), key
        for name, t in typed_t.items():
            _same_type(typed_o[name], t, (key, name))


def test_the_reader_gives_back_a_model_onnxtrain_runs(pairs):
    """The eval model read back from our .ort and from ORT's computes what the .onnx computes."""
    for name in CASES:
        ours, theirs, path = pairs[f"{name}/eval_model"]
        original = load(path)
        feeds = []
        rng = np.random.default_rng(0)
        state = read_checkpoint((path.parent / "checkpoint").read_bytes())
        values = {**state.trainable, **state.frozen}
        for vi in original.graph.inputs:
            if vi.name in values:
                feeds.append(values[vi.name])
                continue
            shape = [8 if not isinstance(d, int) else d for d in vi.type.shape]
            if vi.type.elem_type == 7:
                feeds.append(rng.integers(0, 2, shape).astype(np.int64))
            else:
                feeds.append(rng.random(shape).astype(np.float32))
        expected = Session(original).run(feeds)
        for f in (ours, theirs):
            got = Session(f.model).run(feeds)
            for a, b in zip(got, expected):
                np.testing.assert_allclose(a, b, rtol=1e-6)


def test_decode_of_orts_optimized_file(tmp_path):
    """ORT's own converter output at its default level ("all": fused nodes, listed after their consumers)
    reads back into a model in run order."""
    ort_artifacts = oc.ort_training().artifacts
    forward = oc.mlp(n_in=8, hidden=4, n_out=3)
    ort_artifacts.generate_artifacts(forward, requires_grad=oc.MLP_ALL,
                                     loss=ort_artifacts.LossType.MSELoss, artifact_directory=str(tmp_path),
                                     ort_format=True)
    ort_file = read_ort((tmp_path / "eval_model.ort").read_bytes())
    model = ort_file.model
    assert [e["op_type"] for e in ort_file.nodes] != [n.op_type for n in model.graph.nodes]  # reordered
    assert "FusedGemm" in [n.op_type for n in model.graph.nodes]
    produced = {v.name for v in model.graph.inputs} | {t.name for t in model.graph.initializers}
    for n in model.graph.nodes:
        assert all(i in produced for i in n.inputs if i), n.name
        produced.update(n.outputs)
    # ORT's optimizer fused Gemm and Relu into com.microsoft::FusedGemm: onnxtrain runs it as ORT does
    import onnxruntime
    rng = np.random.default_rng(2)
    feeds = {"input": rng.standard_normal((5, 8)).astype(np.float32),
             "target": rng.standard_normal((5, 3)).astype(np.float32),
             **{t.name: oc.numpy_helper.to_array(t) for t in forward.graph.initializer}}
    feeds = {i.name: feeds[i.name] for i in model.graph.inputs}
    ref = onnxruntime.InferenceSession(str(tmp_path / "eval_model.ort"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(Session(model).run(feeds)[0], ref.run(None, feeds)[0], rtol=1e-6)


def test_nothing_is_written_when_a_model_cannot_be_written(tmp_path):
    """com.microsoft::QuickGeluGrad, off the parameters' path (on the input), has no schema in the table."""
    model = oc.mlp(n_in=4, hidden=3, n_out=2)
    out = tmp_path / "out"
    model.graph.node[0].input[0] = "odd_input"
    model.graph.node.insert(0, oc.helper.make_node("QuickGeluGrad", ["input", "input"], ["odd_input"],
                                                   domain="com.microsoft"))
    model.opset_import.add().CopyFrom(oc.helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(OrtFormatError, match="com.microsoft::QuickGeluGrad"):
        artifacts.generate_artifacts(model, requires_grad=oc.MLP_ALL, loss=artifacts.LossType.MSELoss,
                                     artifact_directory=str(out), ort_format=True)
    assert not out.exists() or list(out.iterdir()) == []


def test_not_an_ort_file():
    with pytest.raises(OrtFormatError, match="no 'ORTM' file identifier"):
        read_ort(b"\x08\x00\x00\x00ODTC\x00\x00\x00\x00")
    with pytest.raises(OrtFormatError, match="truncated or corrupt"):
        read_ort(b"\xff\x00\x00\x00ORTM\x00\x00")


def test_a_model_is_told_ort_by_its_content_not_its_name(tmp_path):
    from onnxtrain import ir
    from onnxtrain.ort_format import load_model
    model = ir.load(oc.mlp(n_in=4, hidden=3, n_out=2).SerializeToString())
    data = encode_ort_model(model)
    (tmp_path / "model.onnx").write_bytes(data)
    (tmp_path / "model.ort").write_bytes(ir.to_bytes(model))
    for loaded in (load_model(tmp_path / "model.onnx"), load_model(data)):
        assert [n.op_type for n in loaded.graph.nodes] == ["Gemm", "Relu", "Gemm"]
    assert [n.op_type for n in load_model(tmp_path / "model.ort").graph.nodes] == ["Gemm", "Relu", "Gemm"]
    with pytest.raises(OrtFormatError, match="model.onnx: .*truncated or corrupt"):
        (tmp_path / "model.onnx").write_bytes(data[:40])
        load_model(tmp_path / "model.onnx")


def test_the_api_takes_ort_files_as_bytes(tmp_path):
    """onnxtrain's Module and Optimizer take an .ort model's bytes (onnxruntime's take paths only)."""
    from onnxtrain import api
    artifacts.generate_artifacts(oc.mlp(n_in=4, hidden=8, n_out=3), requires_grad=oc.MLP_ALL,
                                 loss=artifacts.LossType.CrossEntropyLoss, optimizer=artifacts.OptimType.AdamW,
                                 artifact_directory=str(tmp_path / "a"), ort_format=True)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 4)).astype(np.float32), rng.integers(0, 3, 4).astype(np.int64)
    losses = {}
    for ext in (".onnx", ".ort"):
        models = [(tmp_path / "a" / f"{m}{ext}").read_bytes() for m in ("training_model", "eval_model",
                                                                       "optimizer_model")]
        module = api.Module(models[0], api.CheckpointState.load_checkpoint(str(tmp_path / "a" / "checkpoint")),
                            models[1])
        optimizer = api.Optimizer(models[2], module)
        losses[ext] = [float(module(x, y))]
        optimizer.step()
        losses[ext].append(float(module(x, y)))
    assert losses[".ort"] == losses[".onnx"] and losses[".ort"][1] < losses[".ort"][0]
