"""python -m onnxtrain: generate artifacts, inspect artifacts and checkpoints, train, and check training in a browser."""
from __future__ import annotations

import argparse
import sys

import numpy as np

from . import artifacts, ir
from .checkpoint import CheckpointError, read_checkpoint
from .ir.model import SequenceType, TensorType


def _type_text(t) -> str:
    if isinstance(t, TensorType):
        shape = "?" if t.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in t.shape) + "]"
        return f"{ir.dtypes.name(t.elem_type)}{shape}"
    if isinstance(t, SequenceType):
        return f"seq({_type_text(t.elem_type)})"
    return type(t).__name__ if t is not None else "?"


def _array_text(a: np.ndarray) -> str:
    return f"{a.dtype.name}{list(a.shape)}"


def inspect_file(path: str, out=sys.stdout) -> None:
    with open(path, "rb") as f:
        head = f.read(8)
    if head[4:8] == b"ODTC":
        data = read_checkpoint(path)
        print(f"checkpoint {path}{' (nominal)' if data.is_nominal else ''}", file=out)
        for title, tensors in (("trainable parameters", data.trainable), ("frozen parameters", data.frozen)):
            print(f"{title} ({len(tensors)}, {sum(a.size for a in tensors.values())} values):", file=out)
            for name, a in tensors.items():
                print(f"  {name}: {_array_text(a)}", file=out)
        for g in data.optimizer_groups:
            print(f"optimizer group {g.name}: step {g.step}, initial learning rate {g.initial_learning_rate:g}",
                  file=out)
            for name, moments in g.states.items():
                print(f"  {name}: " + ", ".join(f"{m} {_array_text(a)}" for m, a in moments.items()), file=out)
        print(f"properties: {data.properties}", file=out)
        return
    model = ir.load(path)
    g = model.graph
    opsets = ", ".join(f"{d or 'ai.onnx'}:{v}" for d, v in model.opset_imports.items())
    print(f"model {path}: IR {model.ir_version}, opsets {opsets}, {len(g.nodes)} nodes", file=out)
    for title, values in (("inputs", g.inputs), ("outputs", g.outputs)):
        print(f"{title}:", file=out)
        for v in values:
            print(f"  {v.name}: {_type_text(v.type)}", file=out)
    print(f"initializers ({len(g.initializers)}):", file=out)
    for t in g.initializers:
        print(f"  {t.name}: {_array_text(t.data)}", file=out)
    ops = sorted({f"{n.domain + '::' if n.domain else ''}{n.op_type}" for n in g.nodes})
    print(f"ops: {', '.join(ops)}", file=out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["browser-check"]:
        from .browser_check import main as browser_check
        return browser_check(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m onnxtrain", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("browser-check", add_help=False,
                   help="train artifacts in headless Chromium and compare with CPython, step by step")
    gen = sub.add_parser("generate", help="training artifacts from a forward-only ONNX model")
    gen.add_argument("model")
    gen.add_argument("--requires-grad", nargs="+", required=True, metavar="NAME", help="parameters to train")
    gen.add_argument("--frozen", nargs="*", default=[], metavar="NAME", help="parameters kept in the checkpoint")
    gen.add_argument("--loss", default="CrossEntropyLoss", help=", ".join(m.name for m in artifacts.LossType))
    gen.add_argument("--optimizer", default="AdamW", help="AdamW, SGD or none")
    gen.add_argument("--additional-output", nargs="*", default=[], metavar="NAME")
    gen.add_argument("--prefix", default="")
    gen.add_argument("--nominal-checkpoint", action="store_true")
    gen.add_argument("--out", required=True, help="artifact directory")
    insp = sub.add_parser("inspect", help="print a model's or checkpoint's inputs, outputs and parameters")
    insp.add_argument("file")
    args = parser.parse_args(argv)
    try:
        if args.command == "generate":
            optimizer = None if args.optimizer.lower() == "none" else \
                artifacts.enum_member(artifacts.OptimType, args.optimizer)
            artifacts.generate_artifacts(args.model, requires_grad=args.requires_grad, frozen_params=args.frozen,
                                         loss=artifacts.enum_member(artifacts.LossType, args.loss),
                                         optimizer=optimizer, artifact_directory=args.out, prefix=args.prefix,
                                         additional_output_names=args.additional_output,
                                         nominal_checkpoint=args.nominal_checkpoint)
            print(f"wrote the artifacts to {args.out}")
        else:
            inspect_file(args.file)
    except (OSError, ValueError, NotImplementedError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0
