"""Small edges of the library's Python side (issue 24): the tasks' default patience, resuming with the same data
settings, the properties getProperties shows, and the exported tabular model's input contract."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.tasks import tabular_prep
from onnxtrain.train.csv import parse_csv
from onnxtrain.web.sessions import Registry
from tasks.test_tabular import wine_csv
from test_task_sessions import drain, tabular_handle, train


def test_a_task_runs_every_epoch_asked_for_unless_patience_is_given():
    """A learning rate too small to move a float32 weight: the validation loss never improves after epoch 1, so
    patience 3 stops at epoch 4, and no patience (the default, 0) runs all 13 epochs."""
    data = wine_csv()
    registry = Registry()
    options = {"epochs": 13, "batchSize": 64, "learningRate": 1e-12}
    _, _, default = train(registry, tabular_handle(registry, data), options)
    _, _, patient = train(registry, tabular_handle(registry, data), {**options, "patience": 3})
    assert default["epochs"] == len(default["history"]) == 13 and default["best"]["bestEpoch"] == 1
    assert patient["epochs"] == len(patient["history"]) == 4 and patient["best"]["bestEpoch"] == 1


def session(registry):
    f = oc.files("mlp_ce_adamw")
    return registry.call("create", None, [f["checkpoint"].read_bytes(), f["training"].read_bytes(),
                                          f["eval"].read_bytes(), f["optimizer"].read_bytes()])["handle"]


def paused_run(registry, data, options):
    handle = session(registry)
    registry.call("train_begin", handle, [data, options])
    registry.call("train_continue", handle, [0])
    registry.call("train_end", handle, [False])
    return handle


def test_resume_accepts_the_same_validation_and_seed_and_refuses_a_change():
    x, y = [np.concatenate(a) for a in zip(*oc.batches("mlp_ce_adamw", 3))]
    data = {"input": x, "labels": y}
    options = {"epochs": 2, "batchSize": 5, "validation": 0.25, "seed": 4}
    registry = Registry()
    whole = session(registry)
    registry.call("train_begin", whole, [data, options])
    straight = drain(registry, whole)
    paused = paused_run(registry, data, options)
    for changed in ({"validation": 0.5}, {"validation": 0}, {"seed": 5}, {"validation": data}):
        name = next(iter(changed))
        with pytest.raises(ValueError, match=f"a resumed run keeps its data: the option '{name}' cannot change"):
            registry.call("train_begin", paused, [data, {"resume": True, **changed}])
    begin = registry.call("train_begin", paused, [data, {"resume": True, "validation": 0.25, "seed": 4}])
    assert begin["validationRows"] == 6
    rest = drain(registry, paused)
    assert [r["loss"] for r in rest] == [r["loss"] for r in straight[1:]]

    held = {"input": x[:4].copy(), "labels": y[:4].copy()}
    own = paused_run(registry, data, {"epochs": 1, "batchSize": 5, "validation": held})
    with pytest.raises(ValueError, match="the option 'validation' cannot change"):
        registry.call("train_begin", own, [data, {"resume": True, "validation": {**held, "labels": y[4:8].copy()}}])
    registry.call("train_begin", own, [data, {"resume": True, "validation": {k: v.copy() for k, v in held.items()},
                                              "seed": 0}])
    assert drain(registry, own)[-1]["validationLoss"] is not None
    plain = paused_run(registry, data, {"epochs": 1, "batchSize": 5})
    registry.call("train_begin", plain, [data, {"resume": True, "validation": 0}])  # none held out, as before
    drain(registry, plain)


def test_get_properties_shows_only_the_users_and_the_checkpoint_keeps_the_librarys():
    registry = Registry()
    h = session(registry)
    registry.call("set_learning_rate", h, [0.125])
    registry.call("set_property", h, ["note", "mine"])
    assert registry.call("get_properties", h, []) == {"note": "mine"}
    with pytest.raises(ValueError, match="the property name 'onnxtrain.learning_rate' is the library's own"):
        registry.call("set_property", h, ["onnxtrain.learning_rate", 1.0])
    saved = registry.call("save_checkpoint", h, [True])
    state = api.CheckpointState.load_checkpoint(saved)
    assert state.properties["note"] == "mine" and state.properties["onnxtrain.learning_rate"] == 0.125
    other = session(registry)
    registry.call("load_checkpoint", other, [saved])
    assert registry.call("get_learning_rate", other, []) == 0.125
    assert registry.call("get_properties", other, []) == {"note": "mine"}


def exported_contract(data, label, task):
    registry = Registry()
    handle = registry.call("create_task", None, ["tabular", [data, "wine.csv"]])["handle"]
    registry.call("setup", handle, [label, task, [8]])
    train(registry, handle, {"epochs": 1})
    model = registry.call("export_model", handle, [])
    props = {p.key: p.value for p in onnx.load_from_string(model).metadata_props}
    return model, json.loads(props[tabular_prep.CONTRACT])


def test_the_exported_tabular_model_carries_its_input_contract_in_its_metadata():
    data = wine_csv()
    model, contract = exported_contract(data, "cultivar", "classification")
    table = parse_csv(data)
    header = table.header
    numeric = contract["inputs"]["numeric"]["columns"]
    assert numeric == [h for h in header if h not in ("region", "cultivar")]
    assert contract["inputs"]["categorical"]["columns"] == ["region"]
    assert sorted(contract["inputs"]["categorical"]["categories"][0]) == ["east", "north", "south"]
    assert contract["label"] == "cultivar" and contract["classes"] == ["class_0", "class_1", "class_2"]
    # a caller that knows only the contract feeds the model and reads the class names
    rows = table.rows[:20]
    feeds = {"numeric": np.array([[float(r[header.index(c)] or "nan") for c in numeric] for r in rows], np.float32),
             "categorical": np.array([[r[header.index("region")]] for r in rows], dtype=object)}
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    labels = session.run(["label"], feeds)[0]
    predicted = [contract["classes"][i] for i in labels]
    truth = [r[header.index("cultivar")] for r in rows]
    assert sum(p == t for p, t in zip(predicted, truth)) >= 10
    assert [i.name for i in session.get_inputs()] == list(contract["inputs"])

    _, regression = exported_contract(data, "alcohol", "regression")
    assert regression["task"] == "regression" and regression["label"] == "alcohol"
    assert "classes" not in regression and regression["outputs"] == ["output"]
    assert "alcohol" not in regression["inputs"]["numeric"]["columns"]


def load_build():
    import importlib.util
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("build_under_test", root / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def fake_venv(build, folder: Path) -> Path:
    """A venv folder that ensure_venv takes as installed: its python, the requirements' stamp, site-packages."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    (folder / ".requirements.sha256").write_text(hashlib.sha256(build.REQUIREMENTS.read_bytes()).hexdigest())
    site_packages = folder / "lib" / "python3.11" / "site-packages"
    site_packages.mkdir(parents=True)
    return site_packages


