"""What a tree drawing shows: the tree *view*, shared by every export.

:func:`~sklearn_difftrees.export_text`, :func:`~sklearn_difftrees.plot_tree`
and :func:`~sklearn_difftrees.export_graphviz` render the same
:class:`TreeView`: nested :class:`ViewNode` objects holding the texts of each
shown node. A view is built by :func:`build_view` from a few callables, so a
method whose splits are not one hyperplane per node (polytopes, soft trees,
pruned trees) supplies only its labels and which children count; the core
lays out, indents, draws and writes dot.

**Pass-through nodes are hidden.** A node whose split sends every training
sample the same way (one shown child) is not a decision: the view shows its
only child's subtree in its place. Complete trees of fixed depth have many
such nodes (pruned branches of a NonGreedy tree, the unused levels of a DGT
tree). A test sample that such a split sends to the empty side gets what
the fitted model gives it there (for the hard oblique trees, the
training-weighted mean of the leaves of the shown subtree).
"""

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import is_classifier

__all__ = ["TreeView", "ViewNode", "build_view", "graft_axis_subtrees", "oblique_view",
           "linear_terms", "leaf_text", "node_colours"]


@dataclass
class ViewNode:
    """One shown node.

    ``split`` is ``None`` for a leaf, else ``(lhs_rows, threshold)``: the
    left-hand side as rows (one term or facet per row; the text export joins
    them with spaces), and the threshold, the sample going left iff
    ``lhs <= threshold``. ``label`` is the leaf's text, ``samples`` the
    training weight reaching the node (``None`` when the model has no such
    count), ``info`` any other short line (``reach 40%``), ``value`` the
    node's prediction (colours).
    """

    node: int
    split: tuple = None
    label: str = ""
    samples: float = None
    info: str = ""
    value: np.ndarray = None
    children: list = field(default_factory=list)
    truncated: bool = False
    tag: str = ""

    def info_lines(self):
        """The lines under the node's main text (samples, then info)."""
        out = [] if self.samples is None else [f"samples = {self.samples:.0f}"]
        return out + ([self.info] if self.info else [])

    @property
    def is_leaf(self):
        return not self.children

    def walk(self):
        """Pre-order traversal of the shown subtree."""
        yield self
        for c in self.children:
            yield from c.walk()

    def depth(self):
        return 0 if not self.children else 1 + max(c.depth() for c in self.children)


@dataclass
class TreeView:
    """A tree to render: ``root`` and header ``notes`` (text export only)."""

    root: ViewNode
    notes: list = field(default_factory=list)
    classification: bool = False

    def truncate(self, max_depth):
        """A copy showing the splits of depth at most ``max_depth`` (the root's
        is 0, as scikit-learn's exports count); the subtrees below become
        leaves marked ``truncated``."""
        def cut(v, d):
            if v.is_leaf:
                return v
            if d > max_depth:
                return ViewNode(v.node, None, f"truncated branch of depth {v.depth()}",
                                v.samples, v.info, v.value, [], True)
            return ViewNode(v.node, v.split, v.label, v.samples, v.info, v.value,
                            [cut(c, d + 1) for c in v.children], False, v.tag)
        return TreeView(cut(self.root, 0), list(self.notes), self.classification)


def build_view(root, *, children, split, leaf, samples=None, info=None, value=None,
               tag=None):
    """Build the view of the subtree at ``root``, hiding pass-through nodes.

    ``children(node)`` returns the children to show (heap indices; none for
    a leaf); with exactly one, ``node`` is a pass-through and its child is
    shown in its place. ``split(node) -> (rows, threshold)``, ``leaf(node) ->
    str``, ``samples(node) -> float``, ``info(node) -> str`` and
    ``value(node) -> array or None`` give the texts, counts and colours.
    ``tag(node) -> str`` names a split in the text export, which then
    prints the right branch as ``tag > threshold`` instead of repeating a
    long left-hand side.
    """
    def make(node):
        kids = list(children(node))
        while len(kids) == 1:  # pass-through: show the subtree that matters
            node = kids[0]
            kids = list(children(node))
        v = ViewNode(node, samples=None if samples is None else float(samples(node)),
                     info="" if info is None else info(node),
                     value=None if value is None else value(node))
        if kids:
            v.split = split(node)
            v.tag = "" if tag is None else tag(node)
            v.children = [make(c) for c in kids]
        else:
            v.label = leaf(node)
        return v

    return make(root)


def linear_terms(w, names, scale, top_k, decimals, rows=False):
    """``w . x`` as text: the ``top_k`` heaviest terms, ranked by ``|w_j| * scale_j``
    (the weight on the standardized scale), then ``(+n more)``.

    With ``rows`` a list of strings, one term per row (for drawings)."""
    order = np.argsort(-np.abs(w) * scale, kind="stable")
    nonzero = [j for j in order if w[j] != 0.0]
    shown = nonzero[:top_k]
    terms = []
    for k, j in enumerate(shown):
        coef = f"{abs(w[j]):.{decimals + 1}g}*{names[j]}"
        sign = ("-" if w[j] < 0 else "") if k == 0 else ("- " if w[j] < 0 else "+ ")
        terms.append(sign + coef)
    if not terms:
        terms = ["0"]
    if len(nonzero) > len(shown):
        terms.append(f"(+{len(nonzero) - len(shown)} more)")
    return terms if rows else " ".join(terms)


