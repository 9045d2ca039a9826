"""Greedy subtrees below the DGT forests' leaves (``subtree_depth``) and the
core's :class:`~sklearn_difftrees._core.subtrees.AxisSubtrees` that holds
them: routing against an independent walk, the forest's output against
scikit-learn's own trees grown on the same rows, exports and persistence."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_difftrees._core.subtrees import _target_frame, grow_axis_subtrees
from sklearn_difftrees._core.validation import fit_standardizer
from sklearn_difftrees.dgt import DGTForestClassifier, DGTForestRegressor
from sklearn_difftrees.dgt import _forest_routing

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# The subtrees as grown ("auto" cuts them: tests/test_forest_subtree_depth.py).
FAST = dict(n_estimators=3, max_depth=2, max_iter=5, subtree_depth=None, random_state=0)


def _walk(subtrees, x, leaf):
    """The node a row reaches, one comparison at a time (the oracle)."""
    node = subtrees.root[leaf]
    while subtrees.left[node] >= 0:
        go_left = x[subtrees.feature[node]] <= subtrees.threshold[node]
        node = subtrees.left[node] if go_left else subtrees.right[node]
    return node


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axis_subtrees_route_as_a_walk_down_their_nodes(dtype):
    rs = np.random.RandomState(0)
    X = rs.normal(size=(400, 5))
    leaves = rs.randint(0, 4, size=400)
    y = (X[:, 0] + X[:, 1] * leaves > 0).astype(int)
    sub = grow_axis_subtrees(X, leaves, 4, y, np.ones(400), np.full((4, 2), 0.5),
                             classification=True, n_outputs=2, max_depth=None, seed=0,
                             mean=X.mean(axis=0), scale=X.std(axis=0))
    X_new = rs.normal(size=(300, 5)).astype(dtype)
    new_leaves = rs.randint(0, 4, size=300)
    expected = [_walk(sub, x, leaf) for x, leaf in zip(X_new.astype(np.float64), new_leaves)]
    np.testing.assert_array_equal(sub.apply(X_new, new_leaves), expected)
    path = sub.decision_path(X_new, new_leaves).toarray()
    for i, node in enumerate(expected):  # the path ends where apply does
        assert path[i, node] == 1 and path[i, sub.root[new_leaves[i]]] == 1
    # pure training leaves: every training row is predicted its own class
    np.testing.assert_array_equal(sub.predict(X, leaves).argmax(axis=1), y)


def test_a_leaf_without_rows_keeps_its_own_value_a_pure_one_its_rows():
    X = np.arange(12.0).reshape(6, 2)
    leaves = np.array([0, 0, 0, 1, 1, 1])
    y = np.array([0, 1, 0, 1, 1, 1])  # leaf 1 is pure; leaf 2 has no rows
    base = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    sub = grow_axis_subtrees(X, leaves, 3, y, np.ones(6), base, classification=True,
                             n_outputs=2, max_depth=None, seed=0, mean=np.zeros(2),
                             scale=np.ones(2))
    # its rows' proportions, as a RandomForest's pure leaf (not the member's 0.8)
    np.testing.assert_array_equal(sub.predict(X[3:], leaves[3:]), [[0.0, 1.0]] * 3)
    np.testing.assert_array_equal(sub.predict(X[:1], np.array([2])), base[[2]])
    assert sub.left[sub.root[0]] >= 0 and sub.left[sub.root[1]] < 0


def test_inconsistent_subtree_arrays_are_refused_before_the_kernel():
    sub = grow_axis_subtrees(np.arange(8.0).reshape(4, 2), np.zeros(4, int), 1,
                             np.array([0, 1, 0, 1]), np.ones(4), np.zeros((1, 2)),
                             classification=True, n_outputs=2, max_depth=None, seed=0,
                             mean=np.zeros(2), scale=np.ones(2))
    X = np.zeros((2, 2))
    bad = pickle.loads(pickle.dumps(sub))
    bad.left = bad.left.copy()
    bad.left[bad.root[0]] = bad.root[0]  # a loop: the walk would never end
    with pytest.raises(ValueError, match="Inconsistent fitted AxisSubtrees"):
        bad.apply(X, np.zeros(2, int))
    with pytest.raises(ValueError, match="more features"):
        sub.apply(np.zeros((2, 1)), np.zeros(2, int))


def _capture(monkeypatch):
    """Record the arguments of every subtree growth of a forest's fit."""
    calls = []
    real = _forest_routing.grow_axis_subtrees

    def grow(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(_forest_routing, "grow_axis_subtrees", grow)
    return calls


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_forest_output_is_the_mean_of_scikit_learn_trees_below_the_leaves(monkeypatch, task):
    """Oracle: for every member, scikit-learn's own CART (Gini / squared
    error, unlimited depth) grown on the member's bootstrap rows of each of
    its leaves (standardized as the forest standardizes them, and the
    targets as the subtrees do), predicting the new rows that reach that
    leaf."""
    calls = _capture(monkeypatch)
    if task == "classification":
        X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=1)
        forest = DGTForestClassifier(**FAST).fit(X, y)
    else:
        X, y = make_regression(300, 6, noise=10.0, random_state=1)
        forest = DGTForestRegressor(**FAST).fit(X, y)
    assert len(calls) == len(forest.estimators_) == len(forest.subtrees_)
    X_new = np.random.RandomState(2).normal(size=(200, 6)) * X.std(axis=0)
    total = 0
    for member, (args, kwargs) in zip(forest.estimators_, calls):
        Xf, leaves, n_roots, Y, w, base = args
        assert Xf is X or np.array_equal(Xf, X)
        mean, scale = kwargs["mean"], kwargs["scale"]
        new_leaves = member.tree_.apply(X_new) - (n_roots - 1)
        out = np.array(base[new_leaves], dtype=float)
        for j in np.unique(new_leaves):
            rows = np.flatnonzero((leaves == j) & (w > 0))
            here = new_leaves == j
            if rows.size == 0:  # no bootstrap row: the member's own leaf value
                continue
            if rows.size < 2 or np.unique(Y[rows], axis=0).shape[0] < 2:
                # nothing to split: the rows' class proportions / mean target
                if task == "classification":
                    out[here] = np.bincount(Y[rows], weights=w[rows],
                                            minlength=forest.n_classes_) / w[rows].sum()
                else:
                    out[here] = np.average(Y[rows], axis=0, weights=w[rows])
                continue
            cls = DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor
            target = Y[rows]
            if task == "regression":  # the targets standardized (any magnitude)
                peak, centre, unit = _target_frame(target, w[rows])
                target = (target / peak - centre) / unit
            cart = cls(random_state=kwargs["seed"]).fit((X[rows] - mean) / scale, target,
                                                        sample_weight=w[rows])
            Z = (X_new[here] - mean) / scale
            if task == "classification":
                proba = np.zeros((here.sum(), forest.n_classes_))
                proba[:, cart.classes_] = cart.predict_proba(Z)
                out[here] = proba
            else:
                out[here] = ((centre + unit * cart.predict(Z)) * peak).reshape(-1, 1)
        total = total + out
    expected = total / len(forest.estimators_)
    if task == "classification":
        np.testing.assert_allclose(forest.predict_proba(X_new), expected, rtol=1e-12,
                                   atol=1e-12)
    else:
        np.testing.assert_allclose(forest.predict(X_new), expected[:, 0], rtol=1e-9)


