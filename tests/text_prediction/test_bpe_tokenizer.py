"""onnxtrain.text.bpe against the tokenizers package on SmolLM2's tokenizer.json (written from the GGUF): the same
ids on a written corpus and on random text drawn over the Unicode categories, decode(encode(x)) == x, decode of any
ids as tokenizers decodes them, the character classes against tokenizers' own over every code point and against
the regex package where both know the code point, and the refused settings."""
import json
import random
import time
import unicodedata

import pytest
import regex
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxtrain.text import bpe
from onnxtrain.text.bpe import BPETokenizer, TokenizerError
from text_prediction.bpe_classes import POINTS, reference_classes
from text_prediction.smollm2_tokenizer_json import smollm2_cache, smollm2_tokenizer_json

CORPUS = [
    # English prose, contractions (the pattern's are lowercase ASCII only)
    "The quick brown fox jumps over the lazy dog.", "I'm sure you'll see they've said we'd go; it's John's.",
    "I'M SURE YOU'LL", "don’t won’t (curly apostrophes)", "'s 't 're 've 'm 'll 'd", "''s ' s", "rock'n'roll",
    "Dear Anna,\n\nThanks for the notes from Tuesday. I'll send the draft by Friday.\n\nBest,\nTom\n",
    # code
    "def f(x):\n    return x ** 2  # square\n", "for (int i = 0; i < n; i++) { a[i] += b[i]; }",
    "if x!=y and not z:\n\tpass\n", "SELECT * FROM t WHERE id = 42;", "<div class=\"a\">&nbsp;</div>",
    "snake_case camelCase kebab-case __dunder__", "https://example.com/a/b?q=1&r=2#x", "a@b.co",
    # numbers
    "3.14159 2,718 1e-10 -42 +7 0x1F 1/2 50% 2024-01-15 12:30:45", "10,000,000.00", "1234567890",
    "a1b2c3", " 1 22  333   4444", "x\t9\n8 7", "١٢٣ ٣٤٥ ४५६ ๓๔๕ ①②③ ² ½ Ⅻ ⅻ 〇", "１２３ ＡＢＣ",
    # punctuation runs
    "!!!???...", "--- *** ___ ~~~", "«quotes» „low“ ‘single’ “double”", "¿Qué? ¡Sí!", "a—b–c‐d", "(((x)))", "…",
    "$100 €50 £20 ¥1000 ₹5", "1+1=2 <tag> {b} [b] |p| \\b/ ^c` @a #h %", "?!. ,;: ", " !!", "  !!",
    # whitespace runs
    "tab\tseparated\tvalues", "line\nbreaks\r\nwindows", "trailing spaces   ", "   leading", "a  b   c    d",
    "\n\n\n", " \n \n ", "\t\t x", "x \t\n y", "end\n", " ", "  ", "\t", "a\u00a0b\u3000c\u2009d\u2028e\x85f",
    "\u00a0\u00a0x", "a \u00a0b", "x\x0b\x0cy", "\x1c\x1d\x1e\x1f", "a\u200bb\u200cc\u200dd\ufeffe",
    # accented and non-Latin scripts, combining marks
    "café naïve résumé Ångström São Paulo", "cafe\u0301 nai\u0308ve", "e\u0301\u0302\u0323", "\u0301 starts",
    "Привет, как дела? Ёлка", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "Ողջույն", "გამარჯობა", "ሰላም", "ᏣᎳᎩ", "Tiếng Việt có dấu", "हि\u0902दी", "ก\u0e34\u0e48", "ǅ ǈ ǋ ǲ ß ẞ",
    # CJK
    "日本語のテキストです", "中文文本，包括标点。", "한국어 텍스트입니다", "𠀀𠀁 𪜀 丽", "ｶﾀｶﾅ", "。、「」『』【】",
    # emoji
    "I love it 😀😀", "family: 👩‍👩‍👧‍👦", "👍🏽 thumbs", "❤️ heart", "🇫🇷🇯🇵", "🏳️‍🌈", "emoji😀inside", "🥰🫠",
    # control characters (some bytes are not in the vocabulary: the unknown token), private use, planes 4-11
    "\x00null\x01ctrl\x7fdel", "a\x04\x04b\x06c\x13\x14\x16\x1dd", "\ue000\U000f0000", "\U00040000 \U000b0000",
    "\ufffdreplacement", "\U000e0041tag",
    # classes in which Unicode versions differ: letters and digits of Unicode 15-17
    "\u1c89\u1c8a \ua7cb\ua7cc \U00011de0\U00011de1 \U00016ff4 \U0001ccf0", "x\U00011de0y \U00016ff4z",
    # special tokens
    "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "a<|im_end|>b", "<|im_end|",
    "<|im_start|><|im_start|>", "<|IM_START|>", "< |im_start| >", "<repo_name>x<file_sep>", " <|endoftext|> ",
    "",
]
LONG = ["word " * 500, "日本" * 300, "😀 " * 300, "1" * 1000, " " * 1000 + "x", "\n".join(CORPUS)]


