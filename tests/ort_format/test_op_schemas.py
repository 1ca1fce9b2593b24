"""The shipped op schema table is what its source writes today, and reads back as the schemas say."""
from pathlib import Path

import op_schemas_source
from onnxtrain.ort_format.op_schemas import find_schema

SHIPPED = Path(__file__).resolve().parents[2] / "pysrc" / "onnxtrain" / "ort_format" / "op_schemas.py"


def test_the_table_is_up_to_date():
    assert SHIPPED.read_text() == op_schemas_source.table_source(), \
        "run: python tests/ort_format/op_schemas_source.py > pysrc/onnxtrain/ort_format/op_schemas.py"


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
