"""The library's session registry (onnxtrain.web.sessions) in CPython: many sessions by handle, onnxruntime-web's
step semantics, checked against onnxtrain.api and onnxruntime on ORT-made artifacts."""
import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.web.sessions import Registry


def create(registry, name):
    f = oc.files(name)
    return registry.call("create", None, [f["checkpoint"].read_bytes(), f["training"].read_bytes(),
                                          f["eval"].read_bytes(), f["optimizer"].read_bytes()])


def feeds(info, batch):
    return dict(zip(info["trainingInputNames"], batch))


def as_array(t):
    return np.frombuffer(t["data"], {"float32": np.float32, "int64": np.int64}[t["type"]]).reshape(t["dims"])


def reference(name, batches):
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"])
    opt = api.Optimizer(f["optimizer"], module)
    losses = []
    for batch in batches:
        losses.append(float(module(*batch)))
        opt.step()
        module.lazy_reset_grad()
    return losses, module


def test_two_sessions_by_handle_train_like_the_api():
    registry = Registry()
    mlp, cnn = create(registry, "mlp_ce_adamw"), create(registry, "cnn_ce_adamw")
    assert mlp["handle"] != cnn["handle"]
    assert mlp["trainingInputNames"] == mlp["evalInputNames"] == ["input", "labels"]
    assert len(mlp["trainingOutputNames"]) == 1
    for name, info in (("mlp_ce_adamw", mlp), ("cnn_ce_adamw", cnn)):
        batches = oc.batches(name, 3)
        got = []
        for batch in batches:
            out = registry.call("run_train_step", info["handle"], [feeds(info, batch)])
            assert list(out) == info["trainingOutputNames"]
            got.append(as_array(out[info["trainingOutputNames"][0]]).item())
            registry.call("run_optimizer_step", info["handle"], [])
            registry.call("lazy_reset_grad", info["handle"], [])
        expected, module = reference(name, batches)
        assert got == expected
        params = registry.call("get_contiguous_parameters", info["handle"], [True])
        np.testing.assert_array_equal(as_array(params), module.get_contiguous_parameters(True))
    registry.call("release", mlp["handle"], [])
    with pytest.raises(ValueError, match="no session with handle"):
        registry.call("lazy_reset_grad", mlp["handle"], [])
    assert registry.call("get_parameters_size", cnn["handle"], [True]) > 0


def test_gradients_accumulate_until_lazy_reset_grad():
    registry = Registry()
    info = create(registry, "mlp_ce_sgd")
    f = oc.files("mlp_ce_sgd")
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"])
    opt = api.Optimizer(f["optimizer"], module)
    batches = oc.batches("mlp_ce_sgd", 2)
    for batch in batches:  # two steps without a reset: the gradients add up in both
        registry.call("run_train_step", info["handle"], [feeds(info, batch)])
        module(*batch)
    registry.call("run_optimizer_step", info["handle"], [])
    opt.step()
    np.testing.assert_array_equal(as_array(registry.call("get_contiguous_parameters", info["handle"], [False])),
                                  module.get_contiguous_parameters(False))


def test_bad_feeds_are_named_and_leave_the_session_usable():
    registry = Registry()
    info = create(registry, "mlp_ce_adamw")
    h = info["handle"]
    x, labels = oc.batches("mlp_ce_adamw", 1)[0]
    with pytest.raises(ValueError, match=r"missing \['labels'\]"):
        registry.call("run_train_step", h, [{"input": x}])
    with pytest.raises(ValueError, match=r"unknown \['bogus'\]"):
        registry.call("run_train_step", h, [{"input": x, "labels": labels, "bogus": x}])
    with pytest.raises(TypeError, match="input 'labels' of the training model must be a int64 tensor, got float32"):
        registry.call("run_train_step", h, [{"input": x, "labels": labels.astype(np.float32)}])
    with pytest.raises(ValueError, match=r"input 'input' of the training model must have dims \['\?', 20\]"):
        registry.call("run_train_step", h, [{"input": x[:, :7].copy(), "labels": labels}])
    with pytest.raises(ValueError, match="unknown method"):
        registry.call("__init__", h, [])
    with pytest.raises(ValueError, match="no outputs named"):
        registry.call("run_eval_step", h, [{"input": x, "labels": labels}, ["nope"]])
    expected, _ = reference("mlp_ce_adamw", [(x, labels)])
    out = registry.call("run_train_step", h, [{"input": x, "labels": labels}])
    assert as_array(next(iter(out.values()))).item() == expected[0]


def test_parameters_checkpoint_learning_rate_and_export():
    ort = pytest.importorskip("onnxruntime")
    registry = Registry()
    info = create(registry, "mlp_ce_adamw")
    h = info["handle"]
    batch = oc.batches("mlp_ce_adamw", 1)[0]
    saved = registry.call("save_checkpoint", h, [True])
    before = as_array(registry.call("get_contiguous_parameters", h, [True])).copy()
    registry.call("run_train_step", h, [feeds(info, batch)])
    registry.call("run_optimizer_step", h, [])
    assert not np.array_equal(as_array(registry.call("get_contiguous_parameters", h, [True])), before)
    registry.call("set_property", h, ["epoch", 3])
    registry.call("set_property", h, ["note", "<b>x</b>"])
    with pytest.raises(TypeError, match="property 'bad' must be an int, float or str"):
        registry.call("set_property", h, ["bad", [1]])
    with_properties = registry.call("save_checkpoint", h, [False])
    assert api.CheckpointState.load_checkpoint(with_properties).properties["note"] == "<b>x</b>"
    registry.call("load_checkpoint", h, [saved])
    assert "epoch" not in registry.call("get_properties", h, [])
    registry.call("load_checkpoint", h, [with_properties])
    assert {"epoch": 3, "note": "<b>x</b>"}.items() <= registry.call("get_properties", h, []).items()
    registry.call("load_checkpoint", h, [saved])
    np.testing.assert_array_equal(as_array(registry.call("get_contiguous_parameters", h, [True])), before)
    with pytest.raises(ValueError, match="the parameter buffer has 8 bytes"):
        registry.call("load_parameters_buffer", h, [bytes(8), True])
    registry.call("load_parameters_buffer", h, [np.zeros_like(before).tobytes(), True])
    assert not as_array(registry.call("get_contiguous_parameters", h, [True])).any()
    registry.call("load_parameters_buffer", h, [before.tobytes(), True])
    registry.call("set_learning_rate", h, [0.015625])
    assert registry.call("get_learning_rate", h, []) == 0.015625
    with pytest.raises(ValueError):
        registry.call("set_learning_rate", h, [float("nan")])
    assert registry.call("get_learning_rate", h, []) == 0.015625
    model = registry.call("export_model_for_inferencing", h, [["output"]])
    x = batch[0]
    got = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["output"], {"input": x})[0]
    evaluated = registry.call("run_eval_step", h, [feeds(info, batch)])
    assert list(evaluated) == info["evalOutputNames"]
    f = oc.files("mlp_ce_adamw")
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    reference_model = api.Module(f["training"], state, f["eval"]).export_model_for_inferencing(None, ["output"])
    expected = ort.InferenceSession(reference_model, providers=["CPUExecutionProvider"]).run(["output"],
                                                                                               {"input": x})[0]
    np.testing.assert_array_equal(got, expected)
