"""What the recipes share: CheckFailed, the cached stages and their keys, the float16 copy of a model."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


class CheckFailed(RuntimeError):
    """A recipe's check failed: the model differs from its reference or misbehaves; the message says where."""


def digest(parts: list) -> str:
    """A short key of ``parts`` (bytes or anything str() writes)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def onnxtrain_sources(parts: list) -> list:
    """The bytes of every Python file of onnxtrain's rooms ``parts`` (for the key of a stage they take part in)."""
    import onnxtrain
    root = Path(onnxtrain.__file__).parent
    return [p.read_bytes() for part in parts for p in sorted((root / part).rglob("*.py"))]


def cached(folder: Path, make) -> Path:
    """``folder``, made by ``make(tmp)`` into a temporary sibling first if it is not complete."""
    if (folder / "done").is_file():
        return folder
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    make(tmp)
    (tmp / "done").write_text("ok")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def float16_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose float32 initializers of rank >= 1 are stored as float16, each followed by Cast(to=FLOAT) to
    its old name (scalars stay float32)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph, casts, inits = out.graph, [], []
    for t in graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) >= 1:
            half = numpy_helper.to_array(t).astype(np.float16)
            inits.append(numpy_helper.from_array(half, t.name + "_fp16"))
            casts.append(helper.make_node("Cast", [t.name + "_fp16"], [t.name], name=t.name + "_cast",
                                          to=onnx.TensorProto.FLOAT))
        else:
            inits.append(t)
    del graph.initializer[:]
    graph.initializer.extend(inits)
    nodes = [*casts, *graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(out)
    return out
