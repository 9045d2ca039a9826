"""Indicator columns for categorical features (``categorical_features``).

An oblique split ``w . x + b > 0`` orders the values of every feature: on a
column of category codes (``0 = blank, 1 = o, 2 = x``) it cannot send
"o" one way and "blank" and "x" the other, which a CART does with two
thresholds. A tree of such splits then has to spend levels carving out one
code at a time, and a gradient-trained one rarely finds them. On the
tic-tac-toe endgame table (958 boards, nine cells coded 0/1/2), the default
oblique families reached 70 to 92% test accuracy where depth-tuned CART
reaches 87%, and 93 to 98% with one indicator column per code
(``docs/design.md``, "Categorical features").

``fit_indicators`` decides which columns get indicators: with ``"auto"``
(the estimators' default), every column whose training values are all
integers and take 3 to :data:`AUTO_MAX_CATEGORIES` distinct values (codes of a
categorical feature, or small counts); an array of indices, a boolean mask
or feature names choose them explicitly; ``None`` adds none. A column with
two values already is its own indicator. The original column stays, so the
trees keep its order as well. ``expand_indicators`` appends, for every chosen
column ``j`` and every value ``v`` it took in training, the column
``1[x_j == v]`` (a value unseen in training sets none of them); the fitted
model's splits act on those columns, so prediction expands its input the
same way (:func:`~sklearn_difftrees._core.validation.check_predict_data`),
and so does the ONNX graph. This module is torch-free.
"""

import numpy as np

from .._compat import StrOptions
from ._memory import check_memory
from .frames import (CATEGORY, CODED, NUMBER, TIME, column_categories, column_has_missing,
                     column_kinds, column_name, column_values, frame_library,
                     is_missing_value, replace_columns)

__all__ = [
    "AUTO_MAX_CATEGORIES",
    "CATEGORICAL_CONSTRAINT",
    "MAX_CATEGORIES",
    "CATEGORICAL_PARAM_DOC",
    "categorical_dtypes",
    "check_indicator_memory",
    "encode_category_columns",
    "CATEGORICAL_ATTR_DOC",
    "expand_indicators",
    "fit_indicators",
    "indicator_names",
    "indicator_spec",
    "input_importances",
    "match_dtype",
    "numeric_frame_check",
    "split_importances",
    "term_spread",
]

#: Most distinct values of an integer column that ``"auto"`` treats as categorical.
AUTO_MAX_CATEGORIES = 10
#: Most distinct values of a column named in ``categorical_features``.
MAX_CATEGORIES = 255
#: The parameter's entry in the estimators' ``_parameter_constraints``.
CATEGORICAL_CONSTRAINT = ["array-like", StrOptions({"auto"}), None]

CATEGORICAL_PARAM_DOC = f"""    categorical_features : "auto", array-like or None, default="auto"
        Features that also get one indicator column per value (``1[x_j == v]``
        for every value ``v`` of feature ``j`` in the training data), next to
        the feature itself: an oblique split orders a feature's values and
        cannot separate a category code from codes on both sides of it.
        ``"auto"``: every feature whose training values are all integers and
        take 3 to {AUTO_MAX_CATEGORIES} distinct values, and every category column
        (pandas ``category``, polars ``Categorical`` or ``Enum``; of strings or
        other non-numeric categories: coded as their position among the
        training categories, a value outside them as -1).
        An array of int indices, a boolean
        mask or feature names (with ``feature_names_in_``) picks them (at most
        {MAX_CATEGORIES} values each; one of two values is its own indicator and gets
        none); ``None``: no indicators. The choice is made on the rows of
        positive weight of each fit. Prediction builds the same columns (a
        value unseen in training sets none of them).
"""

