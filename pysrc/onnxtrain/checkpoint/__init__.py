"""ONNX Runtime's on-device training checkpoint format (flatbuffers, identifier ODTC, version 2)."""
from .data import CheckpointData, CheckpointError, OptimizerGroup
from .reader import read_checkpoint
from .writer import write_checkpoint

__all__ = ["CheckpointData", "CheckpointError", "OptimizerGroup", "read_checkpoint", "write_checkpoint"]
