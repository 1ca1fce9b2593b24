"""Seeded random ops (Dropout, Random*, Bernoulli, Multinomial) draw from a generator of their node, made once per
session and advanced by every run, as onnxruntime's are: two runs of one session draw differently, a new session
repeats the first run's draws.  Unseeded ops draw afresh on every run.  The values differ from onnxruntime's (its
generators differ); the test checks these properties on onnxruntime itself and on onnxtrain."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxruntime as ort
from onnxtrain import ir
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
    # onnxruntime's unseeded Random* ops repeat across sessions of one process (they take one process-wide seed);
    # onnxtrain's do not, as its unseeded Dropout and onnxruntime's do not
    for runtime, (first, second) in sessions(op, seed=None).items():
        one = first()
        assert not np.array_equal(one, first()), f"{runtime}: two runs of one session drew the same {op} values"
        if runtime == "onnxtrain" or op == "Dropout":
            assert not np.array_equal(one, second()), f"{runtime}: a new session repeated the first run's {op}"
