"""What a DGT bandit plays and what it learns from (torch-free): the exploration
policy of the classifier (eq. 7), the gradient estimate of the regressor from
one- or two-point loss feedback (eqs. 9-10), the named losses ``fit``
simulates, and the checks of logged feedback (``update``). Also used by the
baselines of :mod:`sklearn_difftrees.bandit`."""

import numpy as np
from sklearn.utils.validation import column_or_1d

__all__ = [
    "CLASSIFICATION_LOSSES",
    "action_set",
    "REGRESSION_LOSSES",
    "check_classification_feedback",
    "check_feedback",
    "check_regression_feedback",
    "derivative_estimate",
    "linear_rmsprop",
    "policy_probabilities",
    "warn_if_created_from_one_context",
    "warn_if_targets_dwarf_delta",
]


def _zero_one_loss(y_true, actions):
    return (np.asarray(y_true) != np.asarray(actions)).astype(np.float64)


def _squared_loss(y_true, y_played):
    return (np.asarray(y_played, dtype=np.float64) - np.asarray(y_true, dtype=np.float64)) ** 2


def _huber_loss(y_true, y_played, threshold=1.0):
    r = np.abs(np.asarray(y_played, dtype=np.float64) - np.asarray(y_true, dtype=np.float64))
    return np.where(r <= threshold, 0.5 * r**2, threshold * (r - 0.5 * threshold))


#: Named simulated losses of ``fit`` (``loss(y_true, y_played) -> losses``).
CLASSIFICATION_LOSSES = {"zero_one": _zero_one_loss}
REGRESSION_LOSSES = {"squared": _squared_loss, "huber": _huber_loss}


def policy_probabilities(leaf_logits, exploration):
    """Eq. 7: ``(1 - delta) * 1[k = argmax theta] + delta / K`` per row."""
    leaf_logits = np.asarray(leaf_logits)
    K = leaf_logits.shape[1]
    p = np.full(leaf_logits.shape, exploration / K)
    p[np.arange(leaf_logits.shape[0]), np.argmax(leaf_logits, axis=1)] += 1.0 - exploration
    return p


def derivative_estimate(losses, perturbations, delta):
    """Estimate of ``loss'(y_hat)`` from bandit feedback (eqs. 9 and 10).

    ``losses`` of shape (n,): one-point, ``loss(y_hat + delta u) u / delta``;
    of shape (n, 2): two-point, ``(loss(y_hat + delta u) - loss(y_hat - delta u))
    u / (2 delta)`` (= ``(loss(y_hat + delta) - loss(y_hat - delta)) / 2 delta``).
    """
    losses = np.asarray(losses, dtype=np.float64)
    u = np.asarray(perturbations, dtype=np.float64)
    if losses.ndim == 1:
        return losses * u / delta
    return (losses[:, 0] - losses[:, 1]) * u / (2.0 * delta)


def action_set(classes):
    """The sorted distinct actions of ``classes``; at least 2."""
    classes = np.unique(np.asarray(classes))
    if classes.size < 2:
        raise ValueError(f"classes must contain at least 2 distinct labels; got {classes}.")
    return classes


def linear_rmsprop(coef, intercept, sq, Z, derivative, learning_rate, alpha):
    """RMSprop steps (decay 0.99, ``eps=1e-5``) of ``w @ z + b``, one per row
    of ``Z``, on the estimated loss derivatives; returns new ``(coef,
    intercept, sq)``. Raises FloatingPointError, the inputs untouched, where
    a squared gradient overflows (huge losses): its running mean would stay
    inf and every later step be 0, a learner frozen for good."""
    coef, sq = coef.copy(), sq.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for z, gi in zip(Z, derivative):
            grad = gi * np.append(z, 1.0)
            grad[:-1] += alpha * coef
            sq = 0.99 * sq + 0.01 * grad**2
            if not np.all(np.isfinite(sq)):
                raise FloatingPointError(
                    "the squared loss derivative overflowed: the losses passed are too large "
                    "for float64 arithmetic. Rescale the losses (and targets).")
            step = learning_rate * grad / (np.sqrt(sq) + 1e-5)
            coef -= step[:-1]
            intercept -= step[-1]
    return coef, intercept, sq