def leaf_text(value, classification, class_names, decimals):
    """``class: a (p=0.91)`` or ``value: [1.20]``."""
    if classification:
        k = int(np.argmax(value))
        return f"class: {class_names[k]} (p={value[k]:.{decimals}f})"
    return "value: [" + ", ".join(f"{v:.{decimals}f}" for v in value) + "]"


def oblique_view(est, names, class_names, decimals, top_k):
    """The view of an estimator's :class:`ObliqueTree` ``tree_``.

    Children are the active ones (reached by training samples). Internal
    nodes carry the training-weighted mean of the leaf values below them.
    """
    tree = est.tree_
    n_int = tree.n_internal
    scale = getattr(est, "_feature_scale", np.ones(tree.n_features))
    clf = is_classifier(est)
    # Node values: weighted means of the active leaves below (colours).
    counts = np.where(tree.active[n_int:], tree.n_node_samples[n_int:], 0.0)
    node_value = _subtree_means(tree.value, counts, tree.max_depth)

    def children(node):
        if node >= n_int:
            return []
        return [c for c in (2 * node + 1, 2 * node + 2) if tree.active[c]]

    def split(node):
        rows = linear_terms(tree.weights[node], names, scale, top_k, decimals, rows=True)
        return rows, f"{-tree.bias[node] + 0.0:.{decimals + 1}g}"

    def leaf(node):
        return leaf_text(tree.value[node - n_int], clf, class_names, decimals)

    root = build_view(
        0, children=children, split=split, leaf=leaf,
        samples=lambda node: tree.n_node_samples[node],
        value=lambda node: node_value[node],
    )
    return TreeView(root, classification=clf)


def graft_axis_subtrees(view, sub, n_internal, offset, names, class_names, decimals,
                        classification):
    """``view`` of a heap-order tree with the subtrees ``sub`` (an
    :class:`~.subtrees.AxisSubtrees`, one root per leaf) grafted below its
    leaves: axis-aligned splits ``name <= threshold``, the subtree's node
    ``j`` shown as ``offset + j``; a leaf below which nothing grew takes its
    single node's id and value."""
    def leaf(node):
        return leaf_text(sub.value[node - offset], classification, class_names, decimals)

    def children(node):
        j = node - offset
        return [] if sub.left[j] < 0 else [offset + sub.left[j], offset + sub.right[j]]

    def graft(v):
        if v.children:
            v.children = [graft(c) for c in v.children]
            return v
        r = int(sub.root[v.node - n_internal])
        if sub.left[r] < 0:
            v.node, v.label, v.value = offset + r, leaf(offset + r), sub.value[r]
            return v
        return build_view(
            offset + r, children=children, leaf=leaf,
            split=lambda n: ([names[sub.feature[n - offset]]],
                             f"{sub.threshold[n - offset]:.{decimals + 1}g}"),
            samples=lambda n: sub.n_node_samples[n - offset],
            value=lambda n: sub.value[n - offset])

    view.root = graft(view.root)
    return view


def _subtree_means(leaf_value, leaf_weight, depth):
    """Per heap node, the ``leaf_weight``-weighted mean of its leaves' values."""
    sums = leaf_value * leaf_weight[:, None]
    w = leaf_weight.copy()
    levels_s, levels_w = [sums], [w]
    for _ in range(depth):
        sums = sums[0::2] + sums[1::2]
        w = w[0::2] + w[1::2]
        levels_s.append(sums)
        levels_w.append(w)
    s = np.concatenate(levels_s[::-1])
    w = np.concatenate(levels_w[::-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(w[:, None] > 0, s / w[:, None], np.nan)
    return out


# ----------------------------------------------------------------- colours
_PALETTE = np.array([
    [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189],
    [140, 86, 75], [227, 119, 194], [127, 127, 127], [188, 189, 34], [23, 190, 207],
], dtype=float)


def node_colours(view):
    """``{node: "#rrggbb"}`` fill colours as scikit-learn's ``filled``: the
    majority class's colour, paler the less pure (classifiers); one hue,
    darker the larger the value (regressors, first output). Nodes without a
    value are white."""
    nodes = [v for v in view.root.walk() if v.value is not None
             and np.all(np.isfinite(v.value))]
    out = {}
    if not nodes:
        return out
    if view.classification:
        for v in nodes:
            p = np.asarray(v.value, dtype=float)
            k = int(np.argmax(p))
            srt = np.sort(p)[::-1]
            alpha = 0.0 if p.size < 2 else (srt[0] - srt[1]) / max(srt[0], 1e-12)
            rgb = _PALETTE[k % len(_PALETTE)]
            out[v.node] = _hex(alpha * rgb + (1 - alpha) * 255.0)
        return out
    vals = np.array([float(v.value[0]) for v in nodes])
    lo, hi = vals.min(), vals.max()
    for v, x in zip(nodes, vals):
        alpha = 0.0 if hi <= lo else (x - lo) / (hi - lo)
        out[v.node] = _hex(alpha * _PALETTE[1] + (1 - alpha) * 255.0)
    return out


def _hex(rgb):
    r, g, b = (int(round(c)) for c in np.clip(rgb, 0, 255))
    return f"#{r:02x}{g:02x}{b:02x}"
