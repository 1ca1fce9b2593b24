"""The op schemas' facts an ORT format file carries per node: the schema version a node resolves to
(``since_version``), how many arguments fill each formal input (``input_arg_counts``), and which inputs
and outputs each kernel type string names (the kernel type-string resolver, which onnxruntime 1.19.2
reads from the file even in its full build).  onnxruntime's own ops (its domains', and the few it adds to
ONNX's) are only those its converter was seen to write (`schema_table.py`)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .schema_table import SCHEMAS


@dataclass(frozen=True)
class OpSchema:
    since_version: int
    inputs: tuple   # per formal input, its kernel type string key
    outputs: tuple
    variadic_input: bool  # the last formal input takes the rest of the arguments

    def input_arg_counts(self, n_inputs: int) -> list:
        """Per formal input, how many of a node's ``n_inputs`` arguments it takes."""
        counts = [1 if i < n_inputs else 0 for i in range(len(self.inputs))]
        if self.variadic_input and self.inputs:
            counts[-1] = max(n_inputs - len(self.inputs) + 1, 0)
        return counts

    def kernel_type_str_args(self) -> dict:
        """{kernel type string: [(0 for an input or 1 for an output, formal index)]}."""
        out = {}
        for kind, keys in ((0, self.inputs), (1, self.outputs)):
            for i, key in enumerate(keys):
                out.setdefault(key, []).append((kind, i))
        return out


def _parse(entry: str):
    head, outs = entry.split(")")
    op, rest = head.split("@")
    version, ins = rest.split("(")
    ins = ins.split(",") if ins else []
    variadic = bool(ins) and ins[-1].endswith("*")
    return op, OpSchema(int(version), tuple(k.rstrip("*") for k in ins),
                        tuple(k.rstrip("*") for k in outs.split(",")) if outs else (), variadic)


@lru_cache(maxsize=None)
def _domain(domain: str) -> dict:
    out = {}
    for entry in SCHEMAS.get(domain, "").split():
        op, schema = _parse(entry)
        out.setdefault(op, []).append(schema)
    return out


def find_schema(domain: str, op_type: str, opset: int):
    """The schema ``op_type`` of ``domain`` ("" or "ai.onnx" for ONNX's) resolves to at ``opset``, or None."""
    domain = "" if domain == "ai.onnx" else domain
    chosen = None
    for schema in _domain(domain).get(op_type, ()):
        if schema.since_version <= opset:
            chosen = schema
    return chosen
