"""``plot_tree`` of deep trees and of many trees: a figure of bounded size,
``max_depth`` (``"auto"`` by default) marking the subtrees it cuts as
scikit-learn does (``(...)``), small trees drawn as before, and no rendering
inside ``plot_tree`` (its cost was two full draws of every box)."""

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_difftrees import TreeEnsembleLayerClassifier, export_text, plot_tree
from sklearn_difftrees._core._tree_plot import LEGIBLE_FONTSIZE, MAX_FIGURE_INCHES
from sklearn_difftrees._core.export import tree_view

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from _plots import _boxes, _hand_made, _overlaps  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _internal_at(view, depth):
    """Split nodes of ``view`` at ``depth`` (what a cut there replaces)."""
    level = [view.root]
    for _ in range(depth):
        level = [c for v in level for c in v.children]
    return [v for v in level if not v.is_leaf]


def _drawn_depth(texts, view):
    """The depth ``d`` with ``view.truncate(d)`` drawn as ``texts``."""
    for d in range(view.root.depth() + 1):
        if len(list(view.truncate(d).root.walk())) == len(texts):
            return d
    raise AssertionError("the drawing is no truncation of the view")


def _fits(fig):
    w, h = fig.get_size_inches()
    return w <= MAX_FIGURE_INCHES[0] + 1e-6 and h <= MAX_FIGURE_INCHES[1] + 1e-6


def test_deep_tree_default_is_a_bounded_figure_cut_with_marks():
    """Depth 8 (351 shown nodes) drew a 294 x 9 inch figure; by default the
    levels that fit a figure of at most MAX_FIGURE_INCHES at a legible font
    are drawn, each cut subtree as a grey (...) box."""
    est = _hand_made(8)
    view = tree_view(est, top_k=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        texts = plot_tree(est, filled=True)
    fig = texts[0].figure
    assert _fits(fig)
    assert texts[0].get_fontsize() >= LEGIBLE_FONTSIZE - 0.1
    assert not _overlaps(_boxes(texts))
    d = _drawn_depth(texts, view)  # the deepest split drawn
    assert 2 <= d < view.root.depth() - 1
    cut = view.truncate(d)
    marks = [t for t in texts if t.get_text() == "(...)"]
    assert len(marks) == len(_internal_at(view, d + 1)) > 0
    assert [t.get_text() == "(...)" for t in texts] == [v.truncated for v in cut.root.walk()]
    assert all(t.get_bbox_patch().get_facecolor()[:3] == pytest.approx((0.8, 0.8, 0.8))
               for t in marks)


def test_max_depth_marks_the_cut_subtrees_as_scikit_learn():
    est = _hand_made(4)
    view = tree_view(est, top_k=2)
    texts = plot_tree(est, max_depth=2)
    shown = list(view.truncate(2).root.walk())
    assert len(texts) == len(shown)
    # As scikit-learn's: the splits of depth 0, 1 and 2 drawn, those at 3 cut.
    assert sum(t.get_text() == "(...)" for t in texts) == len(_internal_at(view, 3))
    for t, v in zip(texts, shown):  # the splits above the cut are drawn in full
        assert (t.get_text() == "(...)") == v.truncated
        if not v.truncated:
            assert t.get_text().split("\n")[0] == (v.label if v.is_leaf else v.split[0][0])
    root_only = [t.get_text() for t in plot_tree(est, max_depth=0)]  # the root's split
    assert root_only[1:] == ["(...)", "(...)"] and root_only[0].split("\n")[0] == \
        view.root.split[0][0]
    # The text export keeps its own mark.
    assert "truncated branch of depth 1" in export_text(est, max_depth=2)
    for bad in ("deep", -1, 1.5):
        with pytest.raises(InvalidParameterError, match="max_depth"):
            plot_tree(est, max_depth=bad)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_small_trees_are_drawn_as_before(depth):
    """A tree that fits is drawn whole, at the requested font, in a figure
    sized to it: "auto" draws what max_depth=None draws."""
    est = _hand_made(depth)
    auto = plot_tree(est, filled=True)
    whole = plot_tree(est, filled=True, max_depth=None)
    assert [t.get_text() for t in auto] == [t.get_text() for t in whole]
    assert len(auto) == len(list(tree_view(est, top_k=2).root.walk()))
    assert "(...)" not in [t.get_text() for t in auto]
    assert all(t.get_fontsize() == 9.0 for t in auto)
    assert np.allclose(auto[0].figure.get_size_inches(), whole[0].figure.get_size_inches())
    assert not _overlaps(_boxes(auto))


def test_whole_deep_tree_stays_in_a_bounded_figure_and_warns():
    est = _hand_made(8)
    with pytest.warns(UserWarning, match=r"at most 40 x 25 inches is too small.*max_depth"):
        texts = plot_tree(est, max_depth=None)
    assert len(texts) == len(list(tree_view(est, top_k=2).root.walk()))
    assert _fits(texts[0].figure)


@pytest.fixture(scope="module")
def many_trees():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 6)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return TreeEnsembleLayerClassifier(n_trees=20, max_depth=4, max_iter=2,
                                           greedy_floor=False, random_state=0).fit(X, y)


