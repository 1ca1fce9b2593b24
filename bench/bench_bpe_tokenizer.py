"""SmolLM2's byte-level BPE tokenizer (issue 37): onnxtrain.text.bpe against the tokenizers package (one thread,
RAYON_NUM_THREADS=1) on the same tokenizer.json (artifacts/smollm2_tokenizer.py's, from the cached GGUF), the whole
text as one string as a paste is, with the same ids checked.

Texts (seeded): this repository's docs' paragraphs shuffled to --mb MB (prose with code and tables: the cache of
pieces' ids hits), the tests' corpus lines shuffled to a fifth of that (many scripts, emoji, numbers, specials), and
random lowercase words (no piece repeats: every piece goes through BPE).  Each is encoded --rounds times from cold
caches; reported: the best round's seconds and tokens per second, and decode's seconds on the prose."""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "pysrc"), str(ROOT / "tests")]
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def texts(mb: float) -> dict:
    from text_prediction.test_bpe_tokenizer import CORPUS
    rng = random.Random(0)
    paragraphs = [p for f in sorted((ROOT / "docs").glob("*.md")) for p in f.read_text().split("\n\n") if p.strip()]
    prose, size = [], 0
    while size < mb * 1e6:
        prose.append(rng.choice(paragraphs))
        size += len(prose[-1].encode()) + 2
    mixed, size = [], 0
    while size < mb * 2e5:
        mixed.append(rng.choice(CORPUS))
        size += len(mixed[-1].encode()) + 1
    letters = "abcdefghijklmnopqrstuvwxyz"
    junk = " ".join("".join(rng.choice(letters) for _ in range(rng.randint(3, 12))) for _ in range(int(mb * 3e4)))
    return {"prose": "\n\n".join(prose), "corpus lines": "\n".join(mixed), "random words": junk}


def best(run, rounds: int) -> tuple:
    times, out = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return min(times), out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    import tokenizers
    from onnxtrain.text.bpe import BPETokenizer
    from text_prediction.smollm2_tokenizer_json import smollm2_tokenizer_json
    data = smollm2_tokenizer_json()
    load, mine = best(lambda: BPETokenizer.from_json(data), 1)
    ref = tokenizers.Tokenizer.from_str(data)
    print(f"load tokenizer.json: {load:.2f} s")

    def cold(text):
        mine._pieces.clear()
        mine._classes.clear()
        return mine.encode(text)

    for name, text in texts(args.mb).items():
        ours, ids = best(lambda: cold(text), args.rounds)
        theirs, want = best(lambda: ref.encode(text).ids, args.rounds)
        assert ids == want, f"{name}: the ids differ from tokenizers'"
        print(f"{name}: {len(text.encode()) / 1e6:.1f} MB, {len(ids)} tokens: onnxtrain {ours:.2f} s "
              f"({len(ids) / ours / 1e6:.2f} M tokens/s), tokenizers {theirs:.2f} s "
              f"({len(ids) / theirs / 1e6:.2f} M tokens/s)")
        if name == "prose":
            seconds, back = best(lambda: mine.decode(ids, skip_special_tokens=False), 1)
            assert back == text
            print(f"  decode: {seconds:.2f} s")


if __name__ == "__main__":
    main()
