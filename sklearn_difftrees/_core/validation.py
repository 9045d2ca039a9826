"""Input validation, sample weights, scaling and validation splits.

Shared by every estimator so that bad input gets the same clear error
everywhere. Decisions taken once for the whole package:

* ``X`` is validated to float32 or float64 (float32 kept, anything else cast to
  float64), must be finite, dense and 2-D. **Sparse input is refused** with
  scikit-learn's standard ``TypeError``: the oblique splits mix every feature,
  so a sparse matrix would be densified anyway and the user should decide
  when to pay that memory.
* User arrays are never modified: the scaler and weights work on copies.
* An estimator with a ``categorical_features`` parameter gets indicator
  columns appended to ``X`` at fit and at prediction
  (:mod:`~sklearn_difftrees._core.categorical`).
"""

import contextlib
import numbers

import numpy as np
from sklearn.base import is_classifier
from sklearn.model_selection import train_test_split
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets

from .._compat import _check_sample_weight, validate_data
from .categorical import (categorical_dtypes, check_indicator_memory,
                          encode_category_columns, expand_indicators, fit_indicators,
                          indicator_spec)
from ._warn import in_internal_fit, warn
from .frames import is_missing_value
from .greedy import quiet_internal_fit

__all__ = [
    "check_fit_data",
    "check_predict_data",
    "check_warm_depth",
    "check_warm_state",
    "constant_columns",
    "fit_rows",
    "encode_classification_target",
    "fit_standardizer",
    "normalize_weights",
    "validation_split",
]

_DTYPES = [np.float64, np.float32]


def check_fit_data(estimator, X, y, sample_weight, *, multi_output, min_samples=2,
                   warm=False):
    """Validate training data, set ``n_features_in_``/``feature_names_in_``.

    Returns ``X`` (float32/float64, C-contiguous), ``y`` and a float64 copy of
    ``sample_weight`` (ones when ``None``, and when all positive weights are
    equal: :func:`normalize_weights`). With ``warm=True`` (a ``warm_start``
    continuation) ``X`` must have the features of the first fit, and a
    refusal leaves ``n_features_in_``/``feature_names_in_`` as they were, so
    the fitted model still predicts.
    """
    from_dtype = categorical_dtypes(X)
    _refuse_missing_target(y)
    if not multi_output:
        _check_one_target(estimator, y)
    try:
        X = encode_category_columns(estimator, X, fit=not warm)
        X, y = validate_data(
            estimator,
            X,
            y,
            dtype=_DTYPES,
            order="C",
            multi_output=multi_output,
            y_numeric=False,
            ensure_min_samples=min_samples,
            reset=not warm,
        )
    except ValueError as exc:
        if warm and ("features" in str(exc) or "feature names" in str(exc)):
            raise ValueError(
                f"warm_start=True continues the previous fit: {exc} Use "
                "warm_start=False to fit a new model."
            ) from exc
        raise
    sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, copy=True)
    _check_weights(sample_weight, "sample_weight")
    sample_weight = _relative(sample_weight)
    if _all_equal(sample_weight):
        sample_weight = (sample_weight > 0).astype(np.float64)
    if hasattr(estimator, "categorical_features"):  # the estimator's parameter
        if not warm:  # a continuation keeps the first fit's columns
            # From the rows of positive weight: a zero-weight row is not in the
            # data, so its values must not add (or cost a feature) indicators.
            estimator.is_categorical_, estimator.categories_ = fit_indicators(
                estimator.categorical_features, X[sample_weight > 0],
                getattr(estimator, "feature_names_in_", None), from_dtype)
        check_indicator_memory(estimator, X, indicator_spec(estimator))
        X = expand_indicators(X, indicator_spec(estimator))
    return X, y, sample_weight


def _refuse_missing_target(y):
    """scikit-learn's ``Input y contains NaN`` for a missing label of any
    kind. A numeric ``y`` gets it from ``validate_data``; a ``pd.NA`` or
    ``None`` among strings (pandas ``string``, ``object``, ``category``,
    polars) raised ``TypeError: boolean value of NA is ambiguous`` or
    ``'<' not supported between 'NoneType' and 'str'`` there."""
    if y is None:  # validate_data's "requires y to be passed"
        return
    isna = getattr(y, "isna", None) or getattr(y, "is_null", None)  # pandas / polars Series
    if callable(isna):
        missing = bool(np.asarray(isna()).any())
    else:
        try:
            values = np.asarray(y)
        except (TypeError, ValueError):  # ragged or odd: validate_data's own error
            return
        missing = values.dtype == object and any(is_missing_value(v) for v in values.ravel())
    if missing:
        raise ValueError("Input y contains NaN (a missing value: NaN, None or pd.NA); "
                         "drop those rows or impute the target first.")


