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
"""

import numpy as np
from sklearn.base import is_classifier

from .._core.embedding import cart_leaf_values, cart_to_complete, hard_axis_rows
from .._core.selection import cross_check_applies, cross_checked_cart
from .._core.validation import constant_columns, normalize_weights

__all__ = ["apply_cross_check", "cart_as_ensemble"]


def cart_as_ensemble(est, cart, Z, Y, w, X_all, sample_weight, keep):
    """Set ``est``'s ensemble arrays to ``cart``, a CART grown on ``Z``
    (the standardized fit rows ``keep``, target ``Y``, weights ``w``) of
    depth at most ``est.max_depth`` (see the module)."""
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

    On at most ``CROSS_CHECK_MAX_ROWS`` fit rows (not inside another
    cross-check): the core's ``cross_check`` fits clones of ``est`` with its
    ``init_`` (the start it chose, not chosen again) and CARTs tuned to
    depths 2 to ``max_depth``; above ``CROSS_CHECK_Z``, the CART of the
    criterion that erred less, at the depth tuned on all fit rows, replaces
    the ensemble (:func:`cart_as_ensemble`).
    """
    X_all, Y_all, sample_weight, keep = plan.X, plan.Y, plan.sample_weight, plan.keep
    if not cross_check_applies(keep.size):
        return False
    classification = is_classifier(est)
    X, w = X_all[keep], normalize_weights(sample_weight[keep])
    Y = Y_all[keep] if classification else np.asarray(Y_all[keep], dtype=np.float64)
    Z = (X - est._feature_mean) / est._feature_scale
    Z[:, constant_columns(X, w)] = 0.0
    found = cross_checked_cart(est, X, Z, Y, w, classification=classification,
                               max_depth=est.max_depth, seed=plan.train_kwargs["seed"],
                               clone_params=dict(init=est.init_))
    if found is None:
        return False
    cart_as_ensemble(est, found[0], Z, Y, w, X_all, sample_weight, keep)
    return True
