"""python -m onnxtrain generate / inspect, run as a user runs them."""
import os
import subprocess
import sys
from pathlib import Path

import ort_cases as oc
from onnxtrain import api

ROOT = Path(__file__).resolve().parents[2]


def cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"))
    return subprocess.run([sys.executable, "-m", "onnxtrain", *map(str, args)], capture_output=True, text=True, env=env)


def test_generate_then_train_and_inspect(tmp_path):
    model = tmp_path / "mlp.onnx"
    model.write_bytes(oc.mlp(n_in=4, hidden=3, n_out=2).SerializeToString())
    out = tmp_path / "artifacts"
    r = cli("generate", model, "--requires-grad", "fc2.weight", "fc2.bias", "--frozen", "fc1.weight", "fc1.bias",
            "--loss", "CrossEntropyLoss", "--optimizer", "AdamW", "--out", out)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["checkpoint", "eval_model.onnx", "optimizer_model.onnx", "training_model.onnx"]
    state = api.CheckpointState.load_checkpoint(out / "checkpoint")
    module = api.Module(out / "training_model.onnx", state, out / "eval_model.onnx")
    assert module.input_names() == ["input", "labels"]
    r = cli("inspect", out / "checkpoint")
    assert r.returncode == 0
    assert "trainable parameters (2, 8 values):" in r.stdout and "fc1.weight: float32[3, 4]" in r.stdout
    r = cli("inspect", out / "training_model.onnx")
    assert "lazy_reset_grad: bool[1]" in r.stdout and "com.microsoft::InPlaceAccumulatorV2" in r.stdout


def test_errors_are_one_clear_line(tmp_path):
    model = tmp_path / "mlp.onnx"
    model.write_bytes(oc.mlp(n_in=4, hidden=3, n_out=2).SerializeToString())
    r = cli("generate", model, "--requires-grad", "nope", "--out", tmp_path / "a")
    assert r.returncode == 1 and r.stderr.startswith("error: 'nope' is not an initializer")
    r = cli("generate", model, "--requires-grad", "fc1.bias", "--loss", "Hinge", "--out", tmp_path / "a")
    assert r.returncode == 1 and "unknown LossType 'Hinge'" in r.stderr
    (tmp_path / "junk").write_bytes(b"not a model at all")
    r = cli("inspect", tmp_path / "junk")
    assert r.returncode == 1 and "junk" in r.stderr


def test_inspect_shows_an_ort_file_as_its_onnx_file(tmp_path):
    from onnxtrain import artifacts
    artifacts.generate_artifacts(oc.mlp(n_in=4, hidden=3, n_out=2), requires_grad=oc.MLP_ALL,
                                 loss=artifacts.LossType.CrossEntropyLoss, artifact_directory=str(tmp_path),
                                 ort_format=True)
    shown = {}
    for ext in (".onnx", ".ort"):
        r = cli("inspect", tmp_path / f"training_model{ext}")
        assert r.returncode == 0, r.stderr
        shown[ext] = r.stdout.replace(str(tmp_path / f"training_model{ext}"), "MODEL")
    # the same lines; the ORT format keeps its initializers sorted by name
    assert sorted(shown[".ort"].splitlines()) == sorted(shown[".onnx"].splitlines())
    assert "com.microsoft::InPlaceAccumulatorV2" in shown[".ort"]
