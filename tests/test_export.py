"""Tree exports: readable drawings at any depth, pass-through nodes hidden in
text, plot and Graphviz, ensembles by ``tree_index``, ``export_graphviz``,
``plot_training_history`` and named features."""

import io
import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.tree import DecisionTreeClassifier

from sklearn_difftrees import (
    DGTClassifier,
    DGTForestClassifier,
    DGTRegressor,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
    TreeEnsembleLayerRegressor,
    export_graphviz,
    export_text,
    plot_training_history,
    plot_tree,
)
from sklearn_difftrees._core.export import tree_view
from sklearn_difftrees.datasets import load_dataset

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from _plots import _boxes, _hand_made, _overlaps  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


class _NoTree(DecisionTreeClassifier):
    """A fitted estimator without any tree_."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self


# ------------------------------------------------------------------- layout
@pytest.mark.parametrize("depth", [3, 5])
def test_plot_tree_any_depth_each_node_once_no_overlap(depth):
    # Depth 5 (about 30 leaves) is drawn whole by the default max_depth="auto"
    # in a figure up to 40 inches wide; deeper trees: tests/test_plot_tree.py.
    est = _hand_made(depth)
    view = tree_view(est, top_k=2)
    shown = list(view.root.walk())
    texts = plot_tree(est, filled=True)
    try:
        # Each shown node drawn once: one box per view node, texts as the view.
        assert len(texts) == len(shown)
        assert [t.get_text().split("\n")[0] for t in texts] == [
            (v.label if v.is_leaf else v.split[0][0]) for v in shown
        ]
        assert not _overlaps(_boxes(texts))
        # The figure grows with the number of leaves.
        n_leaves = sum(v.is_leaf for v in shown)
        if depth == 5:
            assert n_leaves > 20
            assert texts[0].figure.get_size_inches()[0] > 20
    finally:
        plt.close("all")


def test_plot_tree_into_given_axes_shrinks_the_font():
    est = _hand_made(4)
    fig, ax = plt.subplots(figsize=(12, 5))
    try:
        texts = plot_tree(est, ax=ax, fontsize=12)
        assert texts[0].get_fontsize() < 12
        assert not _overlaps(_boxes(texts))
        assert tuple(fig.get_size_inches()) == (12, 5)  # the user's figure is kept
        fig2, ax2 = plt.subplots(figsize=(2, 1))
        with pytest.warns(UserWarning, match="too small"):  # the whole tree, asked for
            plot_tree(_hand_made(7), ax=ax2, max_depth=None)
        with warnings.catch_warnings():  # max_depth="auto": the levels that fit, no overlap
            warnings.simplefilter("error", UserWarning)
            texts = plot_tree(_hand_made(7), ax=ax2)
        assert any(t.get_text() == "(...)" for t in texts)
        assert not _overlaps(_boxes(texts))
    finally:
        plt.close("all")


def test_oblique_split_is_abbreviated_to_top_k_named_features():
    est = _hand_made(2, n_features=6)
    names = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
    texts = plot_tree(est, feature_names=names, top_k=2)
    try:
        root = texts[0].get_text().split("\n")
        assert sum(any(n in row for n in names) for row in root) == 2
        assert root[2].startswith("(+4 more) <= ")
    finally:
        plt.close("all")


# ------------------------------------------------------- pass-through nodes
def test_pass_through_nodes_hidden_in_text_plot_and_graphviz():
    # Nodes 1 and 4 send every sample left ("0 <= 0"), node 2's subtree is
    # reached, so the shown tree is: root -> (node 3's subtree, node 2).
    est = _hand_made(4, zero_nodes=(1, 4))
    tree = est.tree_
    assert not tree.active[4] or not tree.active[2 * 4 + 2]
    text = export_text(est)
    assert "0 <= 0" not in text and "0 >  0" not in text
    view = tree_view(est)
    shown = list(view.root.walk())
    for v in shown:  # every shown split sends training samples both ways
        if not v.is_leaf:
            assert len(v.children) == 2 and all(c.samples > 0 for c in v.children)
    assert 1 not in {v.node for v in shown} and 4 not in {v.node for v in shown}
    assert sum(v.samples for v in shown if v.is_leaf) == pytest.approx(view.root.samples)
    # The text has two lines per shown split and one per leaf.
    n_split = sum(not v.is_leaf for v in shown)
    assert len(text.splitlines()) == 2 * n_split + (len(shown) - n_split)
    # The same nodes in the drawing and in the dot file.
    texts = plot_tree(est)
    plt.close("all")
    assert len(texts) == len(shown)
    nodes, edges = _parse_dot(export_graphviz(est))
    assert set(nodes) == {v.node for v in shown}


def test_non_greedy_tree_has_no_zero_splits(bundled):
    X, y = bundled("vehicle", n_max=400)
    clf = NonGreedyObliqueTreeClassifier(max_depth=6, max_iter=5, random_state=0).fit(X, y)
    text = export_text(clf)
    assert not re.search(r"\|--- 0 (<=|> )", text)
    assert "no training samples" not in text
    assert len(plot_tree(clf, max_depth=None)) == len(list(tree_view(clf).root.walk()))
    plt.close("all")


# ---------------------------------------------------------------- graphviz
def _parse_dot(dot):
    """``({node: label}, [(parent, child)])`` of a dot file, checking its frame."""
    lines = dot.strip().splitlines()
    assert lines[0] == "digraph Tree {" and lines[-1] == "}"
    assert dot.count("{") == dot.count("}")
    nodes, edges = {}, []
    for line in lines[1:-1]:
        m = re.fullmatch(r'(\d+) \[label="((?:[^"\\]|\\.)*)"(, fillcolor="#[0-9a-f]{6}")?\] ;',
                         line)
        if m:
            assert int(m.group(1)) not in nodes
            nodes[int(m.group(1))] = m.group(2)
            continue
        m = re.fullmatch(r"(\d+) -> (\d+)( \[.*\])? ;", line)
        if m:
            edges.append((int(m.group(1)), int(m.group(2))))
            continue
        assert re.fullmatch(r"(node|edge) \[.*\] ;|rankdir=LR ;|\{rank=same ; .*\} ;", line), line
    # A tree: every node but the root has exactly one parent, among the nodes.
    children = [c for _, c in edges]
    assert len(children) == len(set(children)) == len(nodes) - 1
    assert {p for p, _ in edges} | set(children) <= set(nodes)
    return nodes, edges


def test_export_graphviz_structure_and_options(tmp_path):
    est = _hand_made(4)
    dot = export_graphviz(est, feature_names=list("abcdef"), class_names=["x", "y", "z"])
    nodes, edges = _parse_dot(dot)
    view = tree_view(est)
    assert set(nodes) == {v.node for v in view.root.walk()}
    assert all("samples = " in label for label in nodes.values())
    assert sum("class: " in label for label in nodes.values()) == sum(
        v.is_leaf for v in view.root.walk()
    )
    root = view.root.node
    assert {e for e in edges if e[0] == root} == {(root, c.node) for c in view.root.children}
    assert 'headlabel="True"' in dot and 'headlabel="False"' in dot
    # out_file: a path or a file object receive the same text; None returns it.
    path = tmp_path / "tree.dot"
    assert export_graphviz(est, str(path), feature_names=list("abcdef"),
                           class_names=["x", "y", "z"]) is None
    assert path.read_text() == dot
    buf = io.StringIO()
    export_graphviz(est, buf, feature_names=list("abcdef"), class_names=["x", "y", "z"])
    assert buf.getvalue() == dot
    # Options of scikit-learn's signature.
    filled, _ = _parse_dot(export_graphviz(est, filled=True, rounded=True))
    assert 'style="filled, rounded"' in export_graphviz(est, filled=True, rounded=True)
    assert export_graphviz(est, filled=True).count("fillcolor=") == len(filled)
    assert "rankdir=LR" in export_graphviz(est, rotate=True)
    no_labels, _ = _parse_dot(export_graphviz(est, label="none", impurity=False))
    assert not any("samples = " in v for v in no_labels.values())
    assert "&le;" in export_graphviz(est, special_characters=True)
    assert "#0" in export_graphviz(est, node_ids=True, label="none")
    assert "%" in export_graphviz(est, proportion=True)
    shallow, _ = _parse_dot(export_graphviz(est, max_depth=0))  # the root's split only
    assert len(shallow) == 3
    assert "{rank=same" in export_graphviz(est, leaves_parallel=True)
    reg = DGTRegressor(max_depth=2, max_iter=2, random_state=0).fit(
        np.random.RandomState(0).randn(80, 3), np.arange(80.0)
    )
    reg_nodes, _ = _parse_dot(export_graphviz(reg, filled=True))
    assert any("value: [" in v for v in reg_nodes.values())


# ---------------------------------------------------------------- ensembles
def test_ensembles_by_tree_index_or_a_clear_type_error():
    rng = np.random.RandomState(0)
    X = rng.randn(120, 4)
    y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    # subtree_depth=0: each member is its tree alone (tests/test_forest_subtrees.py
    # shows the subtrees grafted below its leaves)
    forest = DGTForestClassifier(n_estimators=2, max_depth=2, max_iter=2, hidden_width=8,
                                 subtree_depth=0, random_state=0).fit(X, y)
    for fn in (export_text, plot_tree, export_graphviz):
        with pytest.raises(TypeError, match="tree_index"):
            fn(forest)
        with pytest.raises(ValueError, match="tree_index"):
            fn(forest, tree_index=2)
    member = forest.estimators_[1]
    names = list("abcd")
    text = export_text(forest, tree_index=1, feature_names=names)
    # The member's tree with the forest's class labels (members see codes).
    assert text == export_text(member, feature_names=names, class_names=["no", "yes"])
    assert "class: yes" in text or "class: no" in text
    assert len(plot_tree(forest, tree_index=0)) >= 1
    _parse_dot(export_graphviz(forest, tree_index=0))

    tel = TreeEnsembleLayerClassifier(n_trees=2, max_depth=2, max_iter=2,
                                      random_state=0).fit(X, y)
    assert "tree 1" in export_text(tel)  # all soft trees (the other exports: below)
    texts = plot_tree(tel, tree_index=1)
    assert any("reach" in t.get_text() for t in texts)
    _parse_dot(export_graphviz(tel, tree_index=0))
    one = export_text(tel, tree_index=0)
    assert one.startswith("|--- ") and one.splitlines()[0] in export_text(tel)
    plt.close("all")

    single = DGTClassifier(max_depth=2, max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match="single tree"):
        plot_tree(single, tree_index=0)
    with pytest.raises(TypeError, match="sklearn.tree.export_text"):
        export_text(DecisionTreeClassifier().fit(X, y))
    with pytest.raises(TypeError, match="no fitted tree"):
        export_text(_NoTree().fit(X, y))


def _dot_clusters(dot):
    """``{label: body lines}`` of the ``cluster_<t>`` subgraphs of a dot file,
    checking the frame (the shared header, then clusters 0, 1, ... in order)."""
    lines = dot.strip().splitlines()
    assert lines[0] == "digraph Tree {" and lines[-1] == "}"
    clusters, body, i = {}, None, 1
    while lines[i].startswith(("node [", "edge [", "rankdir")):
        i += 1
    for line in lines[i:-1]:
        if body is None:
            assert line == f"subgraph cluster_{len(clusters)} {{", line
            body = []
        elif line == "}":
            label = re.fullmatch(r'label="(.*)" ;', body[0]).group(1)
            assert body[1].startswith("fontname=")
            clusters[label] = body[2:]
            body = None
        else:
            body.append(line)
    assert body is None
    return clusters


@pytest.fixture(scope="module")
def tel_fitted():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 4)
    y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # trained ensembles (the cross-check would write the regressor's
        # as a CART: one hard tree and a single-leaf one)
        clf = TreeEnsembleLayerClassifier(n_trees=3, max_depth=3, max_iter=3,
                                          random_state=0, greedy_floor=False).fit(X, y)
        reg = TreeEnsembleLayerRegressor(n_trees=2, max_depth=2, max_iter=3,
                                         random_state=0, greedy_floor=False).fit(X, X[:, 0])
    return clf, reg


@pytest.mark.parametrize("kw", [{}, dict(filled=True, leaves_parallel=True, node_ids=True,
                                         rotate=True, max_depth=1, feature_names=list("abcd"))])
def test_graphviz_of_a_tree_ensemble_layer_holds_every_tree(tel_fitted, kw):
    """Without tree_index, export_graphviz writes every soft tree, as
    export_text prints them: one cluster per tree, each the graph of
    tree_index=t with node ids prefixed by the tree (it raised TypeError)."""
    for est in tel_fitted:
        dot = export_graphviz(est, **kw)
        clusters = _dot_clusters(dot)
        assert list(clusters) == [f"tree {t}" for t in range(est.n_trees)]
        assert ("rankdir=LR ;" in dot.splitlines()[:4]) == ("rotate" in kw)
        for t, body in enumerate(clusters.values()):
            one = export_graphviz(est, tree_index=t, **kw)
            nodes, _ = _parse_dot(one)  # a tree; its body is the cluster's
            expected = [line for line in one.strip().splitlines()[1:-1]
                        if not line.startswith(("node [", "edge [", "rankdir"))]
            assert [re.sub(rf"\bt{t}_(\d+)", r"\1", line) for line in body] == expected
            assert all(re.match(rf"(\{{rank=same ; )?t{t}_\d+[ ;]", line) for line in body)
        assert sum(len(b) for b in clusters.values()) > 3 * est.n_trees
    # tree_index out of range: the same clear error for the three exports.
    clf = tel_fitted[0]
    for fn in (export_graphviz, plot_tree, export_text):
        with pytest.raises(ValueError, match=r"tree_index must be an integer in \[0, 2\] "
                                             r"for this TreeEnsembleLayerClassifier of 3 "
                                             r"trees; got 3"):
            fn(clf, tree_index=3)


def test_plot_tree_of_a_tree_ensemble_layer_draws_every_tree(tel_fitted):
    """Without tree_index, plot_tree draws every soft tree (it raised
    TypeError): a grid of one titled axes per tree in a new figure, or into
    the axes given, each tree as plot_tree(tree_index=t) draws it."""
    clf, reg = tel_fitted
    try:
        for est in (clf, reg):
            texts = plot_tree(est, max_depth=2)
            fig = texts[0].figure
            assert [ax.get_title() for ax in fig.axes] == [
                f"tree {t}" for t in range(est.n_trees)]
            for t, ax in enumerate(fig.axes):
                mine = [x for x in texts if x.axes is ax]
                alone = plot_tree(est, tree_index=t, max_depth=2)
                assert [x.get_text() for x in mine] == [x.get_text() for x in alone]
                assert not _overlaps(_boxes(mine))
            # No two trees' boxes overlap either (titles included).
            titles = [ax.title for ax in fig.axes]
            frames = np.array([[b.x0, b.y0, b.x1, b.y1] for b in (
                ax.get_window_extent().union([ti.get_window_extent()])
                for ax, ti in zip(fig.axes, titles))])
            assert not _overlaps(frames)
            assert sum(x.axes is None for x in texts) == 0
        # Into the user's axes: an array of at least n_trees of them.
        fig, axes = plt.subplots(2, 2, figsize=(40, 14))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # large enough: no overlap
            texts = plot_tree(clf, ax=axes)
        assert {x.axes for x in texts} == set(axes.ravel()[:3])
        assert axes[0, 0].get_title() == "tree 0" and not axes[1, 1].texts
        assert tuple(fig.get_size_inches()) == (40, 14)
        for ax in axes.ravel()[:3]:
            assert not _overlaps(_boxes([x for x in texts if x.axes is ax]))
        with pytest.raises(ValueError, match="single Axes"):
            plot_tree(clf, ax=axes[0, 0])
        with pytest.raises(ValueError, match="at least 3"):
            plot_tree(clf, ax=axes[0])
        assert len(plot_tree(clf, tree_index=2, ax=axes[1, 1])) == len(
            [x for x in texts if x.axes is axes[1, 0]])  # one tree, one Axes
    finally:
        plt.close("all")


# ---------------------------------------------------------- training record
def test_plot_training_history_draws_the_record():
    rng = np.random.RandomState(0)
    X = rng.randn(150, 3)
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = DGTClassifier(max_depth=2, max_iter=6, hidden_width=8, random_state=0).fit(X, y)
    ax, score_ax = plot_training_history(clf)
    loss_line = ax.get_lines()[0]
    np.testing.assert_allclose(loss_line.get_ydata(), clf.loss_curve_)
    np.testing.assert_array_equal(loss_line.get_xdata(), np.arange(1, clf.n_iter_ + 1))
    np.testing.assert_allclose(score_ax.get_lines()[0].get_ydata(), clf.validation_scores_)
    assert ax.get_xlabel() == "epoch"
    plt.close("all")
    no_val = DGTClassifier(max_depth=2, max_iter=3, early_stopping=False,
                           random_state=0).fit(X, y)
    ax, score_ax = plot_training_history(no_val)
    assert score_ax is None
    plt.close("all")
    with pytest.raises(TypeError, match="loss_curve_"):
        plot_training_history(DecisionTreeClassifier().fit(X, y))


# ------------------------------------------------------------- named features
def test_bundled_frame_names_reach_the_exports():
    pd = pytest.importorskip("pandas")
    X, y = load_dataset("pima", return_X_y=True, as_frame=True)
    assert isinstance(X, pd.DataFrame) and isinstance(y, pd.Series)
    bunch = load_dataset("pima", as_frame=True)
    assert list(bunch.frame.columns) == bunch.feature_names + ["target"]
    clf = DGTClassifier(max_depth=2, max_iter=2, random_state=0).fit(X.iloc[:300], y[:300])
    text = export_text(clf)
    assert "feature_" not in text and any(c in text for c in X.columns)
    nodes, _ = _parse_dot(export_graphviz(clf))
    assert any(c in label for c in X.columns for label in nodes.values())
