"""The library's session registry (onnxtrain.web.sessions) in CPython: many sessions by handle, onnxruntime-web's
step semantics, checked against onnxtrain.api and onnxruntime on ORT-made artifacts."""
import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.train import NonFiniteStepError, Trainer
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
    losses, _, module = oc.api_run(oc.files(name), batches)
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


def test_deferred_steps_ride_with_the_next_request_and_train_alike():
    """The page's runOptimizerStep and lazyResetGrad, sent with the next request ("deferred_then"), give exactly
    the separate calls' losses and parameters; only those two steps may be deferred, and not into a train()."""
    name = "mlp_ce_adamw"
    registry = Registry()
    info = create(registry, name)
    h = info["handle"]
    assert info["optimizer"] is True
    batches = oc.batches(name, 3)
    got, deferred = [], []
    for batch in batches:
        out = registry.call("deferred_then", h, [deferred, "run_train_step", [feeds(info, batch)]])
        got.append(as_array(out[info["trainingOutputNames"][0]]).item())
        deferred = ["run_optimizer_step", "lazy_reset_grad"]
    params = registry.call("deferred_then", h, [deferred, "get_contiguous_parameters", [True]])
    expected, module = reference(name, batches)
    assert got == expected
    np.testing.assert_array_equal(as_array(params), module.get_contiguous_parameters(True))
    with pytest.raises(ValueError, match="'export_model_for_inferencing' cannot be deferred"):
        registry.call("deferred_then", h, [["export_model_for_inferencing"], "get_parameters_size", [True]])
    registry.call("train_begin", h, [dataset(name, 2), {"epochs": 1, "batchSize": 8}])
    with pytest.raises(RuntimeError, match="runOptimizerStep\\(\\) has to wait"):
        registry.call("deferred_then", h, [["run_optimizer_step"], "train_continue", [50]])
    registry.call("train_end", h, [False])
    no_optimizer = registry.call("create", None, [oc.files(name)["checkpoint"].read_bytes(),
                                                  oc.files(name)["training"].read_bytes()])
    assert no_optimizer["optimizer"] is False


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


# ---- beyond onnxruntime-web: generate_artifacts, the LinearLRScheduler, train() -----------------------------

def dataset(name, batches_, seed=0):
    """``batches_`` of the case's batches as one dataset: input name -> rows."""
    parts = oc.batches(name, batches_, seed)
    f = oc.files(name)
    names = api.Module(f["training"], api.CheckpointState.load_checkpoint(f["checkpoint"])).input_names()
    return {n: np.concatenate([b[i] for b in parts]) for i, n in enumerate(names)}


def fresh(name):
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"])
    return module, api.Optimizer(f["optimizer"], module)


def plain_step(module, optimizer, batch):
    loss = float(module(*batch))
    optimizer.step()
    module.lazy_reset_grad()
    return loss


def drive(registry, h, data, options, budget=50):
    """train() as the library runs it: begin, chunks until done, end; the records and the summary."""
    registry.call("train_begin", h, [data, options])
    records = []
    while True:
        out = registry.call("train_continue", h, [budget])
        assert out["records"], "a chunk trains one step at least"
        records += out["records"]
        if out["done"]:
            return records, registry.call("train_end", h, [True])