CATEGORICAL_ATTR_DOC = """    is_categorical_ : ndarray of shape (n_features_in_,), dtype=bool
        The features that got indicator columns (see ``categorical_features``).
    categories_ : list of ndarray or None, of length n_features_in_
        For each of those features its training values (one indicator column
        each, appended after the features in feature order), None for the
        other features (as ``OneHotEncoder.categories_``, one entry per
        feature).
"""


def _integer_valued(column):
    return bool(np.all(np.isfinite(column)) and np.all(column == np.round(column)))


def _chosen_columns(categorical_features, n_features, feature_names):
    """Indices of the features named by an explicit ``categorical_features``."""
    spec = np.asarray(categorical_features)
    if spec.ndim != 1:
        raise ValueError("categorical_features must be 'auto', None or a 1-D array-like.")
    if spec.size == 0:
        return np.zeros(0, dtype=np.int64)
    if spec.dtype.kind == "b":
        if spec.size != n_features:
            raise ValueError(f"categorical_features as a boolean mask must have "
                             f"{n_features} elements, got {spec.size}.")
        return np.flatnonzero(spec)
    if spec.dtype.kind in "USO":
        if feature_names is None:
            raise ValueError("categorical_features holds feature names, but X has none "
                             "(fit on a DataFrame with string column names).")
        names = list(map(str, feature_names))
        missing = [str(s) for s in spec if str(s) not in names]
        if missing:
            raise ValueError(f"categorical_features names unknown features {missing}.")
        return np.array(sorted({names.index(str(s)) for s in spec}), dtype=np.int64)
    if spec.dtype.kind not in "iu":
        raise ValueError("categorical_features must hold feature indices, a boolean mask "
                         f"or feature names; got dtype {spec.dtype}.")
    if np.any((spec < 0) | (spec >= n_features)):
        raise ValueError(f"categorical_features indices must be in [0, {n_features - 1}]; "
                         f"got {spec.tolist()}.")
    return np.unique(spec).astype(np.int64)


def categorical_dtypes(X):
    """Boolean mask of the category columns of the input ``X`` (pandas
    ``category``, polars ``Categorical`` / ``Enum``; before validation turns
    it into an array), or None when ``X`` is not a DataFrame."""
    kinds = column_kinds(X)
    if kinds is None:
        return None
    return np.array([kind in (CODED, CATEGORY) for kind in kinds], dtype=bool)


def encode_category_columns(estimator, X, fit):
    """``X`` with its category columns of non-numeric categories (strings,
    ...: pandas ``category``, polars ``Categorical`` or ``Enum``) replaced
    by their codes, as float64: the position of each value among the
    categories of the fit (``fit=True`` records them in
    ``estimator._category_levels``, ``{column: [category, ...]}``, or
    removes it when there are none; :func:`~.frames.column_categories`). A
    value outside them (at prediction) gets code -1, which sets none of the
    column's indicators; a missing value is refused as a NaN is. At
    prediction those columns may also come as plain strings, in a frame or
    in an object array (e.g. ``df.to_numpy()``). A category column of text
    where the fit had numbers, and text outside category columns, are
    refused with a message naming the column. Anything else is returned as
    it is; the user's frame is never modified.
    """
    kinds = column_kinds(X)
    if fit:
        levels = {j: column_categories(X, j) for j, kind in enumerate(kinds or ())
                  if kind == CODED}
        if levels:
            estimator._category_levels = levels
        elif hasattr(estimator, "_category_levels"):
            del estimator._category_levels
    levels = getattr(estimator, "_category_levels", None) or {}
    if kinds is None:
        return X if fit or not levels else _encode_array(estimator, X, levels)
    if not fit and not _same_columns(estimator, X):
        return X  # validate_data names the mismatched columns
    _refuse_unencoded_columns(estimator, X, kinds, levels)
    if not levels:
        return X
    codes = {}
    for j, categories in levels.items():
        if column_has_missing(X, j):
            raise ValueError(
                f"Input X contains NaN in the category column {column_name(X, j)!r}; "
                "missing values are not supported: impute or drop them first.")
        codes[j] = _codes(categories, column_values(X, j))
    return replace_columns(X, codes)


