"""Kernels of the ai.onnx.ml domain: LabelEncoder, Binarizer, ArrayFeatureExtractor, TreeEnsemble, LinearRegressor,
LinearClassifier, Scaler, Normalizer, Imputer, CategoryMapper, OneHotEncoder, FeatureVectorizer, ZipMap, SVMRegressor,
SVMClassifier and the legacy TreeEnsembleRegressor/TreeEnsembleClassifier."""
from __future__ import annotations

import numpy as np

from ..ir.model import AttrType
from .registry import kernel

ML = "ai.onnx.ml"


def _key(v):
    if isinstance(v, (bytes, bytearray)):
        return v.decode("utf-8")
    if isinstance(v, (np.floating, float)):
        return float(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    return v


def _encoded(values, dtype, shape):
    if dtype == object:
        out = np.empty(len(values), dtype=object)
        out[:] = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
        return out.reshape(shape)
    return np.array(values, dtype=dtype).reshape(shape)


def _label_encode(X, keys, values, default, dtype):
    if len(keys) != len(values):
        raise ValueError(f"LabelEncoder: {len(keys)} keys but {len(values)} values")
    table = {_key(k): v for k, v in zip(keys, values)}
    return _encoded([table.get(_key(x), default) for x in X.ravel()], dtype, X.shape)


def _chosen(op: str, what: str, **given):
    present = [(name, v) for name, v in given.items() if v is not None]
    if len(present) != 1:
        raise ValueError(f"{op}: give exactly one of the {what} attributes ({', '.join(given)})")
    return present[0]


@kernel("LabelEncoder", domain=ML, since=2)
def LabelEncoder_2(X, *, default_float=-0.0, default_int64=-1, default_string="_Unused", keys_floats=None,
                   keys_int64s=None, keys_strings=None, values_floats=None, values_int64s=None, values_strings=None):
    _, keys = _chosen("LabelEncoder", "keys_*", keys_floats=keys_floats, keys_int64s=keys_int64s,
                      keys_strings=keys_strings)
    kind, values = _chosen("LabelEncoder", "values_*", values_floats=values_floats, values_int64s=values_int64s,
                           values_strings=values_strings)
    default, dtype = {"values_floats": (default_float, np.float32), "values_int64s": (default_int64, np.int64),
                      "values_strings": (default_string, object)}[kind]
    return _label_encode(X, list(keys), list(values), default, dtype)


@kernel("LabelEncoder", domain=ML, since=4)
def LabelEncoder_4(X, *, default_float=-0.0, default_int64=-1, default_string="_Unused", default_tensor=None,
                   keys_floats=None, keys_int64s=None, keys_strings=None, keys_tensor=None, values_floats=None,
                   values_int64s=None, values_strings=None, values_tensor=None):
    _, keys = _chosen("LabelEncoder", "keys_*", keys_floats=keys_floats, keys_int64s=keys_int64s,
                      keys_strings=keys_strings, keys_tensor=keys_tensor)
    kind, values = _chosen("LabelEncoder", "values_*", values_floats=values_floats, values_int64s=values_int64s,
                           values_strings=values_strings, values_tensor=values_tensor)
    if kind == "values_tensor":
        dtype = values.dtype
        if default_tensor is not None:
            default = default_tensor.reshape(-1)[0]
        else:
            default = {"f": -0.0, "i": -1, "u": 0, "O": "_Unused"}.get(dtype.kind, 0)
        values = list(values.ravel())
    else:
        default, dtype = {"values_floats": (default_float, np.float32), "values_int64s": (default_int64, np.int64),
                          "values_strings": (default_string, object)}[kind]
    keys = list(np.asarray(keys).ravel()) if isinstance(keys, np.ndarray) else list(keys)
    return _label_encode(X, keys, list(values), default, dtype)


@kernel("Binarizer", domain=ML, since=1)
def Binarizer(X, *, threshold=0.0):
    return (X > threshold).astype(X.dtype)


@kernel("ArrayFeatureExtractor", domain=ML, since=1)
def ArrayFeatureExtractor(X, Y):
    """X[..., Y] with Y flattened; a 1-D X gives shape [1, len(Y)]."""
    index = np.asarray(Y, np.int64).ravel()
    size = X.shape[-1]
    if index.size and (index.min() < 0 or index.max() >= size):
        raise IndexError(f"ArrayFeatureExtractor: index {int(index.max() if index.max() >= size else index.min())} "
                         f"is out of range for a last axis of size {size}")
    out = X[..., index.astype(np.intp)]
    return out.reshape((1, index.size) if X.ndim == 1 else X.shape[:-1] + (index.size,))


_LEQ, _LT, _GTE, _GT, _EQ, _NEQ, _MEMBER = range(7)


def _member_sets(modes, membership_values) -> dict:
    """{node: set of members} for the MEMBER nodes, in node order, their lists split by NaN."""
    members = [i for i, m in enumerate(modes) if m == _MEMBER]
    if not members:
        return {}
    if membership_values is None:
        raise ValueError("TreeEnsemble: set membership nodes without membership_values")
    groups, current = [], set()
    for v in np.asarray(membership_values, np.float64).ravel():
        if np.isnan(v):
            groups.append(current)
            current = set()
        else:
            current.add(float(v))
    if current:
        groups.append(current)
    if len(groups) != len(members):
        raise ValueError(f"TreeEnsemble: {len(members)} set membership nodes but {len(groups)} member lists")
    return dict(zip(members, groups))


_COMPARE = {_LEQ: np.less_equal, _LT: np.less, _GTE: np.greater_equal, _GT: np.greater, _EQ: np.equal,
            _NEQ: np.not_equal}


def _leaves(x, roots, modes, splits, features, true_ids, false_ids, true_leaf, false_leaf, missing_true, sets):
    """Per tree, the leaf each row of ``x`` reaches (an index into the leaf arrays)."""
    rows = np.arange(x.shape[0])
    per_tree = []
    for root in roots:
        if true_leaf[root] and false_leaf[root] and true_ids[root] == false_ids[root]:
            per_tree.append(np.full(x.shape[0], true_ids[root]))
            continue
        node = np.full(x.shape[0], root)
        leaf = np.full(x.shape[0], -1)
        active = np.ones(x.shape[0], bool)
        for _ in range(len(modes) + 1):
            if not active.any():
                break
            r, n = rows[active], node[active]
            value = x[r, features[n]]
            go = np.zeros(len(n), bool)
            for mode in np.unique(modes[n]):
                sel = modes[n] == mode
                if mode == _MEMBER:
                    go[sel] = [value[i] in sets[n[i]] for i in np.nonzero(sel)[0]]
                elif mode in _COMPARE:
                    go[sel] = _COMPARE[mode](value[sel], splits[n[sel]])
                else:
                    raise ValueError(f"TreeEnsemble: node mode {mode} is not supported")
            go |= np.isnan(value) & missing_true[n]
            nxt = np.where(go, true_ids[n], false_ids[n])
            ends = np.where(go, true_leaf[n], false_leaf[n])
            leaf[r[ends]] = nxt[ends]
            node[r] = nxt
            active[r[ends]] = False
        if active.any():
            raise ValueError("TreeEnsemble: a tree has a cycle")
        per_tree.append(leaf)
    return per_tree


@kernel("TreeEnsemble", domain=ML, since=5)
def TreeEnsemble(X, *, aggregate_function=1, leaf_targetids, leaf_weights, membership_values=None, n_targets=None,
                 nodes_falseleafs, nodes_falsenodeids, nodes_featureids, nodes_hitrates=None,
                 nodes_missing_value_tracks_true=None, nodes_modes, nodes_splits, nodes_trueleafs, nodes_truenodeids,
                 post_transform=0, tree_roots):
    if post_transform != 0:
        raise ValueError(f"TreeEnsemble: post_transform {post_transform} is not supported (only NONE)")
    if aggregate_function not in (0, 1, 2, 3):
        raise ValueError(f"TreeEnsemble: aggregate_function {aggregate_function} is not supported")
    modes = np.asarray(nodes_modes).ravel().astype(np.int64)
    splits = np.asarray(nodes_splits, np.float64).ravel()
    features = np.asarray(nodes_featureids, np.int64)
    true_ids, false_ids = np.asarray(nodes_truenodeids, np.int64), np.asarray(nodes_falsenodeids, np.int64)
    true_leaf, false_leaf = np.asarray(nodes_trueleafs, bool), np.asarray(nodes_falseleafs, bool)
    missing_true = (np.zeros(len(modes), bool) if nodes_missing_value_tracks_true is None
                    else np.asarray(nodes_missing_value_tracks_true, bool))
    sets = _member_sets(modes, membership_values)
    weights = np.asarray(leaf_weights, np.float64).ravel()
    targets = np.asarray(leaf_targetids, np.int64)
    n_out = int(n_targets) if n_targets is not None else int(targets.max()) + 1
    x = np.asarray(X, np.float64).reshape(X.shape[0], -1)
    rows = np.arange(x.shape[0])
    per_tree = _leaves(x, list(tree_roots), modes, splits, features, true_ids, false_ids, true_leaf, false_leaf,
                       missing_true, sets)
    # MIN and MAX: a target that no tree's leaf gives a row stays 0 there, as in onnxruntime.
    out = np.zeros((x.shape[0], n_out)) if aggregate_function in (0, 1) else \
        np.full((x.shape[0], n_out), np.inf if aggregate_function == 2 else -np.inf)
    reached = np.zeros(out.shape, bool)
    for leaf in per_tree:
        w, t = weights[leaf], targets[leaf]
        reached[rows, t] = True
        if aggregate_function == 1:
            np.add.at(out, (rows, t), w)
        elif aggregate_function == 0:
            np.add.at(out, (rows, t), w / len(tree_roots))
        elif aggregate_function == 2:
            np.minimum.at(out, (rows, t), w)
        else:
            np.maximum.at(out, (rows, t), w)
    return np.where(reached, out, 0).astype(X.dtype)


def _post_transform(op: str, scores, post_transform: str):
    if post_transform == "NONE":
        return scores
    if post_transform == "LOGISTIC":
        return 1 / (1 + np.exp(-scores))
    if post_transform == "SOFTMAX":
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if post_transform == "SOFTMAX_ZERO":
        nonzero = scores != 0
        e = np.where(nonzero, np.exp(scores - np.where(nonzero, scores, -np.inf).max(axis=1, keepdims=True)), 0)
        total = e.sum(axis=1, keepdims=True)
        return np.where(total > 0, e / np.where(total > 0, total, 1), 0)
    raise ValueError(f"{op}: post_transform '{post_transform}' is not supported")


def _rows(X):
    return np.asarray(X, np.float64).reshape(X.shape[0], -1) if X.ndim > 1 else np.asarray(X, np.float64)[None]


@kernel("LinearRegressor", domain=ML, since=1)
def LinearRegressor(X, *, coefficients=None, intercepts=None, post_transform="NONE", targets=1):
    x = _rows(X)
    w = np.asarray(coefficients, np.float64).reshape(targets, -1)
    if w.shape[1] != x.shape[1]:
        raise ValueError(f"LinearRegressor: {w.shape[1]} coefficients per target for {x.shape[1]} features")
    y = x @ w.T + (0 if not intercepts else np.asarray(intercepts, np.float64))
    return _post_transform("LinearRegressor", y, post_transform).astype(np.float32)


def _labels_at(labels, strings: bool, index):
    """The class labels at ``index``: int64, or strings as bytes (as STRING tensors hold them)."""
    if strings:
        return np.array([v.encode("utf-8") if isinstance(v, str) else v for v in np.asarray(labels, object)[index]],
                        dtype=object)
    return np.asarray(labels, np.int64)[index]


@kernel("LinearClassifier", domain=ML, since=1)
def LinearClassifier(X, *, classlabels_ints=None, classlabels_strings=None, coefficients, intercepts=None,
                     multi_class=0, post_transform="NONE"):
    """Scores X @ W^T + b per class, then post_transform.  One column of coefficients with two labels is a
    binary classifier whose scores are [-s, s] before the transform (onnx's reference; onnxruntime 1.19 gives
    [1 - s, s] and skips LOGISTIC there)."""
    labels = classlabels_ints if classlabels_ints is not None else classlabels_strings
    if labels is None:
        raise ValueError("LinearClassifier: give classlabels_ints or classlabels_strings")
    x = _rows(X)
    w = np.asarray(coefficients, np.float64).reshape(-1, x.shape[1])
    scores = x @ w.T + (0 if not intercepts else np.asarray(intercepts, np.float64))
    if w.shape[0] == 1 and len(labels) == 2:
        scores = np.concatenate([-scores, scores], axis=1)
    index = np.argmax(scores, axis=1)
    scores = _post_transform("LinearClassifier", scores, post_transform)
    return _labels_at(labels, classlabels_strings is not None, index), scores.astype(np.float32)


@kernel("Scaler", domain=ML, since=1)
def Scaler(X, *, offset=None, scale=None):
    x = np.asarray(X, np.float64)
    off = 0 if offset is None else np.asarray(offset, np.float64)
    sc = 1 if scale is None else np.asarray(scale, np.float64)
    return ((x - off) * sc).astype(np.float32)


@kernel("Normalizer", domain=ML, since=1)
def Normalizer(X, *, norm="MAX"):
    x = _rows(X)
    if norm == "MAX":     # the largest value (not magnitude), as onnxruntime divides by
        d = x.max(axis=1, keepdims=True)
    elif norm == "L1":
        d = np.abs(x).sum(axis=1, keepdims=True)
    elif norm == "L2":
        d = np.sqrt((x * x).sum(axis=1, keepdims=True))
    else:
        raise ValueError(f"Normalizer: norm '{norm}' is not supported")
    return (x / d).reshape(X.shape).astype(np.float32)


@kernel("Imputer", domain=ML, since=1)
def Imputer(X, *, imputed_value_floats=None, imputed_value_int64s=None, replaced_value_float=0.0,
            replaced_value_int64=0):
    values = imputed_value_floats if X.dtype.kind == "f" else imputed_value_int64s
    if not values:
        raise ValueError(f"Imputer: no imputed values for a {X.dtype} input")
    fill = np.asarray(values, X.dtype)
    if X.dtype.kind == "f":
        missing = np.isnan(X) if np.isnan(replaced_value_float) else X == np.float32(replaced_value_float)
    else:
        missing = X == replaced_value_int64
    return np.where(missing, np.broadcast_to(fill, X.shape) if fill.size > 1 else fill.reshape(()), X)


_LEGACY_MODES = {"BRANCH_LEQ": _LEQ, "BRANCH_LT": _LT, "BRANCH_GTE": _GTE, "BRANCH_GT": _GT, "BRANCH_EQ": _EQ,
                 "BRANCH_NEQ": _NEQ, "BRANCH_MEMBER": _MEMBER, "LEAF": -1}


def _legacy_forest(op, x, nodes_treeids, nodes_nodeids, nodes_modes, nodes_featureids, nodes_values,
                   nodes_truenodeids, nodes_falsenodeids, nodes_missing_value_tracks_true, entry_treeids,
                   entry_nodeids, entry_ids, entry_weights, n_outputs):
    """For the legacy tree ensembles: per tree, the [rows, outputs] contributions of the leaf each row reaches,
    and whether the leaf has an entry for each output."""
    index = {(t, n): i for i, (t, n) in enumerate(zip(nodes_treeids, nodes_nodeids))}
    try:
        modes = np.array([_LEGACY_MODES[m.decode() if isinstance(m, bytes) else m] for m in nodes_modes], np.int64)
    except KeyError as e:
        raise ValueError(f"{op}: node mode {e.args[0]} is not supported") from None
    if _MEMBER in modes:
        raise ValueError(f"{op}: BRANCH_MEMBER nodes are not supported")

    def target(ids, i):
        key = (nodes_treeids[i], ids[i])
        if key not in index:
            raise ValueError(f"{op}: node {nodes_nodeids[i]} of tree {nodes_treeids[i]} points to missing node "
                             f"{ids[i]}")
        return index[key]
    branch = modes >= 0
    true_ids = np.array([target(nodes_truenodeids, i) if branch[i] else i for i in range(len(modes))], np.int64)
    false_ids = np.array([target(nodes_falsenodeids, i) if branch[i] else i for i in range(len(modes))], np.int64)
    children = set(true_ids[branch]) | set(false_ids[branch])
    roots = {}
    for i, t in enumerate(nodes_treeids):
        if i not in children:
            roots.setdefault(t, i)
    missing_true = (np.zeros(len(modes), bool) if not nodes_missing_value_tracks_true
                    else np.asarray(nodes_missing_value_tracks_true, bool))
    contrib = np.zeros((len(modes), n_outputs))
    has = np.zeros((len(modes), n_outputs), bool)
    for t, n, k, w in zip(entry_treeids, entry_nodeids, entry_ids, entry_weights):
        if (t, n) not in index:
            raise ValueError(f"{op}: a weight for missing node {n} of tree {t}")
        contrib[index[(t, n)], k] += w
        has[index[(t, n)], k] = True
    leaf_roots = [r for r in roots.values() if not branch[r]]
    per_tree = [np.full(x.shape[0], r) for r in leaf_roots]
    splits = np.asarray(nodes_values, np.float32).astype(np.float64)   # FLOATS are float32 in the file
    per_tree += _leaves(x, [r for r in roots.values() if branch[r]], modes, splits,
                        np.asarray(nodes_featureids, np.int64), true_ids, false_ids, ~branch[true_ids],
                        ~branch[false_ids], missing_true, {})
    return [(contrib[leaf], has[leaf]) for leaf in per_tree]


def _aggregate(op, parts, aggregate_function, n_rows, n_outputs):
    if aggregate_function in ("SUM", "AVERAGE"):
        out = sum((c for c, _ in parts), np.zeros((n_rows, n_outputs)))
        return out / len(parts) if aggregate_function == "AVERAGE" and parts else out
    if aggregate_function in ("MIN", "MAX"):
        pick = np.minimum if aggregate_function == "MIN" else np.maximum
        out = np.full((n_rows, n_outputs), np.nan)
        for c, h in parts:
            out = np.where(h, np.where(np.isnan(out), c, pick(out, c)), out)
        return np.nan_to_num(out, nan=0.0)
    raise ValueError(f"{op}: aggregate_function '{aggregate_function}' is not supported")


def _values(plain, as_tensor):
    if as_tensor is not None:
        return [float(v) for v in np.asarray(as_tensor).ravel()]
    return list(plain or [])


@kernel("TreeEnsembleRegressor", domain=ML, since=1)
def TreeEnsembleRegressor(X, *, aggregate_function="SUM", base_values=None, base_values_as_tensor=None,
                          n_targets=1, nodes_falsenodeids, nodes_featureids, nodes_hitrates=None,
                          nodes_hitrates_as_tensor=None, nodes_missing_value_tracks_true=None, nodes_modes,
                          nodes_nodeids, nodes_treeids, nodes_truenodeids, nodes_values=None,
                          nodes_values_as_tensor=None, post_transform="NONE", target_ids, target_nodeids,
                          target_treeids, target_weights=None, target_weights_as_tensor=None):
    x = _rows(X)
    parts = _legacy_forest("TreeEnsembleRegressor", x, nodes_treeids, nodes_nodeids, nodes_modes, nodes_featureids,
                           _values(nodes_values, nodes_values_as_tensor), nodes_truenodeids, nodes_falsenodeids,
                           nodes_missing_value_tracks_true, target_treeids, target_nodeids, target_ids,
                           _values(target_weights, target_weights_as_tensor), n_targets)
    out = _aggregate("TreeEnsembleRegressor", parts, aggregate_function, x.shape[0], n_targets)
    base = _values(base_values, base_values_as_tensor)
    if base:
        out = out + np.asarray(base, np.float64)
    return _post_transform("TreeEnsembleRegressor", out, post_transform).astype(np.float32)


@kernel("CategoryMapper", domain=ML, since=1)
def CategoryMapper(X, *, cats_int64s=None, cats_strings=None, default_int64=-1, default_string="_Unused"):
    """Strings to int64 by the two parallel lists, or int64 to strings."""
    if cats_int64s is None or cats_strings is None or len(cats_int64s) != len(cats_strings):
        raise ValueError("CategoryMapper: cats_int64s and cats_strings must be given, of one length")
    if X.dtype == object:
        return _label_encode(X, list(cats_strings), list(cats_int64s), default_int64, np.int64)
    return _label_encode(X, list(cats_int64s), list(cats_strings), default_string, object)


@kernel("OneHotEncoder", domain=ML, since=1)
def OneHotEncoder(X, *, cats_int64s=None, cats_strings=None, zeros=1):
    cats = cats_strings if X.dtype == object else cats_int64s
    if not cats:
        raise ValueError(f"OneHotEncoder: no categories for a {'string' if X.dtype == object else 'numeric'} input")
    position = {_key(c): i for i, c in enumerate(cats)}
    keys = [_key(v) if X.dtype == object else int(v) for v in X.ravel()]
    index = np.array([position.get(k, -1) for k in keys], np.int64)
    if not zeros and (index < 0).any():
        raise ValueError(f"OneHotEncoder: value {keys[int(np.argmin(index))]!r} is not a category (zeros=0)")
    out = (index[:, None] == np.arange(len(cats))[None, :]).astype(np.float32)
    return out.reshape(X.shape + (len(cats),))


@kernel("FeatureVectorizer", domain=ML, since=1)
def FeatureVectorizer(*X, inputdimensions=None):
    """Each input as [N, its dimension] (cut or padded with zeros), joined along the last axis."""
    if inputdimensions is None or len(inputdimensions) != len(X):
        raise ValueError(f"FeatureVectorizer: inputdimensions must give one size per input ({len(X)})")
    n = X[0].shape[0] if X[0].ndim > 1 else 1
    parts = []
    for x, size in zip(X, inputdimensions):
        flat = np.asarray(x, np.float32).reshape(n, -1)
        part = np.zeros((n, size), np.float32)
        part[:, :min(size, flat.shape[1])] = flat[:, :size]
        parts.append(part)
    return np.concatenate(parts, axis=1)


@kernel("ZipMap", domain=ML, since=1)
def ZipMap(X, *, classlabels_int64s=None, classlabels_strings=None):
    """A sequence of maps, one per row: {class label: score} (Python dicts; string labels as str)."""
    labels = classlabels_int64s if classlabels_int64s is not None else classlabels_strings
    if labels is None or (classlabels_int64s is not None and classlabels_strings is not None):
        raise ValueError("ZipMap: give one of classlabels_int64s and classlabels_strings")
    rows = np.asarray(X).reshape(-1, X.shape[-1]) if X.ndim > 1 else np.asarray(X)[None]
    if rows.shape[1] != len(labels):
        raise ValueError(f"ZipMap: {rows.shape[1]} scores per row for {len(labels)} labels")
    keys = [int(k) for k in labels] if classlabels_int64s is not None else [_key(k) for k in labels]
    return [dict(zip(keys, (float(v) for v in row))) for row in rows]


def _kernel_matrix(op: str, kernel_type: str, params, x, vectors):
    gamma, coef0, degree = (list(params) + [0.0, 0.0, 0.0])[:3]
    if kernel_type == "LINEAR":
        return x @ vectors.T
    if kernel_type == "POLY":
        return (gamma * (x @ vectors.T) + coef0) ** int(degree)
    if kernel_type == "RBF":
        d = (x * x).sum(1)[:, None] + (vectors * vectors).sum(1)[None, :] - 2 * x @ vectors.T
        return np.exp(-gamma * np.maximum(d, 0))
    if kernel_type == "SIGMOID":
        return np.tanh(gamma * (x @ vectors.T) + coef0)
    raise ValueError(f"{op}: kernel_type '{kernel_type}' is not supported")


@kernel("SVMRegressor", domain=ML, since=1)
def SVMRegressor(X, *, coefficients=None, kernel_params=None, kernel_type="LINEAR", n_supports=0, one_class=0,
                 post_transform="NONE", rho=None, support_vectors=None):
    """sum_i coefficient_i K(x, sv_i) + rho (without support vectors: a linear model x . coefficients + rho);
    one_class gives +1 or -1 by the sign."""
    x = _rows(X)
    coef = np.asarray(coefficients, np.float64)
    if n_supports > 0:
        vectors = np.asarray(support_vectors, np.float64).reshape(n_supports, -1)
        y = _kernel_matrix("SVMRegressor", kernel_type, kernel_params or [], x, vectors) @ coef
    else:
        y = x @ coef
    y = y + (rho[0] if rho else 0.0)
    if one_class:
        y = np.where(y > 0, 1.0, -1.0)
    return _post_transform("SVMRegressor", y[:, None], post_transform).astype(np.float32)


def _coupled_probabilities(r):
    """libsvm's multiclass_probability: class probabilities from pairwise ones r[i, j] (= 1 - r[j, i])."""
    k = r.shape[0]
    q = -r.T * r
    q[np.diag_indices(k)] = 0
    q[np.diag_indices(k)] = [sum(r[j, t] ** 2 for j in range(k) if j != t) for t in range(k)]
    p = np.full(k, 1.0 / k)
    eps = 0.005 / k
    for _ in range(max(100, k)):
        qp = q @ p
        pqp = p @ qp
        if np.abs(qp - pqp).max() < eps:
            break
        for t in range(k):
            diff = (-qp[t] + pqp) / q[t, t]
            p[t] += diff
            pqp = (pqp + diff * (diff * q[t, t] + 2 * qp[t])) / (1 + diff) / (1 + diff)
            qp = (qp + diff * q[t]) / (1 + diff)
            p /= 1 + diff
    return p


@kernel("SVMClassifier", domain=ML, since=1)
def SVMClassifier(X, *, classlabels_ints=None, classlabels_strings=None, coefficients=None, kernel_params=None,
                  kernel_type="LINEAR", post_transform="NONE", prob_a=None, prob_b=None, rho=None,
                  support_vectors=None, vectors_per_class=None):
    """With support vectors: libsvm's one-vs-one decision values (the scores; with prob_a/prob_b, Platt
    probabilities coupled into class probabilities) and a label by votes; two classes give scores [-d, d].
    Without: linear scores x . w_c + rho[0] (onnxruntime and onnx's reference add the first rho to every
    class) and the best class."""
    labels = classlabels_ints if classlabels_ints is not None else classlabels_strings
    if not labels:
        raise ValueError("SVMClassifier: give classlabels_ints or classlabels_strings")
    k = len(labels)
    x = _rows(X)
    coef = np.asarray(coefficients, np.float64)
    rho = np.asarray(rho or [], np.float64)
    if vectors_per_class:
        counts = list(vectors_per_class)
        if len(counts) != k:
            raise ValueError(f"SVMClassifier: vectors_per_class has {len(counts)} values for {k} classes")
        vectors = np.asarray(support_vectors, np.float64).reshape(sum(counts), -1)
        gram = _kernel_matrix("SVMClassifier", kernel_type, kernel_params or [], x, vectors)
        coef = coef.reshape(k - 1, -1)
        starts = np.cumsum([0] + counts)
        decisions, votes = [], np.zeros((x.shape[0], k), np.int64)
        for i in range(k):
            for j in range(i + 1, k):
                si, sj = slice(starts[i], starts[i + 1]), slice(starts[j], starts[j + 1])
                d = gram[:, si] @ coef[j - 1, si] + gram[:, sj] @ coef[i, sj] + rho[len(decisions)]
                decisions.append(d)
                votes[np.arange(x.shape[0]), np.where(d > 0, i, j)] += 1
        index = np.argmax(votes, axis=1)
        scores = np.stack(decisions, axis=1)
        if prob_a:
            f = scores * np.asarray(prob_a, np.float64) + np.asarray(prob_b, np.float64)
            pairwise = np.clip(np.where(f >= 0, np.exp(-np.abs(f)) / (1 + np.exp(-np.abs(f))),
                                        1 / (1 + np.exp(-np.abs(f)))), 1e-7, 1 - 1e-7)
            probs = []
            for row in pairwise:
                r = np.zeros((k, k))
                r[np.triu_indices(k, 1)] = row
                r = r + np.tril(1 - r.T, -1)
                probs.append(_coupled_probabilities(r))
            scores = _post_transform("SVMClassifier", np.array(probs), post_transform)
        elif k == 2:
            if post_transform != "NONE":
                raise ValueError(f"SVMClassifier: post_transform '{post_transform}' for two classes without "
                                 f"probabilities is not supported")
            scores = np.concatenate([-scores, scores], axis=1)
        else:
            scores = _post_transform("SVMClassifier", scores, post_transform)
    else:
        weights = coef.reshape(-1, x.shape[1])
        if weights.shape[0] != k:
            raise ValueError(f"SVMClassifier: a linear classifier needs one row of coefficients per class ({k})")
        scores = x @ weights.T + (rho[0] if rho.size else 0)     # rho[0] for every class, as onnxruntime
        index = np.argmax(scores, axis=1)
        scores = _post_transform("SVMClassifier", scores, post_transform)
    return _labels_at(labels, classlabels_strings is not None, index), scores.astype(np.float32)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@kernel("TreeEnsembleClassifier", domain=ML, since=1)
def TreeEnsembleClassifier(X, *, base_values=None, base_values_as_tensor=None, class_ids, class_nodeids,
                           class_treeids, class_weights=None, class_weights_as_tensor=None, classlabels_int64s=None,
                           classlabels_strings=None, nodes_falsenodeids, nodes_featureids, nodes_hitrates=None,
                           nodes_hitrates_as_tensor=None, nodes_missing_value_tracks_true=None, nodes_modes,
                           nodes_nodeids, nodes_treeids, nodes_truenodeids, nodes_values=None,
                           nodes_values_as_tensor=None, post_transform="NONE"):
    """Class scores summed over the trees plus base values, then post_transform; the label is the best class.
    Two labels with weights for class 0 only are onnxruntime's binary case: one score s; with all weights >= 0
    the label is s > 0.5 and the scores [1 - s, s] (no transform), otherwise s > 0 and [-s, s] (LOGISTIC:
    [sigmoid(-s), sigmoid(s)]).  Other two-label forms (where onnxruntime and onnx's reference part ways)
    raise an error."""
    labels = classlabels_int64s if classlabels_int64s is not None else classlabels_strings
    if not labels:
        raise ValueError("TreeEnsembleClassifier: give classlabels_int64s or classlabels_strings")
    n_classes = len(labels)
    weights = _values(class_weights, class_weights_as_tensor)
    x = _rows(X)
    parts = _legacy_forest("TreeEnsembleClassifier", x, nodes_treeids, nodes_nodeids, nodes_modes, nodes_featureids,
                           _values(nodes_values, nodes_values_as_tensor), nodes_truenodeids, nodes_falsenodeids,
                           nodes_missing_value_tracks_true, class_treeids, class_nodeids, class_ids, weights,
                           n_classes)
    scores = _aggregate("TreeEnsembleClassifier", parts, "SUM", x.shape[0], n_classes)
    reached = np.zeros(scores.shape, bool)
    for _, h in parts:
        reached |= h
    base = _values(base_values, base_values_as_tensor)
    if n_classes > 2:
        if base:
            scores = scores + np.asarray(base, np.float64)
        index = np.argmax(np.where(reached | bool(base), scores, -np.inf), axis=1)
        scores = _post_transform("TreeEnsembleClassifier", scores, post_transform)
    elif n_classes == 2 and set(class_ids) == {0} and len(base) <= 1:
        s = scores[:, 0] + (base[0] if base else 0.0)
        if post_transform not in ("NONE", "LOGISTIC"):
            raise ValueError(f"TreeEnsembleClassifier: post_transform '{post_transform}' for a binary classifier "
                             f"is not supported")
        if all(w >= 0 for w in weights):     # a probability: no transform
            index = (s > 0.5).astype(np.int64)
            scores = np.stack([1 - s, s], axis=1)
        else:
            index = (s > 0).astype(np.int64)
            scores = (np.stack([_sigmoid(-s), _sigmoid(s)], axis=1) if post_transform == "LOGISTIC"
                      else np.stack([-s, s], axis=1))
    else:
        raise ValueError(f"TreeEnsembleClassifier: {n_classes} labels with weights for classes "
                         f"{sorted(set(class_ids))} and {len(base)} base values are not supported")
    return _labels_at(labels, classlabels_strings is not None, index), scores.astype(np.float32)


_S, _F, _T, _I = AttrType.STRINGS, AttrType.FLOATS, AttrType.TENSOR, AttrType.INTS
_LEGACY_TREE_TYPES = {"nodes_modes": _S, "nodes_hitrates": _F, "nodes_values": _F, "base_values": _F,
                      "target_weights": _F, "class_weights": _F, "base_values_as_tensor": _T,
                      "nodes_hitrates_as_tensor": _T, "nodes_values_as_tensor": _T, "target_weights_as_tensor": _T,
                      "class_weights_as_tensor": _T, "nodes_nodeids": _I, "nodes_treeids": _I, "target_ids": _I,
                      "target_nodeids": _I, "target_treeids": _I, "class_ids": _I, "class_nodeids": _I,
                      "class_treeids": _I}
TreeEnsembleRegressor.attribute_types = TreeEnsembleClassifier.attribute_types = _LEGACY_TREE_TYPES
