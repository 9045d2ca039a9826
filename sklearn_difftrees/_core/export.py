"""Export of fitted trees: ``export_text``, ``plot_tree``, ``export_graphviz``.

Each oblique split is printed as its ``top_k`` heaviest features followed by
``(+n more)`` for the remaining nonzero weights, then the threshold:
``1.2*petal_len - 0.4*sepal_w (+2 more) <= 0.75`` (left branch) and ``> 0.75``
(right branch). Features are ranked by ``|w_j| * std_j`` (the weight on the
standardized scale) so that units do not decide what is shown, but the
coefficients printed are the raw ones, applying to the raw features.

The three exports render one :class:`~._tree_view.TreeView`, in which
pass-through nodes (a split that sends every training sample the same way,
such as the pruned branches of a complete tree) are hidden: only the
subtree that matters is shown (see :mod:`._tree_view`).

Where the view comes from, without the core knowing any method:

* an estimator with a ``_tree_view(tree_index, names, class_names, decimals,
  top_k)`` method builds its own (pruned trees, soft-tree ensembles). When
  it also has ``_n_tree_views()`` (the number of trees it shows; soft-tree
  ensembles), the core checks ``tree_index`` against it, and the exports
  without ``tree_index`` show every tree: ``export_text`` through the
  estimator's ``_export_text`` hook, ``plot_tree`` as a grid of axes (one
  per tree, titled ``tree <t>``), ``export_graphviz`` as one graph with one
  ``cluster_<t>`` subgraph per tree;
* an ensemble of fitted trees (``estimators_``) shows member ``tree_index``,
  extended by the ensemble's ``_extend_member_view(tree_index, view, names,
  class_names, decimals)`` hook when it has one (what it adds below the
  member's leaves);
* otherwise ``tree_``: its ``_tree_view(est, names, class_names, decimals,
  top_k)`` when the tree class defines one (polytope splits), else the
  oblique view of an :class:`~.tree.ObliqueTree`.
"""

import math
from numbers import Integral

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, validate_params
from ._render import render_dot, render_dot_trees, render_text
from .categorical import indicator_names, indicator_spec
from ._tree_view import leaf_text, oblique_view

__all__ = ["export_graphviz", "export_text", "plot_tree", "tree_view", "tree_views"]


def _feature_names(est, feature_names):
    """Names of the columns the splits weigh: the features, then the indicator
    columns of categorical features (``"[name==value]"``)."""
    n = est.n_features_in_ if hasattr(est, "n_features_in_") else est.tree_.n_features
    if feature_names is not None:
        names = [str(f) for f in feature_names]
        if len(names) != n:
            raise ValueError(f"feature_names must contain {n} elements, got {len(names)}.")
    elif hasattr(est, "feature_names_in_"):
        names = [str(f) for f in est.feature_names_in_]
    else:
        names = [f"feature_{j}" for j in range(n)]
    return indicator_names(names, indicator_spec(est))


def _class_names(est, class_names):
    if not is_classifier(est):
        return None
    if class_names is None:
        return list(est.classes_)
    if len(class_names) != est.n_classes_:
        raise ValueError(
            f"class_names must contain {est.n_classes_} elements, got {len(class_names)}."
        )
    return list(class_names)


def _leaf_text(est, leaf_row, class_names, decimals):
    """Text of leaf row ``leaf_row`` of ``est.tree_.value``."""
    names = est.classes_ if class_names is None and is_classifier(est) else class_names
    return leaf_text(est.tree_.value[leaf_row], is_classifier(est), names, decimals)


def _check_tree_index(tree_index, n_trees, est):
    if not isinstance(tree_index, Integral) or not 0 <= tree_index < n_trees:
        raise ValueError(
            f"tree_index must be an integer in [0, {n_trees - 1}] for this "
            f"{type(est).__name__} of {n_trees} trees; got {tree_index!r}."
        )