def test_the_venv_of_a_checkout_runs_python_m_onnxtrain(tmp_path, monkeypatch):
    """build.py's ensure_venv puts the checkout's pysrc on its own venv's path (a .pth file), so that
    `.venv/bin/python -m onnxtrain federate` runs from a checkout; a venv linked from another checkout is left as
    it is."""
    build = load_build()
    site_packages = fake_venv(build, tmp_path / "own")
    monkeypatch.setattr(sys.modules[build.ensure_venv.__module__], "VENV", tmp_path / "own")
    build.ensure_venv()
    pth = site_packages / "onnxtrain-checkout.pth"
    assert pth.read_text() == f"{build.ROOT / 'pysrc'}\n"
    # Python reads the .pth as a venv does: `-m onnxtrain` runs this checkout's package
    runs = subprocess.run([sys.executable, "-c", "import runpy, site, sys; site.addsitedir(sys.argv[1]); "
                           "sys.argv = ['onnxtrain', 'federate', '--help']; runpy.run_module('onnxtrain', "
                           "run_name='__main__', alter_sys=True)", str(site_packages)],
                          cwd=tmp_path, env={"PATH": os.environ["PATH"]}, capture_output=True, text=True)
    assert runs.returncode == 0, runs.stderr
    assert "federate" in runs.stdout
    linked_site = fake_venv(build, tmp_path / "shared")
    (tmp_path / "linked").symlink_to(tmp_path / "shared")
    monkeypatch.setattr(sys.modules[build.ensure_venv.__module__], "VENV", tmp_path / "linked")
    build.ensure_venv()
    assert not (linked_site / "onnxtrain-checkout.pth").exists()
