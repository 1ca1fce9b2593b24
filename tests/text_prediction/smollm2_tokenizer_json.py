"""SmolLM2's tokenizer.json as artifacts/smollm2_tokenizer.py writes it from the cached GGUF, once per session."""
import functools
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def smollm2_tokenizer_json() -> str:
    from artifacts import smollm2_tokenizer
    cache = Path(os.environ.get("ONNXTRAIN_CACHE", ROOT / ".cache")) / "artifacts" / "smollm2"
    return json.dumps(smollm2_tokenizer.config(cache), ensure_ascii=False)