def tree_view(est, *, tree_index=None, feature_names=None, class_names=None, decimals=2,
              top_k=3):
    """The :class:`~._tree_view.TreeView` of a fitted estimator (see the module)."""
    custom = getattr(est, "_tree_view", None)
    if custom is not None:
        check_is_fitted(est)
        count = getattr(est, "_n_tree_views", None)
        if count is not None:  # an ensemble of soft trees: tree_index picks one
            n = count()
            if tree_index is None:
                raise TypeError(
                    f"{type(est).__name__} is an ensemble of {n} trees: a tree view needs "
                    f"tree_index=i (0 <= i < {n}); see tree_views for all of them."
                )
            _check_tree_index(tree_index, n, est)
        names = _feature_names(est, feature_names)
        return custom(tree_index, names, _class_names(est, class_names), decimals, top_k)
    members = getattr(est, "estimators_", None)
    if members is not None:
        n = len(members)
        if tree_index is None:
            raise TypeError(
                f"{type(est).__name__} is an ensemble of {n} trees: pass tree_index=i "
                f"(0 <= i < {n}) to show member i, e.g. plot_tree(model, tree_index=0)."
            )
        _check_tree_index(tree_index, n, est)
        names = _feature_names(est, feature_names)
        classes = _class_names(est, class_names)
        view = _single_tree_view(members[tree_index], names, classes, decimals, top_k)
        # What continues below a member's leaves (the DGT forests' subtrees).
        extend = getattr(est, "_extend_member_view", None)
        return view if extend is None else extend(tree_index, view, names, classes, decimals)
    if not hasattr(est, "tree_"):
        check_is_fitted(est)  # NotFittedError when it is not fitted at all
        raise TypeError(
            f"{type(est).__name__} has no fitted tree to show: pass a fitted estimator of "
            "sklearn_difftrees (one with a tree_, or an ensemble with tree_index=i)."
        )
    if tree_index is not None:
        raise TypeError(
            f"tree_index={tree_index!r} selects a tree of an ensemble; "
            f"{type(est).__name__} is a single tree: leave tree_index=None."
        )
    names = _feature_names(est, feature_names)
    return _single_tree_view(est, names, _class_names(est, class_names), decimals, top_k)


def tree_views(est, *, feature_names=None, class_names=None, decimals=2, top_k=3):
    """``(views, titles)`` of every tree of an estimator shown whole without
    ``tree_index`` (one with the ``_n_tree_views`` hook), else ``None``."""
    count = getattr(est, "_n_tree_views", None)
    if count is None or getattr(est, "_tree_view", None) is None:
        return None
    check_is_fitted(est)
    names = _feature_names(est, feature_names)
    classes = _class_names(est, class_names)
    n = count()
    views = [est._tree_view(t, names, classes, decimals, top_k) for t in range(n)]
    return views, [f"tree {t}" for t in range(n)]


def _whole_views(est, tree_index, feature_names, class_names, decimals, top_k, max_depth):
    """:func:`tree_views` cut at ``max_depth`` (an int; whole for ``None`` and
    ``"auto"``, which the drawing resolves), or ``None`` when ``tree_index``
    is given or the estimator is not shown whole (the exports' shared step)."""
    whole = None if tree_index is not None else tree_views(
        est, feature_names=feature_names, class_names=class_names, decimals=decimals,
        top_k=top_k)
    if whole is None or not isinstance(max_depth, Integral):  # None, or plot_tree's "auto"
        return whole
    views, titles = whole
    return [v.truncate(max_depth) for v in views], titles


def _single_tree_view(est, names, class_names, decimals, top_k):
    own = getattr(est.tree_, "_tree_view", None)  # a tree class that builds its view
    if own is None and not all(hasattr(est.tree_, a) for a in ("weights", "bias", "active")):
        raise TypeError(
            f"{type(est).__name__}'s tree_ is not a tree of sklearn_difftrees; for "
            "scikit-learn's trees use sklearn.tree.export_text / plot_tree / export_graphviz."
        )
    view = (own(est, names, class_names, decimals, top_k) if own is not None
            else oblique_view(est, names, class_names, decimals, top_k))
    note = getattr(est, "_export_note", None)
    note = note() if note is not None else None  # None: nothing to add for this model
    if note:
        view.notes.insert(0, note)
    return view


_COMMON_PARAMS = {
    "decision_tree": [object],
    "feature_names": ["array-like", None],
    "class_names": ["array-like", None],
    "decimals": [Interval(Integral, 0, None, closed="left")],
    "top_k": [Interval(Integral, 1, None, closed="left")],
    "tree_index": [Interval(Integral, 0, None, closed="left"), None],
}


