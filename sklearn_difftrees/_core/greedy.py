"""Greedy (CART) starts and data-chosen depths for the complete-tree methods.

Methods that train a complete heap-order tree can start from scikit-learn's
greedy tree instead of random splits, and choose their depth by how well a
greedy tree of each depth cross-validates:

* :func:`cart_to_complete` embeds a fitted ``DecisionTreeClassifier`` /
  ``DecisionTreeRegressor`` into a complete tree of a given depth, as one
  oblique split ``w z + b`` per heap node (axis-aligned rows, routing
  identical to CART's);
* :func:`cv_depth` picks the depth whose CART scores best in k-fold
  cross-validation, growing one tree per fold and scoring it cut at every
  depth.

Nothing here imports torch or knows a method.
"""

import numpy as np
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["cart_to_complete", "cv_depth"]


def _truncated_scores(cart, Z, Y, w, max_depth, classification):
    """Score of ``cart`` cut at every depth ``1..max_depth`` on ``(Z, Y, w)``.

    The prediction at depth ``d`` is the value of the deepest node of depth
    ``<= d`` on each row's path: the CART grown to depth ``d`` is the top of
    the one grown deeper (the same greedy splits, up to ties between equally
    good splits, which the random feature order breaks). Weighted accuracy
    for the classifier, minus the weighted mean squared error for the
    regressor.
    """
    path = cart.decision_path(Z).tocsr()
    path.sort_indices()  # node ids grow along every path: sorted ids = root to leaf
    length = np.diff(path.indptr)
    k = np.minimum(np.arange(1, max_depth + 1)[:, None], length[None, :] - 1)
    at = path.indices[path.indptr[:-1][None, :] + k]  # (max_depth, n) node at depth <= d
    if classification:
        correct = cart.tree_.value[:, 0, :].argmax(-1)[at] == Y[None, :]
        return (correct * w).sum(1) / w.sum()
    pred = cart.tree_.value[:, :, 0][at]  # (max_depth, n, n_outputs)
    sq = ((pred - Y.reshape(Z.shape[0], -1)[None]) ** 2).mean(-1)
    return -(sq * w).sum(1) / w.sum()


def cv_depth(Z, Y, w, *, max_depth, classification, n_folds, seed, min_depth=1):
    """Depth ``min_depth..max_depth`` whose CART scores best in ``n_folds``-fold CV.

    One CART (``criterion="entropy"`` / squared error) is grown to
    ``max_depth`` per fold and scored cut at every depth
    (:func:`_truncated_scores`); the depth with the best mean validation
    score among depths ``>= min_depth`` wins (ties: the shallower). Folds
    are stratified when every class has ``n_folds`` rows. Returns
    ``(depth, mean scores of every depth 1..max_depth)``.
    """
    from sklearn.model_selection import KFold, StratifiedKFold

    n = Z.shape[0]
    n_folds = min(n_folds, n)
    if n_folds < 2:
        return min_depth, np.zeros(max_depth)
    stratify = classification and np.bincount(Y).min(initial=n) >= n_folds
    cv = (StratifiedKFold if stratify else KFold)(n_folds, shuffle=True, random_state=seed)
    scores = np.zeros(max_depth)
    for fit_idx, val_idx in cv.split(Z, Y if stratify else None):
        if classification:
            cart = DecisionTreeClassifier(criterion="entropy", max_depth=max_depth,
                                          random_state=seed)
        else:
            cart = DecisionTreeRegressor(max_depth=max_depth, random_state=seed)
        cart.fit(Z[fit_idx], Y[fit_idx], sample_weight=w[fit_idx])
        Yv = Y[val_idx]
        if classification:  # CART's columns are the classes present in the fold
            Yv = np.searchsorted(cart.classes_, Yv)
            Yv = np.where(cart.classes_[np.minimum(Yv, cart.classes_.size - 1)] == Y[val_idx],
                          Yv, -1)
        scores += _truncated_scores(cart, Z[val_idx], Yv, w[val_idx], max_depth,
                                    classification)
    scores /= n_folds
    top = scores[min_depth - 1 :]
    best = int(np.argmax(top >= top.max() - 1e-12)) + min_depth
    return best, scores


def cart_to_complete(cart, depth, n_features, norm):
    """Complete heap-order tree ``(W, b, leaf_node)`` from a fitted sklearn tree.

    A CART split ``x[f] <= t`` (left) becomes ``w = c e_f``, ``b = -c t`` with
    ``c = norm / sqrt(1 + t**2)`` (row ``[w, b]`` of norm ``norm``), so
    ``w x + b > 0`` iff ``x[f] > t``: right, ties left, as in CART. A CART
    leaf above ``depth`` becomes internal nodes with zero weights and bias
    (score 0, so every sample goes left down to its leftmost leaf); all
    leaves below it map to that CART leaf. ``leaf_node[l]`` is the CART node
    of leaf ``l`` (leaves in heap order), and ``leaf_node`` indexes anything
    computed per CART node (``cart.apply`` numbers rows by it).
    """
    t = cart.tree_
    m = 2**depth - 1
    W = np.zeros((m, n_features))
    b = np.zeros(m)
    cur = np.zeros(1, dtype=np.int64)  # CART node of every heap node of the level
    for level in range(depth):
        heap = np.arange(2**level - 1, 2 ** (level + 1) - 1)
        split = t.children_left[cur] != -1
        f = t.feature[cur[split]]
        thr = t.threshold[cur[split]]
        c = norm / np.sqrt(1.0 + thr**2)
        W[heap[split], f] = c
        b[heap[split]] = -c * thr
        left = np.where(split, t.children_left[cur], cur)
        right = np.where(split, t.children_right[cur], cur)
        cur = np.stack([left, right], axis=1).ravel()
    return W, b, cur
