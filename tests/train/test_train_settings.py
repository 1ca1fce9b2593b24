"""TrainSettings, the one list of the trainer's settings: each bad one refused by name, the library's camelCase
options and a federation's kebab-case round config derived from it, and train/ reading the api only through its
contract (api/_internal.py)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from onnxtrain.federated.client_app import round_settings
from onnxtrain.train.data import DataError
from onnxtrain.train.settings import OPTIONS, SETTINGS, TrainSettings, config_key
from onnxtrain.web.task_sessions import TASK_TRAIN_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pysrc" / "onnxtrain"


@pytest.mark.parametrize("name, value, message", [
    ("batch_size", 0, "the batch size must be a whole number >= 1, got 0"),
    ("epochs", 1.5, "epochs must be a whole number >= 1, got 1.5"),
    ("learning_rate", -1.0, "learning rate"),
    ("schedule", "cosine", r"schedule must be one of \['constant', 'linear'\], got 'cosine'"),
    ("warmup", 1.0, "the warmup fraction must be a number from 0 up to"),
    ("shuffle", "yes", "shuffle must be true or false, got 'yes'"),
    ("keep_best", 1, "keep_best must be true or false, got 1"),
    ("patience", -1, r"patience must be an integer >= 0 \(0: no early stop\), got -1"),
    ("check_finite", None, "check_finite must be true or false, got None"),
    ("evaluate_epochs", 0, "evaluate_epochs must be true or false, got 0"),
    ("proximal_mu", float("nan"), "proximal_mu must be a finite number >= 0, got nan"),
])
def test_each_bad_setting_is_refused_by_its_name(name, value, message):
    with pytest.raises((ValueError, DataError), match=message):
        TrainSettings(**{name: value})


def test_settings_are_made_plain_values_and_the_linear_schedule_needs_epochs():
    import numpy as np
    settings = TrainSettings(batch_size=np.int64(8), epochs=3.0, shuffle=np.bool_(False), proximal_mu=1)
    assert (settings.batch_size, settings.epochs, settings.shuffle, settings.proximal_mu) == (8, 3, False, 1.0)
    assert type(settings.epochs) is int and type(settings.shuffle) is bool and type(settings.proximal_mu) is float
    with pytest.raises(ValueError, match="the linear schedule needs a number of epochs to decay over"):
        TrainSettings(epochs=None, schedule="linear")


def _declared(interface: str) -> set:
    """The option names of an interface of the library's onnxtrain.d.ts."""
    text = (ROOT / "web" / "lib" / "onnxtrain.d.ts").read_text()
    body = re.search(r"export interface " + interface + r"\b[^{]*\{(.*?)\n\}", text, re.S).group(1)
    return set(re.findall(r"^\s*(\w+)\?:", body, re.M))


#: train() options that the library or the session handles itself, not the trainer
LIBRARY_ONLY = {"checkpoints", "onProgress", "onStart", "signal", "resume", "resumeFrom", "resumeBest"}


def test_the_library_options_are_the_settings_onnxtrain_d_ts_declares():
    task, session = _declared("TrainOptions"), _declared("SessionTrainOptions")
    assert set(OPTIONS) == (task | session) - LIBRARY_ONLY
    assert set(TASK_TRAIN_OPTIONS) == task - LIBRARY_ONLY
    assert all(OPTIONS[k] in SETTINGS or OPTIONS[k] in ("validation", "seed") for k in OPTIONS)
    assert OPTIONS["proximalMu"] == "proximal_mu" and OPTIONS["batchSize"] == "batch_size"


def test_a_round_config_becomes_the_page_config():
    config = {"local-epochs": 2, "batch-size": 16, "learning-rate": 0.25, "server-round": 3}
    assert round_settings(config) == {"epochs": 2, "batchSize": 16, "learningRate": 0.25, "proximalMu": 0.0}
    assert round_settings({**config, "proximal-mu": 0.5})["proximalMu"] == 0.5
    assert [config_key(n) for n in ("epochs", "batch_size", "learning_rate", "proximal_mu")] == \
        ["local-epochs", "batch-size", "learning-rate", "proximal-mu"]
    with pytest.raises(KeyError, match="batch-size"):
        round_settings({"local-epochs": 2, "learning-rate": 0.25})


def _private_reads(path: Path) -> list:
    """(line, text) of each read of an attribute ``_name`` of anything but ``self`` or ``cls``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                out.append((node.lineno, ast.unparse(node)))
    return out


def test_the_scan_sees_a_private_read(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(module, self):\n    return module._state, self._ok\n")
    assert _private_reads(bad) == [(2, "module._state")]


#: onnxruntime-training 1.19.2's wrapper passes an OrtValue through: local_round hands it the C object
ORT_WORKAROUND = {"federated/local_round.py": ["OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v))._ortvalue"]}


@pytest.mark.parametrize("layer", ["train", "federated"])
def test_no_private_reads_across_the_package_line(layer):
    found = {str(p.relative_to(PACKAGE)): [text for _, text in reads]
             for p in sorted((PACKAGE / layer).glob("*.py")) if (reads := _private_reads(p))}
    expected = {k: v for k, v in ORT_WORKAROUND.items() if k.startswith(layer + "/")}
    assert found == expected, f"read through api/_internal.py (or a public name) instead: {found}"
