"""A run's artifacts as one .zip: the models it trains with and its checkpoint, to go on training elsewhere
(onnxruntime-training or onnxtrain) where it stopped."""
from __future__ import annotations

import io
import zipfile

from ..ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL

README = """Training artifacts in onnxruntime-training's on-device format, trained for {epoch} epochs.
The checkpoint holds the current parameters and optimizer state. To go on training, in Python:

    from onnxtrain.api import CheckpointState, Module, Optimizer   # or onnxruntime.training.api
    state = CheckpointState.load_checkpoint("checkpoint")
    module = Module("training_model.onnx", state, "eval_model.onnx")
    optimizer = Optimizer("optimizer_model.onnx", module)
    optimizer.set_learning_rate(state.properties["onnxtrain.learning_rate"])  # ORT would start at the initial rate
"""


#: zlib's level for models, which are mostly float weights: on MiniLM's LoRA training model (90 MB) level 1 took
#: 3.6 s and kept 62.6 % of the bytes, the default level 6 took 27 s and kept 58.9 %
FAST = 1


def artifacts_zip(models: dict, checkpoint: bytes, epoch: int) -> bytes:
    """``models`` (file name -> bytes or None: the training, eval and optimizer models) with ``checkpoint`` (the
    run's, at ``epoch`` finished epochs) and a README, as .zip bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=FAST) as archive:
        for name in (TRAINING_MODEL, EVAL_MODEL, OPTIMIZER_MODEL):
            if models.get(name) is not None:
                archive.writestr(name, models[name])
        archive.writestr(CHECKPOINT, checkpoint)
        archive.writestr("README.txt", README.format(epoch=epoch))
    return buffer.getvalue()
