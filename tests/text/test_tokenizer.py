"""onnxtrain.text.tokenizer against the `tokenizers` package on all-MiniLM-L6-v2's real tokenizer.json: the same ids,
tokens, truncation and padding on a varied corpus written here, on random text over a mixed alphabet, on every
Unicode code point, and under the normalizer's and post-processor's other settings; and its errors."""
import json
import re
import unicodedata

import numpy as np
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxtrain.text import tokenizer as tokenizer_module
from onnxtrain.text.tokenizer import SINCE_UNICODE_8, UNICODE_8_CATEGORY, Tokenizer, TokenizerError

WORDS = ("the quick brown fox jumps over a lazy dog while my invoice from last tuesday is still unpaid, "
         "please reschedule the meeting about quarterly revenue projections").split()

CORPUS = [
    # plain sentences, case
    "Hello, world!", "The meeting is moved to Thursday at 3pm.", "HELLO WORLD", "Hello World", "hElLo wOrLd",
    "Please REFUND my order #12345 ASAP!!!", "I'm not sure it's working; they've said we'd see.",
    # accents and combining marks, precomposed and decomposed
    "café", "naïve résumé", "Ångström", "São Paulo", "Crème brûlée à la française", "Zürich Straße Øresund",
    "cafe\u0301 nai\u0308ve", "A\u030a", "e\u0301\u0302\u0323", "\u0301 starts with a mark", "Ḱ ǅ ǈ ǋ ǲ",
    "İstanbul DİYARBAKIR ıi", "ΟΔΟΣ Σίσυφος ΣΑΣ", "ﬁne ﬂour ﬀ", "Ⅻ ⅻ ① ² ½", "ß ẞ", "Æsir œuvre",
    # CJK, Japanese kana, Hangul
    "日本語のテキストです", "中文文本，包括标点。", "한국어 텍스트입니다", "漢字かなカナ混じり文", "𠀀𠀁 𪜀 丽",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "ｶﾀｶﾅ", "。、「」『』【】",
    # emoji, ZWJ sequences, variation selectors, flags, skin tones
    "I love it 😀😀", "family: 👩‍👩‍👧‍👦", "👍🏽 thumbs", "❤️ heart", "🇫🇷🇯🇵 flags", "🏳️‍🌈", "x\u200dy", "a\u200bb\u200cc",
    "\ufeffBOM at start", "emoji😀inside", "☃★♠", "🥰🫠",
    # punctuation runs
    "!!!???...", "--- *** ___ ~~~", "«quotes» „low“ ‘single’ “double”", "¿Qué? ¡Sí!", "a—b–c‐d", "(((nested)))",
    "…", "§¶†‡•", "$100 €50 £20 ¥1000 ₹5", "1+1=2 <tag> {brace} [bracket] |pipe| \\back/ ^caret` @at #hash %",
    # URLs, emails, paths, code
    "https://www.example.com/path?query=1&b=2#frag", "mail me at first.last+tag@example.co.uk",
    "C:\\Users\\me\\file.txt and /usr/local/bin", "def f(x): return x**2  # comment", "snake_case camelCase kebab-case",
    # numbers
    "3.14159 2,718 1e-10 -42 +7 0x1F 1/2 50% 2024-01-15 12:30:45", "１２３ ٣٤٥ ४५६ ๓๔๕", "10,000,000.00",
    # whitespace and control characters
    "tab\tseparated\tvalues", "line\nbreaks\r\nwindows", "\x00null\x01ctrl\x7fdel", "nbsp\xa0here", "thin\u2009space",
    "ideographic\u3000space", "em\u2003space en\u2002space", "line\u2028sep para\u2029sep", "\x1c\x1d\x1e\x1f",
    "next\x85line", "soft\xadhyphen", "\ufffdreplacement", "private\ue000use", "\U000e0041tag", "ogham\u1680space",
    "narrow\u202fnbsp", "math\u205fspace", "vt\x0bff\x0c", "  leading and trailing  ",
    # scripts
    "Привет, как дела? Ёлка", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "Ողջույն", "გამარჯობა", "ሰላም", "ᏣᎳᎩ", "Mixed: hello мир κόσμος 世界 عالم", "Tiếng Việt có dấu", "Ελληνικά ά έ ή",
    "ا\u064b\u064c\u064d", "हि\u0902दी", "ก\u0e34\u0e48",
    # marks and punctuation Unicode added after 8.0, and characters whose category changed since
    "a\u0898b", "a\u061db", "a\u2e52b", "a\u166db", "a\u1734b", "a\U000111c9b", "a\U0001171eb", "a\u1ac0b",
    # repeated characters, long words
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "hmmmmmmmmmmmm", "!!!!!!!!!!!!!!!!!!!!", "a" * 100, "a" * 101,
    "b" * 150 + " short", "é" * 101, "x" + "\u0301" * 120, "supercalifragilisticexpialidocious",
    "pneumonoultramicroscopicsilicovolcanoconiosis", "antidisestablishmentarianism",
    # empty, whitespace only
    "", " ", "   ", "\t\n", "\x00", "\u200d", "\xa0\u3000",
    # special tokens typed in the text
    "[SEP]", "[CLS] hello [SEP]", "a[SEP]b", "[sep] [Sep]", "[MASK] is a mask", "[PAD][PAD]", "[UNK]x", "[SEP[SEP]]",
    "[CLS][CLS][CLS]", "x [SEP]y", "[ SEP ]", "＜SEP＞",
]
LONG_TEXTS = [" ".join(WORDS * 10), "word " * 127, "word " * 126, "x" * 99 + " " + "y " * 200,
              "日本" * 200, "😀 " * 300, "[SEP] " * 200, " ".join(CORPUS)]
