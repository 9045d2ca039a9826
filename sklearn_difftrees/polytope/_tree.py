"""The fitted convex-polytope tree (``tree_`` of the ConvexPolytopeTree estimators).

A :class:`PolytopeTree` is a binary tree in heap order (node ``i`` has children
``2i+1`` / ``2i+2``), stored as plain numpy arrays so that it pickles with
numpy alone and routes through the compiled kernels of
``cython_src/_routing.pyx`` without torch.

Split rule (Theorem 1 of the CPT paper): internal node ``i`` owns facets
``k = facet_ptr[i] ... facet_ptr[i+1]-1`` and scores a sample by the noisy-OR
log-odds

    s_i(x) = sum_k r_k * softplus(beta_k . x + b_k),    r_k >= 0,

so that ``P(yes | x) = 1 - exp(-s_i(x))``. A sample goes right iff
``s_i(x) - threshold[i] > 0`` (the package's one routing rule, ties left);
the left region ``{s_i <= threshold[i]}`` is convex, confined by a polytope
with one facet per expert.

Unlike :class:`~sklearn_difftrees._core.tree.ObliqueTree`, the tree need not be
complete: greedy growth stops at different depths. ``is_split[i]`` says
whether node ``i`` splits; routing stops at the first node that does not
(a leaf), so :meth:`apply` returns the heap index of the leaf at its own
depth, and ``value`` holds one row per heap node (every node's training
distribution / mean; a node no training sample reached holds its parent's).
The arrays are sized for ``max_depth`` levels; nodes below a leaf are unused.
"""

import numpy as np
from scipy import sparse

from .._core import topology
from .._core._guard import check_fitted_arrays
from .._core.tree import HeapTree
from .._kernels._routing import _apply_polytope, _path_polytope, _polytope_scores
from ._export import polytope_view

__all__ = ["PolytopeTree"]