@pytest.fixture(scope="module")
def data() -> str:
    return smollm2_tokenizer_json()


@pytest.fixture(scope="module")
def pair(data):
    return BPETokenizer.from_json(data), tokenizers.Tokenizer.from_str(data)


# characters whose bytes are all tokens: the text round-trips
def _round_trips(mine, text: str) -> bool:
    return all(ch in mine.vocab for ch in text.encode("utf-8").decode("latin-1").translate(bpe._SPELL))


def test_written_corpus(pair):
    mine, ref = pair
    texts = CORPUS + LONG
    for text, want in zip(texts, ref.encode_batch(texts)):
        assert mine.encode(text) == want.ids, (text, mine.tokens(text), want.tokens)
        assert mine.tokens(text) == want.tokens
        if _round_trips(mine, text):
            assert mine.decode(want.ids, skip_special_tokens=False) == text
        for skip in (True, False):
            assert mine.decode(want.ids, skip) == ref.decode(want.ids, skip_special_tokens=skip), text


def test_the_json(data, pair):
    config, (mine, ref) = json.loads(data), pair
    assert mine.vocab_size == ref.get_vocab_size() == len(config["model"]["vocab"]) == 49152
    assert len(config["model"]["merges"]) == 48900
    assert {t["content"]: t["id"] for t in config["added_tokens"]}["<|im_end|>"] == 2
    assert mine.unk_id == 0 and mine.special == {t["id"] for t in config["added_tokens"]}
    assert mine.encode("Hello world") == ref.encode("Hello world").ids == [19556, 905]


CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
              "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn")
PIECES = st.one_of(st.text(st.characters(categories=CATEGORIES, exclude_characters="\ud800"), max_size=12),
                   st.text(" \t\n\r'sltdmrve0123456789aZ.!", max_size=12),
                   st.sampled_from(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "'ll", " 's", "  ", "\n\n"]))


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=8).map("".join))
def test_random_text(pair, text):
    mine, ref = pair
    assert mine.encode(text) == ref.encode(text).ids
    if _round_trips(mine, text):
        assert mine.decode(mine.encode(text), skip_special_tokens=False) == text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 49151), max_size=20), st.booleans())
def test_decode_any_ids(pair, ids, skip):
    mine, ref = pair
    assert mine.decode(ids, skip) == ref.decode(ids, skip_special_tokens=skip)


def test_every_code_point(pair):
    """Each code point alone, after a letter and a space, and between digits: as tokenizers encodes it."""
    mine, ref = pair
    texts = [f"{chr(c)} a{chr(c)} 1{chr(c)}2 {chr(c)}{chr(c)}x" for c in POINTS[::7]] + \
            [f"{chr(c)} a{chr(c)}" for c in POINTS[3::7]]
    for text, want in zip(texts, ref.encode_batch(texts)):
        assert mine.encode(text) == want.ids, repr(text)


@pytest.fixture(scope="module")
def classes():
    return reference_classes()


def _table_points(table) -> set:
    return {c for a, b in zip(*table) for c in range(a, b + 1)}


