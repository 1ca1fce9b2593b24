"""The audio task through the page's registry (what AudioTask's calls reach): clips as the page sends them
({wav} bytes and {pcm, rate} float32 bytes) give what tasks.audio.AudioSession gives for the same samples, a bad
clip names itself and adds nothing, training and predictions and the snapshot go through the registry, and the
results have the page's camelCase keys."""
import numpy as np
import pytest

from audio import speech_backbone as B
from audio import spoken_words as S
from onnxtrain.tasks.audio import AudioSession as CPythonSession
from onnxtrain.tasks.audio_input import read_wav
from onnxtrain.web.sessions import Registry
from web.test_task_sessions import train


def pcm_item(wav: bytes) -> dict:
    """The WAV's samples as the page sends a decoded file: float32 bytes, mono, at its rate."""
    x, rate = read_wav(wav, "clip")
    return {"pcm": x.mean(axis=1).astype("<f4").tobytes(), "rate": rate}


@pytest.fixture(scope="module")
def clips():
    return S.dataset(S.TRAIN_VOICES[:2], seed=0, words=("yes", "no"))


def test_page_clips_train_predict_and_snapshot_through_the_registry(clips):
    registry = Registry()
    handle = registry.call("create_task", None, ["audio", [B.embedding()]])["handle"]
    info = registry.call("info", handle, [])
    assert info["rate"] == 16000 and info["windowSamples"] == 12512 and info["executionProvider"]
    yes, no = (registry.call("add_class", handle, [w]) for w in ("yes", "no"))
    added = registry.call("add_clips", handle, [[{"wav": b} for b in clips["noise"]], 0])
    assert len(added["ids"]) == 4 and added["notices"] == []
    registry.call("add_clips", handle, [[{"wav": b} for b in clips["yes"]], yes])
    decoded = registry.call("add_clips", handle, [[pcm_item(b) for b in clips["no"]], no,
                                                  [f"no{k}.webm" for k in range(4)]])
    assert decoded["notices"] == [f"no{k}.webm was resampled from 22050 Hz to 16000 Hz" for k in range(4)]
    assert registry.call("counts", handle, []) == [4, 4, 4]

    # the same clips in CPython's task: the same windows
    reference = CPythonSession(B.embedding())
    reference.add_class("yes"), reference.add_class("no")
    reference.add_wav(clips["noise"], 0), reference.add_wav(clips["yes"], 1)
    assert reference.add_wav(clips["no"], 2)["windows"] == decoded["windows"]

    setup = registry.call("setup", handle, [False, 0.0, 0, "AdamW"])
    assert setup["trainPerClass"] == [4, 4, 4] and setup["fineTune"] is False
    _, records, summary = train(registry, handle, {"epochs": 20, "batchSize": 32, "learningRate": 0.01})
    assert summary["metrics"]["accuracy"] == 1.0
    got = registry.call("predict", handle, [[{"wav": clips["yes"][0]}, pcm_item(clips["no"][1])]])
    assert [p["className"] for p in got] == ["yes", "no"]
    assert got[1]["notices"] == ["clip 2 to predict was resampled from 22050 Hz to 16000 Hz"]

    snapshot = registry.call("snapshot", handle, [])
    back = registry.call("create_task", None, ["audio_snapshot", [B.embedding(), snapshot]])["handle"]
    assert registry.call("classes", back, []) == ["Background Noise", "yes", "no"]
    assert registry.call("counts", back, []) == [4, 4, 4]


def test_a_bad_page_clip_names_itself_and_adds_nothing(clips):
    registry = Registry()
    handle = registry.call("create_task", None, ["audio", [B.embedding()]])["handle"]
    word = registry.call("add_class", handle, ["yes"])
    good = {"wav": clips["yes"][0]}
    bad = [
        ([good, {"pcm": b"abc", "rate": 16000}], None, r"clip 2 of class \"yes\" has 3 bytes, not a whole number"),
        ([good, {"pcm": np.zeros(16000, "<f4").tobytes(), "rate": 16000}], ["a.wav", "b.wav"], r"b\.wav is silent"),
        ([good, {"rate": 16000}], None, r"clip 2 of class \"yes\" must be \{wav\} or \{pcm, rate\}"),
        ([good, {"pcm": np.ones(4000, "<f4").tobytes(), "rate": 8000}], None, r"is 0\.500 s long"),
        ([good], ["a.wav", "b.wav"], "2 names were given for 1 clips"),
        ([], None, r"no clips were given for class \"yes\""),
    ]
    for items, names, message in bad:
        with pytest.raises(Exception, match=message) as e:
            registry.call("add_clips", handle, [items, word, *([names] if names else [])])
        assert type(e.value).__name__ == "DataError"
    assert registry.call("counts", handle, []) == [0, 0]
    assert registry.call("add_clips", handle, [[good], word])["windows"] == [6]
