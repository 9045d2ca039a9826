"""Axis-aligned subtrees grown below the leaves of a fitted tree.

A tree whose depth is bounded (a complete oblique tree scores all its
``2**depth`` leaves while it trains) can still partition the rows of each
leaf further, greedily: :func:`grow_axis_subtrees` grows one CART on the
rows of every leaf, and :class:`AxisSubtrees` holds them all as plain node
arrays (scikit-learn's layout) that a compiled kernel routes
(``cython_src/_routing.pyx``: ``_apply_axis_subtrees``). Every leaf of the
tree above has a root here: the root of its subtree, or a single node that
keeps the leaf's own value where nothing was grown, so that routing never
branches on whether a leaf has a subtree.

Nothing here imports torch or knows a method.
"""

import numpy as np
from scipy import sparse

from .._kernels._routing import _apply_axis_subtrees
from ._guard import check_fitted_arrays
from .greedy import quiet_internal_fit
from .tree import check_route_input

__all__ = ["AxisSubtrees", "grow_axis_subtrees"]


class AxisSubtrees:
    """Axis-aligned subtrees below the ``n_roots`` leaves of a tree.

    Parameters
    ----------
    root : ndarray of shape (n_roots,), int64
        Node where the rows of each leaf of the tree above continue.
    feature, threshold, left, right : ndarrays of shape (n_nodes,)
        scikit-learn's node layout: a row goes to ``left`` iff
        ``X[:, feature] <= threshold`` (raw feature units, float64); a leaf
        has ``left == right == -1`` (and ``feature`` 0, ``threshold`` 0).
    value : ndarray of shape (n_nodes, n_outputs), float64
        Prediction of every node (class proportions, or mean targets).
    n_node_samples : ndarray of shape (n_nodes,), float64
        Training weight that reached every node.
    """

    def __init__(self, root, feature, threshold, left, right, value, n_node_samples):
        self.root = root
        self.feature = feature
        self.threshold = threshold
        self.left = left
        self.right = right
        self.value = value
        self.n_node_samples = n_node_samples

    @property
    def n_nodes(self):
        """Number of nodes of all subtrees together."""
        return self.left.shape[0]

    @property
    def n_leaves(self):
        """Number of leaf nodes."""
        return int(np.count_nonzero(self.left < 0))

    @property
    def max_depth(self):
        """Depth of the deepest subtree (0: nothing was grown)."""
        return int(self.node_depth().max()) if self.n_nodes else 0

    def node_depth(self):
        """Depth of every node below its subtree's root (a root: 0), one
        level of all subtrees at a time.

        Raises ``ValueError`` where the arrays are not trees (checked first:
        a node reached from two parents or roots would make the walk
        exponential; a forest pickled before ``subtree_depth_`` calls this
        on the arrays it loads)."""
        self._check_arrays()  # children after their parents: no loops
        inner = np.flatnonzero(self.left >= 0)
        refs = np.concatenate([self.root, self.left[inner], self.right[inner]])
        if refs.size and np.bincount(refs, minlength=self.n_nodes).max() > 1:
            raise ValueError("Inconsistent fitted AxisSubtrees: a node is reached from two "
                             "parents or roots, or from itself.")
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        level, frontier = 0, np.asarray(self.root, dtype=np.int64)
        while frontier.size:
            depth[frontier] = level
            inner = frontier[self.left[frontier] >= 0]
            frontier = np.concatenate([self.left[inner], self.right[inner]])
            level += 1
        return depth

    def pruned(self, depth):
        """These subtrees cut ``depth`` levels below their roots: a node at
        that depth becomes a leaf (its ``value`` is its rows'), the nodes
        below it go. Returns a new :class:`AxisSubtrees` (nodes renumbered in
        their order, so children still come after their parents)."""
        node_depth = self.node_depth()
        keep = node_depth <= depth
        new_id = np.cumsum(keep) - 1
        split = keep & (self.left >= 0) & (node_depth < depth)

        def child(ids):
            return np.where(split, new_id[np.maximum(ids, 0)], -1)[keep].astype(np.int64)

        return AxisSubtrees(
            new_id[self.root].astype(np.int64),
            np.where(split, self.feature, 0)[keep].astype(np.int64),
            np.where(split, self.threshold, 0.0)[keep].astype(np.float64),
            child(self.left), child(self.right),
            np.ascontiguousarray(self.value[keep]), self.n_node_samples[keep].copy())

    def _check_arrays(self):
        n = self.left.shape[0] if isinstance(self.left, np.ndarray) else None
        check_fitted_arrays("AxisSubtrees", [
            ("root", self.root, np.int64, (None,), False),
            ("feature", self.feature, np.int64, (n,), False),
            ("threshold", self.threshold, np.float64, (n,), False),
            ("left", self.left, np.int64, (n,), False),
            ("right", self.right, np.int64, (n,), False),
            ("value", self.value, np.float64, (n, None), False),
            ("n_node_samples", self.n_node_samples, np.float64, (n,), False),
        ])
        # The kernel walks down until left < 0: every child must come after
        # its parent (as scikit-learn numbers them), and every index be a node.
        inner = np.flatnonzero(self.left >= 0)
        if (np.any((self.root < 0) | (self.root >= n))
                or np.any(self.left[inner] <= inner) or np.any(self.right[inner] <= inner)
                or np.any(self.feature[inner] < 0)
                or np.any(self.left >= n) or np.any(self.right >= n)):
            raise ValueError("Inconsistent fitted AxisSubtrees: a root or child index "
                             "is out of range or does not come after its parent.")

    def _routable(self, X):
        """``X`` as the kernel takes it, after the arrays' and its width's checks."""
        self._check_arrays()
        X = check_route_input(X, X.shape[1])  # dtype and layout; any width ...
        if np.any(self.feature[self.left >= 0] >= X.shape[1]):  # ... these splits can read
            raise ValueError("These subtrees split on more features than X has.")
        return X

    def apply(self, X, leaves):
        """Node each row reaches from the root of its leaf ``leaves[i]``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float32 or float64
            The rows (validated by the estimator).
        leaves : ndarray of shape (n_samples,), int
            Position (0 .. n_roots - 1) of each row's leaf in the tree above.

        Returns
        -------
        nodes : ndarray of shape (n_samples,), int64
        """
        X = self._routable(X)
        start = np.ascontiguousarray(self.root[leaves], dtype=np.int64)
        out = np.empty(X.shape[0], dtype=np.int64)
        _apply_axis_subtrees(X, start, self.feature, self.threshold, self.left, self.right,
                             out)
        return out

    def predict(self, X, leaves):
        """``value`` of the node each row reaches: (n_samples, n_outputs)."""
        return self.value[self.apply(X, leaves)]

    def _levels(self, X, leaves):
        """The walk of every row from the root of its leaf ``leaves[i]``, one
        level of all rows at a time: yields ``(node, moved)`` after each
        level, ``node`` every row's node (updated in place) and ``moved`` the
        rows that stepped down (``None`` at the roots)."""
        X = self._routable(X)
        node = np.array(self.root[leaves], dtype=np.int64)
        yield node, None
        active = np.flatnonzero(self.left[node] >= 0)
        while active.size:
            n = node[active]
            go_left = X[active, self.feature[n]] <= self.threshold[n]
            node[active] = np.where(go_left, self.left[n], self.right[n])
            yield node, active
            active = active[self.left[node[active]] >= 0]

    def nodes_at_depths(self, X, leaves, depths):
        """Node each row reaches when its walk from the root of its leaf
        ``leaves[i]`` stops ``depths[j]`` levels down (or at a leaf above).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float32 or float64
        leaves : ndarray of shape (n_samples,), int
        depths : sequence of int, increasing

        Returns
        -------
        nodes : ndarray of shape (n_samples, len(depths)), int64
            ``nodes[:, j]`` is what :meth:`apply` returns for these
            subtrees cut at ``depths[j]`` (:meth:`pruned`), in this
            object's node numbering.
        """
        out = np.empty((len(leaves), len(depths)), dtype=np.int64)
        j = 0
        for level, (node, _) in enumerate(self._levels(X, leaves)):
            while j < len(depths) and depths[j] <= level:
                out[:, j] = node
                j += 1
            if j == len(depths):
                return out
        out[:, j:] = node[:, None]  # deeper than every walk: where it ended
        return out

    def decision_path(self, X, leaves):
        """CSR indicator (n_samples, n_nodes) of the subtree nodes each row
        visits: the kernel's walk, one level at a time for all rows."""
        rows, cols = [], []
        for node, moved in self._levels(X, leaves):
            if moved is None:
                moved = np.arange(node.size)
            rows.append(moved)
            cols.append(node[moved])
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        return sparse.csr_matrix((np.ones(rows.size), (rows, cols)),
                                 shape=(len(leaves), self.n_nodes))


