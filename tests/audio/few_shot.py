"""The audio task's few-shot measurement, shared by test_audio_few_shot.py and bench/bench_audio.py: classes of
words spoken by espeak-ng (spoken_words), 8 clips a class to learn from in the training voices, scored on the
held-out voices by onnxruntime on the exported model; against raw log-mel + logistic regression (scikit-learn)
on the same windows, scored the same way (a clip's class: the mean of its windows' scores)."""
from __future__ import annotations

import functools

import numpy as np

import spoken_words as S
from onnxtrain.tasks.audio import BACKGROUND, AudioSession
from onnxtrain.tasks.audio_frontend import features, windows
from onnxtrain.tasks.audio_input import wav_pcm
from onnxtrain.tasks.training import Run

EPOCHS, BATCH, RATE = 30, 32, 0.01


def class_of(name: str) -> str:
    return BACKGROUND if name == "noise" else name


def pcm_sets(words, voices, seed: int) -> list:
    """[(class name, 16 kHz PCM)] of spoken_words.dataset."""
    data = S.dataset(voices, seed, words)
    return [(class_of(c), wav_pcm(b, f"{c} clip {k}", allow_silence=True)[0])
            for c, clips in data.items() for k, b in enumerate(clips)]


def task_accuracy(backbone: bytes, train: dict, test: list, seed: int = 0, fine_tune: bool = False) -> tuple:
    """(held-out accuracy of the exported model in onnxruntime, the session, the model bytes)."""
    import onnxruntime
    session = AudioSession(backbone, run=functools.partial(Run, epochs=EPOCHS, batch_size=BATCH,
                                                           learning_rate=RATE))
    for name, files in train.items():
        index = 0 if class_of(name) == BACKGROUND else session.add_class(class_of(name))
        session.add_wav(files, index)
    session.setup(fine_tune=fine_tune, seed=seed)
    session.training.trainer.run()
    model = session.export_model()
    ort = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = session.classes()
    hits = [int(ort.run(["label"], {"pcm": pcm[None]})[0][0]) == names.index(c) for c, pcm in test]
    return float(np.mean(hits)), session, model


def logmel_baseline(train: dict, test: list) -> float:
    """Held-out accuracy of a logistic regression on the windows' raw log-mel (76 x 32, standardised), trained
    on the same windows as the task's head, a clip's class the mean of its windows' log-probabilities."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    x, y = [], []
    for name, files in train.items():
        for k, b in enumerate(files):
            w = windows(features(wav_pcm(b, f"{name} {k}", allow_silence=True)[0]))
            x.append(w.reshape(len(w), -1))
            y += [class_of(name)] * len(w)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    model.fit(np.concatenate(x), y)
    classes = list(model.classes_)
    hits = []
    for c, pcm in test:
        w = windows(features(pcm))
        scores = model.predict_log_proba(w.reshape(len(w), -1)).mean(axis=0)
        hits.append(classes[int(scores.argmax())] == c)
    return float(np.mean(hits))


def measure(backbone: bytes, words=S.WORDS, seed: int = 0, fine_tune: bool = False) -> dict:
    """Both accuracies on held-out voices (the task's with ``fine_tune`` too when asked), and the data's
    sizes."""
    train = S.dataset(S.TRAIN_VOICES, seed, words)
    test = pcm_sets(words, S.HELD_OUT_VOICES, seed + 7)
    accuracy, session, _ = task_accuracy(backbone, train, test, seed)
    tuned = {"task_fine_tune_onnxruntime": task_accuracy(backbone, train, test, seed, True)[0]} if fine_tune else {}
    return {**tuned, "words": list(words), "classes": len(train), "train_clips_per_class": len(train[words[0]]),
            "test_clips": len(test), "train_voices": list(S.TRAIN_VOICES), "held_out_voices": list(S.HELD_OUT_VOICES),
            "task_onnxruntime": accuracy, "logmel_logistic_regression": logmel_baseline(train, test),
            "chance": 1 / len(train)}