def test_many_trees_default_is_bounded_and_measured_without_rendering(many_trees,
                                                                      monkeypatch):
    """20 trees of depth 4 took about 7 s (two full draws of 620 boxes) in a
    98 x 52 inch figure; the boxes are now measured, not rendered, and the
    levels that fit are drawn."""
    draws = []
    real = FigureCanvasAgg.draw
    monkeypatch.setattr(FigureCanvasAgg, "draw",
                        lambda self, *a, **k: draws.append(1) or real(self, *a, **k))
    texts = plot_tree(many_trees)
    assert not draws  # plot_tree renders nothing; the user's show / savefig does
    fig = texts[0].figure
    assert _fits(fig)
    assert [ax.get_title() for ax in fig.axes] == [f"tree {t}" for t in range(20)]
    assert texts[0].get_fontsize() >= LEGIBLE_FONTSIZE - 0.1
    _boxes(texts)  # one draw; then the boxes of each tree
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        ext = [t.get_bbox_patch().get_window_extent(renderer) for t in texts if t.axes is ax]
        assert not _overlaps(np.array([[e.x0, e.y0, e.x1, e.y1] for e in ext]))
    d = _drawn_depth([t for t in texts if t.axes is fig.axes[0]],
                     tree_view(many_trees, tree_index=0, top_k=2))
    assert d < 4
    per_tree = [[t.get_text() for t in texts if t.axes is ax] for ax in fig.axes]
    assert per_tree[3] == [t.get_text() for t in plot_tree(many_trees, tree_index=3,
                                                           max_depth=d)]


def test_many_trees_into_too_small_axes_warn_about_all_of_them(many_trees):
    """20 trees into 20 axes of which 10 are too small: the warning counts the
    trees whose boxes overlap (it named one tree, as if it were the only one),
    says what was drawn and how to draw them all."""
    fig = plt.figure(figsize=(40, 20))
    large = [fig.add_axes([0.1 * (i % 10), 0.55, 0.09, 0.4]) for i in range(10)]
    tiny = [fig.add_axes([0.1 * (i % 10), 0.05, 0.005, 0.005]) for i in range(10)]
    with pytest.warns(UserWarning) as record:
        texts = plot_tree(many_trees, ax=large + tiny)
    (message,) = [str(w.message) for w in record if "plot_tree" in str(w.message)]
    assert re.match(r"plot_tree: the 20 axes given are too small for 10 of the 20 trees: "
                    r"their boxes overlap \(most crowded: tree 1\d, ", message), message
    assert ("All 20 trees were drawn, cut by max_depth='auto' (at least the root's split "
            "each), at 3 points.") in message
    assert "ax=None (a new figure sized to the trees)" in message
    assert "tree_index=i" in message and "a smaller max_depth" not in message
    assert {t.axes for t in texts} == set(large + tiny)  # nothing left out
    crowded = [ax for ax in large + tiny
               if _overlaps(_boxes([t for t in texts if t.axes is ax]))]
    assert crowded == tiny
    with pytest.warns(UserWarning, match=r"too small for 20 of the 20 trees(.|\n)*whole "
                                         r"\(max_depth=None\)(.|\n)*a smaller max_depth"):
        plot_tree(many_trees, ax=plt.subplots(4, 5, figsize=(4, 3))[1], max_depth=None)


def test_many_trees_into_fewer_axes_raise_and_draw_nothing(many_trees):
    """A wrong-sized ax raises, as scikit-learn's displays do (nothing drawn);
    the message says how to draw all the trees."""
    fig, axes = plt.subplots(2, 3)
    with pytest.raises(ValueError, match=r"20 trees: ax must hold at least 20 matplotlib "
                                         r"Axes(.|\n)*got 6 Axes, and nothing was drawn\. "
                                         r"To draw all 20 trees pass ax=None(.|\n)*"
                                         r"plt\.subplots\(4, 5\)\[1\]"):
        plot_tree(many_trees, ax=axes)
    assert not any(ax.texts for ax in axes.ravel())
    enough = list(plt.subplots(4, 5)[1].ravel())
    enough[3] = None
    with pytest.raises(ValueError, match=r"got 20 item\(s\), 1 of them not Axes"):
        plot_tree(many_trees, ax=enough)
