"""Text and matplotlib export of fitted hard trees (``export_text``, ``plot_tree``).

Each oblique split is printed as its ``top_k`` heaviest features followed by
``(+n more)`` for the remaining nonzero weights, then the threshold:
``1.2*petal_len - 0.4*sepal_w (+2 more) <= 0.75`` (left branch) and ``> 0.75``
(right branch). Features are ranked by ``|w_j| * std_j`` (the weight on the
standardized scale) so that units do not decide what is shown, but the
coefficients printed are the raw ones, applying to the raw features. Nodes no
training sample reaches are not expanded: they are shown as one line saying
so, with the value such a sample receives.

Trees whose splits are not one hyperplane per node render themselves: the
fitted tree object (``tree_``) defines the hooks of
:class:`~sklearn_difftrees._core.tree.FittedTree` (``_export_text`` and
``_plot_tree``), and this module dispatches on them. It imports no method.
"""

from numbers import Integral

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, validate_params

__all__ = ["export_text", "plot_tree"]


def _feature_names(est, feature_names):
    n = est.tree_.n_features
    if feature_names is not None:
        names = [str(f) for f in feature_names]
        if len(names) != n:
            raise ValueError(f"feature_names must contain {n} elements, got {len(names)}.")
        return names
    if hasattr(est, "feature_names_in_"):
        return [str(f) for f in est.feature_names_in_]
    return [f"feature_{j}" for j in range(n)]


def linear_terms(w, names, scale, top_k, decimals):
    """``w . x`` as text: the ``top_k`` heaviest terms, ranked by ``|w_j| * scale_j``
    (the weight on the standardized scale), then ``(+n more)``."""
    order = np.argsort(-np.abs(w) * scale, kind="stable")
    nonzero = [j for j in order if w[j] != 0.0]
    shown = nonzero[:top_k]
    terms = []
    for k, j in enumerate(shown):
        coef = f"{abs(w[j]):.{decimals + 1}g}*{names[j]}"
        sign = ("-" if w[j] < 0 else "") if k == 0 else (" - " if w[j] < 0 else " + ")
        terms.append(sign + coef)
    text = "".join(terms) if terms else "0"
    if len(nonzero) > len(shown):
        text += f" (+{len(nonzero) - len(shown)} more)"
    return text


def _split_text(est, node, names, top_k, decimals):
    """``(lhs, threshold)`` of node ``node``: goes right iff lhs > threshold."""
    w = est.tree_.weights[node]
    scale = getattr(est, "_feature_scale", np.ones_like(w))
    lhs = linear_terms(w, names, scale, top_k, decimals)
    return lhs, f"{-est.tree_.bias[node] + 0.0:.{decimals + 1}g}"


def _leaf_text(est, leaf_row, class_names, decimals):
    value = est.tree_.value[leaf_row]
    if is_classifier(est):
        names = est.classes_ if class_names is None else class_names
        k = int(np.argmax(value))
        return f"class: {names[k]} (p={value[k]:.{decimals}f})"
    vals = ", ".join(f"{v:.{decimals}f}" for v in value)
    return f"value: [{vals}]"


