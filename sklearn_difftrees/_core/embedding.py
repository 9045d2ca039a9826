"""A fitted CART written into a method's own fitted format.

* :func:`cart_to_complete` embeds a fitted ``DecisionTreeClassifier`` /
  ``DecisionTreeRegressor`` into a complete tree of a given depth, as one
  oblique split ``w z + b`` per heap node (axis-aligned rows, routing
  identical to CART's); :func:`cart_splits` lists a CART's splits by heap
  index (a tree whose leaves sit at any depth);
* :func:`set_axis_rows`, :func:`scale_axis_rows` and
  :func:`robust_sharpness` set such rows' scale: a soft model's greedy start
  routes fractionally within a band around each threshold, sharpened on
  heavy-tailed features; :func:`hard_axis_rows` makes every row hard, so
  that a soft model holding them routes as the CART;
* :func:`cart_leaf_values`: the closed-form value of every CART leaf in
  the terms of a soft model's leaves or head (log class proportions, mean
  targets).

The greedy starts and the out-of-fold cross-check's CARTs of the methods
use them (:mod:`.greedy` grows the CARTs). Nothing here imports torch or
knows a method.
"""

import numpy as np

__all__ = [
    "HARD_SCALE",
    "MAX_SHARPNESS",
    "cart_leaf_values",
    "cart_splits",
    "cart_to_complete",
    "hard_axis_rows",
    "robust_sharpness",
    "scale_axis_rows",
    "set_axis_rows",
]


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
        set_axis_rows(W, b, heap[split], t.feature[cur[split]], t.threshold[cur[split]], norm)
        left = np.where(split, t.children_left[cur], cur)
        right = np.where(split, t.children_right[cur], cur)
        cur = np.stack([left, right], axis=1).ravel()
    return W, b, cur


def set_axis_rows(W, b, rows, feature, threshold, norm):
    """Write the axis-aligned splits ``x[feature] <= threshold`` (left) into
    rows ``rows`` of ``(W, b)`` (in place): ``w = c e_f``, ``b = -c t`` with
    ``c = norm / sqrt(1 + t**2)``, so that ``[w, b]`` has norm ``norm`` and
    ``w x + b > 0`` iff ``x[f] > t`` (right, ties left, as in CART)."""
    threshold = np.asarray(threshold, dtype=np.float64)
    c = norm / np.sqrt(1.0 + threshold**2)
    W[rows, feature] = c
    b[rows] = -c * threshold


def scale_axis_rows(W, b, scale):
    """Rescale (in place) every nonzero axis-aligned row of ``(W, b)`` (from
    :func:`cart_to_complete`) so that its weight is ``scale``: the split
    ``x[f] <= t`` becomes the score ``scale * (x[f] - t)``; zero rows (below
    a shallower CART leaf) stay zero. ``scale``: a number, or one per
    feature (``scale[f]`` for the splits on feature ``f``)."""
    c = np.abs(W).max(axis=1)
    split = c > 0
    scale = np.asarray(scale, dtype=np.float64)
    if scale.ndim:
        scale = scale[np.abs(W[split]).argmax(axis=1)]
    W[split] *= (scale / c[split])[:, None]
    b[split] *= scale / c[split]


#: Split-score scale of a CART held by a soft model (:func:`hard_axis_rows`):
#: a row routes fractionally only within ``1 / HARD_SCALE`` (times the soft
#: band's half-width: 1/2 for LatentTree, ``gamma / 2`` for TEL) standardized
#: units of a threshold, and CART thresholds lie halfway between training
#: values; the float64 scores (the ONNX graphs compute in float64 too) keep
#: their rounding far below that band. Two training values closer than about
#: 1e-6 standardized units (scikit-learn splits any two that differ in
#: float32) still put their rows inside it: on a lognormal amount rounded to
#: cents (2,000 rows) 2 of 8 seeds routed 2 to 5 training rows fractionally,
#: without a changed prediction.
HARD_SCALE = 1e6


def hard_axis_rows(W, b, scale=HARD_SCALE):
    """:func:`scale_axis_rows` at ``scale``, and every zero row (a node below
    a shallower CART leaf) the constant score ``-scale`` (in place): every
    row of ``(W, b)`` then routes hard (negative: left) except within
    ``1 / scale`` of a threshold, so that a soft model holding these splits
    routes as the CART."""
    scale_axis_rows(W, b, scale)
    b[~np.abs(W).any(axis=1)] = -scale


