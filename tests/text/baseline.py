"""The bar the text task's few-shot accuracy must clear: TF-IDF features (word unigrams and bigrams, sublinear tf)
and a logistic regression, from scikit-learn, trained on the few examples and scored on the held-out texts."""
from __future__ import annotations


def baseline(train: list, test: list) -> float:
    """The accuracy on ``test`` of TF-IDF + logistic regression fitted on ``train``; both are lists of (text,
    category index)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                          LogisticRegression(max_iter=1000))
    model.fit([text for text, _ in train], [label for _, label in train])
    return float(model.score([text for text, _ in test], [label for _, label in test]))