def _power_of_two(x):
    """The largest power of two at most ``x`` (> 0): dividing by it is exact."""
    return float(np.ldexp(1.0, np.frexp(x)[1] - 1))


def _target_frame(y, w):
    """``(peak, centre, unit)``: the targets ``y`` (n, n_outputs) of a CART
    as ``(centre + unit * z) * peak``, ``z`` of weighted mean 0 and spread
    about 1. scikit-learn's squared error calls a node of variance below
    float64's eps pure, loses the spread of targets far from zero to
    cancellation and overflows its sums of squares on huge targets; the
    members standardize theirs. One ``unit`` for all outputs keeps their
    relative weight in the criterion (it ranks the splits as on the raw
    targets, up to rounding), and ``peak`` and ``unit`` are powers of two."""
    peak = _power_of_two(np.max(np.abs(y)))
    u = y / peak
    centre = np.average(u, axis=0, weights=w)
    spread = np.sqrt(np.mean(np.average((u - centre) ** 2, axis=0, weights=w)))
    return peak, centre, _power_of_two(spread) if spread > 0 else 1.0


def _rows_value(y, w, classification, n_outputs):
    """(1, n_outputs): the weighted class proportions or mean targets of
    rows (at least one, of positive weight) that nothing splits further."""
    if classification:
        return (np.bincount(y.astype(np.int64), weights=w, minlength=n_outputs)
                / w.sum())[None, :]
    peak = np.max(np.abs(y))
    if peak == 0:
        return np.zeros((1, y.shape[1]))
    peak = _power_of_two(peak)  # the mean of huge targets without overflow
    return (np.average(y / peak, axis=0, weights=w) * peak)[None, :]