def _codes(categories, values):
    """float64 position of each of ``values`` among ``categories``, -1 outside."""
    index = {category: code for code, category in enumerate(categories)}
    return np.fromiter((index.get(v, -1) for v in values), dtype=np.float64, count=len(values))


def _encode_array(estimator, X, levels):
    """An object (or string) array at prediction, e.g. ``df.to_numpy()`` of
    the training frame: a copy with the values of its coded columns replaced
    by their codes, as a frame's are (the other columns are left to
    ``validate_data``, which warns that ``X`` has no feature names). Any
    other input is returned as it is."""
    if not isinstance(X, np.ndarray) or X.dtype.kind not in "OU" or X.ndim != 2:
        return X
    if X.shape[1] != estimator.n_features_in_:
        return X  # validate_data's count error
    X = X.astype(object)  # a copy
    for j, categories in levels.items():
        column = X[:, j]
        if any(is_missing_value(v) for v in column):
            raise ValueError(f"Input X contains NaN in the category column {j}; missing "
                             "values are not supported: impute or drop them first.")
        X[:, j] = _codes(categories, column)
    return X


def numeric_frame_check(X, what):
    """For an estimator that codes no column (``LatentTreeClusterer``): a
    ``ValueError`` naming the first column of the DataFrame ``X`` that is not
    numbers (a category column of text, strings, dates; ``what`` says why
    the estimator needs numbers), where scikit-learn's validation said
    "could not convert string to float" or raised numpy's DType promotion
    error. Anything but a DataFrame passes."""
    kinds = column_kinds(X)
    if kinds is not None:
        _refuse_unencoded_columns(None, X, kinds, {}, what=what)


def _refuse_unencoded_columns(estimator, X, kinds, coded, what=None):
    """A clear error for a DataFrame column no estimator can read as numbers:
    dates or durations, strings (or other objects) outside a category column
    or the positions ``coded`` (the fit's category columns), which
    scikit-learn's validation reports as a bare conversion error (``could
    not convert string to float``), and a category column of text where
    the fit had numbers (fitted on an array, or columns of other names in
    another order). ``what`` (:func:`numeric_frame_check`): an estimator
    that codes no column, whose messages advise encoding only."""
    polars = frame_library(X) == "polars"
    dtypes = list(X.schema.values()) if polars else list(X.dtypes)
    encode = ("encode it first, e.g. with scikit-learn's OrdinalEncoder or OneHotEncoder "
              "in a Pipeline.")
    for j, kind in enumerate(kinds):
        if j in coded or kind in (NUMBER, CATEGORY):
            continue
        column, dtype = column_name(X, j), dtypes[j]
        name = getattr(dtype, "name", str(dtype))
        if kind == CODED and what is not None:
            raise ValueError(f"{what}, and the category column {column!r} has non-numeric "
                             f"categories; {encode}")
        if kind == CODED:
            raise ValueError(
                f"Column {column!r} of X is a category column of non-numeric values "
                f"(dtype {name}), but {type(estimator).__name__} was fitted on numbers "
                f"in this position (column {j}): pass the columns of the fit, in its "
                "order.")
        if kind == TIME:
            raise ValueError(
                f"Column {column!r} of X holds dates or durations (dtype {name}); "
                "convert it to numbers first (e.g. days since a reference date).")
        try:
            np.asarray(column_values(X, j), dtype=np.float64)
        except (TypeError, ValueError):
            make = ("a polars Categorical or Enum column (pl.col(col).cast(pl.Categorical)"
                    if polars else "a pandas 'category' column (X[col].astype('category')")
            advice = encode if what is not None else (
                f"make it {make}: categorical_features='auto' then gives it indicator "
                f"columns) or {encode}")
            raise ValueError(
                f"Column {column!r} of X holds strings or other non-numeric values "
                f"(dtype {name}): {advice}") from None


