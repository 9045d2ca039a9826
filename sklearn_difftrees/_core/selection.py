"""Paired choice between two fitted models on the same validation rows.

A method that has a default model and an alternative (a refined tree and
the greedy tree it grew from; a tree trained from a random start and one
trained from a greedy start) scores both row by row on the same held-out
rows and switches only when the alternative's advantage is clearly larger
than its noise. :func:`paired_advantage` is that statistic: with per-row
differences ``d_i = loss_default_i - loss_alternative_i`` (positive where
the alternative does better) and weights ``w``, the mean advantage
``gain = sum(w d) / sum(w)`` and ``z = gain / sqrt(mean_w(d**2) / n_eff)``
(``n_eff`` the effective number of rows of the weights). For 0 / 1 losses
``z`` is the sign test's ``(wins - losses) / sqrt(wins + losses)``; the
second moment instead of the variance makes it conservative. The method
picks the threshold (ConvexPolytopeTree 3 among up to two alternatives,
DGT 2 for its one).

Nothing here imports torch or knows a method.
"""

import math

import numpy as np

__all__ = ["paired_advantage"]


def paired_advantage(loss_default, loss_alternative, w=None):
    """``(gain, z)`` of the alternative over the default (see the module).

    ``z`` is 0 when every difference is 0.
    """
    d = np.asarray(loss_default, dtype=np.float64) - np.asarray(loss_alternative,
                                                                 dtype=np.float64)
    w = np.ones_like(d) if w is None else np.asarray(w, dtype=np.float64)
    W = float(w.sum())
    gain = float((w * d).sum() / W)
    second = float((w * d**2).sum() / W)
    if second <= 0.0:
        return gain, 0.0
    n_eff = W**2 / float((w**2).sum())
    return gain, gain / math.sqrt(second / n_eff)
