"""DGT's greedy floor: a trained tree never fits its training rows worse than
two greedy levels (the reference of :func:`~sklearn_difftrees._core.greedy.greedy_reference`,
shared with NonGreedy and ConvexPolytopeTree); otherwise a CART, embedded in
the complete tree, is returned. A helper of the estimators' ``_freeze``."""

import numpy as np
from sklearn.base import is_classifier

from .._core.greedy import (
    cart_to_complete,
    fit_cart,
    fit_score,
    floor_fallback,
    greedy_reference,
    row_subsample,
)
from .._core.validation import constant_columns, normalize_weights

__all__ = ["apply_greedy_floor"]

#: Seed of the floor's CARTs (it only orders the features they try; fixed,
#: so that the floor draws nothing from the fit's random stream).
FLOOR_SEED = 0


def _codes(est, tree, X):
    """What :func:`fit_score` compares with the encoded target: class codes
    (classifier) or standardized predictions (regressor)."""
    pred = tree.predict(X)
    if is_classifier(est):
        return pred.argmax(axis=1)
    return (pred - est._target_mean) / est._target_scale


def _cart_tree(est, cart, depth, X_all, Y_all, sample_weight, keep, norm):
    """``cart`` as the estimator's fitted tree: embedded splits, closed-form leaves
    (the core's ``_tree_from_splits``, as ``fit`` freezes a trained tree)."""
    W, b, _ = cart_to_complete(cart, depth, X_all.shape[1], norm)
    theta0 = np.zeros((2**depth, est.tree_.value.shape[1]))
    return est._tree_from_splits(W, b, theta0, X_all, Y_all, sample_weight, keep, refit=True)


def apply_greedy_floor(est, X_all, Y_all, sample_weight, keep, norm, max_rows):
    """Replace ``est.tree_`` by a CART when it fits the fit rows worse.

    The fit rows are ``keep`` (validation rows included). The reference is
    the better of the depth-``min(max_depth_, 2)`` CARTs (entropy / Gini;
    squared error) grown on them (on a seeded subsample of ``max_rows`` of
    them when there are more) and scored on all; when ``tree_`` scores below
    it, the CART of depth ``max_depth_`` with the reference's criterion (or the
    reference itself, should that fit better) replaces it, its leaves set
    to the closed-form minimizer of the training loss. Returns whether it
    did.
    """
    classification = is_classifier(est)
    X, Y, w = X_all[keep], Y_all[keep], sample_weight[keep]
    w = normalize_weights(w)
    Z = (X - est._feature_mean) / est._feature_scale
    Z[:, constant_columns(X, w)] = 0.0  # as in training: constant columns carry nothing
    Yc = Y if classification else np.asarray(Y, dtype=np.float64)
    grow = row_subsample(Z.shape[0], max_rows, FLOOR_SEED)
    ref = greedy_reference(Z, Yc, w, depth=est.max_depth_, classification=classification,
                           seed=FLOOR_SEED, grow=grow, bins="auto")
    if fit_score(_codes(est, est.tree_, X), Yc, w, classification) >= ref.score:
        return False
    depth = est.max_depth_

    def embed(cart):
        return _cart_tree(est, cart, depth, X_all, Y_all, sample_weight, keep, norm)

    _, est.tree_ = floor_fallback(
        ref, lambda tree: fit_score(_codes(est, tree, X), Yc, w, classification),
        [("deep", lambda: embed(fit_cart(Z, Yc, w, depth=depth, classification=classification,
                                          seed=FLOOR_SEED, criterion=ref.criterion,
                                          bins="auto"))),
         ("reference", lambda: embed(ref.cart))])
    return True
