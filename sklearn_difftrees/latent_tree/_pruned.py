"""A fitted tree whose nodes may be pruned (LatentTree's ``a_t = 0``): its
``apply`` / ``decision_path`` / ``get_n_leaves`` stop at pruned nodes, and its
text export shows node values and pruning. Shared by the LatentTree estimators
and :class:`~sklearn_difftrees.LatentTreeClusterer`."""

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._core import topology
from .._core._tree_view import TreeView, build_view, linear_terms
from .._core.validation import check_predict_data

__all__ = ["_PrunedTreeMixin"]


class _PrunedTreeMixin:
    """``apply`` / ``decision_path`` / export of a tree whose nodes may be pruned.

    Needs ``tree_`` (with ``active``), ``pruning_values_`` and
    ``node_values_``.
    """

    def _paths(self, X):
        """(path nodes root->leaf, number of active nodes on it) per row."""
        check_is_fitted(self)
        X = check_predict_data(self, X)
        depth = self.tree_.max_depth
        path = self.tree_.decision_path(X).indices.reshape(X.shape[0], depth + 1)
        n_active = self.tree_.active[path].sum(axis=1)
        return path, n_active

    def apply(self, X):
        """Node each sample ends in: its leaf of the pruned tree.

        Samples follow the hard routing (right iff the split score is
        positive) until the next node is inactive (pruned, ``a_t = 0``, or
        not reached by training data); the last active node is returned.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        X_leaves : ndarray of shape (n_samples,)
            Heap index of the node each sample ends in.
        """
        path, n_active = self._paths(X)
        return path[np.arange(path.shape[0]), n_active - 1].astype(np.int64, copy=False)

    def decision_path(self, X):
        """Return the active nodes each sample goes through.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR indicator (heap-order columns) of the active nodes on each
            sample's path, from the root to the node :meth:`apply` returns.
        """
        from scipy import sparse

        path, n_active = self._paths(X)
        n, width = path.shape
        keep = np.arange(width)[None, :] < n_active[:, None]
        indices = path[keep]
        indptr = np.concatenate(([0], np.cumsum(n_active)))
        return sparse.csr_matrix(
            (np.ones(indices.size, dtype=np.intp), indices, indptr),
            shape=(n, topology.n_nodes(self.tree_.max_depth)),
        )

    def get_n_leaves(self):
        """Return the number of leaves of the pruned tree.

        Returns
        -------
        n_leaves : int
            Number of nodes :meth:`apply` can return: active nodes of which
            at least one child is inactive (or that have none). A node with
            one active child is a leaf for the samples routed to the other,
            unless its split has no weights (a constant score, as below a
            leaf of a CART written as a LatentTree): every sample then goes
            the same way.
        """
        check_is_fitted(self)
        tree = self.tree_
        active = tree.active
        n_int = tree.n_internal
        internal = np.arange(n_int)
        # A split without weights sends every sample left (score <= 0) or right.
        constant = ~np.asarray(tree.weights[:n_int]).any(axis=1)
        left = active[2 * internal + 1] | (constant & (tree.bias[:n_int] > 0))
        right = active[2 * internal + 2] | (constant & (tree.bias[:n_int] <= 0))
        both = np.zeros(active.size, dtype=bool)
        both[internal] = left & right
        return int(np.sum(active & ~both))

    # -------------------------------------------------------------- export
    def _export_note(self):
        return (
            "LatentTree: the prediction is the head f(x, z) on the input and the pruned "
            "traversal z, not a leaf constant; values shown are the mean predictions of the "
            "training samples reaching a node. A pruned child (a_t = 0) is a leaf: samples "
            "going there end at its parent."
        )

    def _node_text(self, node, class_names, decimals):
        value = self.node_values_[node]
        if is_classifier(self):
            k = int(np.argmax(value))
            return f"class: {class_names[k]} (mean p={value[k]:.{decimals}f})"
        return "value: [" + ", ".join(f"{v:.{decimals}f}" for v in value) + "]"

    def _tree_view(self, tree_index, names, class_names, decimals, top_k):
        """The view of the pruned tree (hook of the core's exports).

        A child that training samples reach but that is pruned (``a = 0``) is
        shown as a leaf (those samples end at its parent); children no
        training sample reaches are not shown, and a split whose training
        samples all go one way is hidden.
        """
        if tree_index is not None:
            raise TypeError(
                f"tree_index={tree_index!r} selects a tree of an ensemble; "
                f"{type(self).__name__} is a single tree: leave tree_index=None."
            )
        tree = self.tree_
        n_int = tree.n_internal
        scale = getattr(self, "_feature_scale", np.ones(tree.n_features))

        def children(node):
            if node >= n_int or not tree.active[node]:
                return []
            return [c for c in (2 * node + 1, 2 * node + 2) if tree.n_node_samples[c] > 0]

        def split(node):
            rows = linear_terms(tree.weights[node], names, scale, top_k, decimals, rows=True)
            return rows, f"{-tree.bias[node] + 0.0:.{decimals + 1}g}"

        def leaf(node):
            text = self._node_text(node, class_names, decimals)
            return text if tree.active[node] else f"pruned (a = 0): {text}"

        root = build_view(
            0, children=children, split=split, leaf=leaf,
            samples=lambda node: tree.n_node_samples[node],
            info=lambda node: (f"a = {self.pruning_values_[node]:.{decimals}f}"
                               if tree.active[node] else ""),
            value=lambda node: self.node_values_[node],
        )
        return TreeView(root, notes=[self._export_note()],
                        classification=is_classifier(self))
