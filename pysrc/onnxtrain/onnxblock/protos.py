"""onnxblock's bridge to the ``onnx`` package: models and tensors as ``onnx.ModelProto`` / ``onnx.TensorProto``
where that package imports (CPython), through onnxtrain's own codec's bytes.  Nothing here imports ``onnx``
at module level: in Pyodide, where it does not import, onnxblock hands out the IR as it is."""
from __future__ import annotations

from ..ir import decode_model, encode_model
from ..ir.decode import decode_tensor
from ..ir.encode import encode_tensor
from ..ir.model import Model, Tensor


def available() -> bool:
    """Whether the ``onnx`` package imports here."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return False
    return True


def is_proto(obj) -> bool:
    """Whether ``obj`` is a protobuf message (an ``onnx.ModelProto`` or ``TensorProto``), told without importing
    onnx."""
    return hasattr(obj, "SerializeToString") and hasattr(obj, "ParseFromString")


def model_from_proto(proto) -> Model:
    return decode_model(proto.SerializeToString())


def model_to_proto(model: Model):
    import onnx
    return onnx.ModelProto.FromString(encode_model(model))


def tensor_from_proto(proto) -> Tensor:
    return decode_tensor(proto.SerializeToString())


def tensor_to_proto(tensor: Tensor):
    import onnx
    return onnx.TensorProto.FromString(encode_tensor(tensor))


def _copy_fields(dst, src, in_place: tuple = ()) -> None:
    for field in src.DESCRIPTOR.fields:
        name = field.name
        if field.name in in_place:
            _copy_fields(getattr(dst, name), getattr(src, name))
        elif field.label == field.LABEL_REPEATED:
            del getattr(dst, name)[:]
            getattr(dst, name).extend(getattr(src, name))
        elif not src.HasField(name):
            dst.ClearField(name)
        elif field.message_type is not None:
            getattr(dst, name).CopyFrom(getattr(src, name))
        else:
            setattr(dst, name, getattr(src, name))


def copy_into(dst, src) -> None:
    """Make ModelProto ``dst`` equal to ``src`` without clearing ``dst`` or its graph, so that references to
    them (and to the graph's repeated fields) that user code holds stay attached (``CopyFrom`` and
    ``ParseFromString`` detach them)."""
    _copy_fields(dst, src, in_place=("graph",))