class PolytopeTree(HeapTree):
    """Binary tree with convex-polytope splits and hard routing.

    Parameters
    ----------
    is_split : array-like of bool, shape (2**max_depth - 1,)
        Whether each potential internal node (heap order) splits.
    facet_ptr : array-like of int, shape (2**max_depth,)
        Facets of node ``i`` are rows ``facet_ptr[i]:facet_ptr[i+1]``; a node
        that does not split has none.
    facet_coef : array-like of shape (n_facets_total, n_features)
        ``beta_k`` of every facet, in the input space.
    facet_intercept : array-like of shape (n_facets_total,)
        ``b_k`` of every facet.
    facet_weight : array-like of shape (n_facets_total,)
        ``r_k >= 0`` of every facet.
    threshold : array-like of shape (2**max_depth - 1,)
        ``tau_i``: left iff ``s_i(x) <= tau_i`` (``+inf`` where no split).
    value : array-like of shape (2**(max_depth + 1) - 1, n_outputs)
        Value of every heap node (class proportions or target means).

    Attributes
    ----------
    max_depth : int
        Number of levels the arrays are sized for.
    active : ndarray of bool, shape (2**(max_depth + 1) - 1,)
        Whether training samples reach each node (set by :meth:`finalize`;
        until then, every split node and every child of a split node).
    n_node_samples : ndarray of shape (2**(max_depth + 1) - 1,)
        Training weight reaching each node.
    """

    def __init__(
        self, is_split, facet_ptr, facet_coef, facet_intercept, facet_weight, threshold, value
    ):
        self.is_split = np.array(is_split, dtype=np.uint8, order="C")
        self.facet_ptr = np.array(facet_ptr, dtype=np.int64, order="C")
        self.facet_coef = np.array(facet_coef, dtype=np.float64, order="C")
        self.facet_intercept = np.array(facet_intercept, dtype=np.float64, order="C")
        self.facet_weight = np.array(facet_weight, dtype=np.float64, order="C")
        self.threshold = np.array(threshold, dtype=np.float64, order="C")
        self.value = np.array(value, dtype=np.float64, order="C")
        if self.value.ndim == 1:
            self.value = self.value[:, None]
        n_int = self.is_split.shape[0]
        depth = int(round(np.log2(n_int + 1)))
        n_f = self.facet_weight.shape[0]
        ok = (
            self.is_split.ndim == 1
            and topology.n_internal(depth) == n_int
            and self.facet_ptr.shape == (n_int + 1,)
            and self.facet_coef.ndim == 2
            and self.facet_coef.shape[0] == n_f
            and self.facet_intercept.shape == (n_f,)
            and self.threshold.shape == (n_int,)
            and self.value.ndim == 2
            and self.value.shape[0] == topology.n_nodes(depth)
        )
        if ok:
            ok = (
                self.facet_ptr[0] == 0
                and self.facet_ptr[-1] == n_f
                and np.all(np.diff(self.facet_ptr) >= 0)
                and np.all(self.facet_weight >= 0)
                and (depth == 0 or (self.is_split[0] or not self.is_split.any()))
            )
        if not ok:
            raise ValueError(
                "Inconsistent polytope tree arrays: is_split "
                f"{self.is_split.shape}, facet_ptr {self.facet_ptr.shape}, facet_coef "
                f"{self.facet_coef.shape}, facet_intercept {self.facet_intercept.shape}, "
                f"facet_weight {self.facet_weight.shape}, threshold {self.threshold.shape}, "
                f"value {self.value.shape}."
            )
        reach = np.zeros(topology.n_nodes(depth), dtype=bool)
        reach[0] = True
        for i in range(n_int):
            if reach[i] and self.is_split[i]:
                reach[2 * i + 1] = reach[2 * i + 2] = True
        self.active = reach
        self.n_node_samples = np.zeros(topology.n_nodes(depth), dtype=np.float64)
        self._check_arrays()

    @classmethod
    def from_standardized(
        cls, is_split, facet_ptr, coef, intercept, weight, threshold, value, mean, scale
    ):
        """Tree whose facets ``coef @ ((x - mean) / scale) + intercept`` act on raw ``x``."""
        coef = np.asarray(coef, dtype=np.float64)
        mean = np.asarray(mean, dtype=np.float64)
        scale = np.asarray(scale, dtype=np.float64)
        return cls(
            is_split,
            facet_ptr,
            coef / scale,
            np.asarray(intercept, dtype=np.float64) - coef @ (mean / scale),
            weight,
            threshold,
            value,
        )

    # ------------------------------------------------------------------ sizes
    # Derived from the arrays, never stored beside them (the kernels trust them).
    _internal_array = "is_split"

    @property
    def n_features(self):
        """Number of input features (columns of ``facet_coef``)."""
        return int(np.shape(self.facet_coef)[1])

    @property
    def is_leaf(self):
        """Nodes where routing stops (bool, heap order; reached or not)."""
        leaf = np.zeros(self.value.shape[0], dtype=bool)
        leaf[0] = not (self.n_internal and self.is_split[0])
        for i in np.flatnonzero(self.is_split):
            leaf[2 * i + 1] = not (2 * i + 1 < self.n_internal and self.is_split[2 * i + 1])
            leaf[2 * i + 2] = not (2 * i + 2 < self.n_internal and self.is_split[2 * i + 2])
        return leaf

    @property
    def n_facets(self):
        """Number of facets of every potential internal node."""
        return np.diff(self.facet_ptr)

    @property
    def n_leaves(self):
        """Number of leaves that training samples reach."""
        return int((self.active & self.is_leaf).sum())

    # ---------------------------------------------------------------- routing
    def _check_arrays(self):
        """The fitted arrays agree with each other (before every kernel call)."""
        s = self.is_split
        n_int = s.shape[0] if isinstance(s, np.ndarray) and s.ndim == 1 else -1
        if n_int < 0 or topology.n_internal(int(round(np.log2(n_int + 1)))) != n_int:
            n_int = -1
        w = self.facet_weight
        n_f = w.shape[0] if isinstance(w, np.ndarray) and w.ndim == 1 else -1
        check_fitted_arrays("PolytopeTree", [
            ("is_split", s, np.uint8, (n_int,), False),
            ("facet_ptr", self.facet_ptr, np.int64, (n_int + 1,), False),
            ("facet_coef", self.facet_coef, np.float64, (n_f, None), True),
            ("facet_intercept", self.facet_intercept, np.float64, (n_f,), True),
            ("facet_weight", w, np.float64, (n_f,), True),
            ("threshold", self.threshold, np.float64, (n_int,), False),
            ("value", self.value, np.float64, (2 * n_int + 1, None), False),
            ("active", self.active, np.bool_, (2 * n_int + 1,), False),
            ("n_node_samples", self.n_node_samples, np.float64, (2 * n_int + 1,), False),
        ])
        ptr = self.facet_ptr
        if ptr[0] != 0 or ptr[-1] != n_f or np.any(np.diff(ptr) < 0) or np.any(w < 0):
            raise ValueError(
                "Inconsistent fitted PolytopeTree: facet_ptr must rise from 0 to "
                "the number of facets and facet_weight must be >= 0."
            )

    def _kernel_args(self):
        return (
            self.facet_coef,
            self.facet_intercept,
            self.facet_weight,
            self.facet_ptr,
        )

    def scores(self, X, nodes):
        """Polytope score ``s_node(x)`` of each row at ``nodes`` (int or per-row array)."""
        X = self._check_input(X)
        nodes = np.broadcast_to(np.asarray(nodes, dtype=np.int64), (X.shape[0],))
        nodes = np.ascontiguousarray(nodes)
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self.n_internal):
            raise ValueError("nodes must be internal heap indices.")
        out = np.empty(X.shape[0], dtype=np.float64)
        _polytope_scores(X, *self._kernel_args(), nodes, out)
        return out

    def apply(self, X):
        """Heap index of the leaf each row of ``X`` reaches (int64)."""
        X = self._check_input(X)
        out = np.empty(X.shape[0], dtype=np.int64)
        if self.n_internal == 0:
            out[:] = 0
        else:
            _apply_polytope(X, *self._kernel_args(), self.threshold, self.is_split, out)
        return out

    def paths(self, X):
        """Visited heap indices per row, shape (n, max_depth + 1), padded with -1."""
        X = self._check_input(X)
        out = np.empty((X.shape[0], self.max_depth + 1), dtype=np.int64)
        if self.n_internal == 0:
            out[:] = 0
        else:
            _path_polytope(X, *self._kernel_args(), self.threshold, self.is_split, out)
        return out

    def decision_path(self, X):
        """CSR indicator of the nodes each row visits (columns: heap indices)."""
        path = self.paths(X)
        mask = path >= 0
        indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))])
        indices = path[mask]
        data = np.ones(indices.size, dtype=np.intp)
        return sparse.csr_matrix(
            (data, indices, indptr), shape=(X.shape[0], self.value.shape[0])
        )

    def predict(self, X):
        """Value of the leaf each row reaches, shape (n_samples, n_outputs)."""
        return self.value[self.apply(X)]

    # ------------------------------------------------------------- finalizing
    def finalize(self, X, targets, sample_weight=None):
        """Set every node's value to the weighted mean of ``targets`` reaching it.

        ``targets`` is ``(n_samples, n_outputs)``: one-hot labels give class
        proportions, real targets give means. Records ``n_node_samples`` and
        ``active`` (nodes reached by a sample of positive weight); a node
        that no training sample reaches takes its parent's value.
        """
        targets = np.asarray(targets, dtype=np.float64)
        if targets.ndim == 1:
            targets = targets[:, None]
        n = X.shape[0]
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
        path = self.paths(X)
        n_nodes = self.value.shape[0]
        rows = np.repeat(np.arange(n), path.shape[1])
        cols = path.ravel()
        keep = cols >= 0
        rows, cols = rows[keep], cols[keep]
        wsum = np.bincount(cols, weights=w[rows], minlength=n_nodes)
        hit = np.bincount(cols[w[rows] > 0], minlength=n_nodes) > 0
        value = np.zeros((n_nodes, targets.shape[1]))
        for k in range(targets.shape[1]):
            value[:, k] = np.bincount(cols, weights=w[rows] * targets[rows, k], minlength=n_nodes)
        reached = wsum > 0
        value[reached] /= wsum[reached, None]
        for node in range(1, n_nodes):  # heap order: parents first
            if not reached[node]:
                value[node] = value[(node - 1) // 2]
        self.value = value
        self.n_node_samples = wsum
        self.active = hit
        return self

    # Rendering hook of the FittedTree protocol (export_text, plot_tree,
    # export_graphviz).
    def _tree_view(self, est, names, class_names, decimals, top_k):
        return polytope_view(est, names, class_names, decimals, top_k)

    # --------------------------------------------------------------- pickling

    def __getstate__(self):
        return {
            "is_split": self.is_split,
            "facet_ptr": self.facet_ptr,
            "facet_coef": self.facet_coef,
            "facet_intercept": self.facet_intercept,
            "facet_weight": self.facet_weight,
            "threshold": self.threshold,
            "value": self.value,
            "active": self.active,
            "n_node_samples": self.n_node_samples,
        }

    def __setstate__(self, state):
        self.__init__(
            state["is_split"],
            state["facet_ptr"],
            state["facet_coef"],
            state["facet_intercept"],
            state["facet_weight"],
            state["threshold"],
            state["value"],
        )
        active = np.asarray(state["active"], dtype=bool)
        n_node = np.asarray(state["n_node_samples"], dtype=np.float64)
        if active.shape != self.active.shape or n_node.shape != self.active.shape:
            raise ValueError("Corrupted PolytopeTree state: node arrays have the wrong size.")
        self.active = active
        self.n_node_samples = n_node

    def __repr__(self):
        return (
            f"PolytopeTree(max_depth={self.max_depth}, n_features={self.n_features}, "
            f"n_outputs={self.n_outputs}, n_leaves={self.n_leaves}, "
            f"n_facets={int(self.facet_weight.shape[0])})"
        )
