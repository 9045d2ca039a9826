"""What a DGT bandit plays and what it learns from (torch-free): the exploration
policy of the classifier (eq. 7), the gradient estimate of the regressor from
one- or two-point loss feedback (eqs. 9-10), and the named losses ``fit``
simulates. Also used by the baselines of :mod:`sklearn_difftrees.bandit`."""

import numpy as np

__all__ = [
    "CLASSIFICATION_LOSSES",
    "REGRESSION_LOSSES",
    "derivative_estimate",
    "policy_probabilities",
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