ALPHABET = ("abcxyzABCXYZ0123456789 .,;:!?'\"-_()[]{}#@/\\&%$€"
            "éèêëàâäôöûüçñÉÀÖÜßøÅ\u0301\u0308\u0327"
            "日本語中文漢字かなカナ한국어"
            "абвгдЖЗИКЛαβγδΣΩابتשלוםनमस्तेกขค"
            "😀👍🏽❤️\u200d\u200b\ufe0f\U0001f1eb\U0001f1f7"
            "\t\n\r\x00\x01\x1f\x7f\x85\xa0\u2009\u3000\u2028\ufeff\ue000\ufffd"
            "\u0898\u061d\u2e52\u166d\u1734\U000111c9\U0001171e")


@pytest.fixture(scope="module")
def config(minilm_files) -> dict:
    return json.loads(minilm_files["tokenizer.json"])


@pytest.fixture(scope="module")
def pair(config):
    return tokenizer_pair(config)


def tokenizer_pair(config: dict, max_length=None):
    """(onnxtrain's, tokenizers') tokenizers of one config; the reference truncates at max_length (default: the
    json's), and does not pad."""
    text = json.dumps(config)
    mine = Tokenizer.from_json(text)
    ref = tokenizers.Tokenizer.from_str(text)
    ref.no_padding()
    if max_length or mine.max_length:
        ref.enable_truncation(max_length or mine.max_length,
                              direction="left" if config["truncation"].get("direction") == "Left" else "right")
    return mine, ref


def assert_same(mine, ref, texts, max_length=None):
    """Ids, tokens and truncation of each text, then the padded batch, against the reference."""
    expected = ref.encode_batch(texts)
    for text, want in zip(texts, expected):
        assert mine.encode(text, max_length) == want.ids, f"{text!r}: {mine.tokens(text, max_length)} != {want.tokens}"
        assert mine.tokens(text, max_length) == want.tokens, repr(text)
    batch = mine.batch(texts, max_length)
    ref.enable_padding(pad_id=mine.pad_id)
    padded = ref.encode_batch(texts)
    ref.no_padding()
    np.testing.assert_array_equal(batch.input_ids, np.array([e.ids for e in padded], np.int64).reshape(len(texts), -1))
    np.testing.assert_array_equal(batch.attention_mask,
                                  np.array([e.attention_mask for e in padded], np.int64).reshape(len(texts), -1))
    assert batch.input_ids.dtype == batch.attention_mask.dtype == np.int64
    assert batch.truncated == [bool(e.overflowing) for e in expected]
    assert batch.lengths == [len(e.ids) for e in expected]


