"""Text and matplotlib rendering of :class:`PolytopeTree` splits.

:class:`PolytopeTree`'s rendering hooks (``_export_text``, ``_plot_tree``, the
protocol of :class:`~sklearn_difftrees._core.tree.FittedTree`) call these, so
:func:`~sklearn_difftrees.export_text` and :func:`~sklearn_difftrees.plot_tree`
reach them without the core knowing this method. A split is printed as its inequality, facets ordered by
weight ``r_k``, each with its ``top_k`` heaviest features (ranked by
``|beta_kj| * std_j``, coefficients printed raw) and its intercept::

    [node 0] 1.8*softplus(2.1*x0 - 0.3*x1 - 1.2) + 0.9*softplus(...) (+2 facets) <= 0.69

The right branch repeats ``[node i] > tau``. Leaves are printed as for oblique
trees; nodes below a leaf are never shown.
"""

import numpy as np

from .._core.export import _leaf_text, draw_tree, linear_terms

__all__ = ["polytope_export_text", "polytope_plot_tree"]


def _facet_text(tree, f, names, scale, top_k, decimals):
    inner = linear_terms(tree.facet_coef[f], names, scale, top_k, decimals)
    b = tree.facet_intercept[f] + 0.0
    inner += f" {'-' if b < 0 else '+'} {abs(b):.{decimals + 1}g}"
    return f"{tree.facet_weight[f]:.{decimals + 1}g}*softplus({inner})"


def split_lhs(est, node, names, top_k, decimals, max_facets=None):
    """``sum_k r_k*softplus(...)`` of ``node``, heaviest facets first."""
    tree = est.tree_
    scale = getattr(est, "_feature_scale", np.ones(tree.n_features))
    lo, hi = tree.facet_ptr[node], tree.facet_ptr[node + 1]
    facets = lo + np.argsort(-tree.facet_weight[lo:hi], kind="stable")
    shown = facets if max_facets is None else facets[:max_facets]
    text = " + ".join(_facet_text(tree, f, names, scale, top_k, decimals) for f in shown)
    if len(facets) > len(shown):
        text += f" (+{len(facets) - len(shown)} facets)"
    return text or "0"


def polytope_export_text(est, names, class_names, max_depth, decimals, top_k):
    """The report of :func:`export_text` for a polytope tree."""
    tree = est.tree_
    lines = []

    def recurse(node, depth):
        indent = "|   " * depth + "|--- "
        if node >= tree.n_internal or not tree.is_split[node]:
            lines.append(indent + _leaf_text(est, node, class_names, decimals))
            return
        if depth >= max_depth:
            lines.append(indent + "truncated branch")
            return
        thr = f"{tree.threshold[node] + 0.0:.{decimals + 1}g}"
        conds = (
            f"[node {node}] {split_lhs(est, node, names, top_k, decimals)} <= {thr}",
            f"[node {node}] > {thr}",
        )
        for child, cond in zip((2 * node + 1, 2 * node + 2), conds):
            if tree.active[child]:
                lines.append(indent + cond)
                recurse(child, depth + 1)
            else:
                text = _leaf_text(est, child, class_names, decimals)
                lines.append(f"{indent}{cond}  [no training samples; predicts {text}]")

    recurse(0, 0)
    return "\n".join(lines) + "\n"


def polytope_node_label(est, node, names, class_names, decimals, top_k, limit_depth):
    """Box text of ``plot_tree`` for one node."""
    tree = est.tree_
    samples = f"\nsamples = {tree.n_node_samples[node]:.0f}"
    if node < tree.n_internal and tree.is_split[node] and not limit_depth:
        lo, hi = tree.facet_ptr[node], tree.facet_ptr[node + 1]
        facets = lo + np.argsort(-tree.facet_weight[lo:hi], kind="stable")
        scale = getattr(est, "_feature_scale", np.ones(tree.n_features))
        rows = [_facet_text(tree, f, names, scale, top_k, decimals) for f in facets[:4]]
        if len(facets) > 4:
            rows.append(f"(+{len(facets) - 4} facets)")
        thr = f"{tree.threshold[node] + 0.0:.{decimals + 1}g}"
        return " +\n".join(rows) + f"\n<= {thr}" + samples
    if node < tree.n_internal and tree.is_split[node]:
        return "(subtree)" + samples
    return _leaf_text(est, node, class_names, decimals) + samples


def polytope_children(tree, node):
    """Drawn children of ``node`` (active children of a split)."""
    if node < tree.n_internal and tree.is_split[node]:
        return [c for c in (2 * node + 1, 2 * node + 2) if tree.active[c]]
    return []


def polytope_plot_tree(est, names, class_names, max_depth, decimals, top_k, fontsize, ax):
    """The drawing of :func:`plot_tree` for a polytope tree."""
    tree = est.tree_
    limit = tree.depth if max_depth is None else min(max_depth, tree.depth)

    def label(node, depth, expanded):
        return polytope_node_label(est, node, names, class_names, decimals, top_k, depth >= limit)

    return draw_tree(ax, limit, lambda node: polytope_children(tree, node), label, fontsize)
