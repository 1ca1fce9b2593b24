"""A BERT tokenizer read from the ``tokenizer.json`` of Hugging Face's ``tokenizers``, giving the same ids: the
``BertNormalizer`` (control characters dropped, whitespace made a space, CJK ideographs spaced, accents stripped
after NFD, lowercase), the ``BertPreTokenizer`` (split at whitespace, each punctuation character a word of its
own), ``WordPiece`` (greedy longest match first, ``##`` pieces, one unknown token for a word it cannot cover),
the added tokens (``[SEP]`` typed in the text is the token), the ``[CLS] A [SEP]`` template and truncation.
Other normalizers, pre-tokenizers and models are refused with a :class:`TokenizerError` naming the field."""
from __future__ import annotations

import bisect
import json
import re
import unicodedata
from dataclasses import dataclass

import numpy as np

# Rust's char::is_whitespace: the White_Space property.
WHITE_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                        "\u200a\u2028\u2029\u202f\u205f\u3000")
CJK_IDEOGRAPHS = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
                  (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
# The tokenizers crate takes categories from the unicode_categories crate, whose tables are Unicode 8.0's: to it the
# marks, format characters and punctuation added since (these code points, through Unicode 18) are unassigned, and
# four characters keep the category they had in 8.0.
SINCE_UNICODE_8 = """
5C8-5C9 61D 7FD 890-891 897-89F 8CA-8E2 9FD-9FE A76 AFA-AFF B53-B55 C04 C3C C77 C84 D00 D3B-D3C D81 EBA ECE
180F 1885-1886 1ABF-1AF0 1B4E-1B4F 1B7D-1B7F 1DF6-1DFB 2E43-2E4F 2E52-2E5D 2E60-2E63 A82C A8C5 A8FF A9BD
10D24-10D27 10D69-10D6E 10EAB-10EAD 10ECB-10ED0 10EF0-10EFF 10F46-10F50 10F55-10F59 10F82-10F89 11070
11073-11074 110C2 110CD 111CF 1123E 11241 1133B 113BB-113C0 113CE 113D0 113D2 113D4-113D5 113D7-113D8
113E1-113E2 11438-1143F 11442-11444 11446 1144B-1144F 1145A-1145B 1145D-1145E 11660-1166C 116B9 1182F-11837
11839-1183B 1193B-1193C 1193E 11943-11946 119D4-119D7 119DA-119DB 119E0 119E2 11A01-11A0A 11A33-11A38
11A3B-11A47 11A51-11A56 11A59-11A5B 11A8A-11A96 11A98-11A9C 11A9E-11AA2 11B00-11B09 11B60 11B62-11B64 11B66
11BE1 11C30-11C36 11C38-11C3D 11C3F 11C41-11C45 11C70-11C71 11C92-11CA7 11CAA-11CB0 11CB2-11CB3 11CB5-11CB6
11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D90-11D91 11D95 11D97 11DF0 11EF3-11EF4 11EF7-11EF8
11F00-11F01 11F36-11F3A 11F40 11F42-11F4F 11F5A 11FFF 12FF1-12FF2 13430-13440 13447-13455 1611E-16129
1612D-1612F 16D6D-16D6F 16E97-16E9A 16F4F 16FE2 16FE4 1CF00-1CF2D 1CF30-1CF46 1D127-1D128 1D25B-1D25C
1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E08F 1E130-1E136 1E2AE 1E2EC-1E2EF 1E4EC-1E4EF
1E5EE-1E5EF 1E5FF 1E6E3 1E6E6 1E6EE-1E6EF 1E6F5 1E944-1E94A 1E95E-1E95F"""
UNICODE_8_CATEGORY = {"\u166d": "Po", "\u1734": "Mn", "\U000111c9": "Po", "\U0001171e": "Mn"}
CACHE_SIZE = 1 << 16  # the caches of words' ids and characters' forms are emptied when they reach this


class TokenizerError(ValueError):
    """A ``tokenizer.json`` that is not one this tokenizer reads; the message names the file and the field."""


@dataclass
class Batch:
    """Texts as the encoder's inputs: ``input_ids`` and ``attention_mask`` int64 [N, T], right-padded with the json's
    pad id to the longest text (whatever the json's padding strategy: the mask makes the padding's length moot);
    ``truncated[i]``: text i had more tokens than fit; ``lengths[i]``: its tokens, specials included."""
    input_ids: np.ndarray
    attention_mask: np.ndarray
    truncated: list
    lengths: list


class _CharMap(dict):
    """A ``str.translate`` table filled on first use of each character (emptied when full, as a text of every
    character could make it huge)."""

    def __init__(self, rule):
        super().__init__()
        self.rule = rule

    def __missing__(self, code: int) -> str:
        if len(self) >= CACHE_SIZE:
            self.clear()
        self[code] = out = self.rule(chr(code))
        return out


def _ranges(text: str) -> tuple:
    bounds = [token.partition("-") for token in text.split()]
    return [int(low, 16) for low, _, _ in bounds], [int(high or low, 16) for low, _, high in bounds]


_LATER_STARTS, _LATER_ENDS = _ranges(SINCE_UNICODE_8)


def _category(c: str) -> str:
    """The character's general category as the tokenizers crate sees it."""
    n = bisect.bisect_right(_LATER_STARTS, ord(c)) - 1
    if n >= 0 and ord(c) <= _LATER_ENDS[n]:
        return "Cn"
    return UNICODE_8_CATEGORY.get(c) or unicodedata.category(c)


def _is_control(c: str) -> bool:
    return c not in "\t\n\r" and _category(c) in ("Cc", "Cf", "Co", "Cs")


def _is_chinese(c: str) -> bool:
    return any(low <= ord(c) <= high for low, high in CJK_IDEOGRAPHS)


def _is_punctuation(c: str) -> bool:
    return (c.isascii() and c.isprintable() and not c.isalnum() and c != " ") or _category(c)[0] == "P"


def _field(entry: dict, key: str, kind, where: str, what: str, default=None):
    """``entry[key]`` (or ``default``) when it is a ``kind``; else a TokenizerError naming ``where.key``."""
    if not isinstance(entry, dict):
        raise TokenizerError(f"{what}: {where} is {entry!r}; expected an object")
    value = entry.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TokenizerError(f"{what}: {where}.{key} is {value!r}; expected {getattr(kind, '__name__', kind)}")
    return value


class Tokenizer:
    """Texts to token ids as ``tokenizers.Tokenizer`` does for a BERT ``tokenizer.json``."""

    def __init__(self, config: dict, what: str = "tokenizer.json"):
        if not isinstance(config, dict):
            raise TokenizerError(f"{what}: expected a JSON object, got {type(config).__name__}")
        self.what = what
        self._read_normalizer(config.get("normalizer"))
        self._read_pre_tokenizer(config.get("pre_tokenizer"))
        self._read_model(config.get("model"))
        self._read_added_tokens(config.get("added_tokens", []))
        self._read_post_processor(config.get("post_processor"))
        self._read_truncation(config.get("truncation"))
        padding = config.get("padding")
        self.pad_id = 0 if padding is None else _field(padding, "pad_id", int, "padding", what, 0)
        self._words: dict = {}

    @classmethod
    def from_json(cls, data, what: str = "tokenizer.json") -> "Tokenizer":
        """The tokenizer of a ``tokenizer.json``'s bytes or text."""
        try:
            config = json.loads(data)
        except (ValueError, TypeError) as e:
            raise TokenizerError(f"{what}: not JSON ({e})") from None
        return cls(config, what)

    # reading tokenizer.json

    def _kind(self, section, name: str, supported: tuple) -> dict:
        kind = section.get("type") if isinstance(section, dict) else section
        if kind not in supported:
            raise TokenizerError(f"{self.what}: {name}.type is {kind!r}; supported: {', '.join(map(str, supported))}")
        return section

    def _read_normalizer(self, section):
        section = self._kind(section, "normalizer", ("BertNormalizer",))
        def flag(key: str, default=None) -> bool:
            return _field(section, key, bool, "normalizer", self.what, default)

        clean, chinese = flag("clean_text", True), flag("handle_chinese_chars", True)
        lowercase = flag("lowercase", True)
        self.strip_accents = lowercase if section.get("strip_accents") is None else flag("strip_accents")

        def before_nfd(c):
            if clean and (c in "\0\ufffd" or _is_control(c)):
                return ""
            if clean and c in WHITE_SPACE:
                return " "
            return f" {c} " if chinese and _is_chinese(c) else c

        def split_word(c):
            return " " if c in WHITE_SPACE else f" {c} " if _is_punctuation(c) else c

        def after_nfd(c):
            if self.strip_accents and _category(c) == "Mn":
                return ""
            return "".join(split_word(x) for x in (c.lower() if lowercase else c))

        self._before_nfd, self._after_nfd = _CharMap(before_nfd), _CharMap(after_nfd)

    def _read_pre_tokenizer(self, section):
        self._kind(section, "pre_tokenizer", ("BertPreTokenizer",))

    def _read_model(self, section):
        section = self._kind(section, "model", ("WordPiece",))
        vocab = _field(section, "vocab", dict, "model", self.what)
        if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in vocab.items()):
            raise TokenizerError(f"{self.what}: model.vocab must map each token to an integer id")
        self.vocab = vocab
        self.prefix = _field(section, "continuing_subword_prefix", str, "model", self.what, "##")
        self.max_chars = _field(section, "max_input_chars_per_word", int, "model", self.what, 100)
        unk = _field(section, "unk_token", str, "model", self.what, "[UNK]")
        if unk not in vocab:
            raise TokenizerError(f"{self.what}: model.unk_token {unk!r} is not in model.vocab")
        self.unk_id = vocab[unk]
        self.longest = max(map(len, vocab), default=0)
        self.token_of = {i: token for token, i in vocab.items()}

    def _read_added_tokens(self, section):
        if not isinstance(section, list):
            raise TokenizerError(f"{self.what}: added_tokens is {section!r}; expected a list")
        self.added = {}
        for n, entry in enumerate(section):
            where = f"added_tokens[{n}]"
            content = _field(entry, "content", str, where, self.what)
            for key in ("single_word", "lstrip", "rstrip", "normalized"):
                if _field(entry, key, bool, where, self.what, False):
                    raise TokenizerError(f"{self.what}: {where}.{key} is true; only false is supported")
            given = _field(entry, "id", int, where, self.what)
            if not content:
                continue  # tokenizers skips it
            token_id = self._added_id(content)
            if given != token_id:
                raise TokenizerError(f"{self.what}: {where}.id is {given}; tokenizers gives {content!r} the id "
                                     f"{token_id}")
            self.added[content], self.token_of[token_id] = token_id, content
        longest_first = sorted(self.added, key=len, reverse=True)
        self._added_split = re.compile("(" + "|".join(map(re.escape, longest_first)) + ")") if self.added else None

    def _added_id(self, content: str) -> int:
        """tokenizers' id for an added token: its vocabulary id, else the one after the vocabulary and the added."""
        if content in self.vocab or content in self.added:
            return self.vocab.get(content, self.added.get(content))
        top = max(self.added.values(), default=-1)
        return top + 1 if top >= len(self.vocab) else len(self.vocab)

    def _read_post_processor(self, section):
        section = self._kind(section, "post_processor", ("TemplateProcessing", "BertProcessing", None))
        if section is None:
            self.head, self.tail = [], []
        elif section["type"] == "BertProcessing":
            self.head, self.tail = [self._bert_special(section, "cls")], [self._bert_special(section, "sep")]
        else:
            self._read_template(section)

    def _bert_special(self, section: dict, key: str) -> tuple:
        pair = section.get(key)
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and isinstance(pair[1], int)):
            raise TokenizerError(f"{self.what}: post_processor.{key} is {pair!r}; expected [token, id]")
        return tuple(pair)

    def _read_template(self, section: dict):
        single = _field(section, "single", list, "post_processor", self.what)
        specials = _field(section, "special_tokens", dict, "post_processor", self.what, {})
        parts, self.head, self.tail = [], [], []
        for n, piece in enumerate(single):
            kind, value = next(iter(piece.items())) if isinstance(piece, dict) and len(piece) == 1 else (None, None)
            name = value.get("id") if isinstance(value, dict) else None
            if kind == "Sequence" and name == "A":
                parts.append(name)
            elif kind == "SpecialToken":
                (self.tail if parts else self.head).extend(self._template_special(specials, name, n))
            else:
                raise TokenizerError(f"{self.what}: post_processor.single[{n}] is {piece!r}; supported: SpecialToken "
                                     f"or Sequence A")
        if parts != ["A"]:
            raise TokenizerError(f"{self.what}: post_processor.single must hold Sequence A once; it holds {parts}")

    def _template_special(self, specials: dict, name, n: int) -> list:
        """[(token, id)] of the special token ``name`` that post_processor.single[n] names."""
        special = specials.get(name) if isinstance(name, str) else None
        ids, tokens = (special.get("ids"), special.get("tokens")) if isinstance(special, dict) else (None, None)
        if not (isinstance(ids, list) and isinstance(tokens, list) and len(ids) == len(tokens)
                and all(isinstance(i, int) for i in ids) and all(isinstance(t, str) for t in tokens)):
            raise TokenizerError(f"{self.what}: post_processor.single[{n}] names {name!r}, which "
                                 f"post_processor.special_tokens does not give as ids and tokens")
        return list(zip(tokens, ids))

    def _read_truncation(self, section):
        if section is None:
            self.max_length, self.truncate_left = None, False
            return
        self.max_length = _field(section, "max_length", int, "truncation", self.what)
        strategy = section.get("strategy", "LongestFirst")
        if strategy not in ("LongestFirst", "OnlyFirst"):
            raise TokenizerError(f"{self.what}: truncation.strategy is {strategy!r}; supported: LongestFirst, "
                                 f"OnlyFirst")
        direction = section.get("direction", "Right")
        if direction not in ("Right", "Left"):
            raise TokenizerError(f"{self.what}: truncation.direction is {direction!r}; supported: Right, Left")
        self.truncate_left = direction == "Left"
        self._room(self.max_length, f"{self.what}: truncation.max_length", TokenizerError)

    # tokenizing

    def _room(self, max_length, name: str = "max_length", error=ValueError) -> int | None:
        """How many of a text's own tokens fit in ``max_length`` with the template's; None: all."""
        specials = len(self.head) + len(self.tail)
        if max_length is None:
            return None
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < specials:
            raise error(f"{name} is {max_length!r}; the template's {specials} special tokens need an int of at "
                        f"least {specials}")
        return max_length - specials

    def _word_ids(self, word: str) -> tuple:
        """WordPiece: the longest vocabulary entry from the start, then ``##`` entries; one unknown if it fails."""
        if len(word) > self.max_chars:
            return (self.unk_id,)
        ids, start = [], 0
        while start < len(word):
            for end in range(min(len(word), start + self.longest), start, -1):
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    start = end
                    break
            else:
                return (self.unk_id,)
        return tuple(ids)

    def _piece_ids(self, text: str, ids: list):
        text = text.translate(self._before_nfd)
        if self.strip_accents:
            text = unicodedata.normalize("NFD", text)
        words = self._words
        for word in text.translate(self._after_nfd).split(" "):
            if word:
                found = words.get(word)
                if found is None:
                    if len(words) >= CACHE_SIZE:
                        words.clear()
                    found = words[word] = self._word_ids(word)
                ids.extend(found)

    def _text_ids(self, text: str) -> list:
        """The text's own ids, untruncated: added tokens where typed, WordPiece for the text between them."""
        ids = []
        pieces = self._added_split.split(text) if self._added_split else [text]
        for n, piece in enumerate(pieces):
            if n % 2:
                ids.append(self.added[piece])
            elif piece:
                self._piece_ids(piece, ids)
        return ids

    def _encode(self, text, max_length, where: str) -> tuple:
        if not isinstance(text, str):
            raise TypeError(f"{where} is of type {type(text).__name__}, not str")
        room = self._room(max_length)
        ids = self._text_ids(text)
        truncated = room is not None and len(ids) > room
        if truncated:
            ids = ids[len(ids) - room:] if self.truncate_left else ids[:room]
        return [i for _, i in self.head] + ids + [i for _, i in self.tail], truncated

    def encode(self, text: str, max_length: int | None = None) -> list:
        """The ids of ``text`` with the template's special tokens, truncated to ``max_length`` (default: the json's)."""
        return self._encode(text, self.max_length if max_length is None else max_length, "the text")[0]

    def tokens(self, text: str, max_length: int | None = None) -> list:
        """The token strings of :meth:`encode`'s ids."""
        return [self.token_of[i] for i in self.encode(text, max_length)]

    def batch(self, texts, max_length: int | None = None) -> Batch:
        """``texts`` encoded and right-padded with the pad id to the longest of them."""
        if isinstance(texts, str):
            raise TypeError("texts is one str; pass a list of texts")
        max_length = self.max_length if max_length is None else max_length
        rows = [self._encode(text, max_length, f"text {n}") for n, text in enumerate(texts)]
        lengths = [len(ids) for ids, _ in rows]
        input_ids = np.full((len(rows), max(lengths, default=0)), self.pad_id, np.int64)
        attention_mask = np.zeros(input_ids.shape, np.int64)
        for n, (ids, _) in enumerate(rows):
            input_ids[n, :len(ids)] = ids
            attention_mask[n, :len(ids)] = 1
        return Batch(input_ids, attention_mask, [t for _, t in rows], lengths)