def _check_one_target(estimator, y):
    """Refuse a ``y`` of several columns with a message that says what to do
    (scikit-learn's "y should be a 1d array" did not); a column vector is left
    to ``validate_data`` (a warning, then raveled)."""
    try:  # np.asarray, not np.shape: array-likes may implement __array__ only
        shape = np.asarray(y).shape
    except (TypeError, ValueError):  # ragged or odd: validate_data's own error
        return
    if len(shape) == 2 and shape[1] > 1:
        kind = "Classifier" if is_classifier(estimator) else "Regressor"
        raise ValueError(
            f"{type(estimator).__name__} fits one target, but y has shape {shape} "
            f"({shape[1]} targets). Wrap it in sklearn.multioutput.MultiOutput{kind} "
            f"(one model per target) or {kind}Chain.")


def _check_weights(sample_weight, what):
    # sample_weight alone is finite (_check_sample_weight); with class_weight
    # folded in, a NaN or inf class weight would pass the sign checks below.
    if not np.all(np.isfinite(sample_weight)):
        raise ValueError(f"{what} must be finite (no NaN or inf).")
    if np.any(sample_weight < 0):
        raise ValueError(f"{what} must be non-negative.")
    if not np.any(sample_weight > 0):
        raise ValueError(f"{what} must contain at least one positive weight.")


#: :func:`_relative` rescales the weights when the largest lies outside this
#: range, and a weight below its lower end times the largest counts as 0.
WEIGHT_RANGE = (1e-30, 1e30)


def _relative(sample_weight):
    """Weights count only relative to each other: divided by the largest when
    it lies outside :data:`WEIGHT_RANGE`, so that their sums, weighted moments
    and float32 copies stay finite (weights of 1e308 overflowed there, and
    the fits failed with a divergence or a zero-weight error); a weight
    below ``WEIGHT_RANGE[0]`` times the largest becomes 0 (its row is
    dropped, as its float32 copy would be 0 in training)."""
    top = float(np.max(sample_weight, initial=0.0))
    if not np.isfinite(top):  # NaN or inf: left to the checks' clear error
        return sample_weight
    if top > 0 and not WEIGHT_RANGE[0] <= top <= WEIGHT_RANGE[1]:
        sample_weight = sample_weight / top
        top = 1.0
    tiny = (sample_weight > 0) & (sample_weight < WEIGHT_RANGE[0] * top)
    if tiny.any():
        sample_weight = np.where(tiny, 0.0, sample_weight)
    return sample_weight


def _all_equal(sample_weight):
    """Whether the positive weights are all equal (and there is one)."""
    values = sample_weight[sample_weight > 0]
    return values.size > 0 and bool(np.all(values == values[0]))


def check_predict_data(estimator, X):
    """Validate prediction-time input against what the estimator was fitted on,
    with the indicator columns of its categorical features appended."""
    X = encode_category_columns(estimator, X, fit=False)
    X = validate_data(estimator, X, dtype=_DTYPES, order="C", reset=False)
    return expand_indicators(X, indicator_spec(estimator))


def encode_classification_target(estimator, y, sample_weight):
    """Label-encode ``y`` and fold ``class_weight`` into the sample weights.

    Sets ``classes_`` and ``n_classes_`` on ``estimator``. Raises a clear
    error when fewer than two classes are present.
    """
    # A cross-check's clone fits a part of the user's rows: scikit-learn's
    # ">50% of the samples are unique classes" there was not the user's.
    with (quiet_internal_fit(y) if in_internal_fit() else contextlib.nullcontext()):
        check_classification_targets(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(
            f"{type(estimator).__name__} supports a single classification target; "
            f"got y with shape {y.shape}."
        )
    classes, y_enc = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"{type(estimator).__name__} needs samples of at least 2 classes in the "
            f"data, but the data contains only one class: {classes[0]!r}."
        )
    estimator.classes_ = classes
    estimator.n_classes_ = int(classes.size)
    class_weight = getattr(estimator, "class_weight", None)
    if class_weight is not None:
        sample_weight = sample_weight * _relative(compute_sample_weight(class_weight, y))
        # A class weight of 0 for every class, or a negative one, leaves
        # weights that fit() could not use: the same errors as sample_weight.
        _check_weights(sample_weight, "sample_weight * class_weight")
        sample_weight = _relative(sample_weight)
    return y_enc.astype(np.int64), sample_weight


