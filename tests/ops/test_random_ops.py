"""Seeded random ops (Dropout, Random*, Bernoulli, Multinomial) draw from a generator of their node, made once per
session and advanced by every run, as onnxruntime's are: two runs of one session draw differently, a new session
repeats the first run's draws.  Unseeded ops draw afresh on every run.  The values differ from onnxruntime's (its
generators differ); the test checks these properties on onnxruntime itself and on onnxtrain."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxruntime as ort
import ort_cases as oc
from onnxtrain import api, artifacts, ir
from onnxtrain.runtime import Session

X = np.full((4, 8), 0.5, np.float32)
FLOAT_X = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])]
CASES = {   # op: (inputs, feeds, attributes, output type); the last output (Dropout's mask) is compared
    "Dropout": (FLOAT_X + [helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
                           helper.make_tensor_value_info("t", TensorProto.BOOL, [])],
                {"x": X, "r": np.array(0.5, np.float32), "t": np.array(True)}, {}, None),
    "RandomUniform": ([], {}, {"shape": [4, 8]}, TensorProto.FLOAT),
    "RandomNormal": ([], {}, {"shape": [4, 8]}, TensorProto.FLOAT),
    "RandomUniformLike": (FLOAT_X, {"x": X}, {}, TensorProto.FLOAT),
    "RandomNormalLike": (FLOAT_X, {"x": X}, {}, TensorProto.FLOAT),
    "Bernoulli": (FLOAT_X, {"x": X}, {}, TensorProto.FLOAT),
    "Multinomial": (FLOAT_X, {"x": X}, {"sample_size": 16}, TensorProto.INT32),
}


def one_node(op, seed):
    inputs, _, attrs, out_type = CASES[op]
    outputs = ["y", "mask"] if op == "Dropout" else ["y"]
    if seed is not None:
        attrs = {**attrs, "seed": seed if op == "Dropout" else float(seed)}
    node = helper.make_node(op, [v.name for v in inputs], outputs, **attrs)
    types = [TensorProto.FLOAT, TensorProto.BOOL] if op == "Dropout" else [out_type]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info(o, t, None) for o, t in zip(outputs, types)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def sessions(op, seed):
    """Two sessions' run functions on onnxruntime and on onnxtrain, each giving the compared output."""
    model, feeds = one_node(op, seed), CASES[op][1]
    theirs = [ort.InferenceSession(model, providers=["CPUExecutionProvider"]) for _ in range(2)]
    ours = [Session(ir.load(model)) for _ in range(2)]
    return {"onnxruntime": [lambda s=s: s.run(None, feeds)[-1] for s in theirs],
            "onnxtrain": [lambda s=s: s.run(feeds)[-1] for s in ours]}


@pytest.mark.parametrize("op", CASES)
def test_a_seeded_op_advances_in_a_session_and_repeats_in_a_new_one(op):
    for runtime, (first, second) in sessions(op, seed=7).items():
        one, two = first(), first()
        assert not np.array_equal(one, two), f"{runtime}: two runs of one session drew the same {op} values"
        np.testing.assert_array_equal(second(), one, err_msg=f"{runtime}: a new session did not repeat the first run")


@pytest.mark.parametrize("op", CASES)
def test_an_unseeded_op_draws_afresh(op):
    # onnxtrain only: onnxruntime's unseeded ops draw from process-wide state (its Random* ops repeat across
    # sessions of one process, and its unseeded Dropout repeats within a session once torch.manual_seed has run in
    # the same process), so onnxruntime shows no one behaviour to compare with
    first, second = sessions(op, seed=None)["onnxtrain"]
    one = first()
    assert not np.array_equal(one, first()), f"two runs of one session drew the same {op} values"
    assert not np.array_equal(one, second()), f"a new session repeated the first run's {op} values"


def linear_dropout():
    """output = Dropout(input @ fc.weight.T + fc.bias), seeded, in training mode (its mask, as torch exports it)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "fc.weight"),
             numpy_helper.from_array(np.zeros(8, np.float32), "fc.bias"),
             numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
             numpy_helper.from_array(np.array(True), "training")]
    nodes = [helper.make_node("Gemm", ["input", "fc.weight", "fc.bias"], ["h"], transB=1),
             helper.make_node("Dropout", ["h", "ratio", "training"], ["output", "mask"], seed=5)]
    graph = helper.make_graph(nodes, "linear_dropout", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                                      ["batch", 4])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_training_model_with_a_seeded_dropout_advances_its_mask_per_step(tmp_path):
    rng = np.random.default_rng(1)
    x, target = rng.standard_normal((16, 4)).astype(np.float32), rng.standard_normal((16, 8)).astype(np.float32)
    for runtime, (training, generate) in {"onnxruntime": (oc.ort_api(), oc.ort_training().artifacts),
                                          "onnxtrain": (api, artifacts)}.items():
        folder = tmp_path / runtime
        folder.mkdir()
        generate.generate_artifacts(linear_dropout(), requires_grad=["fc.weight", "fc.bias"],
                                    loss=generate.LossType.MSELoss, artifact_directory=str(folder))

        def losses(steps):
            """The losses of ``steps`` train steps on one batch (no optimizer step) of a new Module."""
            state = training.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
            module = training.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
            out = []
            for _ in range(steps):
                out.append(float(np.asarray(module(x, target)).reshape(-1)[0]))
                module.lazy_reset_grad()
            return out
        first = losses(3)
        assert len(set(first)) == 3, f"{runtime}: the steps drew the same mask: {first}"
        assert losses(2) == first[:2], f"{runtime}: a new Module did not repeat the first steps' masks"