def test_generate_artifacts_through_the_registry_train_like_onnxruntime(tmp_path):
    registry = Registry()
    forward = oc.mlp(n_in=20, hidden=16, n_out=5).SerializeToString()
    made = registry.call("generate_artifacts", None, [forward, {"requiresGrad": oc.MLP_ALL, "loss": "CrossEntropyLoss",
                                                                "optimizer": "AdamW"}])
    assert sorted(made) == ["checkpointState", "evalModel", "optimizerModel", "trainModel"]
    assert all(isinstance(v, bytes) for v in made.values())
    info = registry.call("create", None, [made["checkpointState"], made["trainModel"], made["evalModel"],
                                          made["optimizerModel"]])
    batches = oc.batches("mlp_ce_adamw", 3)
    got = []
    for batch in batches:
        out = registry.call("run_train_step", info["handle"], [feeds(info, batch)])
        got.append(as_array(out[info["trainingOutputNames"][0]]).item())
        registry.call("run_optimizer_step", info["handle"], [])
        registry.call("lazy_reset_grad", info["handle"], [])
    # the same bytes in onnxruntime-training
    ort = oc.ort_api()
    for key, file in (("checkpointState", "checkpoint"), ("trainModel", "training"), ("evalModel", "eval"),
                      ("optimizerModel", "optimizer")):
        (tmp_path / file).write_bytes(made[key])
    state = ort.CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = ort.Module(str(tmp_path / "training"), state, str(tmp_path / "eval"))
    optimizer = ort.Optimizer(str(tmp_path / "optimizer"), module)
    expected = []
    for batch in batches:
        expected.append(float(module(*batch)))
        optimizer.step()
        module.lazy_reset_grad()
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # a frozen layer, no optimizer, the forward output added
    made = registry.call("generate_artifacts", None, [forward, {
        "requiresGrad": ["fc2.weight", "fc2.bias"], "frozenParams": ["fc1.weight", "fc1.bias"], "optimizer": None,
        "additionalOutputNames": ["output"]}])
    assert "optimizerModel" not in made
    state = api.CheckpointState.load_checkpoint(made["checkpointState"])
    assert {n: p.requires_grad for n, p in state.parameters} == {"fc1.weight": False, "fc1.bias": False,
                                                                "fc2.weight": True, "fc2.bias": True}
    assert api.Module(made["trainModel"], state, made["evalModel"]).output_names()[1:] == ["output"]


def test_generate_artifacts_without_a_loss_trains_the_models_own_output():
    """loss None: the forward model's first output is the loss (here mean((x @ W)^2)), checked by its gradient."""
    from onnx import TensorProto, helper, numpy_helper
    w = np.array([[0.5], [-1.0], [2.0]], np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Mul", ["y", "y"], ["sq"]),
         helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0)], "own_loss",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [numpy_helper.from_array(w, "W")])
    forward = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    registry = Registry()
    made = registry.call("generate_artifacts", None, [forward.SerializeToString(), {
        "requiresGrad": ["W"], "loss": None, "optimizer": "SGD"}])
    info = registry.call("create", None, [made["checkpointState"], made["trainModel"], made["evalModel"],
                                          made["optimizerModel"]])
    assert info["trainingInputNames"] == ["x"]
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    h = info["handle"]
    loss = as_array(registry.call("run_train_step", h, [{"x": x}])[info["trainingOutputNames"][0]]).item()
    np.testing.assert_allclose(loss, np.mean((x @ w) ** 2), rtol=1e-6)
    registry.call("set_learning_rate", h, [0.25])
    registry.call("run_optimizer_step", h, [])
    expected = w - np.float32(0.25) * (2 / len(x)) * x.T @ (x @ w)
    assert not np.allclose(expected, w)
    np.testing.assert_allclose(as_array(registry.call("get_contiguous_parameters", h, [True])), expected.ravel(),
                               rtol=1e-6)


