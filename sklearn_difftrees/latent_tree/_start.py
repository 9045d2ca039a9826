"""LatentTree's starts: the linear start (``init="random"``, and the first
start of ``init="auto"``) and the greedy start (``init="cart"``, the second
start of ``init="auto"``; the core's ``_core/starts.py`` trains the two).

The linear start fits the head in closed form (regression) or by
L2-regularized logistic regression (classification) on the features ``[x,
z]`` of the freshly initialized tree, before gradient training. The head
sees ``[x, z]``, so the start already contains the linear model on ``x``. It
is where training starts, not a candidate of early stopping: the tree
returned from it is always a trained one (an epoch >= 1), but an early best
epoch no longer means an undertrained model (from a random head, a fit that
stopped after two or three epochs fitted its training rows worse than a
shallow CART). The greedy start sets the splits to a CART and fits the head
on that tree's ``[x, z]``; it is a model already, and the candidate of epoch
0 (so the CART with its head can be returned).
"""


import numpy as np

from .._core._warn import ignore_sklearn
from .._core.greedy import quiet_internal_fit
from .._core.greedy import row_subsample

__all__ = ["CART_SCALE", "START_C", "START_MAX_ROWS", "cart_start", "fit_linear_head",
           "linear_start"]

#: Rows the start's linear model is fitted on at most (a random subsample
#: beyond): it is a start, refined by training, and bounded in cost.
START_MAX_ROWS = 20_000

#: Inverse L2 strength of the start (per unit of mean sample weight), as
#: scikit-learn's defaults: ``C = 1`` for the logistic model, ``alpha = 1`` for
#: the ridge.
START_C = 1.0


def fit_linear_head(H, Y, w, n_outputs, classification):
    """Weights ``(W, b)`` of a linear head on features ``H``, or ``None``.

    ``H`` (n, p) are the head's inputs, ``Y`` the encoded target (class codes
    or standardized targets), ``w`` the normalized weights (mean 1).
    Classification: multinomial logistic regression (``W`` of shape
    ``(n_outputs, p)``; with two classes the single logit is split evenly
    between the two outputs). ``None`` when a class is missing from ``Y``
    (its logit would have no data). Regression: ridge, one row per output.
    """
    H, w = np.asarray(H, dtype=np.float64), np.asarray(w, dtype=np.float64)
    if classification:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        present = np.unique(Y)
        if present.shape[0] != n_outputs or n_outputs < 2:
            return None
        # One call, under a lock: lbfgs stopping at max_iter, and the >50%-classes
        # warning of rows of many small classes (the user's y has had its own).
        with quiet_internal_fit(Y), ignore_sklearn(message="lbfgs failed",
                                                   category=ConvergenceWarning):
            lr = LogisticRegression(C=START_C, max_iter=200).fit(H, Y, sample_weight=w)
        W, b = lr.coef_, lr.intercept_
        if n_outputs == 2:  # one logit: p(1) = sigmoid(coef . h + b)
            W = np.vstack((-W / 2, W / 2))
            b = np.array([-b[0] / 2, b[0] / 2])
        return W, b
    from sklearn.linear_model import Ridge

    Y2 = Y.reshape(Y.shape[0], -1)
    ridge = Ridge(alpha=1.0 / START_C).fit(H, Y2, sample_weight=w)
    return np.atleast_2d(ridge.coef_), np.atleast_1d(ridge.intercept_)


def _start_head(module, Zt, Y, w, classification):
    """Fit the head of ``module`` (in place) on ``[x, z]`` of its tree on the
    rows ``Zt`` (training mode: ``a`` solved on these rows) by
    :func:`fit_linear_head`; where that returns ``None`` the head stays."""
    import torch

    with torch.no_grad():
        H = module.features(Zt).double().numpy()
    head = module.head[-1]
    fitted = fit_linear_head(H, Y, w, head.out_features, classification)
    if fitted is None:
        return
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(fitted[0]))
        head.bias.copy_(torch.as_tensor(fitted[1]))


def linear_start(module, Z, Y, w, classification, seed):
    """Start ``module`` (a ``_LatentTreeNet`` with a linear head, training
    mode) in place: split biases balanced on the rows, head fitted on their
    ``[x, z]`` by :func:`fit_linear_head`. ``Z, Y, w``: the standardized
    training rows, encoded target and normalized weights; at most
    :data:`START_MAX_ROWS` of them, drawn from ``seed``, are used. Where
    :func:`fit_linear_head` returns ``None`` the head stays as initialized."""
    import torch

    rows = row_subsample(Z.shape[0], START_MAX_ROWS, seed)
    Zt = torch.as_tensor(Z[rows])
    with torch.no_grad():
        module.tree.init_bias(Zt)
    _start_head(module, Zt, Y[rows], w[rows], classification)


