"""The tree view of a :class:`PolytopeTree` (``export_text``, ``plot_tree``,
``export_graphviz``).

:class:`PolytopeTree`'s hook ``_tree_view`` (the protocol of
:class:`~sklearn_difftrees._core.tree.FittedTree`) calls :func:`polytope_view`,
so the core's exports reach it without knowing this method. A split is shown
as its inequality, facets ordered by weight ``r_k``, each with its ``top_k``
heaviest features (ranked by ``|beta_kj| * std_j``, coefficients printed raw)
and its intercept, one facet per row in drawings::

    [node 0] 1.8*softplus(2.1*x0 - 0.3*x1 - 1.2) + 0.9*softplus(...) <= 0.69

(the right branch repeats ``[node 0] > 0.69``).

Nodes below a leaf are never shown; pass-through splits (all training
samples on one side) are hidden as everywhere.
"""

import numpy as np
from sklearn.base import is_classifier

from .._core._tree_view import TreeView, build_view, leaf_text, linear_terms

__all__ = ["polytope_view", "split_lhs"]

#: Facets drawn per split; the others are counted.
MAX_FACETS_SHOWN = 4


def _facet_text(tree, f, names, scale, top_k, decimals):
    inner = linear_terms(tree.facet_coef[f], names, scale, top_k, decimals)
    b = tree.facet_intercept[f] + 0.0
    inner += f" {'-' if b < 0 else '+'} {abs(b):.{decimals + 1}g}"
    return f"{tree.facet_weight[f]:.{decimals + 1}g}*softplus({inner})"


def _facets(tree, node):
    lo, hi = tree.facet_ptr[node], tree.facet_ptr[node + 1]
    return lo + np.argsort(-tree.facet_weight[lo:hi], kind="stable")


def split_lhs(est, node, names, top_k, decimals, max_facets=None):
    """``sum_k r_k*softplus(...)`` of ``node``, heaviest facets first."""
    tree = est.tree_
    scale = getattr(est, "_feature_scale", np.ones(tree.n_features))
    facets = _facets(tree, node)
    shown = facets if max_facets is None else facets[:max_facets]
    text = " + ".join(_facet_text(tree, f, names, scale, top_k, decimals) for f in shown)
    if len(facets) > len(shown):
        text += f" (+{len(facets) - len(shown)} facets)"
    return text or "0"


def polytope_view(est, names, class_names, decimals, top_k):
    """The :class:`~sklearn_difftrees._core._tree_view.TreeView` of ``est.tree_``."""
    tree = est.tree_
    scale = getattr(est, "_feature_scale", np.ones(tree.n_features))
    clf = is_classifier(est)

    def children(node):
        if node < tree.n_internal and tree.is_split[node]:
            return [c for c in (2 * node + 1, 2 * node + 2) if tree.active[c]]
        return []

    def split(node):
        facets = _facets(tree, node)
        rows = [_facet_text(tree, f, names, scale, top_k, decimals)
                for f in facets[:MAX_FACETS_SHOWN]]
        rows = [r if k == 0 else "+ " + r for k, r in enumerate(rows)]
        if len(facets) > MAX_FACETS_SHOWN:
            rows.append(f"(+{len(facets) - MAX_FACETS_SHOWN} facets)")
        return rows, f"{tree.threshold[node] + 0.0:.{decimals + 1}g}"

    root = build_view(
        0, children=children, split=split,
        leaf=lambda node: leaf_text(tree.value[node], clf, class_names, decimals),
        samples=lambda node: tree.n_node_samples[node],
        value=lambda node: tree.value[node],
        tag=lambda node: f"[node {node}]",
    )
    return TreeView(root, classification=clf)
