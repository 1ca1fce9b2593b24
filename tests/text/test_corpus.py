"""The text task's labelled set (corpus.py): its size, that every message is there once and no two share a frame,
that few_shot draws disjoint, reproducible splits, and that the TF-IDF baseline (baseline.py) does not solve it."""
import difflib
import re
from collections import Counter

import pytest

from text.baseline import baseline
from text.corpus import CATEGORIES, TEXTS, few_shot


def test_six_categories_of_at_least_110_messages():
    counts = Counter(category for _, category in TEXTS)
    assert len(CATEGORIES) == 6 and sorted(counts) == list(range(6))
    assert min(counts.values()) >= 110, counts
    assert all(isinstance(text, str) and text == text.strip() and text for text, _ in TEXTS)


def test_no_message_twice_ignoring_case():
    counts = Counter(text.lower() for text, _ in TEXTS)
    assert [text for text, n in counts.items() if n > 1] == []


def test_no_two_messages_share_a_frame():
    # a template filled twice keeps most of its words in order: the word sequences' similarity says so
    words = [re.findall(r"[a-z0-9']+", text.lower()) for text, _ in TEXTS]
    close = []
    for i, a in enumerate(words):
        matcher = difflib.SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(a)
        for j in range(i + 1, len(words)):
            matcher.set_seq1(words[j])
            if matcher.real_quick_ratio() > 0.6 and matcher.quick_ratio() > 0.6 and matcher.ratio() > 0.6:
                close.append((TEXTS[i][0], TEXTS[j][0]))
    assert close == []


def test_lengths_vary_from_a_few_words_to_a_few_sentences():
    lengths = [len(text.split()) for text, _ in TEXTS]
    assert min(lengths) <= 3 and max(lengths) >= 20
    assert sum(1 for text, _ in TEXTS if text == text.lower()) >= 30  # written in lowercase, as people type


def test_few_shot_takes_k_per_category_and_holds_out_the_rest():
    train, test = few_shot(8, 0)
    assert Counter(category for _, category in train) == {index: 8 for index in range(len(CATEGORIES))}
    assert not {text for text, _ in train} & {text for text, _ in test}
    assert sorted(train + test) == sorted(TEXTS)


def test_few_shot_is_deterministic_and_the_seed_changes_it():
    assert few_shot(8, 3) == few_shot(8, 3)
    assert few_shot(8, 3)[0] != few_shot(8, 4)[0]


@pytest.mark.parametrize("k", [0, -1, "all"])
def test_few_shot_refuses_a_k_that_leaves_nothing(k):
    if k == "all":
        k = min(Counter(category for _, category in TEXTS).values())
    with pytest.raises(ValueError, match=f"k={k} "):
        few_shot(k, 0)


def test_words_alone_do_not_sort_the_set():
    # TF-IDF + logistic regression learns something from 8 examples a category, far from everything
    accuracy = baseline(*few_shot(8, 0))
    assert 1 / len(CATEGORIES) < accuracy < 0.7
