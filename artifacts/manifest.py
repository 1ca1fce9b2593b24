"""The manifest's description of a file: size, sha256 and, for an ONNX model, its inputs and outputs."""
from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

import onnx


def version(distribution: str) -> str:
    return metadata.version(distribution)


def _dims(type_proto) -> list:
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in type_proto.tensor_type.shape.dim]


def _type(type_proto) -> str:
    """numpy's name of a tensor's element type ("float32", "int64"), "sequence of <that>" for a sequence of
    tensors (an optimizer model's params), or "unspecified"."""
    if type_proto.HasField("sequence_type"):
        return "sequence of " + _type(type_proto.sequence_type.elem_type)
    code = type_proto.tensor_type.elem_type
    return onnx.helper.tensor_dtype_to_np_dtype(code).name if code else "unspecified"


def _values(values) -> list:
    return [{"name": v.name, "type": _type(v.type), "shape": _dims(v.type)} for v in values]


def model_io(path: Path) -> dict:
    """An ONNX file's opsets, inputs and outputs (name, numpy type name, shape: ints and symbolic names)."""
    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    return {"opset_import": {o.domain or "ai.onnx": o.version for o in model.opset_import},
            "inputs": _values(v for v in model.graph.input if v.name not in inits),
            "outputs": _values(model.graph.output)}


def describe(path: Path, name: str = None) -> dict:
    """{"name" (``name``, by default the file's), "bytes", "sha256"} of a file, with "opset_import", "inputs" and
    "outputs" if it is a model."""
    data = path.read_bytes()
    entry = {"name": name or path.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if path.suffix == ".onnx":
        entry.update(model_io(path))
    return entry


def describe_folder(folder: Path, names: list) -> list:
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: the recipe did not write {missing}")
    return [describe(folder / n, n) for n in names]