#: Spread (weighted standard deviation), relative to the column's largest
#: absolute value, below which a column is numerically constant.
CONSTANT_RTOL = 1e-12


def _scaled_moments(X, sample_weight):
    """``(X, peak, mean_s, std_s)``: the rows of positive weight (float64), each
    column's largest absolute value (1 for a column of zeros) and the
    weighted mean and standard deviation of the column divided by it."""
    keep = sample_weight > 0
    X, sample_weight = X[keep].astype(np.float64), sample_weight[keep]
    w = sample_weight / sample_weight.sum()
    peak = np.abs(X).max(axis=0)
    peak[~(peak > 0)] = 1.0  # a column of zeros
    Xs = X / peak
    mean_s = w @ Xs
    std_s = np.sqrt(w @ (Xs - mean_s) ** 2)
    return X, peak, mean_s, std_s


def constant_columns(X, sample_weight):
    """Boolean mask of the columns :func:`fit_standardizer` treats as constant
    (spread below :data:`CONSTANT_RTOL` of their magnitude over the rows of
    positive weight). Their standardized values are ~0, so their weights are
    never trained: every family drops them from the fitted splits, so that
    neither predictions nor importances depend on such a column."""
    return _scaled_moments(X, sample_weight)[3] < CONSTANT_RTOL


def fit_standardizer(X, sample_weight, what="features"):
    """Weighted per-column mean and scale, robust to any finite magnitude.

    Each column is first divided by its largest absolute value, so that the
    mean and variance are computed on numbers in ``[-1, 1]`` and never
    overflow (``X * 1e200`` standardizes like ``X``), then scaled back.

    A column whose spread is below ``1e-12`` of its largest absolute value is
    numerically constant (:func:`constant_columns`): it gets the scale
    ``max |x|`` (1 for a column of zeros), so its standardized values stay ~0,
    and the fitted model drops its weights. A
    column that varies but that little triggers a :class:`UserWarning` naming
    it (an exactly constant column carries no information and is ignored
    without a word). ``n_features_in_`` is unaffected: predict still takes
    every column.

    Zero-weight rows are dropped first, so that the result is bit-identical to
    the one computed without them (not only equal up to rounding).
    """
    X, peak, mean_s, std_s = _scaled_moments(X, sample_weight)
    constant = std_s < CONSTANT_RTOL
    varies = np.ptp(X, axis=0) > 0
    mean = np.where(varies, mean_s * peak, X[0])  # exactly constant: its value, not a rounded mean
    with np.errstate(divide="ignore", over="ignore"):
        subnormal = ~np.isfinite(1.0 / peak)
    scale = np.where(constant, np.where(subnormal, 1.0, peak), std_s * peak)
    with np.errstate(divide="ignore", over="ignore"):
        tiny = np.flatnonzero(~np.isfinite(1.0 / scale))
    if tiny.size:  # subnormal magnitudes: 1 / scale overflows
        cols = ", ".join(str(j) for j in tiny[:10]) + (", ..." if tiny.size > 10 else "")
        raise ValueError(
            f"X holds values too small to standardize: the spread of {what} (column(s) "
            f"{cols}) is about {scale[tiny].max():.3g}, below the smallest normal float64; "
            "rescale X to moderate magnitudes."
        )
    near = np.flatnonzero(constant & varies)
    if near.size:
        cols = ", ".join(str(j) for j in near[:10]) + (", ..." if near.size > 10 else "")
        warn(
            f"{near.size} {what} (column(s) {cols}) vary by less than 1e-12 of their "
            "magnitude over the training rows and are treated as constant (ignored).",
            UserWarning,
        )
    return mean, scale