def test_classes_are_tokenizers(classes):
    assert _table_points(bpe._LETTER) == classes["LETTER"]
    assert _table_points(bpe._NUMBER) == classes["NUMBER"]
    assert _table_points(bpe._SPACE) == classes["SPACE"]
    assert _table_points(bpe._DIGIT) == classes["DIGIT"]
    assert not (_table_points(bpe._NUMBER) - _table_points(bpe._DIGIT))  # NUMBER_ONLY is unused today
    assert bpe.NUMBER_ONLY not in {chr(c) for c in classes["LETTER"] | classes["SPACE"]} and ord(bpe.NUMBER_ONLY) > 127


def test_classes_against_regex_package():
    """The regex package knows a newer Unicode than tokenizers' Oniguruma: on the code points this Python's
    unicodedata (Unicode 14) gives a category, \\p{L}, \\p{N} and \\s agree; the newer ones are only added."""
    assigned = {c for c in POINTS if unicodedata.category(chr(c)) != "Cn"}
    letters, numbers = _table_points(bpe._LETTER), _table_points(bpe._NUMBER)
    want_l = {c for c in POINTS if regex.match(r"\p{L}", chr(c))}
    want_n = {c for c in POINTS if regex.match(r"\p{N}", chr(c))}
    assert letters & assigned == want_l & assigned and letters <= want_l
    assert numbers & assigned == want_n & assigned and numbers <= want_n
    assert _table_points(bpe._SPACE) == {c for c in POINTS if regex.match(r"\s", chr(c))}


def test_class_spelling_is_one_character_each():
    for c in POINTS[::13]:
        assert len(bpe.char_class(chr(c))) == 1


def test_byte_alphabet_is_tokenizers():
    assert sorted(bpe.BYTE_CHARS) == sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    assert len(set(bpe.BYTE_CHARS)) == 256 and bpe.BYTE_CHARS[ord(" ")] == "Ġ"


def test_bytes_the_vocabulary_lacks(data):
    """Dropped without an unk_token; the unknown token with one, consecutive ones fused under fuse_unk."""
    config = json.loads(data)
    config["model"]["unk_token"] = None
    for fuse in (False, True):
        config["model"]["fuse_unk"] = fuse
        mine, ref = BPETokenizer(config), tokenizers.Tokenizer.from_str(json.dumps(config))
        for text in ("a\x04\x04b", "\x04", "x\x06\x13y \U00040000"):
            assert mine.encode(text) == ref.encode(text).ids
    config["model"]["unk_token"] = "<|endoftext|>"
    for fuse in (False, True):
        config["model"]["fuse_unk"] = fuse
        mine, ref = BPETokenizer(config), tokenizers.Tokenizer.from_str(json.dumps(config))
        for text in ("a\x04\x04\x06b", "\x04x\x04", "\U00040000\U00080000"):
            assert mine.encode(text) == ref.encode(text).ids
    assert mine.encode("a\x04\x04\x06b") == [mine.vocab["a"], 0, mine.vocab["b"]]


