"""onnxtrain.web.errors: the error a failed request of the JavaScript library answers with ({name, code, message,
details}), on the Registry's real failures in CPython; after each the session trains as before."""
import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.web import errors
from onnxtrain.web.sessions import Registry

CASE = "mlp_ce_adamw"


def artifacts(name=CASE):
    f = oc.files(name)
    return [f[k].read_bytes() for k in ("checkpoint", "training", "eval", "optimizer")]


@pytest.fixture
def session():
    registry = Registry()
    ok, info = errors.answer(registry, "create", None, artifacts())
    assert ok
    x, labels = oc.batches(CASE, 1)[0]
    return registry, info["handle"], {"input": x, "labels": labels}


def step_loss(registry, handle, feeds) -> float:
    ok, out = errors.answer(registry, "run_train_step", handle, [feeds])
    assert ok, out
    (loss,) = out.values()
    return float(np.frombuffer(loss["data"], np.float32)[0])


def parameters(registry, handle) -> bytes:
    return errors.answer(registry, "get_contiguous_parameters", handle, [False])[1]["data"]


def well_formed(info: dict) -> None:
    assert set(info) == {"name", "code", "message", "details"}
    assert "\n" not in info["message"] and 0 < len(info["message"]) <= errors.MESSAGE_CHARS
    assert "Traceback" not in info["message"]
    assert info["details"].startswith("Traceback (most recent call last):")
    assert info["message"].rstrip("…") in " ".join(info["details"].split())


def test_failures_answer_name_code_one_line_and_traceback_and_the_session_goes_on(session):
    registry, handle, good = session
    x, labels = good["input"], good["labels"]
    before, loss = parameters(registry, handle), step_loss(registry, handle, good)
    other_checkpoint = artifacts("cnn_ce_adamw")[0]
    failures = [
        # (method, handle, args), name, code, words of the message
        (("run_train_step", handle, [{"input": x, "labels": labels + 100}]), "RunError", "RUN",
         "is outside [0, 5)"),
        (("run_train_step", handle, [{"input": x, "labels": labels.astype(np.float32)}]), "TypeError", "TYPE",
         "input 'labels' of the training model must be a int64 tensor, got float32"),
        (("run_train_step", handle, [good, ["nope"]]), "ValueError", "VALUE", "no outputs named ['nope']"),
        (("create", None, [artifacts()[0], b"a,b,label\n1,2,3\n", None, None]), "ModelDecodeError", "MODEL_DECODE",
         "cannot load the training model: not an ONNX model"),
        (("create", None, [b"\x01\x02garbage bytes", artifacts()[1], None, None]), "CheckpointError", "CHECKPOINT",
         "not an ONNX Runtime training checkpoint"),
        (("create", None, [other_checkpoint, artifacts()[1], None, None]), "ArtifactError", "ARTIFACT",
         "that the checkpoint does not have"),
        (("load_checkpoint", handle, [b"garbage"]), "CheckpointError", "CHECKPOINT", "too short"),
        (("train_begin", handle, [good, {"batchSize": 0}]), "DataError", "DATA",
         "the batch size must be a whole number >= 1, got 0"),
        (("train_begin", handle, [good, {"validation": 1.5}]), "DataError", "DATA",
         "the validation fraction must be a number from 0 up to (not including) 1, got 1.5"),
        (("train_begin", handle, [good, {"seed": "x"}]), "DataError", "DATA", "the seed must be a whole number"),
        (("train_begin", handle, [good, {"shuffle": "no"}]), "ValueError", "VALUE",
         "shuffle must be true or false, got 'no'"),
        (("set_learning_rate", handle, [float("nan")]), "LearningRateError", "LEARNING_RATE",
         "the learning rate must be a finite number >= 0, got nan"),
        (("read_dataset", handle, [b"not a zip", "data.npz", 0]), "NpzError", "NPZ", "not a readable .npz archive"),
        (("export_model_for_inferencing", handle, [[]]), "ValueError", "VALUE", "name at least one output"),
        (("lazy_reset_grad", 999, []), "ValueError", "VALUE", "no session with handle 999"),
    ]
    for (method, h, args), name, code, words in failures:
        ok, info = errors.answer(registry, method, h, args)
        assert not ok, (method, info)
        well_formed(info)
        assert (info["name"], info["code"]) == (name, code), info
        assert words in info["message"], info["message"]
    # nothing changed: the same parameters, the same loss, and no run left behind
    assert parameters(registry, handle) == before
    assert step_loss(registry, handle, good) == loss
    ok, started = errors.answer(registry, "train_begin", handle, [good, {"batchSize": 4}])
    assert ok and started["rows"] == len(x)
    assert errors.answer(registry, "train_end", handle, [False])[0]


