"""The shipped op schema table is what its source writes today, and reads back as the schemas say."""
from pathlib import Path

import op_schemas_source
from onnxtrain.ort_format.op_schemas import find_schema

SHIPPED = Path(__file__).resolve().parents[2] / "pysrc" / "onnxtrain" / "ort_format" / "schema_table.py"


def test_the_table_is_up_to_date():
    assert SHIPPED.read_text() == op_schemas_source.table_source(), \
        "run: python tests/ort_format/op_schemas_source.py > pysrc/onnxtrain/ort_format/schema_table.py"


def test_lookups():
    gemm = find_schema("", "Gemm", 17)
    assert gemm.since_version == 13 and gemm.kernel_type_str_args() == {"T": [(0, 0), (0, 1), (0, 2), (1, 0)]}
    assert find_schema("ai.onnx", "ReduceSum", 17).kernel_type_str_args() == {"T": [(0, 0), (1, 0)],
                                                                               "axes": [(0, 1)]}
    concat = find_schema("", "Concat", 17)
    assert concat.variadic_input and concat.input_arg_counts(3) == [3]
    assert find_schema("", "SoftmaxCrossEntropyLoss", 17).input_arg_counts(2) == [1, 1, 0]
    assert find_schema("", "Gemm", 6).since_version == 6 and find_schema("", "Gelu", 17) is None
    assert find_schema("com.microsoft", "InPlaceAccumulatorV2", 1).since_version == 1


ROOT = SHIPPED.parents[1]


def _emitted_ops() -> set:
    """(domain, op) of every node onnxtrain's gradient rules and onnxblock's blocks write: calls
    c.op("Op", ..., domain=MS_DOMAIN), _op/_node("Op", ...) and Node("Op", ...), "Op" a literal or a name
    of ir.ort_names."""
    import ast
    from onnxtrain.ir import ort_names
    found = set()
    for path in sorted((ROOT / "autodiff" / "rules").glob("*.py")) + sorted((ROOT / "onnxblock").glob("*.py")):
        for call in ast.walk(ast.parse(path.read_text())):
            if not isinstance(call, ast.Call) or not call.args:
                continue
            name = getattr(call.func, "attr", getattr(call.func, "id", ""))
            first = call.args[0]
            if isinstance(first, ast.Attribute) and ast.unparse(first.value) == "ort_names":
                op = getattr(ort_names, first.attr)
            elif isinstance(first, ast.Constant) and isinstance(first.value, str):
                op = first.value
            else:
                continue
            if name not in ("op", "_op", "_node", "Node"):
                continue
            domain = next((k.value for k in call.keywords if k.arg == "domain"), None)
            if path.parent.name == "onnxblock" and name == "_op" or domain is not None and "MS_DOMAIN" in \
                    ast.unparse(domain):
                domain = "com.microsoft"
            else:
                domain = domain.value if isinstance(domain, ast.Constant) else ""
            found.add((domain, op))
    rnn = (ROOT / "autodiff" / "rules" / "rnn.py").read_text()
    assert 'n.op_type, n.domain = f"{op}Training", MS_DOMAIN' in rnn  # the forward LSTM/GRU renamed
    return found | {("com.microsoft", "LSTMTraining"), ("com.microsoft", "GRUTraining")}


def test_every_op_onnxtrain_emits_has_a_schema():
    emitted = _emitted_ops()
    ms = {op for domain, op in emitted if domain == "com.microsoft"}
    assert {"SoftmaxGrad_13", "DropoutGrad", "GatherGrad", "AdamWOptimizer", "InPlaceAccumulatorV2",
            "ReduceAllL2", "SliceGrad", "SGDOptimizerV2"} <= ms
    missing = [f"{d or 'ai.onnx'}::{op}" for d, op in sorted(emitted)
               if find_schema(d, op, 21 if d in ("", "ai.onnx.ml") else 1) is None]
    assert not missing, f"no schema in op_schemas.py (add a model to tests/ort_format/harvest_models.py): {missing}"


def test_onnxruntimes_added_ops():
    assert find_schema("", "MaxPoolGrad", 12).kernel_type_str_args() == {"T": [(0, 0), (1, 0)], "I": [(0, 1)]}
    assert find_schema("com.microsoft", "ReduceAllL2", 1).input_arg_counts(3) == [3]
    assert find_schema("com.microsoft", "FusedGemm", 1).inputs == ("T", "T", "T")