def cart_leaf_values(cart, Z, Y, w, *, classification, n_classes=None):
    """Per node of the fitted ``cart``, the closed-form value of its rows of
    ``(Z, Y, w)``: log class proportions (``Y`` class codes, ``n_classes``
    of them) with one pseudo-row of the weighted class prior, or the mean
    target (``Y`` of shape ``(n, n_outputs)``) with one pseudo-row of the
    weighted mean, as DGT's closed-form leaves; shape ``(node_count, K)``.
    A soft model whose leaves hold these (log-odds through a softmax, or
    the targets) predicts as the CART."""
    node = cart.apply(Z)
    n_nodes = cart.tree_.node_count
    wsum = np.bincount(node, weights=w, minlength=n_nodes)[:, None] + 1.0
    if classification:
        counts = np.stack([np.bincount(node, weights=w * (Y == k), minlength=n_nodes)
                           for k in range(n_classes)], axis=1)
        prior = np.bincount(Y, weights=w, minlength=n_classes) / w.sum()
        return np.log((counts + prior) / wsum)
    Y = np.asarray(Y, dtype=np.float64).reshape(Y.shape[0], -1)
    sums = np.stack([np.bincount(node, weights=w * Y[:, k], minlength=n_nodes)
                     for k in range(Y.shape[1])], axis=1)
    return (sums + np.average(Y, axis=0, weights=w)) / wsum


#: Most :func:`robust_sharpness` sharpens a split (its band of fractional
#: routing at least 1/100 of the standard deviations it would span).
MAX_SHARPNESS = 100.0


def robust_sharpness(Z, w=None):
    """Per column of ``Z``, ``std / (IQR / 1.349)``, clipped to ``[1,``
    :data:`MAX_SHARPNESS` ``]``. Where the IQR is 0 (a column whose middle
    half is one value, as a zero-inflated amount), the central 80% and then
    90% ranges stand in for it (``/ 2.563``, ``/ 3.290``: their widths on a
    normal column); 1 where those are 0 too. With unequal weights ``w`` the
    quantiles (inverted CDF: the smallest value whose cumulative weight
    reaches the level) and the standard deviation are weighted, as the CART the factor
    sharpens is grown on the weighted rows; equal (or no) weights give the
    unweighted factor.

    A soft split ``c (z_f - t)`` on standardized features routes the rows
    within ``1 / (2 c)`` standard deviations of ``t`` fractionally. On a
    heavy-tailed column the standard deviation is set by the tail, and that
    band holds most rows (lognormal levels: the whole bulk); scaled by this
    factor it holds about the share of rows it holds on a normal column,
    whose IQR is 1.349 standard deviations. Light tails (factor below 1)
    keep the band as it is.
    """
    Z = np.asarray(Z, dtype=np.float64)
    levels = [5, 10, 25, 75, 90, 95]
    if w is None or np.all(np.asarray(w) == np.asarray(w).flat[0]):
        q = np.percentile(Z, levels, axis=0)
        std = Z.std(axis=0)
    else:
        w = np.asarray(w, dtype=np.float64)
        q = _weighted_percentiles(Z, w, levels)
        mean = np.average(Z, axis=0, weights=w)
        std = np.sqrt(np.average((Z - mean) ** 2, axis=0, weights=w))
    spread = (q[3] - q[2]) / 1.349
    for lo, hi, width in ((1, 4, 2.563), (0, 5, 3.290)):  # zero-inflated columns
        spread = np.where(spread > 0, spread, (q[hi] - q[lo]) / width)
    factor = np.ones(Z.shape[1])
    ok = spread > 0
    factor[ok] = np.clip(std[ok] / spread[ok], 1.0, MAX_SHARPNESS)
    return factor


def _weighted_percentiles(Z, w, levels):
    """Per column, the smallest value of ``Z`` whose cumulative weight
    ``w`` reaches each of ``levels`` percent of the total (numpy >= 2's
    weighted ``percentile(method="inverted_cdf")``, which numpy 1 lacks);
    shape ``(len(levels), n_columns)``."""
    order = np.argsort(Z, axis=0, kind="stable")
    cum = np.cumsum(w[order], axis=0)
    out = np.empty((len(levels), Z.shape[1]))
    for j in range(Z.shape[1]):
        at = np.searchsorted(cum[:, j], np.asarray(levels) / 100.0 * cum[-1, j], side="left")
        out[:, j] = Z[order[np.minimum(at, Z.shape[0] - 1), j], j]
    return out


def cart_splits(cart):
    """``{heap index: (feature, threshold)}`` of the splits of a fitted sklearn tree.

    The CART's root is heap node 0 and the children of heap node ``i`` are
    ``2i + 1`` (CART's left, ``x[feature] <= threshold``) and ``2i + 2``;
    CART leaves are absent (a tree whose leaves sit at any depth).
    """
    t = cart.tree_
    out, stack = {}, [(0, 0)]
    while stack:
        node, heap = stack.pop()
        if t.children_left[node] != -1:
            out[heap] = (int(t.feature[node]), float(t.threshold[node]))
            stack += [(t.children_left[node], 2 * heap + 1),
                      (t.children_right[node], 2 * heap + 2)]
    return dict(sorted(out.items()))