def normalize_weights(sample_weight):
    """Sample weights rescaled to a mean of 1 over the rows of positive weight.

    Weights that are equal on all those rows become exactly 1 (0 elsewhere),
    so that ``sample_weight=np.full(n, c)`` fits bit for bit the model of no
    weights for any ``c > 0`` (a division by the mean would leave
    ``0.9999999999999999`` here and there, and the greedy starts and splits
    break their ties on such differences).
    """
    sample_weight = np.asarray(sample_weight, dtype=np.float64)
    positive = sample_weight > 0
    if not positive.any() or _all_equal(sample_weight):
        return positive.astype(np.float64)
    # Each weight divided by the largest first: one correctly rounded division
    # of two weights, so weights multiplied by a constant (exactly: integer
    # weights times an integer, any power of two) normalize to the same
    # weights bit for bit, as scikit-learn's trees treat them. A division by
    # the mean (a rounded sum) left 3 * w and w one ulp apart on most rows,
    # and the greedy starts and subtrees broke their ties on that.
    ratio = sample_weight / sample_weight.max()
    return ratio / ratio[positive].mean()


def validation_split(n_samples, fraction, random_state, stratify=None):
    """Indices ``(train, val)`` holding out ``fraction`` of the samples.

    Stratified when ``stratify`` is given and every class has at least two
    members; at least one sample on each side.
    """
    if n_samples < 2:
        raise ValueError(
            "early_stopping needs at least 2 samples of positive weight to hold out a "
            f"validation set; got {n_samples}."
        )
    n_val = min(max(1, int(round(fraction * n_samples))), n_samples - 1)
    idx = np.arange(n_samples)
    if stratify is not None:
        _, counts = np.unique(stratify, return_counts=True)
        if counts.min() < 2 or n_val < counts.size or n_samples - n_val < counts.size:
            stratify = None
    seed = random_state if isinstance(random_state, numbers.Integral) else random_state.randint(2**31 - 1)
    train, val = train_test_split(idx, test_size=n_val, random_state=seed, stratify=stratify)
    return np.sort(train), np.sort(val)


def check_warm_state(estimator, new_state, old_state):
    """Refuse a ``warm_start`` continuation whose parameters build a module of
    other shapes than the first fit's (``max_depth``, ``split``, a head's
    width, ...) with a ``ValueError``, before ``load_state_dict`` fails with
    a torch error. ``new_state`` and ``old_state`` map names to arrays or
    tensors."""
    old = {k: tuple(v.shape) for k, v in old_state.items()}
    new = {k: tuple(v.shape) for k, v in new_state.items()}
    if old != new:
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        raise ValueError(
            f"warm_start=True continues the previous fit, but the parameters of "
            f"{type(estimator).__name__} now build a model of other shapes "
            f"({', '.join(changed)}); set them back or use warm_start=False to "
            "fit a new model."
        )


def check_warm_depth(estimator):
    """``max_depth_``, the depth to build: of this fit (set before the module
    is built) or, in a ``warm_start`` continuation, of the fit it continues,
    which ``max_depth`` must then be ``"auto"`` or equal to (``ValueError``
    otherwise, before any shape is compared)."""
    if estimator.max_depth not in ("auto", estimator.max_depth_):
        raise ValueError(
            f"warm_start=True continues the previous fit, whose tree has depth "
            f"{estimator.max_depth_}; got max_depth={estimator.max_depth}. Use "
            "warm_start=False to fit a new tree."
        )
    return estimator.max_depth_


def fit_rows(estimator, X, Y, sample_weight, keep):
    """``(X, Z, Y, w)`` of the fit rows ``keep`` of a fitted gradient model:
    raw ``X``, standardized ``Z`` (its ``_feature_mean`` / ``_feature_scale``;
    constant columns 0, as in training), the encoded target (float64 for a
    regressor) and weights of mean one: the rows its greedy checks grow
    CARTs on."""
    X, Y, w = X[keep], Y[keep], normalize_weights(sample_weight[keep])
    Z = (X - estimator._feature_mean) / estimator._feature_scale
    Z[:, constant_columns(X, w)] = 0.0
    return X, Z, (Y if is_classifier(estimator) else np.asarray(Y, dtype=np.float64)), w