@validate_params(
    {**_COMMON_PARAMS, "max_depth": [Interval(Integral, 0, None, closed="left")],
     "show_samples": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def export_text(
    decision_tree, *, feature_names=None, class_names=None, max_depth=10, decimals=2, top_k=3,
    tree_index=None, show_samples=False,
):
    """Build a text report of the rules of a fitted tree.

    Nodes whose split sends every training sample the same way
    (pass-through nodes, e.g. pruned branches of a complete tree) are not
    shown: their only non-empty subtree takes their place.

    Parameters
    ----------
    decision_tree : estimator
        A fitted estimator of this package (e.g. :class:`DGTClassifier`), or
        an ensemble with ``tree_index``.
    feature_names : array-like of str, default=None
        Names of the features; defaults to ``feature_names_in_`` when the
        estimator was fitted on a DataFrame, else ``feature_<j>``.
    class_names : array-like of str, default=None
        Names of the classes (in the order of ``classes_``); defaults to
        ``classes_``.
    max_depth : int, default=10
        Depth of the deepest split printed (the root's is 0, as in
        scikit-learn's ``export_text``); deeper branches are summarized as
        truncated.
    decimals : int, default=2
        Number of decimals printed.
    top_k : int, default=3
        Number of features printed per oblique split (ranked by weight on the
        standardized scale); the rest is counted as ``(+n more)``.
    tree_index : int, default=None
        For an ensemble (:class:`DGTForestClassifier`, ...,
        :class:`TreeEnsembleLayerClassifier`, ...): the member to show. A
        forest without it raises :class:`TypeError`; a tree ensemble layer
        without it prints all its trees, each headed ``tree <t>``, after
        notes on the ensemble. Out of range: :class:`ValueError`.
    show_samples : bool, default=False
        Append the training weight reaching each leaf.

    Returns
    -------
    report : str
        One line per branch and leaf.

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
    legacy = getattr(decision_tree, "_export_text", None)  # e.g. all trees of an ensemble
    if legacy is not None and tree_index is None:
        return legacy(
            feature_names=feature_names, class_names=class_names, max_depth=max_depth,
            decimals=decimals, top_k=top_k,
        )
    view = tree_view(decision_tree, tree_index=tree_index, feature_names=feature_names,
                     class_names=class_names, decimals=decimals, top_k=top_k)
    return render_text(view.truncate(max_depth), show_info=show_samples)


@validate_params(
    {**_COMMON_PARAMS,
     "max_depth": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"}), None],
     "fontsize": [Interval(Integral, 1, None, closed="left"), None],
     "filled": ["boolean"], "ax": "no_validation"},
    prefer_skip_nested_validation=True,
)
def plot_tree(
    decision_tree, *, feature_names=None, class_names=None, max_depth="auto", decimals=2,
    top_k=2, fontsize=None, filled=False, tree_index=None, ax=None,
):
    """Plot a fitted tree with matplotlib (optional dependency).

    Internal nodes show their split, one term per row (``top_k`` heaviest
    features, as in :func:`export_text`; the left child is where the
    condition holds) and the training weight reaching them; leaves show
    their prediction. Pass-through nodes (a split that sends every training
    sample the same way) are not drawn: their only non-empty subtree takes
    their place. A subtree cut by ``max_depth`` is drawn as a grey ``(...)``
    box, as in scikit-learn's ``plot_tree``.

    Layout: the shown leaves take consecutive slots from left to right and
    every split sits above the middle of its children, so boxes never
    overlap. Without ``ax`` a new figure is made, sized to the number of
    leaves and the depth at ``fontsize``, at most 40 x 25 inches
    (``_tree_plot.MAX_FIGURE_INCHES``); with ``ax`` the font shrinks to fit
    (as scikit-learn's ``plot_tree`` does). The boxes are measured, not
    drawn: rendering happens when the figure is shown or saved.

    A tree ensemble layer (:class:`TreeEnsembleLayerClassifier`, ...)
    without ``tree_index`` is drawn whole, as :func:`export_text` prints
    it: one axes per soft tree, titled ``tree <t>``, in a grid of a new
    figure sized to the largest tree (within the same bound), or into the
    axes passed as ``ax``.

    Parameters
    ----------
    decision_tree : estimator
        A fitted estimator of this package, or an ensemble with
        ``tree_index``.
    feature_names : array-like of str, default=None
        As in :func:`export_text`.
    class_names : array-like of str, default=None
        As in :func:`export_text`.
    max_depth : int, "auto" or None, default="auto"
        Maximum depth drawn, as scikit-learn's: the splits of depth at most
        ``max_depth`` (the root's is 0) are drawn, the subtrees below them as
        ``(...)`` boxes. ``"auto"``:
        the whole tree when it fits, else its first levels that fit (at
        least one). A new figure fits with a font of at least 6 points
        (``fontsize`` if smaller): a complete depth-8 tree shows about its
        first 4 or 5 levels; axes passed as ``ax`` fit without overlapping
        boxes, the font shrinking down to 3 points. Trees that fit are drawn
        whole, as with ``None``. ``None``: the whole tree; where it does not
        fit (the figure's bound, or the axes), the font shrinks down to 3
        points and a :class:`UserWarning` says that boxes overlap.
    decimals : int, default=2
        Number of decimals printed.
    top_k : int, default=2
        Features printed per split.
    fontsize : int, default=None
        Font size of the node texts (9 points when ``None``).
    filled : bool, default=False
        Colour the nodes by majority class (paler when less pure) or by
        predicted value, as scikit-learn's ``plot_tree``.
    tree_index : int, default=None
        For an ensemble: the member (or soft tree) to draw. Required for a
        forest (:class:`TypeError` without it); a tree ensemble layer
        without it is drawn whole (all its soft trees). Out of range:
        :class:`ValueError`.
    ax : matplotlib Axes or array-like of Axes, default=None
        Axes to draw into; a new figure when ``None``. A tree ensemble layer
        drawn whole takes a sequence or array of at least ``n_trees`` axes
        (e.g. from ``plt.subplots``), tree ``t`` in the ``t``-th (flattened
        order); a single Axes or fewer axes then raise :class:`ValueError`
        (nothing drawn). Where axes are too small for some trees, every tree
        is drawn and a :class:`UserWarning` counts those whose boxes overlap.

    Returns
    -------
    texts : list of matplotlib.text.Text
        One per drawn node (its box is ``text.get_bbox_patch()``); for a
        tree ensemble layer drawn whole, the nodes of every tree, tree after
        tree (``text.axes`` is the tree's axes).
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_tree requires matplotlib: pip install 'sklearn-difftrees[plot]'."
        ) from exc
    from ._tree_plot import draw_views

    whole = _whole_views(decision_tree, tree_index, feature_names, class_names, decimals,
                         top_k, None)  # cut by the drawing (max_depth="auto" measures)
    if whole is not None:
        views, titles = whole
        axes = _ensemble_axes(ax, decision_tree, len(views))
    else:
        views = [tree_view(decision_tree, tree_index=tree_index, feature_names=feature_names,
                           class_names=class_names, decimals=decimals, top_k=top_k)]
        titles, axes = None, None if ax is None else [ax]
    return draw_views(views, titles=titles, axes=axes, fontsize=fontsize, filled=filled,
                      max_depth=max_depth)


def _ensemble_axes(ax, est, n):
    """The ``n`` axes that ``plot_tree`` draws an ensemble's trees into
    (``None``: a new figure)."""
    if ax is None:
        return None
    from matplotlib.axes import Axes

    name = type(est).__name__
    if isinstance(ax, Axes):
        raise ValueError(
            f"{name} has {n} trees and ax is a single Axes: pass tree_index=i to draw "
            f"tree i into it, a sequence of {n} Axes (e.g. plt.subplots(1, {n})[1]), "
            "or ax=None (a new figure with all the trees)."
        )
    axes = list(np.asarray(ax, dtype=object).ravel())
    others = sum(not isinstance(a, Axes) for a in axes)
    if len(axes) < n or others:
        # As scikit-learn's displays (PartialDependenceDisplay: "Expected ax to
        # have n axes"): a wrong ax raises; nothing is drawn.
        cols = math.ceil(math.sqrt(n))
        got = f"{len(axes)} item(s), {others} of them not Axes" if others else (
            f"{len(axes)} Axes")
        raise ValueError(
            f"{name} has {n} trees: ax must hold at least {n} matplotlib Axes (one per "
            f"tree, tree t into the t-th in flattened order); got {got}, and nothing "
            f"was drawn. To draw all {n} trees pass ax=None (a new figure with one axes "
            f"per tree) or {n} axes, e.g. plt.subplots({math.ceil(n / cols)}, {cols})[1]; "
            "tree_index=i draws tree i alone into one Axes."
        )
    return axes[:n]


@validate_params(
    {**_COMMON_PARAMS, "out_file": "no_validation",
     "max_depth": [Interval(Integral, 0, None, closed="left"), None],
     "label": [StrOptions({"all", "root", "none"})], "filled": ["boolean"],
     "leaves_parallel": ["boolean"], "impurity": ["boolean"], "node_ids": ["boolean"],
     "proportion": ["boolean"], "rotate": ["boolean"], "rounded": ["boolean"],
     "special_characters": ["boolean"], "precision": [Interval(Integral, 0, None,
                                                                closed="left"), None],
     "fontname": [str]},
    prefer_skip_nested_validation=True,
)
def export_graphviz(
    decision_tree, out_file=None, *, max_depth=None, feature_names=None, class_names=None,
    label="all", filled=False, leaves_parallel=False, impurity=True, node_ids=False,
    proportion=False, rotate=False, rounded=False, special_characters=False, precision=None,
    fontname="helvetica", decimals=2, top_k=3, tree_index=None,
):
    """Export a fitted tree in Graphviz dot format (scikit-learn's signature).

    Render with ``dot -Tpng tree.dot -o tree.png`` or the ``graphviz``
    Python package; no Graphviz is needed to write the file. Node ids are
    heap indices (children of ``i``: ``2i+1`` left, ``2i+2`` right);
    pass-through nodes are not written (see :func:`export_text`).

    A tree ensemble layer (:class:`TreeEnsembleLayerClassifier`, ...)
    without ``tree_index`` is written whole, as :func:`export_text` prints
    it: one graph with one subgraph ``cluster_<t>`` per soft tree, labelled
    ``tree <t>``, whose node ``i`` has the id ``t<t>_<i>``.

    Parameters
    ----------
    decision_tree : estimator
        A fitted estimator of this package, or an ensemble with
        ``tree_index``.
    out_file : str or file object, default=None
        Where to write; ``None`` returns the dot source as a string.
    max_depth : int, default=None
        Depth of the deepest split written (the root's is 0; ``None``: the
        whole tree).
    feature_names : array-like of str, default=None
        As in :func:`export_text`.
    class_names : array-like of str, default=None
        As in :func:`export_text`.
    label : {"all", "root", "none"}, default="all"
        Where to write the field names (``samples =``, ``gini =``): at every
        node, at the root only, or nowhere.
    filled : bool, default=False
        Colour the nodes by majority class or value.
    leaves_parallel : bool, default=False
        Draw all leaves at the bottom.
    impurity : bool, default=True
        Show the Gini impurity of each node's mean class probabilities
        (classifiers).
    node_ids : bool, default=False
        Show each node's id.
    proportion : bool, default=False
        Show the training weight as a percentage of the root's.
    rotate : bool, default=False
        Lay the tree out from left to right.
    rounded : bool, default=False
        Rounded boxes.
    special_characters : bool, default=False
        Write ``<=`` and ``>`` as the HTML entities ``&le;`` and ``&gt;``.
    precision : int, default=None
        Decimals of the numbers; overrides ``decimals`` when given
        (scikit-learn's name).
    fontname : str, default="helvetica"
        Font of the node and edge texts.
    decimals : int, default=2
        Number of decimals (as in :func:`export_text`).
    top_k : int, default=3
        Features written per split.
    tree_index : int, default=None
        For an ensemble: the member (or soft tree) to write. Required for a
        forest (:class:`TypeError` without it); a tree ensemble layer
        without it is written whole (all its soft trees). Out of range:
        :class:`ValueError`.

    Returns
    -------
    dot_data : str or None
        The dot source when ``out_file`` is ``None``, else ``None``.
    """
    if precision is not None:
        decimals = precision
    opts = dict(label=label, filled=filled, leaves_parallel=leaves_parallel,
                impurity=impurity, node_ids=node_ids, proportion=proportion, rotate=rotate,
                rounded=rounded, special_characters=special_characters, fontname=fontname,
                decimals=decimals)
    whole = _whole_views(decision_tree, tree_index, feature_names, class_names, decimals,
                         top_k, max_depth)
    if whole is not None:
        views, titles = whole
        dot = render_dot_trees(views, titles, **opts)
    else:
        view = tree_view(decision_tree, tree_index=tree_index, feature_names=feature_names,
                         class_names=class_names, decimals=decimals, top_k=top_k)
        if max_depth is not None:
            view = view.truncate(max_depth)
        dot = render_dot(view, **opts)
    if out_file is None:
        return dot
    if isinstance(out_file, str):
        with open(out_file, "w", encoding="utf-8") as f:
            f.write(dot)
    else:
        out_file.write(dot)
    return None
