"""What a DGT bandit plays and what it learns from (torch-free): the exploration
policy of the classifier (eq. 7), the gradient estimate of the regressor from
one- or two-point loss feedback (eqs. 9-10), the named losses ``fit``
simulates, and the checks of logged feedback (``update``). Also used by the
baselines of :mod:`sklearn_difftrees.bandit`."""

import numpy as np
from sklearn.utils.validation import column_or_1d

__all__ = [
    "CLASSIFICATION_LOSSES",
    "REGRESSION_LOSSES",
    "check_classification_feedback",
    "check_feedback",
    "check_regression_feedback",
    "derivative_estimate",
    "policy_probabilities",
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