@pytest.mark.parametrize("cls", [DGTForestClassifier, DGTForestRegressor])
def test_subtree_depth_bounds_the_subtrees_and_zero_grows_none(cls):
    X, y = make_classification(300, 5, random_state=0)
    if cls is DGTForestRegressor:
        y = X[:, 0] * 3 + np.random.RandomState(0).normal(size=300)
    deep = cls(**FAST).fit(X, y)
    shallow = cls(**{**FAST, "subtree_depth": 2}).fit(X, y)
    none = cls(**{**FAST, "subtree_depth": 0}).fit(X, y)
    assert max(s.max_depth for s in deep.subtrees_) > 2
    assert max(s.max_depth for s in shallow.subtrees_) == 2
    assert none.subtrees_ is None
    # the members themselves do not depend on the subtrees
    for a, b in zip(deep.estimators_, none.estimators_):
        np.testing.assert_array_equal(a.tree_.weights, b.tree_.weights)
    # a deeper partition of the same bootstrap rows fits them at least as well
    assert deep.score(X, y) >= none.score(X, y)


@pytest.mark.parametrize("cls", [DGTForestClassifier, DGTForestRegressor])
def test_apply_and_decision_path_include_the_subtrees(cls):
    X, y = make_classification(200, 5, random_state=0)
    forest = cls(**FAST).fit(X, y.astype(float) if cls is DGTForestRegressor else y)
    leaves = forest.apply(X[:50])
    indicator, ptr = forest.decision_path(X[:50])
    n_tree_nodes = 2 ** (forest.max_depth_ + 1) - 1
    for k, sub in enumerate(forest.subtrees_):
        assert ptr[k + 1] - ptr[k] == n_tree_nodes + sub.n_nodes
        block = indicator[:, ptr[k]:ptr[k + 1]].toarray()
        # the last node of each path is the node apply returns
        assert np.all(block[np.arange(50), leaves[:, k]] == 1)
        assert np.all(leaves[:, k] >= n_tree_nodes)
        np.testing.assert_array_equal(block[:, :n_tree_nodes].sum(axis=1),
                                      forest.max_depth_ + 1)


