"""onnxtrain.text.bpe in the page's Pyodide against the tokenizers package here, on SmolLM2's tokenizer.json
(artifacts/smollm2_tokenizer.py's): the tests' corpus, and each code point of the planes in use (alone, after a
letter, between digits), then decode(encode(x)) of the corpus. The classes are tables in the module, so Pyodide's
other Unicode version must not matter; its ``re`` and ``str`` are what is checked."""
import hashlib
import json

import tokenizers

from text_prediction.smollm2_tokenizer_json import smollm2_tokenizer_json
from text_prediction.test_bpe_tokenizer import CORPUS, LONG

CHUNK = 4096  # texts a digest
POINTS = [c for c in [*range(0x20000), *range(0x20000, 0x32400, 97), *range(0xE0000, 0xE0200), 0xF0000, 0x10FFFD]
          if not 0xD800 <= c <= 0xDFFF]
# Leaves ``ids`` in the page's Python; answers its Python and Unicode versions, the seconds the texts took, a digest
# of each CHUNK texts' ids and the corpus's decoded texts.
TOKENIZE = """
import hashlib, json, sys, time, unicodedata
from onnxtrain.text.bpe import BPETokenizer
tokenizer = BPETokenizer.from_json(open("/tmp/smollm2_tokenizer.json", "rb").read())
texts = json.loads(open("/tmp/bpe_texts.json").read())
start = time.perf_counter()
ids = [tokenizer.encode(text) for text in texts]
json.dumps([sys.version, unicodedata.unidata_version, time.perf_counter() - start,
            [hashlib.sha256(json.dumps(ids[n:n + CHUNK]).encode()).hexdigest() for n in range(0, len(ids), CHUNK)],
            [tokenizer.decode(i, skip_special_tokens=False) for i in ids[:NCORPUS]]])
"""
WRITE = """
with open(PATH, "w") as f:
    f.write(TEXT)
"""


def digest(ids: list) -> str:
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


def test_page_bpe_tokenizes_as_tokenizers(site_page):
    data = smollm2_tokenizer_json()
    corpus = CORPUS + LONG
    texts = corpus + [f"{chr(c)} a{chr(c)} 1{chr(c)}2" for c in POINTS]
    for path, text in (("/tmp/smollm2_tokenizer.json", data), ("/tmp/bpe_texts.json", json.dumps(texts))):
        site_page.call("runPython", {"code": WRITE.replace("PATH", repr(path)).replace("TEXT", repr(text))})
    code = TOKENIZE.replace("CHUNK", str(CHUNK)).replace("NCORPUS", str(len(corpus)))
    version, unicode, seconds, digests, decoded = json.loads(site_page.call("runPython", {"code": code},
                                                                            timeout=600_000))
    ref = tokenizers.Tokenizer.from_str(data)
    expected = [e.ids for e in ref.encode_batch(texts)]
    wrong = [n for n, d in enumerate(digests) if d != digest(expected[n * CHUNK:(n + 1) * CHUNK])]
    if wrong:
        start = wrong[0] * CHUNK
        page = json.loads(site_page.call("runPython", {"code": f"json.dumps(ids[{start}:{start + CHUNK}])"}))
        differ = [(texts[start + k], got, want) for k, (got, want) in
                  enumerate(zip(page, expected[start:start + CHUNK])) if got != want]
        raise AssertionError(f"Python {version}, Unicode {unicode} ({seconds:.1f} s for {len(texts)} texts): "
                             f"{len(wrong)} of {len(digests)} chunks differ; "
                             f"in the first, {len(differ)} texts, e.g. {differ[:3]}")
    assert len(digests) == -(-len(texts) // CHUNK)
    assert decoded == [ref.decode(i, skip_special_tokens=False) for i in expected[:len(corpus)]]