#: Split-score scale of the greedy start (``init="cart"``): every embedded
#: CART split ``x_f <= t`` becomes ``s = CART_SCALE * (x_f - t)`` on the
#: standardized features. With ``split="linear"``, ``z = clip(q + 1/2, 0, a)``
#: is crisp (0 off the row's path, ``a`` on it) where ``|s| >= 1/2``; rows
#: within ``1 / (2 CART_SCALE)`` standard deviations of a threshold fall in
#: the window where ``z`` is fractional and carries gradient (with
#: ``split="elu"`` the negative side is crisp only from ``s <= -ln 2``).
#: The classifier's scale is also multiplied by the feature's
#: ``_core.embedding.robust_sharpness`` (heavy tails: see TEL's start).
CART_SCALE = 10.0


def cart_start(est, module, Z, Y, w, seed):
    """Greedy start of ``module`` (in place): the split layer set to the CART
    of depth ``est.max_depth_`` grown on (at most :data:`START_MAX_ROWS` of)
    the standardized training rows, each split ``x_f <= t`` as the score
    ``s = CART_SCALE (x_f - t)`` (the classifier's times the feature's
    ``robust_sharpness``); a CART leaf above ``max_depth`` leaves zero
    rows below it (score 0: both children get ``z = 1/2``). The head is then
    fitted on ``[x, z]`` of that tree as :func:`linear_start` does (on the
    same rows)."""
    import torch
    from sklearn.base import is_classifier

    from .._core.greedy import fit_cart
    from .._core.embedding import cart_to_complete, robust_sharpness, scale_axis_rows

    classification = is_classifier(est)
    rows = row_subsample(Z.shape[0], START_MAX_ROWS, seed)
    Zr = np.asarray(Z[rows], dtype=np.float64)
    cart = fit_cart(Zr, Y[rows], w[rows], depth=est.max_depth_,
                    classification=classification, seed=seed)
    W, b, _ = cart_to_complete(cart, est.max_depth_, Z.shape[1], 1.0)
    scale_axis_rows(W, b, CART_SCALE * (robust_sharpness(Zr, w[rows]) if classification else 1.0))
    _set_splits(module, W, b)
    _start_head(module, torch.as_tensor(Z[rows]), Y[rows], w[rows], classification)


def _set_splits(module, W, b):
    """The split layer of ``module``'s tree set to ``(W, b)`` (in place), its
    biases no longer waiting for their data-dependent start."""
    import torch

    tree = module.tree
    with torch.no_grad():
        tree.split.weight.copy_(torch.as_tensor(W))
        tree.split.bias.copy_(torch.as_tensor(b))
        tree.bias_pending.fill_(False)


def bisect_splits(Z, w, depth, seed, scale=CART_SCALE):
    """Split layer ``(W, b)`` of a top-down 2-means hierarchy of the rows ``Z``
    (heap order, ``2**depth - 1`` rows): each node's rows are split by
    2-means, and the split is the hyperplane equidistant from the two
    centroids, ``s = scale * u . (x - m)`` with ``u`` the unit vector from the
    left to the right centroid and ``m`` their midpoint (a row goes right iff
    it is nearer the right centroid; the 2-means weighs the rows by ``w``). A
    node with fewer than two distinct rows of positive weight sends its rows
    left (zero weights, bias -1)."""
    from sklearn.cluster import KMeans

    n_int = 2**depth - 1
    W = np.zeros((n_int, Z.shape[1]))
    b = np.full(n_int, -1.0)
    members = {0: np.arange(Z.shape[0])}
    for t in range(n_int):
        rows = members.pop(t, np.empty(0, dtype=np.intp))
        side = np.zeros(rows.size, dtype=bool)
        heavy = rows[w[rows] > 0]
        if heavy.size >= 2 and np.ptp(Z[heavy], axis=0).max() > 0:
            km = KMeans(2, n_init=3, random_state=seed).fit(Z[heavy], sample_weight=w[heavy])
            lo, hi = km.cluster_centers_
            gap = hi - lo
            norm = np.linalg.norm(gap)
            if norm > 0:
                u = gap / norm
                W[t] = scale * u
                b[t] = -scale * u @ (lo + hi) / 2
                side = Z[rows] @ W[t] + b[t] > 0
        if 2 * t + 1 < n_int:
            members[2 * t + 1], members[2 * t + 2] = rows[~side], rows[side]
    return W, b


def bisect_start(est, module, Z, Y, w, seed):
    """Start of the clusterer's regressor (in place): the splits of
    :func:`bisect_splits` on (at most :data:`START_MAX_ROWS` of) the
    standardized input rows, then the head fitted on that tree's features by
    ridge, as :func:`linear_start` does."""
    import torch

    rows = row_subsample(Z.shape[0], START_MAX_ROWS, seed)
    W, b = bisect_splits(np.asarray(Z[rows], dtype=np.float64), np.asarray(w[rows], dtype=np.float64),
                         est.max_depth_, seed)
    _set_splits(module, W, b)
    _start_head(module, torch.as_tensor(Z[rows]), Y[rows], w[rows], False)