@pytest.mark.parametrize("cls", [DGTForestClassifier, DGTForestRegressor])
def test_forest_with_subtrees_pickles_and_exports_to_onnx(cls):
    ort = pytest.importorskip("onnxruntime")
    from sklearn_difftrees import to_onnx

    X, y = make_classification(300, 5, n_classes=3, n_informative=3, random_state=0)
    if cls is DGTForestRegressor:
        y = y + X[:, 0]
    forest = cls(**FAST).fit(X, y)
    X_new = np.random.RandomState(1).normal(size=(100, 5))
    again = pickle.loads(pickle.dumps(forest))
    sess = ort.InferenceSession(to_onnx(forest, X_new[:2]).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    out = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"X": X_new})))
    if cls is DGTForestClassifier:
        np.testing.assert_array_equal(again.predict_proba(X_new), forest.predict_proba(X_new))
        np.testing.assert_array_equal(out["label"], forest.predict(X_new))
        np.testing.assert_allclose(out["probabilities"], forest.predict_proba(X_new),
                                   rtol=0, atol=1e-9)
    else:
        np.testing.assert_array_equal(again.predict(X_new), forest.predict(X_new))
        np.testing.assert_allclose(out["variable"], forest.predict(X_new), rtol=1e-9)


def test_subtrees_grow_on_standardized_rows_of_any_magnitude():
    """scikit-learn's trees cast to float32: raw features of 1e200 or with
    an offset of 1e9 would leave them nothing to split. The subtrees grow
    on standardized rows and split the same way at any magnitude (below the
    same leaves: the core's growth alone, so that the members' training,
    whose last bits move with the input's rounding, does not decide), and a
    forest fitted on such features predicts as well."""
    X, y = make_classification(200, 4, random_state=0)
    leaves = (X[:, 0] > 0).astype(np.int64) + 2 * (X[:, 1] > 0)  # four leaves
    grown = {}
    for name, moved in (("plain", X), ("huge", X * 1e200), ("offset", X + 1e9)):
        mean, scale = fit_standardizer(moved, np.ones(200))  # the forest's
        grown[name] = grow_axis_subtrees(
            moved, leaves, 4, y, np.ones(200), np.full((4, 2), 0.5), classification=True,
            n_outputs=2, max_depth=None, seed=0, mean=mean, scale=scale)
    for name in ("huge", "offset"):
        np.testing.assert_array_equal(grown[name].left, grown["plain"].left)
        np.testing.assert_array_equal(grown[name].feature, grown["plain"].feature)
        np.testing.assert_array_equal(grown[name].value, grown["plain"].value)
    np.testing.assert_allclose(grown["huge"].threshold / 1e200, grown["plain"].threshold,
                               rtol=1e-9)
    plain = DGTForestClassifier(**FAST).fit(X, y)
    for moved in (X * 1e200, X + 1e9):
        forest = DGTForestClassifier(**FAST).fit(moved, y)
        assert forest.score(moved, y) == pytest.approx(plain.score(X, y), abs=0.02)