def test_generate_artifacts_errors_name_the_problem():
    registry = Registry()
    forward = oc.mlp(n_in=20, hidden=16, n_out=5).SerializeToString()
    with pytest.raises(ValueError, match=r"'fc3\.weight' is not an initializer of the model"):
        registry.call("generate_artifacts", None, [forward, {"requiresGrad": ["fc3.weight"]}])
    with pytest.raises(ValueError, match=r"unknown LossType 'Hinge'; choose one of \['MSELoss'"):
        registry.call("generate_artifacts", None, [forward, {"requiresGrad": oc.MLP_ALL, "loss": "Hinge"}])
    with pytest.raises(ValueError, match=r"unknown OptimType 'Adam'"):
        registry.call("generate_artifacts", None, [forward, {"requiresGrad": oc.MLP_ALL, "optimizer": "Adam"}])
    with pytest.raises(ValueError, match="generateArtifacts has no option 'requires_grad'"):
        registry.call("generate_artifacts", None, [forward, {"requires_grad": oc.MLP_ALL}])
    with pytest.raises(TypeError, match="option requiresGrad must be a list of names"):
        registry.call("generate_artifacts", None, [forward, {"requiresGrad": "fc1.weight"}])
    with pytest.raises(ValueError, match="not an ONNX model|truncated|decode"):
        registry.call("generate_artifacts", None, [b"not a model", {"requiresGrad": oc.MLP_ALL}])


def test_train_equals_a_trainer_run():
    registry = Registry()
    info = create(registry, "mlp_ce_adamw")
    data = dataset("mlp_ce_adamw", 6)  # 48 rows
    options = {"epochs": 3, "batchSize": 10, "learningRate": 0.01, "schedule": "linear", "warmup": 0.25,
               "validation": 0.25, "seed": 3, "keepBest": True, "patience": 0}
    records, summary = drive(registry, info["handle"], data, options, budget=0)
    module, optimizer = fresh("mlp_ce_adamw")
    trainer = Trainer(module, optimizer, dict(data), epochs=3, batch_size=10, learning_rate=0.01, schedule="linear",
                      warmup=0.25, validation=0.25, seed=3, keep_best=True, patience=0)
    expected = []
    trainer.run(on_progress=expected.append)
    assert [r["loss"] for r in records] == [r["loss"] for r in expected]
    assert [r["learningRate"] for r in records] == [r["learning_rate"] for r in expected]
    assert [r["stepsPerEpoch"] for r in records] == [4] * 12 and records[-1]["done"]
    ends = [r for r in records if r["epochDone"]]
    assert [r["validationLoss"] for r in ends] == [h["validation_loss"] for h in trainer.history]
    assert ends[-1]["best"]["bestEpoch"] == trainer.best.best_epoch
    assert summary["epochs"] == 3 and summary["steps"] == 12
    assert summary["validationLoss"] == trainer.history[-1]["validation_loss"]
    for epoch, h in enumerate(summary["history"]):
        steps = records[4 * epoch:4 * epoch + 4]
        assert h["loss"] == pytest.approx(sum(r["loss"] * r["examples"] for r in steps) / 36, rel=1e-12)
    assert summary["loss"] == summary["history"][-1]["loss"]
    trainer.use_best()
    assert summary["best"]["restored"] and summary["best"]["bestEpoch"] == trainer.best.best_epoch
    np.testing.assert_array_equal(as_array(registry.call("get_contiguous_parameters", info["handle"], [False])),
                                  module.get_contiguous_parameters(False))


def test_train_with_a_validation_dataset_of_its_own():
    registry = Registry()
    h = create(registry, "mlp_ce_adamw")["handle"]
    data, held = dataset("mlp_ce_adamw", 4), dataset("mlp_ce_adamw", 2, seed=9)
    with pytest.raises(TypeError, match="train's validation must be a fraction of the rows in \\[0, 1\\) or a dataset"):
        registry.call("train_begin", h, [data, {"validation": True}])
    with pytest.raises(TypeError, match="input 'labels' of the validation data must be a int64 tensor"):
        registry.call("train_begin", h, [data, {"validation": {**held, "labels": held["labels"].astype(np.float32)}}])
    records, summary = drive(registry, h, data, {"epochs": 2, "batchSize": 8, "validation": held, "patience": 1})
    module, optimizer = fresh("mlp_ce_adamw")
    run = Trainer(module, optimizer, data, epochs=2, batch_size=8, validation=held, patience=1)
    run.run()
    assert [h["validationLoss"] for h in summary["history"]] == [h["validation_loss"] for h in run.history]
    assert summary["best"]["bestEpoch"] == run.best.best_epoch


