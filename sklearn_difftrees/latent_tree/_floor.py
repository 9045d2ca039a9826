"""LatentTree's cross-check of small tables (``greedy_floor=True``).

An oblique split over many features fits any few hundred rows, and the
early-stopping hold-out (a few dozen rows) cannot tell such a tree from one
that generalizes; nor can the head's linear model on ``x``. After a single
fit on at most the core's ``CROSS_CHECK_MAX_ROWS`` rows, the core's
out-of-fold :func:`~sklearn_difftrees._core.selection.cross_check` compares
the model with the depth-tuned CART; where the CART clearly wins, the fitted
model becomes that CART, written as a LatentTree (:func:`cart_as_latent_tree`):
its splits ``HARD_SCALE (z_f - t)`` (the core's ``embedding.HARD_SCALE``)
route every row hard, the pruning vector
is all ones (so ``z`` is the indicator of the nodes a row reaches), and the
linear head reads only the leaf indicators, with each CART leaf's value
(log class proportions, or the mean standardized target, with one
pseudo-row of the training prior / mean as DGT's closed-form leaves).
Prediction, exports and ONNX then run the LatentTree's own path.

On more rows (with early stopping) the core's
:func:`~sklearn_difftrees._core.selection.validation_check` asks the same of
the fitted model on the early-stopping validation rows (``apply_cross_check``
hands the core the model's output on the fit rows).
"""

import numpy as np
from sklearn.base import is_classifier

from .._core.embedding import cart_leaf_values, cart_to_complete, hard_axis_rows
from .._core.selection import cross_checked_plan

__all__ = ["apply_cross_check", "cart_as_latent_tree"]

def cart_as_latent_tree(est, cart, depth, rows, X_all, Y_all, sample_weight, keep):
    """Set ``est``'s fitted model (``tree_``, the head, ``pruning_values_``,
    ``max_depth_``) to ``cart``, a CART grown on the standardized fit rows
    ``rows = (X, Z, Y, w)`` (:func:`~sklearn_difftrees._core.validation.fit_rows`
    of the rows ``keep``; see the module). A CART leaf above ``depth`` sends
    its rows down the leftmost path below it (the core's ``hard_axis_rows``)."""
    _, Z, Y, w = rows
    n_features = X_all.shape[1]
    W, b, leaf_node = cart_to_complete(cart, depth, n_features, 1.0)
    hard_axis_rows(W, b)
    value = cart_leaf_values(cart, Z, Y, w, classification=is_classifier(est),
                             n_classes=getattr(est, "n_classes_", None))
    n_internal = 2**depth - 1
    inputs = n_features if est.head_input == "concat" else 0
    head = np.zeros((value.shape[1], inputs + 2 * n_internal + 1))
    head[:, inputs + n_internal:] = value[leaf_node].T
    est.max_depth_ = depth
    est._head_params = [(head, np.zeros(value.shape[1]))]
    est.tree_ = est._tree_from_splits(W, b, np.zeros((n_internal + 1, value.shape[1])),
                                      X_all, Y_all, sample_weight, keep, False)
    est._finalize_latent(X_all, sample_weight, pruning_values=np.ones(2 * n_internal + 1))


def apply_cross_check(est, plan, max_depth):
    """Return ``est``'s model as the depth-tuned CART where that CART clearly
    predicts held-out rows better out of fold; whether it did.

    The core's :func:`~sklearn_difftrees._core.selection.cross_checked_plan`
    (at most ``CROSS_CHECK_MAX_ROWS`` fit rows): clones of ``est`` with its
    ``max_depth_`` and ``init_`` (the model as chosen, not the choice again)
    against CARTs tuned to depths 2 to ``max_depth``; above
    ``CROSS_CHECK_Z``, the CART of the criterion that erred less, at the
    depth tuned on all fit rows, replaces the model
    (:func:`cart_as_latent_tree`).
    """
    found = cross_checked_plan(est, plan, max_depth=max_depth,
                               clone_params=dict(max_depth=est.max_depth_, init=est.init_),
                               decision=lambda X: est._output_values(est._head_output(X)))
    if found is None:
        return False
    cart_as_latent_tree(est, *found, plan.X, plan.Y, plan.sample_weight, plan.keep)
    return True