@pytest.mark.parametrize("move", ["tiny", "huge", "offset"])
def test_regression_subtrees_split_targets_of_any_magnitude(move):
    """scikit-learn's squared error calls a node of variance below float64's
    eps pure, overflows its sums of squares on huge targets and loses the
    spread of targets far from zero to cancellation; the members standardize
    their targets, and the subtrees split as they do on targets near 1."""
    X, y = make_regression(300, 5, noise=10.0, random_state=1)
    y = np.column_stack([y / y.std(), X[:, 0] ** 2])  # two outputs
    plain = DGTForestRegressor(**FAST).fit(X, y)
    if move == "offset":  # y + 2**30 rounds y: ties between splits may go another way
        forest = DGTForestRegressor(**FAST).fit(X, y + 2.0 ** 30)
        assert forest.score(X, y + 2.0 ** 30) == pytest.approx(plain.score(X, y), abs=1e-3)
        for a, b in zip(forest.subtrees_, plain.subtrees_):
            assert a.n_nodes == pytest.approx(b.n_nodes, rel=0.05)
        return
    factor = 2.0 ** (-40 if move == "tiny" else 700)  # exact: the same splits
    forest = DGTForestRegressor(**FAST).fit(X, y * factor)
    for a, b in zip(forest.subtrees_, plain.subtrees_):
        np.testing.assert_array_equal(a.left, b.left)
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_allclose(a.value / factor, b.value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(forest.predict(X) / factor, plain.predict(X), rtol=1e-9,
                               atol=1e-9)


def test_subtrees_that_may_not_fit_in_memory_are_refused_before_training(monkeypatch):
    from sklearn_difftrees._core._memory import ENV_VAR, MemoryLimitError

    X, y = make_classification(2000, 5, random_state=0)
    # 3 members x (2 x 2000 rows + 4 leaves) x 8 x (5 + 2) bytes = 673 kB > 500 kB
    monkeypatch.setenv(ENV_VAR, "500kB")
    with pytest.raises(MemoryLimitError, match="subtree_depth"):
        DGTForestClassifier(**FAST).fit(X, y)
    # bounded subtrees (2**(2 + 1 + 1) nodes per member) or none fit
    DGTForestClassifier(**{**FAST, "subtree_depth": 1}).fit(X, y)
    DGTForestClassifier(**{**FAST, "subtree_depth": 0}).fit(X, y)


def test_the_subtree_memory_estimate_counts_a_node_per_leaf_without_rows(monkeypatch):
    """Few rows below many leaves: every leaf has a node (its own value where
    no row reaches it), more than twice the rows."""
    from sklearn_difftrees._core._memory import ENV_VAR, MemoryLimitError

    X, y = make_classification(40, 5, random_state=0)
    forest = DGTForestClassifier(n_estimators=2, max_depth=8, max_iter=1, subtree_depth=None,
                                 random_state=0).fit(X, y)
    assert all(2 * 40 < s.n_nodes <= 2 * 40 + 256 for s in forest.subtrees_)
    # 2 members x (2 x 40 rows + 256 leaves) x 8 x (5 + 2) bytes = 37.6 kB
    monkeypatch.setenv(ENV_VAR, "20kB")
    with pytest.raises(MemoryLimitError, match="subtree_depth"):
        _forest_routing.check_subtree_memory(forest, 40, 2, 8)
    monkeypatch.setenv(ENV_VAR, "40kB")
    _forest_routing.check_subtree_memory(forest, 40, 2, 8)


def test_exports_show_a_member_with_its_subtrees():
    import matplotlib

    matplotlib.use("Agg")
    from sklearn.datasets import load_iris

    from sklearn_difftrees import export_graphviz, export_text, plot_tree

    X, y = load_iris(return_X_y=True)
    forest = DGTForestClassifier(**FAST).fit(X, y)
    names = ["sl", "sw", "pl", "pw"]
    text = export_text(forest, tree_index=0, feature_names=names)
    sub = forest.subtrees_[0]
    assert f"subtrees_[0]: {sub.n_nodes} nodes" in text
    grown = np.flatnonzero(sub.left >= 0)
    assert grown.size  # iris: some leaf mixes two species
    # every subtree split is printed as "feature <= threshold"
    for node in grown:
        assert f"{names[sub.feature[node]]} <= {sub.threshold[node]:.3g}" in text
    # the leaves shown are as many as the nodes the rows can end in
    ends = np.unique(forest.apply(X)[:, 0])
    assert text.count("class: ") >= ends.size
    assert "digraph" in export_graphviz(forest, tree_index=0)
    plot_tree(forest, tree_index=0)
    plain = export_text(DGTForestClassifier(**{**FAST, "subtree_depth": 0}).fit(X, y),
                        tree_index=0)
    assert "subtrees_" not in plain


def test_exported_node_ids_are_those_apply_returns():
    """A leaf below which nothing grew is shown under the id apply gives its
    rows (its subtrees' single node), not its heap index in the member."""
    import re

    from sklearn.datasets import load_iris

    from sklearn_difftrees import export_graphviz

    X, y = load_iris(return_X_y=True)
    forest = DGTForestClassifier(**FAST).fit(X, y)
    for k, sub in enumerate(forest.subtrees_):
        assert np.any(sub.left[sub.root] < 0)  # some leaf grew nothing
        dot = export_graphviz(forest, tree_index=k, node_ids=True)
        shown = {int(m) for m in re.findall(r'\[label="node #(\d+)\\n(?:(?!<=)[^"])*"', dot)}
        # every leaf shown is reached by its member's bootstrap rows
        assert shown and shown <= set(np.unique(forest.apply(X)[:, k]).tolist())


def test_a_forest_pickled_before_the_subtrees_loads_as_one_without_them():
    X, y = make_classification(100, 5, random_state=0)
    forest = DGTForestClassifier(**{**FAST, "subtree_depth": 0}).fit(X, y)
    old = pickle.dumps(forest)
    for name in ("subtree_depth", "min_weight_fraction_leaf", "subtrees_", "subtree_depth_",
                 "subtree_scores_"):
        del forest.__dict__[name]  # what the forests pickled before them
    loaded = pickle.loads(pickle.dumps(forest))
    assert loaded.get_params()["subtree_depth"] == 0 and loaded.subtree_depth_ == 0
    assert loaded.get_params()["min_weight_fraction_leaf"] == 0.0
    assert "DGTForestClassifier(" in repr(loaded)
    np.testing.assert_array_equal(loaded.predict_proba(X), pickle.loads(old).predict_proba(X))
    # an unfitted one takes the defaults
    fresh = DGTForestClassifier()
    for name in ("subtree_depth", "min_weight_fraction_leaf"):
        del fresh.__dict__[name]
    assert pickle.loads(pickle.dumps(fresh)).get_params() == DGTForestClassifier().get_params()


def test_onnx_graph_holds_no_unused_tables_for_members_that_grew_nothing():
    """onnxruntime warns about (and drops) every initializer no node reads."""
    pytest.importorskip("onnx")
    from sklearn_difftrees import to_onnx

    X, y = make_classification(120, 5, random_state=0)
    forest = DGTForestClassifier(**FAST, max_samples=3).fit(X, y)  # too few rows to grow
    assert any(s.max_depth == 0 for s in forest.subtrees_)
    graph = to_onnx(forest, X[:2]).graph
    read = {name for node in graph.node for name in node.input}
    assert [i.name for i in graph.initializer if i.name not in read] == []



def test_a_leaf_too_light_to_be_a_leaf_keeps_the_members_value():
    """With min_weight_fraction_leaf, rows that weigh less than the minimum
    cannot form a leaf of their own: their leaf keeps the member's value
    (trained on every row, with the class weights); rows between one and
    two minimums form one leaf with their proportions."""
    X = np.arange(16.0).reshape(8, 2)
    leaves = np.array([0, 0, 0, 0, 1, 1, 2, 2])
    y = np.array([0, 1, 0, 1, 1, 1, 1, 0])
    w = np.array([1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.6, 0.6])
    base = np.array([[0.9, 0.1], [0.7, 0.3], [0.5, 0.5]])
    sub = grow_axis_subtrees(X, leaves, 3, y, w, base, classification=True, n_outputs=2,
                             max_depth=None, seed=0, mean=np.zeros(2), scale=np.ones(2),
                             min_weight_leaf=1.0)
    np.testing.assert_array_equal(sub.predict(X[4:5], leaves[4:5]), base[[1]])  # 0.2 < 1
    np.testing.assert_array_equal(sub.predict(X[6:7], leaves[6:7]), [[0.5, 0.5]])  # 1.2
    assert sub.left[sub.root[0]] >= 0  # 4.0 >= 2 * 1.0: grown
