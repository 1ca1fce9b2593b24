"""onnxtrain.text.encoder: the BERT encoder graph written from a small random BERT's weights against transformers'
BertModel (torch) with the same weights and against onnxruntime; the safetensors and config.json errors;
load_encoder's float16 folding and its contract errors."""
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from onnxtrain import ir
from onnxtrain.ir.dtypes import DataType
from onnxtrain.runtime import Session
from onnxtrain.text.encoder import (PACKAGE_ZIP, BertWeights, EncoderError, WeightsError, encoder_model,
                                    load_encoder, read_model_folder, read_safetensors)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"vocab_size": 120, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 64, "max_position_embeddings": 40, "type_vocab_size": 2, "hidden_act": "gelu",
          "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
LENGTHS = [9, 3, 1, 6]  # tokens kept per row; the rest is padding
# float32 in torch and in onnxtrain/onnxruntime differ by summation order only: measured at most 2.7e-6 (onnxtrain's
# hidden states; 1.7e-6 in onnxruntime) on outputs of magnitude up to 2.5
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def bert():
    """A small BertModel with random weights (every parameter, LayerNorm's and biases too) in eval mode, and its
    folder's files (config.json, model.safetensors)."""
    import torch
    from safetensors.torch import save
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    model = BertModel(BertConfig(**CONFIG), add_pooling_layer=False).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * (0.1 if "LayerNorm" in name else 0.3) + (1.0 if "LayerNorm.weight" in name
                                                                                   else 0.0))
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    return model, {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": save(state)}


@pytest.fixture(scope="module")
def feeds():
    rng = np.random.default_rng(1)
    ids = rng.integers(1, CONFIG["vocab_size"], (len(LENGTHS), max(LENGTHS))).astype(np.int64)
    mask = (np.arange(max(LENGTHS))[None, :] < np.array(LENGTHS)[:, None]).astype(np.int64)
    return {"input_ids": np.where(mask == 1, ids, 0), "attention_mask": mask}


@pytest.fixture(scope="module")
def encoder(bert) -> bytes:
    return ir.to_bytes(encoder_model(BertWeights.from_folder(bert[1], "the tiny BERT")))


def torch_outputs(model, feeds) -> dict:
    """transformers' last hidden states and sentence-transformers' mean pooling of them over the mask."""
    import torch
    with torch.no_grad():
        hidden = model(input_ids=torch.from_numpy(feeds["input_ids"]),
                       attention_mask=torch.from_numpy(feeds["attention_mask"])).last_hidden_state.numpy()
    mask = feeds["attention_mask"][..., None].astype(np.float32)
    return {"embedding": (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9), "hidden": hidden}


def ort_outputs(data: bytes, feeds) -> dict:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def test_encoder_equals_transformers_bert_and_onnxruntime(bert, feeds, encoder):
    model = ir.load(encoder)
    onnx.checker.check_model(onnx.load_from_string(encoder), full_check=True)
    want = torch_outputs(bert[0], feeds)
    got = dict(zip(["embedding", "hidden"], Session(model).run(feeds)))
    theirs = ort_outputs(encoder, feeds)
    kept = feeds["attention_mask"].astype(bool)
    for name in ("embedding", "hidden"):
        assert got[name].shape == want[name].shape, name
        # padding rows of hidden are not defined by the contract; the kept tokens' are
        mine, ort_, ref = (x[kept] if name == "hidden" else x for x in (got[name], theirs[name], want[name]))
        np.testing.assert_allclose(mine, ref, rtol=0, atol=TOLERANCE, err_msg=f"onnxtrain {name}")
        np.testing.assert_allclose(ort_, ref, rtol=0, atol=TOLERANCE, err_msg=f"onnxruntime {name}")
        assert np.abs(ref).max() > 0.1  # the comparison is not between near-zero arrays
        print(f"{name}: onnxtrain {np.abs(mine - ref).max():.2g}, onnxruntime {np.abs(ort_ - ref).max():.2g} from "
              f"torch; largest magnitude {np.abs(ref).max():.2g}")
    # padding changes nothing: each row alone, unpadded, gives the same embedding
    for i, n in enumerate(LENGTHS):
        alone = Session(model).run({"input_ids": feeds["input_ids"][i:i + 1, :n],
                                    "attention_mask": feeds["attention_mask"][i:i + 1, :n]})[0]
        np.testing.assert_allclose(alone[0], got["embedding"][i], rtol=0, atol=TOLERANCE)


def test_linear_weights_are_stored_transposed_under_their_checkpoint_names(bert, encoder):
    inits = {t.name: t.data for t in ir.load(encoder).graph.initializers}
    state = bert[0].state_dict()
    query = "encoder.layer.1.attention.self.query.weight"
    np.testing.assert_array_equal(inits[query], state[query].numpy().T)
    assert inits["encoder.layer.0.intermediate.dense.weight"].shape == (32, 64)


def test_model_folder_is_read_from_the_wheel_or_its_model_zip(bert):
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("1_Pooling/", "")
        z.writestr("1_Pooling/config.json", "{}")
        for name, data in bert[1].items():
            z.writestr(name, data)
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(PACKAGE_ZIP, inner.getvalue())
        z.writestr("all_minilm_l6_v2/__init__.py", "")
    for source in (wheel.getvalue(), inner.getvalue()):
        files = read_model_folder(source)
        assert sorted(files) == ["1_Pooling/config.json", "config.json", "model.safetensors"]
        assert files["model.safetensors"] == bert[1]["model.safetensors"]


def _safetensors(header: dict, body: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + body


def test_safetensors_errors_name_the_file_and_the_tensor(bert):
    good = read_safetensors(bert[1]["model.safetensors"])
    assert good["embeddings.word_embeddings.weight"].shape == (120, 32)
    cases = [(b"\x01\x02", r"w\.st: 2 bytes is too short"),
             ((100).to_bytes(8, "little") + b"{}", r"w\.st: the header says 100 bytes, the file has 2"),
             ((2).to_bytes(8, "little") + b"{x", r"w\.st: the header is not JSON"),
             (_safetensors({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, b"\0\0"),
              r"w\.st: tensor 'a' has dtype 'BF16'"),
             (_safetensors({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 8),
              r"w\.st: tensor 'a' \(F32 \[2\]\) does not fit its offsets \[0, 4\)")]
    for data, message in cases:
        with pytest.raises(WeightsError, match=message):
            read_safetensors(data, "w.st")


@pytest.mark.parametrize("change, message", [
    ({"hidden_size": None}, r"config\.json lacks or mistypes 'hidden_size'"),
    ({"num_attention_heads": "many"}, r"config\.json lacks or mistypes"),
    ({"hidden_act": "relu"}, r"config\.json's hidden_act is 'relu'; only 'gelu'"),
    ({"num_attention_heads": 5}, r"hidden_size 32 is not a multiple of num_attention_heads 5"),
])
def test_config_errors_name_the_field(bert, change, message):
    config = {k: v for k, v in CONFIG.items() if change.get(k, 0) is not None}
    config.update({k: v for k, v in change.items() if v is not None})
    with pytest.raises(WeightsError, match="the tiny BERT: " + message):
        BertWeights.from_folder(dict(bert[1], **{"config.json": json.dumps(config).encode()}), "the tiny BERT")


def test_missing_file_or_tensor_is_named(bert):
    with pytest.raises(WeightsError, match=r"the tiny BERT has no config\.json; it has \['model\.safetensors'\]"):
        BertWeights.from_folder({"model.safetensors": bert[1]["model.safetensors"]}, "the tiny BERT")
    from safetensors.torch import save
    state = {k: v.contiguous() for k, v in bert[0].state_dict().items() if "layer.1.output.dense.bias" not in k}
    weights = BertWeights.from_folder(dict(bert[1], **{"model.safetensors": save(state)}), "the tiny BERT")
    with pytest.raises(WeightsError, match=r"the tiny BERT: no tensor 'encoder\.layer\.1\.output\.dense\.bias'"):
        encoder_model(weights)


def float16_copy(data: bytes) -> bytes:
    """The site's float16 form of a model (artifacts/stages.py: float16 initializers, each behind a Cast)."""
    sys.path.insert(0, str(ROOT))
    from artifacts.stages import float16_weights
    return float16_weights(onnx.load_from_string(data)).SerializeToString()


def test_load_encoder_folds_float16_weights_and_runs_as_onnxruntime(encoder, feeds):
    half = float16_copy(encoder)
    model = load_encoder(half, "the tiny encoder")
    g = model.graph
    assert not [n for n in g.nodes if n.op_type == "Cast" and n.inputs[0].endswith("_fp16")]
    assert {t.data_type for t in g.initializers} == {DataType.FLOAT, DataType.INT64}
    got = Session(model).run(feeds)
    want = ort_outputs(half, feeds)
    np.testing.assert_allclose(got[0], want["embedding"], rtol=0, atol=TOLERANCE)
    # float16 rounding moved the weights: the float32 encoder's embedding differs, by more than the runtimes do
    assert np.abs(got[0] - Session(ir.load(encoder)).run(feeds)[0]).max() > 10 * TOLERANCE
    # a float32 encoder loads as it is
    assert load_encoder(encoder).graph.nodes == ir.load(encoder).graph.nodes


def _edited(encoder: bytes, edit) -> bytes:
    model = ir.load(encoder)
    edit(model.graph)
    return ir.to_bytes(model)


def _rename_input(g, old, new):
    for v in g.inputs:
        if v.name == old:
            v.name = new
    for n in g.nodes:
        n.inputs = [new if x == old else x for x in n.inputs]


@pytest.mark.parametrize("edit, message", [
    (lambda g: _rename_input(g, "input_ids", "ids"),
     r"the encoder must have the inputs \['input_ids', 'attention_mask'\]; it has \['ids', 'attention_mask'\]"),
    (lambda g: setattr(g.inputs[1].type, "elem_type", DataType.INT32),
     r"the encoder: input 'attention_mask' must be int64 of rank 2; it is int32 of rank 2"),
    (lambda g: setattr(g.inputs[0].type, "shape", ["N"]),
     r"the encoder: input 'input_ids' must be int64 of rank 2; it is int64 of rank 1"),
    (lambda g: g.outputs.pop(),
     r"the encoder must have the outputs \['embedding', 'hidden'\]; it has \['embedding'\]"),
    (lambda g: setattr(g.outputs[0].type, "elem_type", DataType.FLOAT16),
     r"the encoder: output 'embedding' must be float of rank 2; it is float16 of rank 2"),
])
def test_load_encoder_names_what_breaks_the_contract(encoder, edit, message):
    with pytest.raises(EncoderError, match=message):
        load_encoder(_edited(encoder, edit))


def test_load_encoder_refuses_bytes_that_are_not_a_model():
    with pytest.raises(EncoderError, match=r"the uploaded file is not an ONNX model \("):
        load_encoder(b"\xff\xfe not a model", "the uploaded file")
