"""ai.onnx.ml: LabelEncoder (strings, ints, floats), CategoryMapper, the scalers, ArrayFeatureExtractor,
the linear and tree models, OneHotEncoder, FeatureVectorizer."""
from __future__ import annotations

from ._context import INT64
from ._dims import product
from ._registry import Out, rule

ML = "ai.onnx.ml"
FLOAT, STRING = 1, 8


@rule("LabelEncoder", domain=ML)
def label_encoder(c):
    attrs = c.node.attributes
    if "values_tensor" in attrs:
        elem = attrs["values_tensor"].value.data_type
    else:
        elem = STRING if "values_strings" in attrs else INT64 if "values_int64s" in attrs else FLOAT
    return Out(elem, c.shape(0))


@rule("CategoryMapper", domain=ML)
def category_mapper(c):
    return Out(INT64 if c.elem(0) == STRING else STRING, c.shape(0))


@rule("Scaler", "Normalizer", "Binarizer", "Imputer", domain=ML)
def scaler(c):
    return Out(c.elem(0) if c.node.op_type in ("Binarizer", "Imputer") else FLOAT, c.shape(0))


def _rows(c) -> list:
    dims = c.shape(0)
    return dims[:1] if len(dims) > 1 else [1]


@rule("ArrayFeatureExtractor", domain=ML)
def array_feature_extractor(c):
    dims, picks = c.shape(0), c.shape(1)
    return Out(c.elem(0), dims[:-1] + [product(c, picks)])


@rule("LinearRegressor", domain=ML)
def linear_regressor(c):
    return Out(FLOAT, _rows(c) + [c.attr("targets", 1)])


def _classifier(c, classes: int) -> list:
    labels = c.attr("classlabels_strings")
    elem = STRING if labels else INT64
    return [Out(elem, _rows(c)), Out(FLOAT, _rows(c) + [classes])]


@rule("LinearClassifier", domain=ML)
def linear_classifier(c):
    labels = c.attr("classlabels_strings") or c.attr("classlabels_ints") or []
    n = len(labels)
    return _classifier(c, 1 if n == 2 and len(c.attr("intercepts") or []) == 1 else n)


@rule("TreeEnsembleClassifier", domain=ML)
def tree_classifier(c):
    return _classifier(c, len(c.attr("classlabels_strings") or c.attr("classlabels_int64s") or []))


@rule("TreeEnsembleRegressor", domain=ML)
def tree_regressor(c):
    return Out(FLOAT, _rows(c) + [c.attr("n_targets", 1)])


@rule("OneHotEncoder", domain=ML)
def one_hot_encoder(c):
    n = len(c.attr("cats_strings") or c.attr("cats_int64s") or [])
    return Out(FLOAT, c.shape(0) + [n])


@rule("FeatureVectorizer", domain=ML)
def feature_vectorizer(c):
    return Out(FLOAT, _rows(c) + [sum(c.attr("inputdimensions") or [])])