@pytest.mark.parametrize("change, field", [
    (lambda c: c.update(normalizer={"type": "NFC"}), "normalizer"),
    (lambda c: c.update(truncation={"max_length": 8}), "truncation"),
    (lambda c: c.update(padding={"strategy": "BatchLongest"}), "padding"),
    (lambda c: c.update(pre_tokenizer={"type": "ByteLevel"}), "pre_tokenizer"),
    (lambda c: c["pre_tokenizer"]["pretokenizers"][0].update(individual_digits=False), "individual_digits"),
    (lambda c: c["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True), "add_prefix_space"),
    (lambda c: c["pre_tokenizer"]["pretokenizers"][1].update(use_regex=False), "use_regex"),
    (lambda c: c["model"].update(type="WordPiece"), "model.type"),
    (lambda c: c["model"].update(dropout=0.1), "model.dropout"),
    (lambda c: c["model"].update(byte_fallback=True), "model.byte_fallback"),
    (lambda c: c["model"].update(unk_token="<nope>"), "model.unk_token"),
    (lambda c: c["model"]["merges"].__setitem__(0, ["Ġ", "nope"]), "model.merges[0]"),
    (lambda c: c["model"]["merges"].__setitem__(1, 7), "model.merges[1]"),
    (lambda c: c["added_tokens"][0].update(lstrip=True), "added_tokens[0].lstrip"),
    (lambda c: c["added_tokens"][1].update(id=5), "added_tokens[1].id"),
    (lambda c: c.update(decoder=None), "decoder"),
    (lambda c: c.update(post_processor={"type": "TemplateProcessing"}), "post_processor"),
])
def test_refused_settings(data, change, field):
    config = json.loads(data)
    change(config)
    with pytest.raises(TokenizerError, match=field.replace("[", r"\[").replace(".", r"\.")):
        BPETokenizer(config, "smollm2/tokenizer.json")


def test_bad_input(pair):
    mine, _ = pair
    with pytest.raises(TokenizerError, match="not JSON"):
        BPETokenizer.from_json(b"{nope")
    with pytest.raises(TypeError, match="not str"):
        mine.encode(b"bytes")
    with pytest.raises(ValueError, match="lone surrogate"):
        mine.encode("a\ud800b")
    with pytest.raises(ValueError, match=r"ids\[1\] is 49152"):
        mine.decode([1, 49152])


def test_recipe_writes_and_checks(tmp_path, data, monkeypatch):
    from artifacts import smollm2_tokenizer
    from artifacts.stages import CheckFailed
    path = smollm2_tokenizer.write(smollm2_cache(), tmp_path)
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(data)
    smollm2_tokenizer.check(data)
    encode = BPETokenizer.encode
    monkeypatch.setattr(BPETokenizer, "encode", lambda self, text: encode(self, text)[:-1])
    with pytest.raises(CheckFailed, match="in onnxtrain and"):
        smollm2_tokenizer.check(data)


def test_recipe_refuses_other_pre_tokenizers(data):
    from artifacts import smollm2_tokenizer
    from artifacts.stages import CheckFailed

    class Field:
        def __init__(self, value):
            self.value = value

        def contents(self):
            return self.value

    with pytest.raises(CheckFailed, match="tokenizer.ggml.pre 'llama-bpe'"):
        smollm2_tokenizer.config_from_gguf({"tokenizer.ggml.model": Field("gpt2"),
                                            "tokenizer.ggml.pre": Field("llama-bpe")}, "x.gguf")


def test_byte_level_post_processor_is_accepted(data):
    config = json.loads(data)
    config["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                "use_regex": True}
    mine, ref = BPETokenizer(config), tokenizers.Tokenizer.from_str(json.dumps(config))
    for text in CORPUS:
        assert mine.encode(text) == ref.encode(text).ids


def test_long_pieces(pair, monkeypatch):
    """Pieces of thousands of symbols (merged through the heap) as tokenizers gives them, in reasonable time; and
    the corpus with every piece through the heap."""
    mine, ref = pair
    rng = random.Random(0)
    texts = ["".join(rng.choice("ACGT") for _ in range(20000)), "a" * 5000, "-" * 5001, "😀" * 2000,
             "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(3000)), " " * 3000 + "x", "ab" * 24, "ab" * 25,
             "".join(rng.choice("abcdefghij") for _ in range(bpe.LONG_PIECE + 1))]
    start = time.perf_counter()
    got = [mine.encode(text) for text in texts]
    assert time.perf_counter() - start < 10
    assert got == [e.ids for e in ref.encode_batch(texts)]
    monkeypatch.setattr(bpe, "LONG_PIECE", 1)
    mine._pieces.clear()
    for text, want in zip(CORPUS, ref.encode_batch(CORPUS)):
        assert mine.encode(text) == want.ids, text
    mine._pieces.clear()


def test_repeated_merge_ranks_last(data):
    config = json.loads(data)
    config["model"]["merges"].append(config["model"]["merges"][0])  # "Ġ t" again, last
    mine, ref = BPETokenizer(config), tokenizers.Tokenizer.from_str(json.dumps(config))
    assert mine.tokens(" the") == ref.encode(" the").tokens == ["Ġ", "the"]
