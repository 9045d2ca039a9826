"""TEL's greedy start (``init="cart"``, and the second start of
``init="auto"``): the ensemble set to a short gradient boosting of CARTs.

The trees are grown one after the other, as gradient boosting grows them:
tree ``t`` is a CART regression tree of depth ``max_depth`` fitted to the
negative gradient of the loss at the sum of the trees before it (the
residuals of the softmax probabilities, or of the standardized targets),
its leaves set to a step of :data:`START_LEARNING_RATE` times the leaf's
Newton step (classification, as scikit-learn's multinomial gradient
boosting) or mean residual (regression). One multi-output tree per round
(every leaf holds a vector, as a TEL tree does), not one per class.

Every tree is embedded into the complete soft tree: a CART split
``z_f <= t`` becomes the score ``c (z_f - t)`` with ``c =``
:data:`CART_SCALE` on the standardized features, so that only rows within
``gamma / (2 c)`` standard deviations of a threshold are routed
fractionally (and train the split). The classifier's ``c`` is also
multiplied by the feature's :func:`~sklearn_difftrees._core.embedding.robust_sharpness`
(above 1 on heavy-tailed features, where that band would hold the bulk of
the rows and the start would blur the CARTs' class regions; the
regressor's smoothing of its piecewise-constant start is kept: measured,
sharper starts fit 197_cpu_act worse). A CART leaf above ``max_depth`` gets
zero scores below it (probability 1/2 to each side) and its value on every
leaf below. A row passes ``n_trees * max_depth`` splits, so most rows fall
inside some band: the start is a smoothed version of the boosted model (with
a large ``c``, exactly that model).
"""

import numpy as np

__all__ = ["CART_SCALE", "START_LEARNING_RATE", "START_MAX_ROWS", "boosted_start"]

#: Split-score scale of the embedded CART splits (``c (z_f - t)``).
CART_SCALE = 10.0
#: Shrinkage of every boosting round of the start.
START_LEARNING_RATE = 0.3
#: Rows the start is grown on at most (a seeded subsample beyond).
START_MAX_ROWS = 20_000


def boosted_start(est, module, Z, Y, w, seed):
    """Set ``module`` (a :class:`~._layer.TreeEnsembleLayer`, in place) to
    the boosted CARTs grown on (at most :data:`START_MAX_ROWS` of) the
    standardized training rows ``Z``, encoded target ``Y`` and normalized
    weights ``w`` (see the module)."""
    import torch
    from sklearn.base import is_classifier
    from sklearn.tree import DecisionTreeRegressor

    from .._core.greedy import row_subsample
    from .._core.embedding import cart_to_complete, robust_sharpness, scale_axis_rows

    classification = is_classifier(est)
    T, depth, K = module.n_trees, module.depth, module.out_features
    rows = row_subsample(Z.shape[0], START_MAX_ROWS, seed)
    Zr = np.asarray(Z[rows], dtype=np.float64)
    wr = np.asarray(w[rows], dtype=np.float64)
    n, p = Zr.shape
    if classification:
        target = np.eye(K)[np.asarray(Y[rows], dtype=np.int64)]
    else:
        target = np.asarray(Y[rows], dtype=np.float64).reshape(n, -1)
    scale = CART_SCALE * (robust_sharpness(Zr, wr) if classification else 1.0)
    F = np.zeros((n, K))
    W = np.zeros((T, 2**depth - 1, p))
    B = np.zeros((T, 2**depth - 1))
    O = np.zeros((T, 2**depth, K))
    for t in range(T):
        if classification:
            P = np.exp(F - F.max(axis=1, keepdims=True))
            R = target - P / P.sum(axis=1, keepdims=True)
        else:
            R = target - F
        tree = DecisionTreeRegressor(max_depth=depth, random_state=seed).fit(
            Zr, R, sample_weight=wr)
        W[t], B[t], leaf_node = cart_to_complete(tree, depth, p, 1.0)
        scale_axis_rows(W[t], B[t], scale)
        leaves = tree.apply(Zr)
        if classification:  # Newton step per leaf and class: (K-1)/K sum r / sum |r|(1-|r|)
            nodes = tree.tree_.node_count
            num = np.stack([np.bincount(leaves, wr * R[:, k], nodes) for k in range(K)], 1)
            den = np.stack([np.bincount(leaves, wr * np.abs(R[:, k]) * (1 - np.abs(R[:, k])),
                                        nodes) for k in range(K)], 1)
            value = (K - 1) / K * num / np.maximum(den, 1e-12)
        else:
            value = tree.tree_.value[:, :, 0]
        value = START_LEARNING_RATE * value
        O[t] = value[leaf_node]
        F += value[leaves]
    with torch.no_grad():
        module.weight.copy_(torch.as_tensor(W))
        module.bias.copy_(torch.as_tensor(B))
        module.leaf.copy_(torch.as_tensor(O))
