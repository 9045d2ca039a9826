"""DGT's greedy floor: a trained tree never fits its training rows worse than
two greedy levels (the reference of :func:`~sklearn_difftrees._core.greedy.greedy_reference`,
shared with NonGreedy and ConvexPolytopeTree); otherwise a CART, embedded in
the complete tree, is returned. A helper of the estimators' ``_freeze``.

On at most ``CROSS_CHECK_MAX_ROWS`` rows, a single tree's ``fit`` then runs the
core's out-of-fold :func:`~sklearn_difftrees._core.selection.cross_check`
(:func:`apply_cross_check`): where the depth-tuned CART (2 to the tree's
depth) clearly predicts held-out rows better, that CART is returned (an oblique tree over
many features overfits a small table that axis-aligned splits do not). On more
rows (with early stopping) the core's
:func:`~sklearn_difftrees._core.selection.validation_check` asks the same of the
tree on the early-stopping validation rows."""

import numpy as np
from sklearn.base import is_classifier

from .._core.greedy import (
    GREEDY_MAX_ROWS,
    fit_cart,
    fit_score,
    floor_fallback,
    greedy_reference,
    row_subsample,
)
from .._core.embedding import cart_to_complete
from .._core.selection import cross_checked_plan
from .._core.validation import fit_rows

__all__ = ["apply_cross_check", "apply_greedy_floor"]

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


def apply_cross_check(est, plan, norm):
    """Replace ``est.tree_`` by a depth-tuned CART where that CART clearly
    predicts held-out rows better; whether it did.

    The core's :func:`~sklearn_difftrees._core.selection.cross_checked_plan`
    (at most ``CROSS_CHECK_MAX_ROWS`` fit rows): clones of ``est`` with its
    ``max_depth_`` and ``init_`` (the structure and start it chose, not
    chosen again) against CARTs tuned to depths 2 to ``max_depth_``, out of
    fold; above ``CROSS_CHECK_Z``, the CART of the criterion that erred
    less, at the depth tuned on all fit rows, replaces the tree, embedded in
    the complete tree with closed-form leaves; should it fit the fit rows
    worse than the floor's reference (a depth-2 CART of the other criterion
    can), the reference does.
    """
    found = cross_checked_plan(est, plan, max_depth=est.max_depth_,
                               clone_params=dict(max_depth=est.max_depth_, init=est.init_),
                               decision=est.tree_.predict)
    if found is None:
        return False
    cart, _, rows = found
    args = (est, plan.X, plan.Y, plan.sample_weight, plan.keep, norm)
    ref, score, embed = _floor(*args, *rows, GREEDY_MAX_ROWS)
    _, est.tree_ = floor_fallback(ref, score, [("tuned", lambda: embed(cart)),
                                               ("reference", lambda: embed(ref.cart))])
    return True


def _floor(est, X_all, Y_all, sample_weight, keep, norm, X, Z, Yc, w, max_rows):
    """``(ref, score, embed)``: the floor's reference (grown on a seeded
    subsample of ``max_rows`` fit rows when there are more, scored on all),
    the floor's score of a fitted tree and the embedding of a CART as the
    estimator's fitted tree."""
    classification = is_classifier(est)
    grow = row_subsample(Z.shape[0], max_rows, FLOOR_SEED)
    ref = greedy_reference(Z, Yc, w, depth=est.max_depth_, classification=classification,
                           seed=FLOOR_SEED, grow=grow, bins="auto")

    def score(tree):
        return fit_score(_codes(est, tree, X), Yc, w, classification)

    def embed(cart):
        return _cart_tree(est, cart, est.max_depth_, X_all, Y_all, sample_weight, keep, norm)

    return ref, score, embed


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
    X, Z, Yc, w = fit_rows(est, X_all, Y_all, sample_weight, keep)
    ref, score, embed = _floor(est, X_all, Y_all, sample_weight, keep, norm, X, Z, Yc, w,
                               max_rows)
    if score(est.tree_) >= ref.score:
        return False
    _, est.tree_ = floor_fallback(ref, score, [
        ("deep", lambda: embed(fit_cart(Z, Yc, w, depth=est.max_depth_,
                                        classification=classification, seed=FLOOR_SEED,
                                        criterion=ref.criterion, bins="auto"))),
        ("reference", lambda: embed(ref.cart))])
    return True
