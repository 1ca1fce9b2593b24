"""onnxtrain.text.tokenizer in the page's Pyodide, whose Python has another Unicode version than this one's, against
the tokenizers package here: MiniLM's tokenizer.json, the tests' corpus, and each code point of the planes in use
(alone, inside a word, before a combining accent)."""
import hashlib
import json

import tokenizers

from text.test_tokenizer import CORPUS, LONG_TEXTS

CHUNK = 4096  # texts a digest
# the Basic and Supplementary Multilingual planes, a sample of the ideographic ones, tags and variation selectors,
# private use
POINTS = [c for c in [*range(0x20000), *range(0x20000, 0x32400, 97), *range(0xE0000, 0xE0200), 0xF0000, 0x10FFFD]
          if not 0xD800 <= c <= 0xDFFF]
# Leaves ``ids`` (each text's ids) in the page's Python; answers its Python and Unicode versions, the seconds the
# texts took and a digest of each CHUNK texts' ids.
TOKENIZE = """
import hashlib, json, sys, time, unicodedata
from onnxtrain.text.tokenizer import Tokenizer
tokenizer = Tokenizer.from_json(open("/tmp/tokenizer.json", "rb").read())
texts = json.loads(open("/tmp/texts.json").read())
start = time.perf_counter()
ids = [tokenizer.encode(text) for text in texts]
json.dumps([sys.version, unicodedata.unidata_version, time.perf_counter() - start,
            [hashlib.sha256(json.dumps(ids[n:n + CHUNK]).encode()).hexdigest() for n in range(0, len(ids), CHUNK)]])
"""
WRITE = """
with open(PATH, "w") as f:
    f.write(TEXT)
"""


def digest(ids: list) -> str:
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


def test_page_tokenizes_as_tokenizers(site_page, minilm_files):
    data = minilm_files["tokenizer.json"].decode()
    texts = CORPUS + LONG_TEXTS + [f"{chr(c)} a{chr(c)}b A{chr(c)}\u0301" for c in POINTS]
    for path, text in (("/tmp/tokenizer.json", data), ("/tmp/texts.json", json.dumps(texts))):
        site_page.call("runPython", {"code": WRITE.replace("PATH", repr(path)).replace("TEXT", repr(text))})
    answer = site_page.call("runPython", {"code": TOKENIZE.replace("CHUNK", str(CHUNK))}, timeout=600_000)
    version, unicode, seconds, digests = json.loads(answer)
    ref = tokenizers.Tokenizer.from_str(data)
    ref.no_padding()
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
