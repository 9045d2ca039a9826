"""LatentTree's cross-check of small tables (``greedy_floor=True``).

An oblique split over many features fits any few hundred rows, and the
early-stopping hold-out (a few dozen rows) cannot tell such a tree from one
that generalizes; nor can the head's linear model on ``x``. After a single
fit on at most the core's ``CROSS_CHECK_MAX_ROWS`` rows, the core's
out-of-fold :func:`~sklearn_difftrees._core.selection.cross_check` compares
the model with the depth-tuned CART; where the CART clearly wins, the fitted
model becomes that CART, written as a LatentTree (:func:`cart_as_latent_tree`):
its splits ``HARD_SCALE (z_f - t)`` route every row hard, the pruning vector
is all ones (so ``z`` is the indicator of the nodes a row reaches), and the
linear head reads only the leaf indicators, with each CART leaf's value
(log class proportions, or the mean standardized target, with one
pseudo-row of the training prior / mean as DGT's closed-form leaves).
Prediction, exports and ONNX then run the LatentTree's own path.
"""

import numpy as np
from sklearn.base import is_classifier

from .._core.greedy import cart_to_complete, fit_cart, scale_axis_rows
from .._core.selection import (CROSS_CHECK_Z, cross_check, cross_check_applies,
                               cross_check_depth)
from .._core.validation import constant_columns, normalize_weights

__all__ = ["HARD_SCALE", "apply_cross_check", "cart_as_latent_tree"]

#: Split-score scale of a CART written as a LatentTree: ``z`` is fractional
#: only within ``1 / (2 HARD_SCALE)`` standard deviations of a threshold
#: (CART thresholds lie halfway between training values), and the float32
#: rounding of an ONNX graph's scores (about ``6e-8 HARD_SCALE |z|``) stays
#: far below the ``1/2`` that routing needs.
HARD_SCALE = 1e6


def cart_as_latent_tree(est, cart, depth, X_all, Y_all, sample_weight, keep):
    """Set ``est``'s fitted model (``tree_``, the head, ``pruning_values_``,
    ``max_depth_``) to ``cart``, a CART grown on the standardized fit rows
    ``keep`` (see the module). A CART leaf above ``depth`` sends its rows
    down the leftmost path below it (bias ``-HARD_SCALE``)."""
    classification = is_classifier(est)
    n_features = X_all.shape[1]
    W, b, leaf_node = cart_to_complete(cart, depth, n_features, 1.0)
    scale_axis_rows(W, b, HARD_SCALE)
    b[~np.abs(W).any(axis=1)] = -HARD_SCALE  # pass-through nodes: always left
    X, Y = X_all[keep], Y_all[keep]
    w = normalize_weights(sample_weight[keep])
    Z = (X - est._feature_mean) / est._feature_scale
    Z[:, constant_columns(X, w)] = 0.0
    node = cart.apply(Z)
    n_nodes = cart.tree_.node_count
    wsum = np.bincount(node, weights=w, minlength=n_nodes)
    if classification:
        K = est.n_classes_
        counts = np.stack([np.bincount(node, weights=w * (Y == k), minlength=n_nodes)
                           for k in range(K)], axis=1)
        prior = np.bincount(Y, weights=w, minlength=K) / w.sum()
        value = np.log((counts + prior) / (wsum + 1.0)[:, None])
    else:
        Y = np.asarray(Y, dtype=np.float64).reshape(Y.shape[0], -1)
        mean = np.average(Y, axis=0, weights=w)
        value = (np.stack([np.bincount(node, weights=w * Y[:, k], minlength=n_nodes)
                           for k in range(Y.shape[1])], axis=1) + mean) / (wsum + 1.0)[:, None]
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

    On at most ``CROSS_CHECK_MAX_ROWS`` fit rows (not inside another
    cross-check): the core's ``cross_check`` fits clones of ``est`` with its
    ``max_depth_`` and ``init_`` (the model as chosen, not the choice again)
    and CARTs tuned to depths 2 to ``max_depth``; above ``CROSS_CHECK_Z``,
    the CART of the criterion that erred less, at the depth tuned on all fit
    rows, replaces the model (:func:`cart_as_latent_tree`).
    """
    X_all, Y_all, sample_weight, keep = plan.X, plan.Y, plan.sample_weight, plan.keep
    if not cross_check_applies(keep.size):
        return False
    classification = is_classifier(est)
    X, w = X_all[keep], normalize_weights(sample_weight[keep])
    Y = Y_all[keep] if classification else np.asarray(Y_all[keep], dtype=np.float64)
    seed = plan.train_kwargs["seed"]
    result = cross_check(est, X, Y, w, classification=classification,
                         max_depth=lambda model: max_depth, seed=seed,
                         clone_params=dict(max_depth=est.max_depth_, init=est.init_))
    if result is None or result.z <= CROSS_CHECK_Z:
        return False
    Z = (X - est._feature_mean) / est._feature_scale
    Z[:, constant_columns(X, w)] = 0.0
    depth = cross_check_depth(Z, Y, w, classification=classification, max_depth=max_depth,
                              seed=seed)
    if est.verbose:
        print(f"{type(est).__name__}: a depth-{depth} CART ({result.criterion}) predicts "
              f"held-out rows better (out-of-fold paired statistic {result.z:.2f} > "
              f"{CROSS_CHECK_Z}); it replaces the trained model")
    cart = fit_cart(Z, Y, w, depth=depth, criterion=result.criterion,
                    classification=classification, seed=seed)
    cart_as_latent_tree(est, cart, depth, X_all, Y_all, sample_weight, keep)
    return True