def check_feedback(values, shape, low=None, high=None, name="losses"):
    """``values`` as a float64 array of ``shape``, finite (and within ``[low, high]``)."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {values.shape}.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be finite.")
    if low is not None and (values.min(initial=low) < low or values.max(initial=high) > high):
        raise ValueError(f"{name} must lie in [{low}, {high}].")
    return values


def check_classification_feedback(classes, n, actions, losses, propensities, low=None,
                                  high=None):
    """``(indices in classes of the actions, losses, propensities)`` of ``n`` rounds.

    Each action must be a value of the sorted ``classes`` as given (not cast to
    their dtype first: that truncated 1.9 to class 1 and "abc" to class "a");
    losses finite (within ``[low, high]``), propensities in ``(0, 1]``.
    """
    actions = column_or_1d(np.asarray(actions), warn=True)
    if actions.shape != (n,):
        raise ValueError(f"actions must have shape ({n},); got {actions.shape}.")
    try:
        idx = np.minimum(np.searchsorted(classes, actions), classes.size - 1)
    except TypeError:  # object labels that do not compare with classes
        idx = np.zeros(n, dtype=np.intp)
    if not np.array_equal(classes[idx], actions):
        raise ValueError(f"actions must be values of classes_={classes}.")
    losses = check_feedback(losses, (n,), low, high)
    propensities = check_feedback(propensities, (n,), name="propensities")
    if np.any(propensities <= 0) or np.any(propensities > 1):
        raise ValueError("propensities must lie in (0, 1].")
    return idx, losses, propensities


def check_regression_feedback(n, feedback, played, losses, perturbations):
    """``(losses, perturbations)`` of ``n`` rounds of ``feedback`` ("one_point":
    shape (n,), "two_point": (n, 2)), finite; the signs ``u`` are -1 or +1."""
    shape = (n, 2) if feedback == "two_point" else (n,)
    check_feedback(played, shape, name="played")
    losses = check_feedback(losses, shape)
    u = check_feedback(perturbations, (n,), name="perturbations")
    if not np.all(np.abs(u) == 1):
        raise ValueError("perturbations must be -1 or +1.")
    return losses, u


#: ``fit`` warns when the targets' root mean square exceeds this many
#: ``delta``, or their standard deviation is below ``delta`` over this.
TARGET_SCALE_WARN = 10.0


def warn_if_targets_dwarf_delta(est, y):
    """Warn where the simulated protocol can learn little: the tree starts at
    0 and moves by steps of ``delta``'s scale (target units), so targets far
    from 0 in units of ``delta`` (the default 0.5 is the paper's, for targets
    in [0, 1]) need many passes, and targets that vary far less than
    ``delta`` drown in its perturbations. Only the warning reads ``y``."""
    import warnings

    peak = float(np.max(np.abs(y))) if y.size else 0.0
    if peak == 0.0:
        return
    rms = peak * float(np.sqrt(np.mean((y / peak) ** 2)))  # no overflow on huge targets
    if rms > TARGET_SCALE_WARN * est.delta:
        warnings.warn(
            f"{type(est).__name__}: the targets' root mean square ({rms:.3g}) is "
            f"{rms / est.delta:.3g} times delta={est.delta} (target units), and the tree "
            "starts at 0: the simulated protocol learns little of them. Scale the targets, "
            "e.g. TransformedTargetRegressor(regressor=DGTBanditRegressor(), "
            "transformer=MinMaxScaler()), or set delta to their scale.",
            UserWarning,
        )
        return
    spread = peak * float(np.std(y / peak))
    if 0 < spread and spread * TARGET_SCALE_WARN < est.delta:  # a constant: nothing to swamp
        # The other way round: perturbations of delta's scale swamp targets that
        # vary far less (targets times 1e-12 fitted to an R^2 of -1e22, silently).
        warnings.warn(
            f"{type(est).__name__}: the targets vary by {spread:.3g} (standard deviation), "
            f"1/{est.delta / spread:.3g} of delta={est.delta} (target units): the "
            "simulated protocol's perturbations of delta's scale swamp them. Scale the "
            "targets, e.g. TransformedTargetRegressor(regressor=DGTBanditRegressor(), "
            "transformer=MinMaxScaler()), or set delta to their scale.",
            UserWarning,
        )


def warn_if_created_from_one_context(est, n_rows):
    """Warn when a learner with ``standardize=True`` is created from one
    context: no feature varies in it, so none can be scaled (each becomes
    ``(x - x0) / |x0|``) and the DGT bandits start every split weight at 0
    (the weights of columns constant at creation). On digits, ``simulate``
    with ``batch_size=1`` and no ``init_contexts`` then reached 29-49%
    held-out accuracy instead of 84-87%."""
    import warnings

    if n_rows >= 2:
        return
    sample = "sample_actions" if hasattr(est, "sample_actions") else "sample_predictions"
    splits = " (nor the splits started)" if hasattr(est, "split_init") else ""
    warnings.warn(
        f"{type(est).__name__} was created from 1 context, with standardize=True: no "
        f"feature varies in it, so the contexts cannot be standardized{splits}. Create it "
        "from a representative batch, e.g. "
        f"{sample}(X_burn_in) with logged or first contexts (simulate: init_contexts=...), "
        "or scale the features yourself and pass standardize=False.",
        UserWarning,
        stacklevel=3,
    )
