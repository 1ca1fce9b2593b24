"""Few-shot accuracy on the tests' labelled text set (tests/text/corpus.py): 8 texts per category from the train
pool, the head and LoRA each scored in onnxruntime on the downloaded model (model.zip's model.onnx, its texts
tokenized by onnxtrain's tokenizer) against the held-out texts; both beat TF-IDF + logistic regression, and LoRA
beats the head."""
import io
import time
import zipfile

import numpy as np
import onnxruntime as ort
import pytest

import minilm
from baseline import baseline
from corpus import CATEGORIES, few_shot
from onnxtrain.tasks.text import Encoder, TextSession

pytestmark = pytest.mark.slow   # LoRA trains 4 epochs of the encoder (about a minute on one core)

SEED = 0
PER_CLASS = 8
SETTINGS = {"head": {"epochs": 30, "learning_rate": 0.01}, "lora": {"epochs": 4, "learning_rate": 0.001}}
BATCH_SIZE = 8


def accuracy_in_onnxruntime(model_zip: bytes, session: TextSession, test: list) -> float:
    with zipfile.ZipFile(io.BytesIO(model_zip)) as z:
        model = ort.InferenceSession(z.read("model.onnx"), providers=["CPUExecutionProvider"])
    texts, labels = [t for t, _ in test], np.array([c for _, c in test])
    predicted = []
    for start in range(0, len(texts), 64):
        batch = session.tokenizer.batch(texts[start:start + 64])
        predicted.append(model.run(["label"], {"input_ids": batch.input_ids,
                                               "attention_mask": batch.attention_mask})[0])
    return float(np.mean(np.concatenate(predicted) == labels))


def test_head_and_lora_beat_tfidf_and_lora_beats_the_head():
    train, test = few_shot(PER_CLASS, SEED)
    bar = baseline(train, test)
    encoder_bytes, tokenizer = minilm.files()
    encoder = Encoder(encoder_bytes)
    scores = {}
    for mode, settings in SETTINGS.items():
        session = TextSession(encoder, tokenizer)
        for k, name in enumerate(CATEGORIES):
            session.add_class(name)
            session.add_texts([t for t, c in train if c == k], k)
        session.setup(mode=mode, seed=SEED)
        started = time.perf_counter()
        while session.epoch < settings["epochs"]:
            session.step(BATCH_SIZE, settings["learning_rate"])
        seconds = time.perf_counter() - started
        scores[mode] = accuracy_in_onnxruntime(session.export_zip(), session, test)
        print(f"{mode}: {settings['epochs']} epochs in {seconds:.1f} s, held-out accuracy {scores[mode]:.4f} on "
              f"{len(test)} texts")
    print(f"TF-IDF + logistic regression: {bar:.4f}")
    assert scores["head"] > bar and scores["lora"] > bar
    assert scores["lora"] > scores["head"]