def test_train_without_shuffle_equals_the_plain_loop():
    registry = Registry()
    info = create(registry, "mlp_ce_sgd")
    data = dataset("mlp_ce_sgd", 5)
    records, summary = drive(registry, info["handle"], data, {"epochs": 2, "batchSize": 8, "shuffle": False})
    expected, module = reference("mlp_ce_sgd", oc.batches("mlp_ce_sgd", 5) * 2)
    assert [r["loss"] for r in records] == expected
    assert summary["validationLoss"] is None and summary["best"] == {
        "bestEpoch": None, "bestLoss": None, "stop": False, "epochsWithoutImprovement": 0, "restored": False}
    np.testing.assert_array_equal(as_array(registry.call("get_contiguous_parameters", info["handle"], [True])),
                                  module.get_contiguous_parameters(True))


def test_an_aborted_run_keeps_its_last_whole_step_and_a_second_run_works():
    registry = Registry()
    mlp, cnn = create(registry, "mlp_ce_sgd"), create(registry, "cnn_ce_sgd")
    h = mlp["handle"]
    data = dataset("mlp_ce_sgd", 5)
    registry.call("train_begin", h, [data, {"epochs": 2, "batchSize": 8, "shuffle": False}])
    done = []
    for _ in range(2):  # budget 0: one step per chunk
        done += registry.call("train_continue", h, [0])["records"]
    for method, args in (("run_train_step", [feeds(mlp, oc.batches("mlp_ce_sgd", 1)[0])]), ("save_checkpoint", []),
                         ("train_begin", [data, {}]), ("release", [])):
        with pytest.raises(RuntimeError, match=r"this session is training: [a-zA-Z]+\(\) has to wait until train"):
            registry.call(method, h, args)
    assert registry.call("get_parameters_size", cnn["handle"], [True]) > 0  # the other session is not busy
    registry.call("train_end", h, [False])  # the abort
    with pytest.raises(RuntimeError, match="not training"):
        registry.call("train_continue", h, [50])
    module, optimizer = fresh("mlp_ce_sgd")
    batches = oc.batches("mlp_ce_sgd", 5)
    expected = [plain_step(module, optimizer, batch) for batch in batches[:2]]
    assert [r["loss"] for r in done] == expected
    np.testing.assert_array_equal(as_array(registry.call("get_contiguous_parameters", h, [True])),
                                  module.get_contiguous_parameters(True))
    records, summary = drive(registry, h, data, {"epochs": 1, "batchSize": 8, "shuffle": False})
    assert [r["loss"] for r in records] == [plain_step(module, optimizer, batch) for batch in batches]
    assert summary["steps"] == 5