def grow_axis_subtrees(X, leaves, n_roots, Y, w, base_value, *, classification, n_outputs,
                       max_depth, seed, mean, scale, min_weight_leaf=0.0):
    """One CART below every leaf of a tree, on the rows that reach it.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The fit rows, raw.
    leaves : ndarray of shape (n_samples,), int
        Position of each row's leaf in the tree above (0 .. ``n_roots`` - 1).
    Y : ndarray
        Class codes 0 .. ``n_outputs`` - 1 (classification) or targets
        ``(n_samples, n_outputs)``.
    w : ndarray of shape (n_samples,)
        Weights; rows of zero weight are not in the data.
    base_value : ndarray of shape (n_roots, n_outputs)
        The leaves' own values, kept where the rows that arrive weigh too
        little to be a leaf (none of positive weight, or less than
        ``min_weight_leaf``).
    max_depth : int or None
        Depth of every CART (None: until its leaves are pure, as a
        RandomForest's trees).
    seed : int
        Seed of the CARTs (their ties between equally good splits).
    mean, scale : ndarrays of shape (n_features,)
        The CARTs grow on ``(X - mean) / scale`` (scikit-learn's trees cast
        their input to float32, whose range and resolution raw features may
        exceed); their thresholds are written back in raw units.
    min_weight_leaf : float, default=0.0
        Least weight of a subtree's leaf (scikit-learn's
        ``min_weight_fraction_leaf`` of each CART, as a fraction of its own
        rows' weight).

    A leaf grows a CART (Gini / squared error, scikit-learn's defaults) when
    at least two of its rows have positive weight (and at least twice
    ``min_weight_leaf``) and their targets differ; its nodes' values are the
    weighted class proportions (over ``n_outputs`` classes) or mean targets
    of the rows reaching them (a regression CART grows on its targets
    standardized, one scale for all outputs, so that targets of any
    magnitude split as they would near 1), as is the single node of a leaf
    whose rows are not split (one class, one target value, less than twice
    ``min_weight_leaf``); a leaf whose rows weigh less than
    ``min_weight_leaf`` (none reaches it, or too few) keeps ``base_value``.
    """
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    # The rows of positive weight grouped by leaf, in their order (one stable
    # sort instead of a scan of all rows per leaf).
    kept = np.flatnonzero(w > 0)
    kept = kept[np.argsort(leaves[kept], kind="stable")]
    bounds = np.searchsorted(leaves[kept], np.arange(n_roots + 1))
    Z = (X - mean) / scale
    parts = {"feature": [], "threshold": [], "left": [], "right": [], "value": [],
             "n_node_samples": []}
    root = np.empty(n_roots, dtype=np.int64)
    offset = 0
    for j in range(n_roots):
        rows = kept[bounds[j]:bounds[j + 1]]
        y_j = Y[rows]
        total = float(w[rows].sum())
        grow = rows.size >= 2 and total >= 2 * min_weight_leaf and (
            np.unique(y_j).size > 1 if classification else np.ptp(y_j, axis=0).max() > 0)
        if not grow:  # one node: its rows' value, or the leaf's own where they weigh
            # too little to be a leaf (none, or below min_weight_leaf)
            parts["feature"].append(np.zeros(1, dtype=np.int64))
            parts["threshold"].append(np.zeros(1))
            parts["left"].append(np.full(1, -1, dtype=np.int64))
            parts["right"].append(np.full(1, -1, dtype=np.int64))
            parts["value"].append(_rows_value(y_j, w[rows], classification, n_outputs)
                                  if rows.size and total >= min_weight_leaf else
                                  np.asarray(base_value[j], dtype=np.float64)[None, :])
            parts["n_node_samples"].append(np.array([total]))
            root[j] = offset
            offset += 1
            continue
        cls = DecisionTreeClassifier if classification else DecisionTreeRegressor
        if not classification:  # y_j = (centre + unit * target) * peak
            peak, centre, unit = _target_frame(y_j, w[rows])
            y_j = (y_j / peak - centre) / unit
        cart = cls(max_depth=max_depth, random_state=seed,
                   min_weight_fraction_leaf=min(0.5, min_weight_leaf / total))
        with quiet_internal_fit(y_j, classification):  # a leaf's few rows of many classes
            cart.fit(Z[rows], y_j, sample_weight=w[rows])
        t = cart.tree_
        inner = t.children_left >= 0
        feature = np.where(inner, t.feature, 0).astype(np.int64)
        threshold = np.where(inner, mean[feature] + scale[feature] * t.threshold, 0.0)
        weight = np.asarray(t.weighted_n_node_samples, dtype=np.float64)
        if classification:  # weighted class counts or proportions (by version)
            counts = t.value[:, 0, :]
            value = np.zeros((t.node_count, n_outputs))
            value[:, cart.classes_.astype(np.int64)] = counts / counts.sum(axis=1,
                                                                           keepdims=True)
        else:  # weighted mean targets, in the targets' units
            value = (centre + unit * np.array(t.value[:, :, 0], dtype=np.float64)) * peak
        parts["feature"].append(feature)
        parts["threshold"].append(threshold.astype(np.float64))
        parts["left"].append(np.where(inner, t.children_left + offset, -1).astype(np.int64))
        parts["right"].append(np.where(inner, t.children_right + offset, -1).astype(np.int64))
        parts["value"].append(value)
        parts["n_node_samples"].append(weight)
        root[j] = offset
        offset += t.node_count
    arrays = {k: np.ascontiguousarray(np.concatenate(v)) for k, v in parts.items()}
    return AxisSubtrees(root, **arrays)
