"""The fitted oblique tree every hard-routing estimator holds as ``tree_``.

An :class:`ObliqueTree` is a complete binary tree of depth ``max_depth`` in heap
order (see :mod:`sklearn_difftrees._core.topology`) stored as plain numpy
arrays, so it pickles with numpy alone and predicts through the compiled
router in ``cython_src/_routing.pyx`` without torch.

Routing rule (the same for every method): at internal node ``i`` a sample goes
right iff ``weights[i] @ x + bias[i] > 0``, left otherwise (ties go left).
The weights live in the *original* input space: whatever preprocessing a
method trains with (standardization, DGT's linear over-parameterization, ...)
is folded into ``weights``/``bias`` in float64 before the tree is built.

Nodes that no training sample reaches are marked inactive (``active``). A test
sample may still be routed into an inactive leaf; that leaf then predicts the
training-weighted mean value of the leaves below its deepest active ancestor
(see :meth:`ObliqueTree.finalize`).
"""

from typing import Protocol

import numpy as np
from scipy import sparse

from .._kernels._routing import _apply_oblique, _path_oblique
from . import topology
from ._guard import check_fitted_arrays

__all__ = ["FittedTree", "HeapTree", "ObliqueTree", "check_route_input"]


class FittedTree(Protocol):
    """What the core asks of a fitted hard tree (an estimator's ``tree_``).

    :class:`ObliqueTree` is the core's own. A method whose splits are not one
    hyperplane per node (ConvexPolytopeTree's ``PolytopeTree``) defines its
    own tree class in its own subpackage with these members; no core file
    changes. Node indices are heap indices (children of ``i`` are ``2i+1`` and
    ``2i+2``); every array holds numpy only, so the tree pickles and predicts
    without torch.

    Routing (``BaseObliqueTree.apply``, ``decision_path``, ``get_depth``,
    ``get_n_leaves`` and the task mixins' ``predict``): ``apply(X)``,
    ``decision_path(X)``, ``predict(X)``, ``depth``, ``n_leaves``,
    ``n_features``, ``n_node_samples``, ``value``.

    Rendering, optional: ``_tree_view(est, names, class_names, decimals,
    top_k)`` returns the :class:`~sklearn_difftrees._core._tree_view.TreeView`
    that :func:`~sklearn_difftrees.export_text`,
    :func:`~sklearn_difftrees.plot_tree` and
    :func:`~sklearn_difftrees.export_graphviz` render (built with
    :func:`~sklearn_difftrees._core._tree_view.build_view`, which hides
    pass-through nodes); without it they show one oblique split per node from
    ``weights``/``bias``. ``est`` is the fitted estimator, ``names`` the
    resolved feature names and ``class_names`` the resolved class names
    (``None`` for regressors).
    """

    n_features: int
    depth: int
    n_leaves: int
    n_node_samples: np.ndarray
    value: np.ndarray

    def apply(self, X): ...

    def decision_path(self, X): ...

    def predict(self, X): ...


def check_route_input(X, n_features):
    """``X`` as the routing kernels take it: 2-D, ``n_features`` columns,
    C-contiguous float32/float64 (other dtypes become float64)."""
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(
            f"X has shape {X.shape}; this tree routes arrays with {n_features} features."
        )
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    # Read-only arrays are fine (the kernels take const views); only
    # non-contiguous ones are copied.
    return np.ascontiguousarray(X)