def test_train_errors_leave_the_session_usable():
    registry = Registry()
    info = create(registry, "mlp_ce_adamw")
    h = info["handle"]
    data = dataset("mlp_ce_adamw", 2)
    before = as_array(registry.call("get_contiguous_parameters", h, [True])).copy()
    with pytest.raises(TypeError, match="input 'labels' of the training data must be a int64 tensor, got float32"):
        registry.call("train_begin", h, [{**data, "labels": data["labels"].astype(np.float32)}, {}])
    with pytest.raises(ValueError, match=r"input 'input' of the training data must have dims \['\?', 20\]"):
        registry.call("train_begin", h, [{**data, "input": data["input"][:, :4].copy()}, {}])
    with pytest.raises(ValueError, match=r"the training data takes inputs \['input', 'labels'\]: missing \['labels'\]"):
        registry.call("train_begin", h, [{"input": data["input"]}, {}])
    with pytest.raises(ValueError, match="train has no option 'batch_size'"):
        registry.call("train_begin", h, [data, {"batch_size": 4}])
    with pytest.raises(ValueError, match="schedule must be one of"):
        registry.call("train_begin", h, [data, {"schedule": "cosine"}])
    with pytest.raises(ValueError, match="rows"):
        registry.call("train_begin", h, [{**data, "labels": data["labels"][:3]}, {}])
    with pytest.raises(RuntimeError, match="not training"):
        registry.call("train_end", h, [True])
    # a step that fails mid-run: the records before it first, then the error; the run ends, the session works
    registry.call("train_begin", h, [data, {"epochs": 1, "batchSize": 4, "learningRate": 1e38, "shuffle": False}])
    first = registry.call("train_continue", h, [10_000])
    assert len(first["records"]) == 1 and not first["done"]
    with pytest.raises(NonFiniteStepError, match=r"step 2 \(epoch 1\) was undone: the loss is nan"):
        registry.call("train_continue", h, [10_000])
    registry.call("train_end", h, [False])
    assert not np.array_equal(as_array(registry.call("get_contiguous_parameters", h, [True])), before)
    registry.call("load_parameters_buffer", h, [before.tobytes(), True])
    registry.call("set_learning_rate", h, [0.001])
    records, _ = drive(registry, h, data, {"epochs": 1, "batchSize": 4})
    assert len(records) == 4 and all(np.isfinite(r["loss"]) for r in records)


def test_linear_lr_scheduler_rates_equal_the_api_and_onnxruntime():
    registry = Registry()
    info = create(registry, "mlp_ce_sgd")
    h = info["handle"]
    batches = oc.batches("mlp_ce_sgd", 6)
    key = registry.call("create_lr_scheduler", h, [2, 5, 0.05])
    rates = [registry.call("get_learning_rate", h, [])]
    for batch in batches:
        registry.call("run_train_step", h, [feeds(info, batch)])
        registry.call("run_optimizer_step", h, [])
        registry.call("lazy_reset_grad", h, [])
        rates.append(registry.call("lr_scheduler_step", h, [key]))
        assert rates[-1] == registry.call("get_learning_rate", h, [])
    def scheduled_rates(module, optimizer, scheduler):
        out = [optimizer.get_learning_rate()]
        for batch in batches:
            module(*batch)
            optimizer.step()
            module.lazy_reset_grad()
            scheduler.step()
            out.append(optimizer.get_learning_rate())
        return out
    module, optimizer = fresh("mlp_ce_sgd")
    assert rates == scheduled_rates(module, optimizer, api.LinearLRScheduler(optimizer, 2, 5, 0.05))
    np.testing.assert_allclose(rates, [0.0, 0.025, 0.05, 0.05 * 2 / 3, 0.05 / 3, 0.0, 0.0], rtol=1e-6)
    # onnxruntime-training's wrapper takes the counts swapped
    ort = oc.ort_api()
    f = oc.files("mlp_ce_sgd")
    module = ort.Module(str(f["training"]), ort.CheckpointState.load_checkpoint(str(f["checkpoint"])))
    optimizer = ort.Optimizer(str(f["optimizer"]), module)
    np.testing.assert_allclose(rates, scheduled_rates(module, optimizer, ort.LinearLRScheduler(optimizer, 5, 2, 0.05)),
                               rtol=1e-6)
    # bad settings set nothing; an unknown scheduler is named
    with pytest.raises(ValueError, match="total_step_count must be an integer >= 0"):
        registry.call("create_lr_scheduler", h, [2, -1, 0.05])
    with pytest.raises(ValueError, match="no learning-rate scheduler 7"):
        registry.call("lr_scheduler_step", h, [7])
    assert registry.call("get_learning_rate", h, []) == rates[-1]
    # after a checkpoint is loaded the scheduler goes on from that checkpoint's step count
    saved = registry.call("save_checkpoint", h, [True])
    registry.call("load_checkpoint", h, [saved])
    assert registry.call("lr_scheduler_step", h, [key]) == rates[-1]