def test_json_settings(pair, config):
    mine, _ = pair
    assert mine.max_length == config["truncation"]["max_length"] == 128
    assert mine.pad_id == config["padding"]["pad_id"] == 0
    assert mine.encode("") == [config["post_processor"]["special_tokens"]["[CLS]"]["ids"][0],
                               config["post_processor"]["special_tokens"]["[SEP]"]["ids"][0]]


def test_corpus(pair):
    assert_same(*pair, CORPUS)


def test_each_text_alone(pair):
    """One text a batch: padding adds nothing, and no text's length leaks into another's."""
    mine, ref = pair
    for text in CORPUS[::7]:
        assert_same(mine, ref, [text])


@pytest.mark.parametrize("max_length", [128, 2, 3, 16, 64, 512])
def test_truncation(config, max_length):
    mine, ref = tokenizer_pair(config, max_length)
    assert_same(mine, ref, LONG_TEXTS + CORPUS[:20], max_length)


def test_truncation_flags_only_texts_that_did_not_fit(pair):
    mine, _ = pair
    fits, over = "word " * 126, "word " * 127  # 126 + [CLS] + [SEP] = 128
    batch = mine.batch([fits, over, ""])
    assert batch.truncated == [False, True, False]
    assert batch.lengths == [128, 128, 2]
    assert batch.input_ids.shape == (3, 128)


def test_left_truncation(config):
    left = dict(config, truncation=dict(config["truncation"], direction="Left", max_length=12))
    assert_same(*tokenizer_pair(left), LONG_TEXTS + CORPUS[:10])


@pytest.mark.parametrize("normalizer", [
    {"lowercase": False}, {"strip_accents": True}, {"strip_accents": False},
    {"lowercase": False, "strip_accents": True},
    {"clean_text": False}, {"handle_chinese_chars": False}, {"clean_text": False, "handle_chinese_chars": False}])
def test_normalizer_settings(config, normalizer):
    changed = dict(config, normalizer=dict(config["normalizer"], **normalizer))
    assert_same(*tokenizer_pair(changed), CORPUS)