class HeapTree:
    """What every fitted heap-order tree of the core's protocol shares.

    Sizes are derived from the arrays, never stored beside them, so that an
    edit cannot make them disagree (the kernels trust them). A subclass names
    the array whose first axis has one row per potential internal node
    (``_internal_array``), stores ``value`` and ``active``, and implements
    ``_check_arrays`` (called before every kernel).
    """

    _internal_array = None

    @property
    def max_depth(self):
        """Depth the arrays are sized for (``2**max_depth - 1`` internal rows)."""
        return int(round(np.log2(np.shape(getattr(self, self._internal_array))[0] + 1)))

    @max_depth.setter
    def max_depth(self, value):
        name = type(self).__name__
        raise AttributeError(
            f"{name}.max_depth is derived from the arrays; build a new {name} "
            "to change the tree."
        )

    @property
    def n_outputs(self):
        """Number of values per node or leaf (columns of ``value``)."""
        return int(np.shape(self.value)[1])

    @property
    def n_internal(self):
        """Number of potential internal nodes, ``2**max_depth - 1``."""
        return topology.n_internal(self.max_depth)

    @property
    def node_count(self):
        """Number of active nodes (internal nodes and leaves)."""
        return int(self.active.sum())

    def divided_weight(self):
        """Training weight each potential internal node's split divides.

        As a share of the root's: ``n_left * n_right / (n_node * n_root)``
        from ``n_node_samples``, i.e. ``p * p_left * p_right`` (0 where no
        training weight arrives or all of it goes one way); what
        ``feature_importances_`` weights a split's feature shares by.

        Returns
        -------
        weight : ndarray of shape (n_internal,)
            One value per potential internal node, heap order.
        """
        n = np.asarray(self.n_node_samples, dtype=np.float64)
        m = self.n_internal
        node, left, right = n[:m], n[1 : 2 * m + 1 : 2], n[2 : 2 * m + 2 : 2]
        return left * right / np.where(node > 0, node, 1.0) / max(n[0], 1e-300)

    def split_gains(self):
        """How much each potential internal node's split moves the tree's predictions.

        ``divided_weight() * ||v_left - v_right||^2``, with ``v`` the mean
        prediction of the training weight reaching a child (summed over the
        outputs): the split's part of the variance of the tree's predictions
        over the training rows (these parts add up to it), as a share of the
        root's weight (``value`` holds one row per leaf, whose means over the
        training weight give the nodes', or one per heap node, a node's own
        training mean). 0 for a split whose two sides predict alike, so that
        a tree predicting one value has no important feature; for leaves
        holding the training rows' class proportions or mean targets, the
        split's decrease of Gini impurity or squared error, as
        scikit-learn's ``feature_importances_`` count it.

        Returns
        -------
        gain : ndarray of shape (n_internal,)
            One value per potential internal node, heap order.
        """
        m = self.n_internal
        n = np.asarray(self.n_node_samples, dtype=np.float64)
        v = np.asarray(self.value, dtype=np.float64)
        if v.shape[0] == m + 1:  # one row per leaf: the nodes' means from the leaves'
            v = topology.subtree_sums(n[m:, None] * v) / np.where(n > 0, n, 1.0)[:, None]
        gap = ((v[1 : 2 * m + 1 : 2] - v[2 : 2 * m + 2 : 2]) ** 2).sum(axis=1)
        return self.divided_weight() * gap

    @property
    def depth(self):
        """Largest number of splits on a path to an active leaf.

        Only nodes whose two children are both active split; a pass-through
        node (every training row goes the same way, hidden by the exports)
        does not count, so that ``n_leaves <= 2**depth`` as for scikit-learn's
        trees and a tree of one leaf has depth 0.
        """
        active = self.active
        splits = active[1::2] & active[2::2]  # node i's children: 2i + 1, 2i + 2
        above = np.zeros(active.size, dtype=np.int64)  # splits above each node
        for level in range(1, self.max_depth + 1):
            node = np.arange(2**level - 1, 2 ** (level + 1) - 1)
            above[node] = above[(node - 1) // 2] + splits[(node - 1) // 2]
        # Over every active node, not only the last level: a PolytopeTree's
        # growth stops early (its leaves may all sit above max_depth).
        return int(above[active].max(initial=0))

    def _check_input(self, X):
        self._check_arrays()
        return check_route_input(X, self.n_features)


class ObliqueTree(HeapTree):
    """Complete oblique binary tree with hard routing.

    Parameters
    ----------
    weights : array-like of shape (2**max_depth - 1, n_features)
        Split weight vector of every internal node, in the input space.
    bias : array-like of shape (2**max_depth - 1,)
        Split bias of every internal node.
    value : array-like of shape (2**max_depth, n_outputs)
        Prediction of every leaf, leaves ordered left to right. Classifiers
        store class probabilities, regressors the (unscaled) target values.

    Attributes
    ----------
    max_depth : int
        Depth of the complete tree (read-only: derived from ``weights``).
    n_features : int
        Number of input features (read-only).
    n_outputs : int
        Number of values stored per leaf (read-only).
    active : ndarray of shape (2**(max_depth + 1) - 1,), dtype bool
        Whether a training sample reaches each node (heap order). All ``True``
        until :meth:`finalize` is called.
    n_node_samples : ndarray of shape (2**(max_depth + 1) - 1,), dtype float64
        Total training sample weight that reaches each node (zeros until
        :meth:`finalize`).
    """

    def __init__(self, weights, bias, value):
        # Private copies: the tree never aliases (or later mutates) caller arrays.
        self.weights = np.array(weights, dtype=np.float64, order="C")
        self.bias = np.array(bias, dtype=np.float64, order="C")
        self.value = np.array(value, dtype=np.float64, order="C")
        if self.value.ndim == 1:
            self.value = self.value[:, None]
        n_int = self.weights.shape[0]
        depth = int(round(np.log2(n_int + 1)))
        if (
            self.weights.ndim != 2
            or topology.n_internal(depth) != n_int
            or self.bias.shape != (n_int,)
            or self.value.shape[0] != topology.n_leaves(depth)
        ):
            raise ValueError(
                "Inconsistent oblique tree arrays: weights "
                f"{self.weights.shape}, bias {self.bias.shape}, value "
                f"{self.value.shape}; expected (2**D - 1, p), (2**D - 1,), "
                "(2**D, k) for some depth D."
            )
        self.active = np.ones(topology.n_nodes(depth), dtype=bool)
        self.n_node_samples = np.zeros(topology.n_nodes(depth), dtype=np.float64)
        self._check_arrays()

    @classmethod
    def from_standardized(cls, weights, bias, value, mean, scale):
        """Tree whose splits ``weights @ ((x - mean) / scale) + bias`` act on raw ``x``.

        Folds an input standardization into float64 node weights:
        ``W_raw = W / scale`` and ``b_raw = b - W @ (mean / scale)``.

        Parameters
        ----------
        weights : array-like of shape (2**max_depth - 1, n_features)
            Split weights on the standardized scale.
        bias : array-like of shape (2**max_depth - 1,)
            Split biases on the standardized scale.
        value : array-like of shape (2**max_depth, n_outputs)
            Leaf values.
        mean : array-like of shape (n_features,)
            Mean subtracted from every feature by the standardization.
        scale : array-like of shape (n_features,)
            Scale that divides every centred feature.

        Returns
        -------
        tree : ObliqueTree
            The same routing, with splits on the raw features.
        """
        weights = np.asarray(weights, dtype=np.float64)
        mean = np.asarray(mean, dtype=np.float64)
        scale = np.asarray(scale, dtype=np.float64)
        raw = weights / scale
        return cls(raw, np.asarray(bias, dtype=np.float64) - weights @ (mean / scale), value)

    # ------------------------------------------------------------------ sizes
    _internal_array = "weights"

    @property
    def n_features(self):
        """Number of input features (columns of ``weights``)."""
        return int(np.shape(self.weights)[1])

    @property
    def n_leaves(self):
        """Number of active leaves."""
        return int(self.active[self.n_internal :].sum())

    # ---------------------------------------------------------------- routing
    def _check_arrays(self):
        """The fitted arrays agree with each other (before every kernel call)."""
        w = self.weights
        rows = w.shape[0] if isinstance(w, np.ndarray) and w.ndim == 2 else -1
        if rows < 0 or topology.n_internal(int(round(np.log2(rows + 1)))) != rows:
            rows = -1  # not 2**D - 1 rows: the check names weights
        check_fitted_arrays("ObliqueTree", [
            ("weights", w, np.float64, (rows, None), True),
            ("bias", self.bias, np.float64, (rows,), True),
            ("value", self.value, np.float64, (rows + 1, None), False),
            ("active", self.active, np.bool_, (2 * rows + 1,), False),
            ("n_node_samples", self.n_node_samples, np.float64, (2 * rows + 1,), False),
        ])

    def apply(self, X):
        """Heap index of the leaf each row of ``X`` reaches.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float32 or float64
            The input samples (validated by the estimator, not here).

        Returns
        -------
        leaves : ndarray of shape (n_samples,), dtype int64
            Heap index of the leaf each sample reaches.
        """
        X = self._check_input(X)
        out = np.empty(X.shape[0], dtype=np.int64)
        if self.max_depth == 0:
            out[:] = 0
        else:
            _apply_oblique(X, self.weights, self.bias, self.max_depth, out)
        return out

    def decision_path(self, X):
        """CSR indicator of the nodes each row visits.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float32 or float64
            The input samples.

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, 2**(max_depth + 1) - 1)
            Nonzero ``(i, j)`` when sample ``i`` visits node ``j`` (heap order).
        """
        X = self._check_input(X)
        n = X.shape[0]
        path = np.empty((n, self.max_depth + 1), dtype=np.int64)
        if self.max_depth == 0:
            path[:] = 0
        else:
            _path_oblique(X, self.weights, self.bias, self.max_depth, path)
        indptr = np.arange(0, n * (self.max_depth + 1) + 1, self.max_depth + 1)
        data = np.ones(path.size, dtype=np.intp)
        return sparse.csr_matrix(
            (data, path.ravel(), indptr), shape=(n, topology.n_nodes(self.max_depth))
        )

    def leaf_values(self, leaves):
        """Look up the values of leaves given by their heap indices.

        Parameters
        ----------
        leaves : array-like of int
            Heap indices of leaves (as returned by :meth:`apply`).

        Returns
        -------
        values : ndarray of shape (len(leaves), n_outputs)
            The rows of ``value`` of those leaves.
        """
        return self.value[np.asarray(leaves) - self.n_internal]

    def predict(self, X):
        """Value of the leaf each row reaches.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float32 or float64
            The input samples.

        Returns
        -------
        values : ndarray of shape (n_samples, n_outputs)
            The value of the leaf each sample reaches.
        """
        return self.leaf_values(self.apply(X))

    # ------------------------------------------------------------- finalizing
    def finalize(self, X, sample_weight=None):
        """Record which nodes the training data reaches; fill unreached leaves.

        Sets ``n_node_samples`` and ``active`` from the hard routing of ``X``;
        every inactive leaf gets the weighted mean value of the active leaves
        below its deepest active ancestor, so that predictions never come from
        parameters no training sample has shaped.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float32 or float64
            The training samples.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights (uniform when ``None``); rows of weight zero do
            not activate nodes.

        Returns
        -------
        self : ObliqueTree
            The tree itself, updated in place.
        """
        n = X.shape[0]
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
        leaves = self.apply(X)
        counts = np.bincount(
            leaves - self.n_internal, weights=w, minlength=topology.n_leaves(self.max_depth)
        )
        # Zero-weight rows are not training data: they do not activate nodes.
        reached = np.bincount(leaves[w > 0] - self.n_internal, minlength=counts.size) > 0
        n_node = topology.subtree_sums(counts)
        hit = topology.subtree_sums(reached)
        self.n_node_samples = n_node
        self.active = hit
        if hit.all():
            return self
        # Vectorized over the unreached leaves (a per-leaf Python walk cost
        # seconds at depth 18): climb every such leaf to its deepest active
        # ancestor, one level at a time, then read that ancestor's weighted
        # mean leaf value from per-node totals (unreached leaves weigh 0).
        n_int = self.n_internal
        unreached = np.flatnonzero(~hit[n_int:])
        node = unreached + n_int
        for _ in range(self.max_depth):
            node = np.where(hit[node] | (node == 0), node, (node - 1) // 2)
        weight = n_node[node]
        weighted = topology.subtree_sums(counts[:, None] * self.value)[node]
        plain = topology.subtree_sums(self.value)[node] / topology.subtree_sums(
            np.ones(counts.size))[node][:, None]
        value = self.value.copy()
        value[unreached] = np.where(
            weight[:, None] > 0, weighted / np.where(weight > 0, weight, 1.0)[:, None], plain
        )
        self.value = value
        return self

    def _leaves_below(self, node):
        """Heap indices of the leaves in the subtree rooted at ``node``."""
        lo = hi = node
        while lo < self.n_internal:
            lo, hi = 2 * lo + 1, 2 * hi + 2
        return np.arange(lo, hi + 1)

    # --------------------------------------------------------------- pickling
    def __getstate__(self):
        return {
            "weights": self.weights,
            "bias": self.bias,
            "value": self.value,
            "active": self.active,
            "n_node_samples": self.n_node_samples,
        }

    def __setstate__(self, state):
        self.__init__(state["weights"], state["bias"], state["value"])
        active = np.asarray(state["active"], dtype=bool)
        n_node = np.asarray(state["n_node_samples"], dtype=np.float64)
        if active.shape != self.active.shape or n_node.shape != self.active.shape:
            raise ValueError("Corrupted ObliqueTree state: node arrays have the wrong size.")
        self.active = active
        self.n_node_samples = n_node

    def __repr__(self):
        return (
            f"ObliqueTree(max_depth={self.max_depth}, n_features={self.n_features}, "
            f"n_outputs={self.n_outputs}, node_count={self.node_count})"
        )