def test_a_task_before_its_setup_and_with_careless_settings():
    registry = Registry()
    csv = b"a,b,label\n" + b"".join(b"%d,%d,%s\n" % (i, i % 7, b"yes" if i % 3 else b"no") for i in range(40))
    ok, task = errors.answer(registry, "create_task", None, ["tabular", [csv, "data.csv", None]])
    assert ok
    handle = task["handle"]
    failures = [
        (("export_model", []), "DataError", "set up the model first"),
        (("setup", ["label", None, [4], 0.2, 0, "AdamW"]), "DataError", "the task is not given"),
        (("setup", ["label", "classification", None, 0.2, 0, "AdamW"]), "DataError",
         "the hidden layer sizes are \"None\"; they must be a list of whole numbers"),
        (("setup", ["label", "classification", [4], 0.2, "x", "AdamW"]), "DataError", "the seed is \"x\""),
        (("setup", ["nolabel", "classification", [4], 0.2, 0, "AdamW"]), "DataError", "no column named \"nolabel\""),
        (("setup", ["label", "classification", [4], 0.2, 0, "Lion"]), "ValueError", "unknown OptimType 'Lion'"),
    ]
    for (method, args), name, words in failures:
        ok, info = errors.answer(registry, method, handle, args)
        assert not ok and info["name"] == name and words in info["message"], info
        well_formed(info)
    one_class = b"a,label\n1,x\n2,x\n3,x\n4,x\n5,x\n"
    ok, single = errors.answer(registry, "create_task", None, ["tabular", [one_class, "s.csv", None]])
    ok, info = errors.answer(registry, "setup", single["handle"], ["label", "classification", [4], 0.2, 0, "AdamW"])
    assert not ok and info["code"] == "DATA" and "has only one class" in info["message"]
    ok, set_up = errors.answer(registry, "setup", handle, ["label", "classification", [4], 0.2, 0, "AdamW"])
    assert ok and set_up["classes"] == ["no", "yes"]
    ok, started = errors.answer(registry, "train_begin", handle, [{"epochs": 1}])
    assert ok


def test_codes_follow_the_class_and_its_bases():
    from onnxtrain.train import NonFiniteStepError
    from onnxtrain.train.data import DataError
    from onnxtrain.webgpu.errors import NoAdapterError

    class MyDataError(DataError):
        pass

    assert errors.code_of(DataError) == "DATA" and errors.code_of(MyDataError) == "DATA"
    assert errors.code_of(NonFiniteStepError) == "NON_FINITE_STEP" and errors.code_of(NoAdapterError) == "NO_ADAPTER"
    assert errors.code_of(api.errors.LearningRateError) == "LEARNING_RATE"
    assert errors.code_of(KeyError) == "KEY" and errors.code_of(UnicodeDecodeError) == "UNICODE"
    assert errors.code_of(StopIteration) == errors.OTHER
    try:
        raise MyDataError("row 3:\n  the label is\tmissing " + "x" * 400)
    except MyDataError as exc:
        info = errors.info(exc)
    assert info["name"] == "MyDataError" and info["code"] == "DATA"
    assert info["message"].startswith("row 3: the label is missing xxx") and info["message"].endswith("…")
    assert len(info["message"]) == errors.MESSAGE_CHARS and "x" * 400 in info["details"]
    try:
        {}["weight"]
    except KeyError as exc:
        assert errors.info(exc)["message"] == "weight"  # not "'weight'"


def test_an_error_known_only_by_pyodides_text():
    text = ("Traceback (most recent call last):\n  File \"<exec>\", line 3, in new_array\n"
            "ValueError: unsupported tensor type 'float16'\n")
    assert errors.from_text("ValueError", text) == {
        "name": "ValueError", "code": "VALUE", "message": "unsupported tensor type 'float16'", "details": text}
    assert errors.from_text("CheckpointError", "CheckpointError: bad") == {
        "name": "CheckpointError", "code": "CHECKPOINT", "message": "bad", "details": "CheckpointError: bad"}
    assert errors.from_text("WeirdError", "")["message"] == "WeirdError"
