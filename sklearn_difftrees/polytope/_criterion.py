"""ConvexPolytopeTree's split criterion: polytope scores of standardized rows,
node impurity (entropy / variance) and the best hard threshold on a score."""

import numpy as np

__all__ = ["_Criterion", "_softplus", "_std_scores"]


def _softplus(z):
    return np.logaddexp(0.0, z)


def _std_scores(Z, beta, bias, r):
    """Polytope score of the standardized rows ``Z`` (float64 numpy)."""
    return _softplus(Z @ beta.T + bias) @ r


class _Criterion:
    """Impurity of a node and the best threshold on sorted scores.

    Classification: entropy (nats) of the weighted class distribution.
    Regression: mean over outputs of the weighted variance (standardized
    targets). Gains follow scikit-learn's ``min_impurity_decrease``:
    ``W_t / W * (I_t - W_L / W_t * I_L - W_R / W_t * I_R)``.
    """

    def __init__(self, classification, n_classes=None):
        self.classification = classification
        self.n_classes = n_classes

    def stats(self, Y, w):
        if self.classification:
            S = np.zeros((Y.shape[0], self.n_classes))
            S[np.arange(Y.shape[0]), Y] = w
            return S
        return np.column_stack([w[:, None] * Y, w[:, None] * Y**2])

    def impurity(self, S, W):
        """Impurity from summed stats ``S`` (..., m) and total weights ``W`` (...)."""
        W = np.maximum(W, 1e-300)
        if self.classification:
            p = S / W[..., None]
            with np.errstate(divide="ignore", invalid="ignore"):
                return -np.where(p > 0, p * np.log(p), 0.0).sum(-1)
        k = S.shape[-1] // 2
        mean = S[..., :k] / W[..., None]
        var = S[..., k:] / W[..., None] - mean**2
        return np.maximum(var, 0.0).mean(-1)

    def node_impurity(self, Y, w):
        return float(self.impurity(self.stats(Y, w).sum(0), np.asarray(w.sum())))

    def best_threshold(self, s, Y, w, W_total, min_samples_leaf, min_weight_leaf=0.0):
        """``(tau, gain)`` of the best split ``s <= tau`` of one node, or ``None``."""
        n = s.shape[0]
        if n < 2 * min_samples_leaf:
            return None
        order = np.argsort(s, kind="stable")
        s_sorted = s[order]
        cum = np.cumsum(self.stats(Y[order], w[order]), axis=0)
        cw = np.cumsum(w[order])
        i = np.arange(1, n)  # left = first i rows
        ok = (s_sorted[i] > s_sorted[i - 1]) & (i >= min_samples_leaf) & (n - i >= min_samples_leaf)
        ok &= (cw[i - 1] > 0) & (cw[-1] - cw[i - 1] > 0)
        ok &= (cw[i - 1] >= min_weight_leaf) & (cw[-1] - cw[i - 1] >= min_weight_leaf)
        if not ok.any():
            return None
        i = i[ok]
        SL, WL = cum[i - 1], cw[i - 1]
        SR, WR = cum[-1] - SL, cw[-1] - WL
        Wt = cw[-1]
        child = (WL * self.impurity(SL, WL) + WR * self.impurity(SR, WR)) / Wt
        parent = float(self.impurity(cum[-1], np.asarray(Wt)))
        best = int(np.argmin(child))
        gain = Wt / W_total * (parent - child[best])
        k = i[best]
        tau = 0.5 * (s_sorted[k - 1] + s_sorted[k])
        if not s_sorted[k - 1] < tau < s_sorted[k]:  # adjacent floats
            tau = s_sorted[k - 1]
        return float(tau), float(gain)
