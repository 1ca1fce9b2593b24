"""The audio task (tasks.audio) on espeak-ng's words: training, the export in onnxruntime and onnxtrain against
the task's own predictions, snapshots and checkpoints, and ``python -m onnxtrain train FOLDER --audio``."""
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import speech_backbone as B
import spoken_words as S
from onnxtrain import ir
from onnxtrain.runtime import Session
from onnxtrain.tasks import DataError
from onnxtrain.tasks.audio import BACKGROUND, AudioSession
from onnxtrain.tasks.audio_input import wav_pcm
from onnxtrain.tasks.training import Run

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("yes", "no", "stop")
VOICES = S.TRAIN_VOICES[:2]          # 4 clips a class: enough for the mechanics


def make_session(epochs=8) -> AudioSession:
    S.espeak()
    s = AudioSession(B.embedding(), run=functools.partial(Run, epochs=epochs, batch_size=16, learning_rate=0.01))
    for name, files in S.dataset(VOICES, 0, WORDS).items():
        s.add_wav(files, 0 if name == "noise" else s.add_class(name))
    return s


@pytest.fixture(scope="module")
def trained():
    s = make_session()
    s.setup(validation=0.25, seed=1)
    s.training.trainer.run()
    return s


def held_out() -> list:
    data = S.dataset(S.HELD_OUT_VOICES[:1], 3, WORDS)
    return [wav_pcm(b, "held out", allow_silence=True)[0] for files in data.values() for b in files]


def test_windows_are_cut_every_80_ms_and_quiet_ones_not_trained_on():
    s = make_session()
    x = s.store[next(iter(s.store))]
    assert x[0].shape == (6, 96)                           # 1.25 s: 122 frames -> 6 windows of 76, 8 apart
    word = [v for sid, v in s.store.items() if s.samples[sid] != 0]
    assert all(v[1].any() for v in word) and all(v[1].all() for sid, v in s.store.items() if s.samples[sid] == 0)
    info = s.setup()
    assert info["train_per_class"] == [4, 4, 4, 4] and info["parameters"] == 4 * 96 + 4
    assert info["train_windows"] == sum(int(v[1].sum()) for v in s.store.values())


def test_training_lowers_the_loss_and_validation_holds_out_whole_clips(trained):
    assert trained.settings["validation"] == 0.25 and trained.evaluate()["on"] == "validation"
    train, val = trained.split
    assert len(val) == 4 and not set(train) & set(val)
    fresh = make_session(epochs=1)
    fresh.setup(validation=0.25, seed=1)
    before = fresh.training.validation_loss(64)
    fresh.training.trainer.run()
    assert trained.training.validation_loss(64) < before


def test_export_in_onnxruntime_and_onnxtrain_gives_the_tasks_predictions(trained):
    model = trained.export_model()
    proto = ir.load(model)
    assert json.loads(proto.metadata_props["onnxtrain.classes"]) == [BACKGROUND, *WORDS]
    assert [v.name for v in proto.graph.inputs] == ["pcm"]
    assert [v.name for v in proto.graph.outputs] == ["output", "probabilities", "label"]
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    ours = Session(proto)
    clips = held_out()
    task = trained.predict(clips)
    for clip, p in zip(clips, task):
        probs, label = session.run(["probabilities", "label"], {"pcm": clip[None]})
        assert int(label[0]) == p["label"]
        assert np.abs(probs[0] - p["probabilities"]).max() < 1e-5
        assert np.abs(ours.run([clip[None]])[1][0] - probs[0]).max() < 1e-5
    batch = np.stack(clips[:3])                         # equal lengths: one batch, each clip its own floor
    probs = session.run(["probabilities"], {"pcm": batch})[0]
    assert np.abs(probs - np.array([p["probabilities"] for p in task[:3]])).max() < 1e-5


def test_snapshot_restores_classes_clips_and_run(trained):
    data = trained.snapshot()
    back = AudioSession.from_snapshot(B.embedding(), data)
    assert back.classes() == trained.classes() and back.counts() == trained.counts()
    assert back.epoch == trained.epoch and back.split == trained.split
    clips = held_out()[:4]
    for a, b in zip(back.predict(clips), trained.predict(clips)):
        assert a["label"] == b["label"] and np.allclose(a["probabilities"], b["probabilities"], atol=1e-6)
    with pytest.raises(DataError, match="made with another backbone model"):
        other = bytearray(B.embedding())
        other[-5] ^= 1
        AudioSession.from_snapshot(bytes(other), data)
    empty = AudioSession.from_snapshot(B.embedding(), AudioSession(B.embedding()).snapshot())
    assert empty.classes() == [BACKGROUND] and empty.training is None


