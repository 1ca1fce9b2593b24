"""SmolLM2's tokenizer.json as artifacts/smollm2_tokenizer.py writes it from the cached GGUF, once per session."""
import functools
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def smollm2_cache() -> Path:
    """The recipes' cache folder of SmolLM2 (ONNXTRAIN_CACHE's artifacts/smollm2, else .cache's), as build.py's."""
    return Path(os.environ.get("ONNXTRAIN_CACHE", ROOT / ".cache")) / "artifacts" / "smollm2"


@functools.lru_cache(maxsize=None)
def smollm2_tokenizer_json() -> str:
    from artifacts import smollm2_tokenizer
    return json.dumps(smollm2_tokenizer.config(smollm2_cache()), ensure_ascii=False)
