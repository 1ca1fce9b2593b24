"""Writes pysrc/onnxtrain/ort_format/schema_table.py, the op schemas' facts the ORT format needs:
``python tests/ort_format/op_schemas_source.py > pysrc/onnxtrain/ort_format/schema_table.py``.

The ONNX domains come from onnx's schemas (onnx 1.16, which onnxruntime 1.19.2 is built with).
onnxruntime's own ops have no schema outside its binary, so they are read from what it writes: the ORT
format files that onnxruntime 1.19.2 converts (optimizations off) from onnxtrain's artifacts of every case
in tests/ort_cases.py, from onnxtrain's and onnxruntime's artifacts of the models in harvest_models.py
(one per op whose gradient is one of onnxruntime's ops), and from one-node models of its forward ops;
their kernel type-string resolvers name each formal input and output.
test_op_schemas.py checks that the shipped module is what this prints."""
from __future__ import annotations

import collections
import contextlib
import os
import pathlib
import sys
import tempfile
import textwrap

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent.parent / "pysrc")]


def _key(param, constraints) -> str:
    return param.type_str if param.type_str in constraints else param.name


def onnx_schemas() -> dict:
    """{domain: {(op, since): (inputs, outputs)}}: per formal parameter its key, '*' after a variadic one."""
    import onnx.defs
    out = collections.defaultdict(dict)
    for s in onnx.defs.get_all_schemas_with_history():
        constraints = {c.type_param_str for c in s.type_constraints}
        variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
        ins = tuple(_key(p, constraints) + ("*" if p.option == variadic else "") for p in s.inputs)
        outs = tuple(_key(p, constraints) + ("*" if p.option == variadic else "") for p in s.outputs)
        out[s.domain][(s.name, s.since_version)] = (ins, outs)
    return out


def _convert(folder) -> None:
    from onnxruntime.tools.convert_onnx_models_to_ort import OptimizationStyle, convert_onnx_models_to_ort
    with contextlib.redirect_stdout(sys.stderr):  # the converter prints its progress
        # onnxruntime cannot load its own eval model of a BatchNormalization in training mode: skip that one
        convert_onnx_models_to_ort(folder, optimization_styles=[OptimizationStyle.Fixed],
                                   allow_conversion_failures=True)


def _sources(tmp: pathlib.Path):
    """Folders of ONNX models to convert: onnxtrain's artifacts of every case in tests/ort_cases.py, and
    onnxtrain's and onnxruntime's artifacts of the harvest models, and the one-node forward models."""
    import onnx
    import harvest_models
    import ort_cases
    import onnxtrain.artifacts
    import onnxtrain.onnxblock
    for name, case in ort_cases.CASES.items():
        folder = tmp / name
        folder.mkdir()
        ort_cases.generate(case, folder, onnxtrain.onnxblock, onnxtrain.artifacts)
        yield folder
    sides = {"onnxtrain": onnxtrain.artifacts, "ort": ort_cases.ort_training().artifacts}
    for name, (model, params) in harvest_models.training_models().items():
        for side, artifacts in sides.items():
            if side == "ort" and name in harvest_models.ORT_CANNOT:
                continue
            folder = tmp / f"{name}-{side}"
            folder.mkdir()
            artifacts.generate_artifacts(model, requires_grad=params, loss=artifacts.LossType.MSELoss,
                                         optimizer=artifacts.OptimType.SGD, artifact_directory=str(folder))
            yield folder
    for name, model in harvest_models.forward_ms_models().items():
        folder = tmp / f"{name}-forward"
        folder.mkdir()
        onnx.save(model, str(folder / "model.onnx"))
        yield folder


def ort_schemas() -> dict:
    """The same for onnxruntime's own ops, read back from the ORT format files it writes: those of its
    domains, and those it adds to ONNX's (MaxPoolGrad)."""
    os.environ["ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL"] = "disable"
    from onnxtrain.ort_format.reader import read_ort

    onnx_ops = onnx_schemas()[""]
    found = collections.defaultdict(dict)
    with tempfile.TemporaryDirectory() as tmp:
        for folder in _sources(pathlib.Path(tmp)):
            _convert(folder)
        for path in sorted(pathlib.Path(tmp).rglob("*.ort")):
            ort_file = read_ort(path.read_bytes())
            for node in ort_file.nodes:
                domain = node["domain"]
                if domain in ("ai.onnx.ml", "ai.onnx.preview.training"):
                    continue
                if domain in ("", "ai.onnx"):
                    if any(op == node["op_type"] for op, _ in onnx_ops):
                        continue
                    domain = ""
                args = ort_file.resolver[f"{node['domain']}:{node['op_type']}:{node['since_version']}"]
                n_in = len(node["input_arg_counts"])
                ins, outs = [None] * n_in, [None] * (1 + max([i for k, a in args.items() for t, i in a if t == 1],
                                                          default=-1))
                for key, pairs in args.items():
                    for arg_type, index in pairs:
                        (ins if arg_type == 0 else outs)[index] = key
                ins = [k + ("*" if c > 1 else "") for k, c in zip(ins, node["input_arg_counts"])]
                prev = found[domain].get((node["op_type"], node["since_version"]))
                if prev is not None:  # a variadic input seen once with one argument is still variadic
                    ins = [a if a.endswith("*") else b for a, b in zip(ins, prev[0])]
                found[domain][(node["op_type"], node["since_version"])] = (tuple(ins), tuple(outs))
    return found


HEADER = '''"""The op schemas' facts an ORT format file carries, as data: per domain, one entry per schema version
(see op_schemas.py, which reads them)."""

'''



def table_source() -> str:
    import onnx
    import onnxruntime
    tables = onnx_schemas()
    for domain, ops in ort_schemas().items():
        tables[domain] = {**tables.get(domain, {}), **ops}
    blocks = []
    for domain in sorted(tables):
        entries = " ".join(f"{op}@{v}({','.join(ins)}){','.join(outs)}"
                           for (op, v), (ins, outs) in sorted(tables[domain].items()))
        body = textwrap.fill(entries, 112, initial_indent="    ", subsequent_indent="    ",
                             break_on_hyphens=False, break_long_words=False)
        blocks.append(f'    {domain!r}: """\n{body}\n""",')
    return (HEADER
            + f"# Written by tests/ort_format/op_schemas_source.py from onnx {onnx.__version__}'s schemas and the ORT\n"
            f"# format files onnxruntime {onnxruntime.__version__} writes.  Per domain, one entry per schema\n"
            "# version: op@since(input keys)output keys, a key being the parameter's type constraint or, for a fixed\n"
            "# type, its name; '*' marks a variadic parameter.\n"
            "SCHEMAS = {\n" + "\n".join(blocks) + "\n}\n")


if __name__ == "__main__":
    print(table_source(), end="")