def _same_columns(estimator, X):
    """Whether the columns of the frame ``X`` are those of the fit, so that the
    coded columns are found at their positions of the fit. Other string names
    are left to ``validate_data``'s error that names them; another number of
    columns (a frame without names) raises scikit-learn's count error here,
    where a missing column had raised pandas' ``IndexError``."""
    if not hasattr(estimator, "n_features_in_"):
        return False  # not fitted: validate_data's error
    names = getattr(estimator, "feature_names_in_", None)
    columns = list(X.columns)
    if names is not None and all(isinstance(c, str) for c in columns):
        if columns != list(names):
            return False
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} "
                         f"is expecting {estimator.n_features_in_} features as input.")
    return True


def fit_indicators(categorical_features, X, feature_names=None, from_dtype=None):
    """``(is_categorical, categories)`` of the training data ``X``.

    ``categories`` has one entry per feature (as OneHotEncoder's): the
    sorted distinct values of each chosen column with at least 3 of them (a
    two-valued column is its own indicator), None for the others.
    ``from_dtype`` (:func:`categorical_dtypes`): under ``"auto"``, these
    columns are chosen whatever their values (up to :data:`MAX_CATEGORIES`).
    """
    n_features = X.shape[1]
    is_categorical = np.zeros(n_features, dtype=bool)
    categories = [None] * n_features
    if categorical_features is None:
        return is_categorical, categories
    auto = isinstance(categorical_features, str) and categorical_features == "auto"
    columns = (range(n_features) if auto
               else _chosen_columns(categorical_features, n_features, feature_names))
    for j in columns:
        values = np.unique(X[:, j])
        typed = from_dtype is not None and bool(from_dtype[j])
        if auto and typed and values.size > MAX_CATEGORIES:
            continue
        if auto and not typed and not (3 <= values.size <= AUTO_MAX_CATEGORIES
                                       and _integer_valued(values)):
            continue
        if values.size > MAX_CATEGORIES:
            raise ValueError(
                f"categorical_features: feature {j} takes {values.size} distinct values in "
                f"the training data, more than {MAX_CATEGORIES}; leave it numeric."
            )
        if values.size >= 3:
            is_categorical[j] = True
            categories[j] = values.astype(np.float64)
    return is_categorical, categories


def indicator_spec(estimator):
    """``[(feature, values), ...]`` of a fitted estimator (empty without indicators)."""
    mask = getattr(estimator, "is_categorical_", None)
    if mask is None:
        return []
    return [(j, estimator.categories_[j]) for j in np.flatnonzero(mask).tolist()]


def check_indicator_memory(estimator, X, spec):
    """:class:`~sklearn_difftrees._core._memory.MemoryLimitError` when the
    expanded training input (and its standardized copy) would exceed the
    memory limit: ``"auto"`` on many low-cardinality columns multiplies the
    columns up to elevenfold."""
    extra = sum(values.size for _, values in spec)
    if extra:
        n_bytes = 2 * X.shape[0] * (X.shape[1] + extra) * X.itemsize
        check_memory(type(estimator).__name__, n_bytes,
                     f"categorical_features={estimator.categorical_features!r} ({extra} "
                     f"indicator columns on {X.shape[0]} rows; None adds none)")


def match_dtype(values, x_dtype):
    """The dtype in which a column of dtype ``x_dtype`` is compared with the
    training ``values``: float32 when the input is float32 or every value is
    a float32 number (integer codes, a float32 fit), else float64. A model fit
    on float64 ``0.1`` then matches float32 input ``0.1``, and one fit on
    float32 matches float64 input: the value, not its precision, decides."""
    if np.dtype(x_dtype) == np.float32:
        return np.float32
    exact = np.array_equal(values.astype(np.float32).astype(np.float64), values)
    return np.float32 if exact else np.float64


