"""text.lora: adapters added to a model start as the base model, train as x @ W + x @ A @ B * scale, and merge
back into W (checked against numpy and onnxruntime on a small model); the MiniLM encoder's targets."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from onnxtrain import ir
from onnxtrain.ir.builder import GraphBuilder
from onnxtrain.ir.dtypes import DataType
from onnxtrain.ir.model import Graph, Model, Tensor, TensorType, ValueInfo
from onnxtrain.runtime import Session
from onnxtrain.text import lora
from onnxtrain.text.encoder import BertWeights, encoder_model

import minilm

Q, V = "layer.attention.self.query.weight", "layer.attention.self.value.weight"


def small_model(seed=0) -> Model:
    """x [N, 6] -> MatMul Q [6, 5] -> Relu -> MatMul V [5, 4] -> y, and a MatMul by an untargeted weight."""
    rng = np.random.default_rng(seed)
    weights = {Q: rng.standard_normal((6, 5)), V: rng.standard_normal((5, 4)), "other.weight": rng.standard_normal((4, 3))}
    g = Graph(name="small", inputs=[ValueInfo("x", TensorType(DataType.FLOAT, ["N", 6]))],
              outputs=[ValueInfo("y", TensorType(DataType.FLOAT, ["N", 3]))],
              initializers=[Tensor(n, w.astype(np.float32), DataType.FLOAT) for n, w in weights.items()])
    b = GraphBuilder(g)
    h = b.op("Relu", [b.op("MatMul", ["x", Q])])
    b.op("MatMul", [b.op("MatMul", [h, V]), "other.weight"], outputs=["y"])
    return Model(graph=g, opset_imports={"": 17}, ir_version=8)


def numpy_forward(weights: dict, x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ weights[Q], 0) @ weights[V] @ weights["other.weight"]


def with_values(model: Model, values: dict) -> Model:
    for t in model.graph.initializers:
        if t.name in values:
            t.data = values[t.name].astype(np.float32)
    return model


def test_adapters_start_as_the_base_model_and_train_only_a_and_b():
    base = small_model()
    adapted, trainable = lora.add_adapters(base, rank=2, alpha=4, seed=3)
    assert lora.targets(base) == [Q, V]
    assert trainable == [f"{Q}.lora_A", f"{Q}.lora_B", f"{V}.lora_A", f"{V}.lora_B"]
    inits = adapted.graph.initializer_map()
    assert inits[f"{Q}.lora_A"].data.shape == (6, 2) and inits[f"{V}.lora_B"].data.shape == (2, 4)
    assert not inits[f"{Q}.lora_B"].data.any() and np.abs(inits[f"{Q}.lora_A"].data).max() <= 1 / np.sqrt(6)
    assert float(inits[f"{Q}.lora_scale"].data) == 2.0
    assert len(base.graph.nodes) == 4 and len(adapted.graph.nodes) == 4 + 2 * 4   # the base is not changed
    data = ir.to_bytes(adapted)
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    x = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    want = Session(base).run([x])[0]
    np.testing.assert_array_equal(Session(adapted).run([x])[0], want)
    ours = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)


def test_merge_folds_the_adapters_into_the_weights_as_numpy_computes():
    base = small_model()
    adapted, trainable = lora.add_adapters(base, rank=3, alpha=6, seed=0)
    rng = np.random.default_rng(2)
    trained = {n: rng.standard_normal(adapted.graph.initializer_map()[n].data.shape) for n in trainable}
    with_values(adapted, trained)
    merged = lora.merge(adapted)
    assert [n.op_type for n in merged.graph.nodes] == [n.op_type for n in base.graph.nodes]
    assert sorted(t.name for t in merged.graph.initializers) == sorted(t.name for t in base.graph.initializers)
    weights = {t.name: t.data.astype(np.float64) for t in base.graph.initializers}
    for w in (Q, V):
        weights[w] = weights[w] + trained[f"{w}.lora_A"] @ trained[f"{w}.lora_B"] * 2.0
        np.testing.assert_allclose(merged.graph.initializer_map()[w].data, weights[w], rtol=1e-6, atol=1e-6)
    x = rng.standard_normal((7, 6)).astype(np.float32)
    want = numpy_forward(weights, x.astype(np.float64))
    # float32 arithmetic on values of about 10: a few ulps
    np.testing.assert_allclose(Session(merged).run([x])[0], want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(Session(adapted).run([x])[0], want, rtol=1e-5, atol=1e-4)
    onnx.checker.check_model(onnx.load_from_string(ir.to_bytes(merged)), full_check=True)


def test_bad_settings_are_refused():
    base = small_model()
    for rank in (0, -1, 2.5, True):
        with pytest.raises(lora.AdapterError, match="rank"):
            lora.add_adapters(base, rank=rank)
    with pytest.raises(lora.AdapterError, match="above the size"):
        lora.add_adapters(base, rank=6)
    with pytest.raises(lora.AdapterError, match="not a 2-D initializer"):
        lora.add_adapters(base, names=["nothing.weight"])
    shared = small_model()
    shared.graph.nodes[2].inputs[1] = Q   # a second MatMul reads Q
    shared.graph.initializers[0].data = np.zeros((5, 5), np.float32)
    with pytest.raises(lora.AdapterError, match="read by 2 MatMul nodes"):
        lora.add_adapters(shared, names=[Q])
    plain = small_model()
    for t in plain.graph.initializers:
        t.name = t.name.replace("attention.self.", "")
    with pytest.raises(lora.AdapterError, match="no MatMul weight to adapt"):
        lora.add_adapters(plain)


def test_the_encoders_targets_are_its_attention_projections():
    model = encoder_model(BertWeights.from_folder(minilm.folder()))
    names = lora.targets(model)
    assert len(names) == 6 * 3
    assert names[:3] == [f"encoder.layer.0.attention.self.{p}.weight" for p in ("query", "key", "value")]
