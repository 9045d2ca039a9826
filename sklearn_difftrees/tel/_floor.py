"""TEL's cross-check of small tables (``greedy_floor=True``).

An oblique soft split over many features fits any few hundred rows, and the
early-stopping hold-out (a few dozen rows) cannot tell such an ensemble from
one that generalizes. After a single fit on at most the core's
``CROSS_CHECK_MAX_ROWS`` rows, the core's out-of-fold
:func:`~sklearn_difftrees._core.selection.cross_check` compares the
ensemble with the depth-tuned CART (2 to ``max_depth`` levels, so that it
fits one of the ensemble's trees); where the CART clearly wins, the
ensemble becomes that CART (:func:`cart_as_ensemble`): its first tree holds
the CART's splits at the core's ``HARD_SCALE`` (every row routes hard) and
each CART leaf's value (log class proportions, or the mean standardized
target, with one pseudo-row of the prior / mean), and every other tree
routes every row to one leaf of value 0. Prediction, exports and ONNX then
run TEL's own path (one reachable leaf per tree and row).

On more rows (with early stopping) the core's
:func:`~sklearn_difftrees._core.selection.validation_check` asks the same of
the fitted model on the early-stopping validation rows (``apply_cross_check``
hands the core the model's output on the fit rows).
"""

import numpy as np
from sklearn.base import is_classifier

from .._core.embedding import cart_leaf_values, cart_to_complete, hard_axis_rows
from .._core.selection import cross_checked_plan

__all__ = ["apply_cross_check", "cart_as_ensemble"]


def cart_as_ensemble(est, cart, rows, X_all, sample_weight, keep):
    """Set ``est``'s ensemble arrays to ``cart``, a CART of depth at most
    ``est.max_depth`` grown on the standardized fit rows ``rows = (X, Z,
    Y, w)`` (:func:`~sklearn_difftrees._core.validation.fit_rows` of the
    rows ``keep``; see the module)."""
    _, Z, Y, w = rows
    n_features = X_all.shape[1]
    n_internal = 2**est.max_depth - 1
    W = np.zeros((est.n_trees, n_internal, n_features))
    b = np.zeros((est.n_trees, n_internal))
    W[0], b[0], leaf_node = cart_to_complete(cart, est.max_depth, n_features, 1.0)
    for t in range(est.n_trees):
        hard_axis_rows(W[t], b[t])
    value = cart_leaf_values(cart, Z, Y, w, classification=is_classifier(est),
                             n_classes=getattr(est, "n_classes_", None))
    O = np.zeros((est.n_trees, n_internal + 1, value.shape[1]))
    O[0] = value[leaf_node]
    est._set_ensemble(W, b, O, X_all, sample_weight, keep)


def apply_cross_check(est, plan):
    """Return ``est``'s ensemble as the depth-tuned CART where that CART
    clearly predicts held-out rows better out of fold; whether it did.

    The core's :func:`~sklearn_difftrees._core.selection.cross_checked_plan`
    (at most ``CROSS_CHECK_MAX_ROWS`` fit rows): clones of ``est`` with its
    ``init_`` (the start it chose, not chosen again) against CARTs tuned to
    depths 2 to ``max_depth``; above ``CROSS_CHECK_Z``, the CART of the
    criterion that erred less, at the depth tuned on all fit rows, replaces
    the ensemble (:func:`cart_as_ensemble`).
    """
    found = cross_checked_plan(est, plan, max_depth=est.max_depth,
                               clone_params=dict(init=est.init_), decision=est._raw_output)
    if found is None:
        return False
    cart_as_ensemble(est, found[0], found[2], plan.X, plan.sample_weight, plan.keep)
    return True
