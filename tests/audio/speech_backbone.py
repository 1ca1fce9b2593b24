"""openWakeWord's two models for the audio tests, as the site ships them: from the openwakeword 0.5.1 wheel in the
build's cache (downloaded once), SHA-256 checked by the recipe (artifacts/speech_embedding.py)."""
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from artifacts import speech_embedding as recipe  # noqa: E402


@functools.lru_cache(maxsize=1)
def files() -> dict:
    """{"melspectrogram.onnx": bytes, "embedding_model.onnx": bytes}."""
    return recipe.model_files(recipe.wheel())


def embedding() -> bytes:
    return files()["embedding_model.onnx"]


def melspectrogram() -> bytes:
    return files()["melspectrogram.onnx"]
