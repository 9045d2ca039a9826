"""A fitted tree whose nodes may be pruned (LatentTree's ``a_t = 0``): its
``apply`` / ``decision_path`` / ``get_n_leaves`` stop at pruned nodes, and its
text export shows node values and pruning. Shared by the LatentTree estimators
and :class:`~sklearn_difftrees.LatentTreeClusterer`."""

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._core import topology
from .._core.export import _feature_names, _split_text
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
        return path[np.arange(path.shape[0]), n_active - 1]

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
            Number of active nodes without active children.
        """
        check_is_fitted(self)
        active = self.tree_.active
        n_int = self.tree_.n_internal
        internal = np.arange(n_int)
        has_child = np.zeros(active.size, dtype=bool)
        has_child[internal] = active[2 * internal + 1] | active[2 * internal + 2]
        return int(np.sum(active & ~has_child))

    # -------------------------------------------------------------- export
    def _export_note(self):
        return (
            "LatentTree: the prediction is the head f(x, z) on the input and the pruned "
            "traversal z, not a leaf constant; values shown are the mean predictions of the "
            "training samples reaching a node. Pruned nodes (a_t = 0) are not shown."
        )

    def _node_text(self, node, class_names, decimals):
        value = self.node_values_[node]
        if is_classifier(self):
            names = self.classes_ if class_names is None else class_names
            k = int(np.argmax(value))
            text = f"class: {names[k]} (mean p={value[k]:.{decimals}f})"
        else:
            text = "value: [" + ", ".join(f"{v:.{decimals}f}" for v in value) + "]"
        n = self.tree_.n_node_samples[node]
        return f"{text}  (a={self.pruning_values_[node]:.{decimals}f}, samples={n:.0f})"

    def _export_text(self, *, feature_names, class_names, max_depth, decimals, top_k):
        check_is_fitted(self)
        tree = self.tree_
        names = _feature_names(self, feature_names)
        if class_names is not None and is_classifier(self):
            if len(class_names) != self.n_classes_:
                raise ValueError(
                    f"class_names must contain {self.n_classes_} elements, got {len(class_names)}."
                )
        lines = [f"# {self._export_note()}"]
        n_int = tree.n_internal

        def recurse(node, depth):
            indent = "|   " * depth + "|--- "
            kids = [] if node >= n_int else [2 * node + 1, 2 * node + 2]
            if not any(tree.active[c] for c in kids):
                lines.append(indent + "leaf " + self._node_text(node, class_names, decimals))
                return
            if depth >= max_depth:
                lines.append(indent + "truncated branch")
                return
            lhs, thr = _split_text(self, node, names, top_k, decimals)
            for child, op in zip(kids, ("<=", "> ")):
                cond = f"{indent}{lhs} {op} {thr}"
                if tree.active[child]:
                    lines.append(cond)
                    recurse(child, depth + 1)
                elif self.pruning_values_[child] <= 0:
                    lines.append(f"{cond}  [pruned (a = 0)]")
                else:
                    lines.append(f"{cond}  [no training samples]")

        recurse(0, 0)
        return "\n".join(lines) + "\n"
