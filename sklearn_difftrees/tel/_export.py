"""Rendering of the soft trees of a fitted tree ensemble layer: the tree view
of one soft tree (``plot_tree`` / ``export_graphviz`` / ``export_text`` with
``tree_index``), the number of trees (without ``tree_index``, ``plot_tree``
and ``export_graphviz`` show every tree) and the text report of all of them
(``export_text``)."""

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._core._render import render_text
from .._core._tree_view import TreeView, build_view, linear_terms
from .._core.export import tree_view

__all__ = ["_TELExportMixin"]


class _TELExportMixin:
    """Export hooks of the TEL estimators (need the fitted arrays)."""

    def _export_notes(self, decimals):
        clf = is_classifier(self)
        g = float(self.gamma)
        fmt = f"{{:.{decimals + 1}g}}"
        notes = [
            f"{type(self).__name__}: {self.n_trees} soft trees of depth {self.max_depth}, "
            f"gamma={g:g}; mean reachable leaves per sample and tree on the training "
            f"data: {self.n_reachable_leaves_:.{decimals}f}.",
            "A node sends x right with probability S(lhs - threshold), S the smooth-step: "
            "hard left (<=) / right (>) outside the soft band, fractional inside it.",
            "'soft' is the share of the training samples reaching the node whose "
            "routing there is fractional; 'reach' the share of all training samples "
            "with a nonzero probability of reaching the node. Nodes no training sample "
            "can reach are not shown, nor splits that route every one of them the same way.",
            "Leaves show the vector the tree adds to the output, weighted by "
            + ("P(x -> leaf) (class logits before the softmax of the sum)."
               if clf else "P(x -> leaf) (summed over trees, plus the intercept)."),
        ]
        if not clf:
            notes.append("intercept: [" + ", ".join(fmt.format(v) for v in self.intercept_) + "]")
        return notes

    def _n_tree_views(self):
        """The number of fitted soft trees (hook of the core's exports, which
        check ``tree_index`` against it and show them all without it)."""
        return self.weights_.shape[0]

    def _tree_view(self, tree_index, names, class_names, decimals, top_k):
        """The view of soft tree ``tree_index`` (hook of the core's exports,
        which check that ``0 <= tree_index < _n_tree_views()``)."""
        t = int(tree_index)
        clf = is_classifier(self)
        n_int = self.weights_.shape[1]
        reach = self._node_reach[t]
        g = float(self.gamma)
        fmt = f"{{:.{decimals + 1}g}}"

        def children(node):
            if node >= n_int:
                return []
            return [c for c in (2 * node + 1, 2 * node + 2) if reach[c] > 0]

        def split(node):
            rows = linear_terms(self.weights_[t, node], names, self._feature_scale, top_k,
                                decimals, rows=True)
            return rows, fmt.format(-self.biases_[t, node] + 0.0)

        def leaf(node):
            v = self.leaf_values_[t, node - n_int]
            if clf:
                k = int(np.argmax(v))
                return f"leaf: favours {class_names[k]} (logit {fmt.format(v[k])})"
            return "leaf: value [" + ", ".join(fmt.format(x) for x in v) + "]"

        def info(node):
            text = f"reach {100 * reach[node]:.0f}%"
            if node < n_int:
                thr = -self.biases_[t, node]
                text += (f", soft {100 * self._node_soft[t, node]:.0f}% in "
                         f"[{fmt.format(thr - g / 2)}, {fmt.format(thr + g / 2)}]")
            return text

        root = build_view(0, children=children, split=split, leaf=leaf, info=info)
        return TreeView(root, classification=clf)

    def _export_text(self, *, feature_names=None, class_names=None, max_depth=10,
                     decimals=2, top_k=3):
        """``export_text`` without ``tree_index``: every soft tree in turn."""
        check_is_fitted(self)
        lines = [f"# {note}" for note in self._export_notes(decimals)]
        for t in range(self._n_tree_views()):
            view = tree_view(self, tree_index=t, feature_names=feature_names,
                             class_names=class_names, decimals=decimals, top_k=top_k)
            lines.append(f"tree {t}")
            lines.append(render_text(view.truncate(max_depth), show_info=True).rstrip("\n"))
        return "\n".join(lines) + "\n"
