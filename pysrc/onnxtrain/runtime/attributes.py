"""The attribute types each kernel takes, and the check of a node's attributes against them.

A kernel's attributes are its keyword-only parameters.  A default of int, float or str gives the type
(INT, FLOAT, STRING); for the rest (no default, or None) the ONNX name gives it: the spec uses each of
these names with one type across the ops onnxtrain runs (tests/ir/test_hostile_files.py checks the
result against onnx's op schemas).  A kernel whose attribute shares a name with another type
(ai.onnx.ml's legacy tree ensembles) declares it in ``fn.attribute_types``.
"""
from __future__ import annotations

import inspect
from functools import lru_cache

from ..ir.model import Attribute, AttrType, Graph

_BY_DEFAULT = {int: AttrType.INT, float: AttrType.FLOAT, str: AttrType.STRING}

_BY_NAME = {
    "kernel_shape": AttrType.INTS, "strides": AttrType.INTS, "pads": AttrType.INTS, "dilations": AttrType.INTS,
    "output_padding": AttrType.INTS, "output_shape": AttrType.INTS, "perm": AttrType.INTS, "axes": AttrType.INTS,
    "split": AttrType.INTS, "starts": AttrType.INTS, "ends": AttrType.INTS,
    "axis": AttrType.INT, "to": AttrType.INT, "end": AttrType.INT, "num_outputs": AttrType.INT,
    "ignore_index": AttrType.INT, "output_type": AttrType.INT, "seed": AttrType.INT,
    "alpha": AttrType.FLOAT, "beta": AttrType.FLOAT, "norm_coefficient": AttrType.FLOAT,
    "mode": AttrType.STRING, "equation": AttrType.STRING,
    "value": AttrType.TENSOR, "value_float": AttrType.FLOAT, "value_floats": AttrType.FLOATS,
    "value_int": AttrType.INT, "value_ints": AttrType.INTS, "value_string": AttrType.STRING,
    "value_strings": AttrType.STRINGS, "sparse_value": AttrType.SPARSE_TENSOR,
    "then_branch": AttrType.GRAPH, "else_branch": AttrType.GRAPH, "body": AttrType.GRAPH,
    "num_scan_inputs": AttrType.INT, "directions": AttrType.INTS, "scan_input_axes": AttrType.INTS,
    "scan_input_directions": AttrType.INTS, "scan_output_axes": AttrType.INTS,
    "scan_output_directions": AttrType.INTS, "type": AttrType.TYPE_PROTO, "k": AttrType.INT,
    "dtype": AttrType.INT, "activation_alpha": AttrType.FLOATS, "activation_beta": AttrType.FLOATS,
    "activations": AttrType.STRINGS, "clip": AttrType.FLOAT, "hidden_size": AttrType.INT,
    "stopwords": AttrType.STRINGS, "maxsplit": AttrType.INT, "pattern": AttrType.STRING,
    "max_gram_length": AttrType.INT, "max_skip_count": AttrType.INT, "min_gram_length": AttrType.INT,
    "ngram_counts": AttrType.INTS, "ngram_indexes": AttrType.INTS, "pool_int64s": AttrType.INTS,
    "pool_strings": AttrType.STRINGS, "weights": AttrType.FLOATS,
    "keys_floats": AttrType.FLOATS, "keys_int64s": AttrType.INTS, "keys_strings": AttrType.STRINGS,
    "values_floats": AttrType.FLOATS, "values_int64s": AttrType.INTS, "values_strings": AttrType.STRINGS,
    "keys_tensor": AttrType.TENSOR, "values_tensor": AttrType.TENSOR, "default_tensor": AttrType.TENSOR,
    "leaf_targetids": AttrType.INTS, "leaf_weights": AttrType.TENSOR, "membership_values": AttrType.TENSOR,
    "n_targets": AttrType.INT, "nodes_falseleafs": AttrType.INTS, "nodes_falsenodeids": AttrType.INTS,
    "nodes_featureids": AttrType.INTS, "nodes_hitrates": AttrType.TENSOR,
    "nodes_missing_value_tracks_true": AttrType.INTS, "nodes_modes": AttrType.TENSOR,
    "nodes_splits": AttrType.TENSOR, "nodes_trueleafs": AttrType.INTS, "nodes_truenodeids": AttrType.INTS,
    "tree_roots": AttrType.INTS, "shape": AttrType.INTS, "pooled_shape": AttrType.INTS, "scales": AttrType.FLOATS,
    "coefficients": AttrType.FLOATS, "intercepts": AttrType.FLOATS, "classlabels_ints": AttrType.INTS,
    "classlabels_strings": AttrType.STRINGS, "offset": AttrType.FLOATS, "scale": AttrType.FLOATS,
    "imputed_value_floats": AttrType.FLOATS, "imputed_value_int64s": AttrType.INTS,
    "cats_int64s": AttrType.INTS, "cats_strings": AttrType.STRINGS, "inputdimensions": AttrType.INTS,
    "classlabels_int64s": AttrType.INTS, "kernel_params": AttrType.FLOATS, "rho": AttrType.FLOATS,
    "support_vectors": AttrType.FLOATS, "prob_a": AttrType.FLOATS, "prob_b": AttrType.FLOATS,
    "vectors_per_class": AttrType.INTS,
}

TYPE_NAMES = {v: k for k, v in vars(AttrType).items() if isinstance(v, int)}

# What each type's decoded value must be (ir.model.Attribute): a value of another kind (or None) means
# the file set a type without its field.
_VALUE_CHECK = {
    AttrType.INT: lambda v: isinstance(v, int),
    AttrType.FLOAT: lambda v: isinstance(v, float),
    AttrType.STRING: lambda v: isinstance(v, (bytes, str)),
    AttrType.INTS: lambda v: isinstance(v, list),
    AttrType.FLOATS: lambda v: isinstance(v, list),
    AttrType.STRINGS: lambda v: isinstance(v, list),
    AttrType.TENSOR: lambda v: getattr(v, "data", None) is not None,
    AttrType.SPARSE_TENSOR: lambda v: v is not None,
    AttrType.GRAPH: lambda v: isinstance(v, Graph),
    AttrType.TYPE_PROTO: lambda v: v is not None,
}


@lru_cache(maxsize=None)
def kernel_attributes(fn) -> dict:
    """{attribute name: AttrType} for a kernel."""
    out = {}
    declared = getattr(fn, "attribute_types", {})
    for p in inspect.signature(fn).parameters.values():
        if p.kind != p.KEYWORD_ONLY or p.name.startswith("_"):
            continue
        kind = declared.get(p.name) or (_BY_DEFAULT.get(type(p.default)) if p.default is not p.empty else None)
        kind = kind or _BY_NAME.get(p.name)
        if kind is None:
            raise TypeError(f"kernel {fn.__name__}: the type of attribute '{p.name}' is not known")
        out[p.name] = kind
    return out


def type_name(code) -> str:
    return TYPE_NAMES.get(code, f"type {code}")


def attribute_problem(attr: Attribute, expected) -> str | None:
    """Why ``attr`` cannot be used as an attribute of type ``expected``, or None when it can."""
    if attr.type != expected:
        return f"has type {type_name(attr.type)}, expected {type_name(expected)}"
    if not _VALUE_CHECK.get(expected, lambda v: True)(attr.value):
        return f"is declared {type_name(expected)} but holds no {type_name(expected)} value"
    return None