def test_checkpoint_restores_the_run(trained):
    checkpoint = trained.checkpoint()
    s = make_session(epochs=1)
    s.setup(validation=0.25, seed=1)
    assert s.restore(checkpoint) == trained.epoch
    assert np.allclose(s.predict(held_out()[0])[0]["probabilities"], trained.predict(held_out()[0])[0]["probabilities"],
                       atol=1e-6)


def test_predict_before_training_is_an_error():
    s = AudioSession(B.embedding())
    with pytest.raises(DataError, match="there is no trained head: add classes and clips"):
        s.predict(np.zeros(16000))


def cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"))
    return subprocess.run([sys.executable, "-m", "onnxtrain", *map(str, args)], capture_output=True, text=True, env=env)


def write_folder(root, background="_background_noise_"):
    for name, files in S.dataset(VOICES, 0, WORDS).items():
        folder = root / (background if name == "noise" else name)
        folder.mkdir(parents=True)
        for k, data in enumerate(files):
            (folder / f"{name}_{k}.wav").write_bytes(data)


def test_cli_trains_a_folder_of_wavs_and_onnxruntime_runs_the_model(tmp_path):
    S.espeak()
    write_folder(tmp_path / "clips")
    backbone = tmp_path / "embedding_model.onnx"
    backbone.write_bytes(B.embedding())
    r = cli("train", tmp_path / "clips", "--audio", "--backbone", backbone, "--out", tmp_path / "model.onnx",
            "--epochs", "5", "--validation", "0.25")
    text = r.stdout
    assert r.returncode == 0, r.stderr
    assert "16 clips in 4 classes" in text and "was resampled from 22050 Hz" in text and "epoch 5/5" in text
    session = ort.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    classes = json.loads(meta["onnxtrain.classes"])
    assert classes == [BACKGROUND, "no", "stop", "yes"]
    labels = [int(session.run(["label"], {"pcm": clip[None]})[0][0]) for clip in held_out()]
    assert len(labels) == 4 * len(S.SPEEDS)


def test_cli_errors_name_the_folder(tmp_path):
    (tmp_path / "clips" / "yes").mkdir(parents=True)
    (tmp_path / "clips" / "no").mkdir(parents=True)
    (tmp_path / "clips" / "no" / "a.wav").write_bytes(S.wav_bytes(np.zeros(16000), 16000))
    backbone = tmp_path / "b.onnx"
    backbone.write_bytes(B.embedding())
    r = cli("train", tmp_path / "clips", "--audio", "--backbone", backbone, "--out", tmp_path / "m.onnx")
    assert r.returncode != 0 and f"the class folder {tmp_path / 'clips' / 'yes'} has no .wav files" in r.stderr
    r = cli("train", tmp_path / "clips" / "no" / "a.wav", "--audio", "--backbone", backbone, "--out", tmp_path / "m")
    assert r.returncode != 0 and "a.wav is not a folder; with --audio give a folder" in r.stderr
    (tmp_path / "clips" / "yes" / "b.wav").write_bytes(b"not audio")
    r = cli("train", tmp_path / "clips", "--audio", "--backbone", backbone, "--out", tmp_path / "m.onnx")
    assert r.returncode != 0 and "a.wav is silent (digital silence)" in r.stderr
    r = cli("train", tmp_path / "clips", "--backbone", backbone, "--out", tmp_path / "m.onnx")
    assert r.returncode != 0 and "--backbone is for --audio" in r.stderr


def test_fine_tuning_trains_the_last_convolution_and_the_export_carries_it():
    s = make_session(epochs=3)
    info = s.setup(fine_tune=True, validation=0.25, seed=1)
    conv = s.backbone.conv
    assert info["fine_tune"] and info["parameters"] == 4 * 96 + 4 + 96 * 96 * 3
    s.training.trainer.run()
    exported = ir.load(s.export_model())
    trained = {t.name: t.data for t in exported.graph.initializers}
    pretrained = ir.load(B.embedding()).graph.initializer_map()[conv[0]].data
    tail_weight = next(v for k, v in trained.items() if k.endswith(conv[0]) and k.startswith("head."))
    assert tail_weight.shape == pretrained.shape and not np.array_equal(tail_weight, pretrained)
    session = ort.InferenceSession(ir.to_bytes(exported), providers=["CPUExecutionProvider"])
    clips = held_out()
    for clip, p in zip(clips, s.predict(clips)):
        probs = session.run(["probabilities"], {"pcm": clip[None]})[0][0]
        assert np.abs(probs - p["probabilities"]).max() < 1e-5
    back = AudioSession.from_snapshot(B.embedding(), s.snapshot())
    assert back.settings["fine_tune"] and np.allclose(back.predict(clips[0])[0]["probabilities"],
                                                      s.predict(clips[0])[0]["probabilities"], atol=1e-6)