def test_bert_processing_and_other_specials(config):
    """BertProcessing is the template's older form; other added tokens and vocabularies than MiniLM's."""
    vocab = dict(config["model"]["vocab"])
    vocab["qqq"] = vocab.pop("[unused1]")
    token = dict(single_word=False, lstrip=False, rstrip=False, normalized=False)
    added = config["added_tokens"] + [dict(token, id=len(vocab), content="<extra>", special=False),
                                      dict(token, id=vocab["[unused2]"], content="[unused2]", special=True),
                                      dict(token, id=len(vocab) + 1, content="[SEP][SEP]", special=True)]
    changed = dict(config, added_tokens=added, padding=dict(config["padding"], pad_id=7),
                   model=dict(config["model"], vocab=vocab, continuing_subword_prefix="%%", max_input_chars_per_word=8),
                   post_processor={"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]})
    mine, ref = tokenizer_pair(changed)
    assert mine.pad_id == 7
    assert_same(mine, ref, CORPUS + ["qqq qqqq hello<extra>world", "<extra><extra>", "a[SEP][SEP][SEP]b", "<EXTRA>",
                                     "x[unused2]"])


def test_no_truncation_and_no_post_processor(config):
    bare = dict(config, truncation=None, post_processor=None)
    mine, ref = tokenizer_pair(bare)
    assert mine.max_length is None
    assert_same(mine, ref, LONG_TEXTS + CORPUS)


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(st.lists(st.one_of(st.text(ALPHABET, max_size=40), st.sampled_from(["[SEP]", "[CLS]", "[MASK]", "[sep]"])),
                min_size=1, max_size=8))
def test_random_text(pair, parts):
    assert_same(*pair, ["".join(parts), " ".join(parts)] + parts)


@pytest.mark.slow
def test_every_code_point(pair):
    """Each code point alone, inside a word, and before a combining accent (NFD, stripping, reordering)."""
    mine, ref = pair
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"{c} a{c}b A{c}\u0301" for c in points]
    expected = ref.encode_batch(texts)
    wrong = [(text, unicodedata.category(text[0]), want.tokens, mine.tokens(text))
             for text, want in zip(texts, expected) if mine.encode(text) != want.ids]
    assert not wrong, f"{len(wrong)} code points differ, the first: {wrong[:5]}"


def test_unicode_8_table_holds_no_letters():
    """The table's code points are ones later Unicode made marks, format characters or punctuation (or that this
    Python does not know yet), and the characters whose category changed since 8.0 have another one now."""
    for token in SINCE_UNICODE_8.split():
        low, _, high = token.partition("-")
        for code in range(int(low, 16), int(high or low, 16) + 1):
            assert unicodedata.category(chr(code))[0] in "CMP", hex(code)
    now = {c: unicodedata.category(c) for c in UNICODE_8_CATEGORY}
    assert now == {"\u166d": "So", "\u1734": "Mc", "\U000111c9": "Mn", "\U0001171e": "Mn"}  # U+1171E: Mc later


def test_lone_surrogates_are_dropped_as_control_characters(pair):
    """tokenizers cannot take them (Rust strings are UTF-8); a page's JavaScript string can hold them."""
    mine, ref = pair
    assert mine.encode("caf\ud800e\udfff [SEP]\udc00x") == ref.encode("cafe [SEP]x").ids


def test_caches_emptied_when_full(config, monkeypatch):
    monkeypatch.setattr(tokenizer_module, "CACHE_SIZE", 5)
    mine, ref = tokenizer_pair(config)
    texts = [" ".join(WORDS[n:n + 12]) for n in range(len(WORDS))] + CORPUS
    for text in texts * 2:
        assert mine.encode(text) == ref.encode(text).ids, repr(text)
        assert len(mine._words) <= 5 and len(mine._before_nfd) <= 5 and len(mine._after_nfd) <= 5


# errors


def test_not_str(pair):
    mine, _ = pair
    with pytest.raises(TypeError, match="the text is of type int, not str"):
        mine.encode(5)
    with pytest.raises(TypeError, match="text 2 is of type NoneType, not str"):
        mine.batch(["a", "b", None])
    with pytest.raises(TypeError, match="text 0 is of type bytes, not str"):
        mine.batch([b"bytes"])
    with pytest.raises(TypeError, match="one str"):
        mine.batch("not a list")


def test_bad_max_length(pair):
    mine, _ = pair
    for bad in (1, 0, -3, 2.5, "128", True):
        with pytest.raises(ValueError, match=f"^max_length is {re.escape(repr(bad))}; the template's 2 special tokens "
                                             f"need an int of at least 2$"):
            mine.batch(["text"], bad)


def test_empty_batch(pair):
    batch = pair[0].batch([])
    assert batch.input_ids.shape == batch.attention_mask.shape == (0, 0)
    assert batch.truncated == batch.lengths == []


@pytest.mark.parametrize("data, message", [
    (b"\xff\xfe not json", "my.json: not JSON"),
    (b"{truncated", "my.json: not JSON"),
    (b"[1, 2]", "my.json: expected a JSON object, got list"),
])
def test_not_a_tokenizer_json(data, message):
    with pytest.raises(TokenizerError, match=message):
        Tokenizer.from_json(data, "my.json")


def changed(config: dict, path: str, value) -> dict:
    """A deep copy of config with the field at a dotted path ('model.type', 'added_tokens.0.lstrip') set or, for
    value DELETE, removed."""
    config = json.loads(json.dumps(config))
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is DELETE:
        del node[last]
    else:
        node[int(last) if isinstance(node, list) else last] = value
    return config


DELETE = object()


@pytest.mark.parametrize("path, value, message", [
    ("normalizer.type", "NFKC", "normalizer.type is 'NFKC'; supported: BertNormalizer"),
    ("normalizer", None, "normalizer.type is None; supported: BertNormalizer"),
    ("normalizer.lowercase", "yes", "normalizer.lowercase is 'yes'; expected bool"),
    ("normalizer.strip_accents", 1, "normalizer.strip_accents is 1; expected bool"),
    ("pre_tokenizer.type", "Whitespace", "pre_tokenizer.type is 'Whitespace'; supported: BertPreTokenizer"),
    ("model.type", "BPE", "model.type is 'BPE'; supported: WordPiece"),
    ("model.unk_token", "<unk>", "model.unk_token '<unk>' is not in model.vocab"),
    ("model.vocab", [["a", 1]], r"model.vocab is \[\['a', 1\]\]; expected dict"),
    ("model.vocab", {"[UNK]": "0"}, "model.vocab must map each token to an integer id"),
    ("model.max_input_chars_per_word", None, "model.max_input_chars_per_word is None; expected int"),
    ("added_tokens.1.lstrip", True, r"added_tokens\[1\].lstrip is true; only false is supported"),
    ("added_tokens.2.normalized", True, r"added_tokens\[2\].normalized is true; only false is supported"),
    ("added_tokens.0.id", "0", r"added_tokens\[0\].id is '0'; expected int"),
    ("added_tokens", {}, "added_tokens is {}; expected a list"),
    ("added_tokens.1.id", 5, r"added_tokens\[1\].id is 5; tokenizers gives '\[UNK\]' the id 100"),
    ("added_tokens.1.content", "<new>", r"added_tokens\[1\].id is 100; tokenizers gives '<new>' the id 30522"),
    ("post_processor.type", "RobertaProcessing",
     "post_processor.type is 'RobertaProcessing'; supported: TemplateProcessing, BertProcessing, None"),
    ("post_processor.single.1.Sequence.id", "B", r"post_processor.single\[1\] is .*supported: SpecialToken or "
                                                 r"Sequence A"),
    ("post_processor.single.1", {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
     r"post_processor.single must hold Sequence A once; it holds \[\]"),
    ("post_processor.single.0.SpecialToken.id", "[BOS]", r"post_processor.single\[0\] names '\[BOS\]'"),
    ("post_processor.special_tokens.[SEP].ids", ["102"], r"post_processor.single\[2\] names '\[SEP\]', which "),
    ("post_processor.special_tokens.[CLS].tokens", [], r"post_processor.single\[0\] names '\[CLS\]', which "),
    ("post_processor.single.1", {"Sequence": "A"}, r"post_processor.single\[1\] is {'Sequence': 'A'}"),
    ("post_processor.single.1", ["A"], r"post_processor.single\[1\] is \['A'\]"),
    ("post_processor.single", "[CLS] $A [SEP]", "post_processor.single is '\\[CLS\\] \\$A \\[SEP\\]'; expected list"),
    ("added_tokens.0", "[PAD]", r"added_tokens\[0\] is '\[PAD\]'; expected an object"),
    ("truncation", 128, "truncation is 128; expected an object"),
    ("padding", "longest", "padding is 'longest'; expected an object"),
    ("truncation.strategy", "OnlySecond", "truncation.strategy is 'OnlySecond'; supported: LongestFirst, OnlyFirst"),
    ("truncation.direction", "Middle", "truncation.direction is 'Middle'; supported: Right, Left"),
    ("truncation.max_length", 1, "truncation.max_length is 1; the template's 2 special tokens need an int of at least 2"),
    ("truncation.max_length", "128", "truncation.max_length is '128'; expected int"),
    ("padding.pad_id", None, "padding.pad_id is None; expected int"),
    ("model", DELETE, "model.type is None; supported: WordPiece"),
])
def test_unsupported_field(config, path, value, message):
    with pytest.raises(TokenizerError, match=f"^tok.json: {message}"):
        Tokenizer(changed(config, path, value), "tok.json")


def test_template_with_two_sequences_is_refused(config):
    pair_template = changed(config, "post_processor.single", config["post_processor"]["pair"])
    with pytest.raises(TokenizerError, match=r"tokenizer.json: post_processor.single\[3\] is .*Sequence.*'B'"):
        Tokenizer(pair_template)
