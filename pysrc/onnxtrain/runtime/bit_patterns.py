"""Where a graph's bfloat16, float8 and 4-bit values flow.

onnxtrain holds those types as their bit patterns (see ir.dtypes).  Ops that move, select or convert
elements handle such values correctly; arithmetic on the bits would silently give wrong numbers.  The
planner calls ``bit_pattern_types`` to learn each such value's type (from the graph's inputs,
initializers and value_info, Cast's target, and what the moving ops pass on), and refuses an op that
would compute on one.
"""
from __future__ import annotations

from ..ir import dtypes
from ..ir.model import AttrType, Graph, TensorType

# Ops whose outputs hold the elements (or a selection or rearrangement of them) of their first input.
MOVES = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Gather",
         "GatherElements", "GatherND", "Concat", "Split", "Tile", "Expand", "Pad", "Compress", "ReverseSequence",
         "DepthToSpace", "SpaceToDepth", "Optional", "OptionalGetElement"}
# Ops that take such values and are right on them: they read only shapes, or they decode the bits.
READS = MOVES | {"Where", "Shape", "Size", "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "If", "Loop",
                 "Scan", "SequenceConstruct", "SequenceInsert", "OptionalHasElement"}


def _type_of(value_info):
    t = value_info.type if value_info is not None else None
    return t.elem_type if isinstance(t, TensorType) and t.elem_type in dtypes.BIT_PATTERN_TYPES else None


def bit_pattern_types(graph: Graph, order: list, describe_node) -> dict:
    """{value name: bit-pattern type code} for ``graph`` whose nodes run in ``order``; raises ValueError
    (naming the node, the input and its type) for an op that would compute on bit patterns."""
    found = {}
    for vi in [*graph.inputs, *graph.value_info, *graph.outputs]:
        code = _type_of(vi)
        if code is not None:
            found[vi.name] = code
    for t in graph.initializers:
        if t.data_type in dtypes.BIT_PATTERN_TYPES:
            found[t.name] = t.data_type
    for node in order:
        if node.domain not in ("", "ai.onnx"):
            continue
        op = node.op_type
        if op not in READS:
            for name in node.inputs:
                if name in found:
                    raise ValueError(f"{describe_node(node)}: input '{name}' is {dtypes.name(found[name])}, "
                                     f"which onnxtrain holds as bit patterns and does not compute {op} on; "
                                     f"Cast it to float first")
        code = _output_type(node, found)
        if code is not None:
            for out in node.outputs:
                if out:
                    found.setdefault(out, code)
    return found


def _output_type(node, found: dict):
    """The bit-pattern type ``node``'s outputs hold, or None."""
    op, ins, attrs = node.op_type, node.inputs, node.attributes
    source = {"Where": 1, "CastLike": 1, "QuantizeLinear": 2}.get(op, 0 if op in MOVES else None)
    if source is not None and len(ins) > source and ins[source] in found:
        return found[ins[source]]
    attr = {"Cast": "to", "QuantizeLinear": "output_dtype"}.get(op)
    if attr in attrs and attrs[attr].type == AttrType.INT and attrs[attr].value in dtypes.BIT_PATTERN_TYPES:
        return attrs[attr].value
    attr = {"Constant": "value", "ConstantOfShape": "value"}.get(op)
    code = getattr(attrs[attr].value, "data_type", None) if attr in attrs else None   # checked by the planner later
    if code in dtypes.BIT_PATTERN_TYPES:
        return code
    return None