@validate_params(
    {
        "decision_tree": [object],
        "feature_names": ["array-like", None],
        "class_names": ["array-like", None],
        "max_depth": [Interval(Integral, 0, None, closed="left")],
        "decimals": [Interval(Integral, 0, None, closed="left")],
        "top_k": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def export_text(
    decision_tree, *, feature_names=None, class_names=None, max_depth=10, decimals=2, top_k=3
):
    """Build a text report of the rules of a fitted oblique tree.

    Parameters
    ----------
    decision_tree : estimator
        A fitted estimator with a ``tree_`` (e.g. :class:`DGTClassifier`).
    feature_names : array-like of str, default=None
        Names of the features; defaults to ``feature_names_in_`` when the
        estimator was fitted on a DataFrame, else ``feature_<j>``.
    class_names : array-like of str, default=None
        Names of the classes (in the order of ``classes_``); defaults to
        ``classes_``.
    max_depth : int, default=10
        Only the first ``max_depth`` levels are shown; deeper branches are
        summarized as truncated.
    decimals : int, default=2
        Number of decimals printed.
    top_k : int, default=3
        Number of features printed per oblique split (ranked by weight on the
        standardized scale); the rest is counted as ``(+n more)``.

    Returns
    -------
    report : str
        The rules, one line per node, indented by depth.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_difftrees import DGTClassifier, export_text
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DGTClassifier(max_depth=2, max_iter=10, random_state=0).fit(X, y)
    >>> print(export_text(clf, feature_names=["sl", "sw", "pl", "pw"]))  # doctest: +SKIP
    |--- 0.45*pl + 0.38*pw (+2 more) <= 1.53
    |   |--- ...
    """
    # Models that are not one hard tree (e.g. soft-tree ensembles) render
    # themselves with the same arguments.
    custom = getattr(decision_tree, "_export_text", None)
    if custom is not None:
        return custom(
            feature_names=feature_names, class_names=class_names, max_depth=max_depth,
            decimals=decimals, top_k=top_k,
        )
    check_is_fitted(decision_tree, "tree_")
    tree = decision_tree.tree_
    names = _feature_names(decision_tree, feature_names)
    if class_names is not None and is_classifier(decision_tree):
        if len(class_names) != decision_tree.n_classes_:
            raise ValueError(
                f"class_names must contain {decision_tree.n_classes_} elements, "
                f"got {len(class_names)}."
            )
    # Estimators whose prediction is not the leaf constant (e.g. a head on the
    # routing) say so in a first line, "# ...".
    note = getattr(decision_tree, "_export_note", None)
    lines = [f"# {note()}"] if note is not None else []
    render = getattr(tree, "_export_text", None)  # a tree that renders itself
    if render is not None:
        return "".join(line + "\n" for line in lines) + render(
            decision_tree, names, class_names, max_depth, decimals, top_k
        )
    n_int = tree.n_internal

    def recurse(node, depth):
        indent = "|   " * depth + "|--- "
        if node >= n_int:
            lines.append(indent + _leaf_text(decision_tree, node - n_int, class_names, decimals))
            return
        if depth >= max_depth:
            lines.append(indent + f"truncated branch of depth {tree.max_depth - depth}")
            return
        lhs, thr = _split_text(decision_tree, node, names, top_k, decimals)
        for child, op in ((2 * node + 1, "<="), (2 * node + 2, "> ")):
            cond = f"{indent}{lhs} {op} {thr}"
            if tree.active[child]:
                lines.append(cond)
                recurse(child, depth + 1)
            else:
                leaf = tree._leaves_below(child)[0] - n_int
                text = _leaf_text(decision_tree, leaf, class_names, decimals)
                lines.append(f"{cond}  [no training samples; predicts {text}]")

    if n_int == 0:
        lines.append("|--- " + _leaf_text(decision_tree, 0, class_names, decimals))
    else:
        recurse(0, 0)
    return "\n".join(lines) + "\n"


@validate_params(
    {
        "decision_tree": [object],
        "feature_names": ["array-like", None],
        "class_names": ["array-like", None],
        "max_depth": [Interval(Integral, 0, None, closed="left"), None],
        "decimals": [Interval(Integral, 0, None, closed="left")],
        "top_k": [Interval(Integral, 1, None, closed="left")],
        "fontsize": [Interval(Integral, 1, None, closed="left"), None],
        "ax": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def plot_tree(
    decision_tree,
    *,
    feature_names=None,
    class_names=None,
    max_depth=None,
    decimals=2,
    top_k=2,
    fontsize=None,
    ax=None,
):
    """Plot a fitted oblique tree with matplotlib (optional dependency).

    Internal nodes show their split (``top_k`` heaviest features, as in
    :func:`export_text`) and the training weight reaching them; leaves show
    their prediction. Branches without training samples are not drawn.

    Parameters
    ----------
    decision_tree : estimator
        A fitted estimator with a ``tree_``.
    feature_names, class_names : array-like of str, default=None
        As in :func:`export_text`.
    max_depth : int, default=None
        Maximum depth drawn (``None``: the whole tree).
    decimals : int, default=2
        Number of decimals printed.
    top_k : int, default=2
        Features printed per split.
    fontsize : int, default=None
        Font size of the node texts (matplotlib's default when ``None``).
    ax : matplotlib Axes, default=None
        Axes to draw into; the current axes when ``None``.

    Returns
    -------
    annotations : list of matplotlib.text.Annotation
        One per drawn node.
    """
    check_is_fitted(decision_tree, "tree_")
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_tree requires matplotlib: pip install 'sklearn-difftrees[plot]'."
        ) from exc
    tree = decision_tree.tree_
    names = _feature_names(decision_tree, feature_names)
    render = getattr(tree, "_plot_tree", None)  # a tree that draws itself
    if render is not None:
        ax = plt.gca() if ax is None else ax
        return render(decision_tree, names, class_names, max_depth, decimals, top_k, fontsize, ax)
    limit = tree.max_depth if max_depth is None else min(max_depth, tree.max_depth)
    n_int = tree.n_internal
    ax = plt.gca() if ax is None else ax

    def children(node):
        if node < n_int:
            return [c for c in (2 * node + 1, 2 * node + 2) if tree.active[c]]
        return []

    def label(node, depth, expanded):
        samples = f"\nsamples = {tree.n_node_samples[node]:.0f}"
        if node < n_int and expanded:
            lhs, thr = _split_text(decision_tree, node, names, top_k, decimals)
            return f"{lhs} <= {thr}" + samples
        if node >= n_int:
            return _leaf_text(decision_tree, node - n_int, class_names, decimals) + samples
        return "(subtree)" + samples

    return draw_tree(ax, limit, children, label, fontsize)


def draw_tree(ax, limit, children, label, fontsize=None):
    """Draw a heap-ordered tree top-down into ``ax``; the layout of every ``plot_tree``.

    ``children(node)`` lists the drawn children of ``node`` (asked only above
    depth ``limit``); ``label(node, depth, expanded)`` is the text of its box,
    ``expanded`` saying whether its children are drawn. Leaves of the drawn
    tree get consecutive x positions, a parent sits at the mean of its
    children. Returns the annotations, one per drawn node.
    """
    ax.set_axis_off()
    pos, order = {}, []

    def layout(node, depth):
        kids = children(node) if depth < limit else []
        if not kids:
            pos[node] = (len(order), depth)
            order.append(node)
            return pos[node][0]
        xs = [layout(c, depth + 1) for c in kids]
        pos[node] = (sum(xs) / len(xs), depth)
        return pos[node][0]

    layout(0, 0)
    width = max(len(order) - 1, 1)
    height = max(limit, 1)
    expanded = {(c - 1) // 2 for c in pos if c}
    annotations = []
    kw = dict(ha="center", va="center", bbox=dict(boxstyle="round", fc="white", ec="0.3"))
    if fontsize is not None:
        kw["fontsize"] = fontsize
    for node, (x, d) in pos.items():
        xy = (x / width if len(order) > 1 else 0.5, 1 - d / height)
        text = label(node, d, node in expanded)
        if node == 0:
            ann = ax.annotate(text, xy=xy, xycoords="axes fraction", **kw)
        else:
            px, pd = pos[(node - 1) // 2]
            pxy = (px / width if len(order) > 1 else 0.5, 1 - pd / height)
            ann = ax.annotate(
                text,
                xy=pxy,
                xytext=xy,
                xycoords="axes fraction",
                textcoords="axes fraction",
                arrowprops=dict(arrowstyle="<-", color="0.4"),
                **kw,
            )
        annotations.append(ann)
    return annotations