def expand_indicators(X, spec):
    """``X`` with the indicator columns of ``spec`` appended (``X`` itself when none)."""
    if not spec:
        return X
    blocks = [X]
    for j, values in spec:
        dt = match_dtype(values, X.dtype)
        blocks.append((X[:, [j]].astype(dt) == values[None, :].astype(dt)).astype(X.dtype))
    return np.ascontiguousarray(np.hstack(blocks))


def indicator_names(names, spec):
    """Feature names extended by one ``"[name==value]"`` per indicator column
    (bracketed, so that an export's ``2.25*[a==1]`` reads as a product; the
    value in full: ``:g`` gave 1234567 and 1234568 the same name)."""
    return list(names) + [f"[{names[j]}=={np.format_float_positional(v, trim='-')}]"
                          for j, values in spec for v in values]


def term_spread(estimator, coef):
    """Spread of every input feature's term in linear scores over the
    expanded input: shape ``(n_rows, n_features_in_)``.

    ``coef`` (``(n_rows, n_columns)``, raw units) holds the coefficients of
    scores ``coef @ x`` over the expanded columns (the features, then the
    indicator columns of :func:`indicator_spec`). The result is, for each
    row and input feature, the standard deviation over the fit's rows
    (weighted, as the estimator's standardizer saw them: its
    ``_feature_mean`` / ``_feature_scale``) of that feature's part of the
    score: ``|w_j| * std_j`` for a plain feature; for a categorical one, of
    ``w_j * x_j + sum_v w_v * [x_j == v]``, from the proportions of its
    values (the indicator columns' means; every training value has one). So
    a feature's importance does not grow with its number of indicator
    columns, as a sum of their ``|w_v| * std_v`` would.
    """
    coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    scale = np.asarray(estimator._feature_scale, dtype=np.float64)
    n = estimator.n_features_in_
    out = np.abs(coef[:, :n]) * scale[:n]
    mean = getattr(estimator, "_feature_mean", None)
    start = n
    for j, values in indicator_spec(estimator):
        stop = start + values.size
        if mean is None:  # pickled before the model kept its means: the indicators' sum
            out[:, j] += np.abs(coef[:, start:stop]) @ scale[start:stop]
            start = stop
            continue
        codes = np.asarray(values, dtype=np.float64)
        p = mean[start:stop]  # proportions of the values
        w_raw = coef[:, j]
        v = w_raw[:, None] * codes[None, :] + coef[:, start:stop]  # a value's term
        first = v @ p  # the term's mean, then its spread about it
        out[:, j] = np.sqrt(((v - first[:, None]) ** 2) @ p)
        start = stop
    return out


def input_importances(estimator, importances):
    """``importances`` of the ``n_features_in_`` features (e.g. node-weighted
    sums of :func:`term_spread`) normalized to sum to one (left as they are
    when all zero)."""
    imp = np.asarray(importances, dtype=np.float64)
    total = imp.sum()
    return imp / total if total > 0 else imp


def split_importances(estimator, spread, node_weight):
    """The ``feature_importances_`` of linear splits, the one definition of
    the package's oblique, polytope and soft trees.

    ``spread`` (one row per split, one column per input feature: the
    :func:`term_spread` of the split's coefficients, or a polytope split's
    facets' spreads weighted by their ``r_k``) gives each feature's use of
    the split; each row is divided by its sum (the features' shares of the
    split, 0 for a split without weights), so that a split's scale, which
    routes nothing differently (hard splits) or sets a soft split's
    sharpness, does not count. The shares are weighted by ``node_weight``
    (one number per split: the training weight the split divides), summed
    over the splits and normalized by :func:`input_importances`.
    """
    spread = np.asarray(spread, dtype=np.float64)
    total = spread.sum(axis=1, keepdims=True)
    shares = np.divide(spread, total, out=np.zeros_like(spread), where=total > 0)
    return input_importances(estimator, np.asarray(node_weight, dtype=np.float64) @ shares)
