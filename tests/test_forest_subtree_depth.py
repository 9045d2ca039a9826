"""``subtree_depth="auto"``: the forests' subtrees grown until pure, then cut
at the depth their out-of-bag predictions score best; the core's
``AxisSubtrees.node_depth`` / ``nodes_at_depths`` / ``pruned`` it rests on,
against a node-by-node walk and a brute-force out-of-bag oracle."""

import pickle
from fractions import Fraction

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import accuracy_score, r2_score

from sklearn_difftrees._core.subtrees import grow_axis_subtrees
from sklearn_difftrees._core.validation import check_predict_data
from sklearn_difftrees.dgt import DGTForestClassifier, DGTForestRegressor
from sklearn_difftrees.dgt._bagging import _bootstrap_counts
from sklearn_difftrees.dgt._forest_routing import SUBTREE_DEPTHS

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = dict(n_estimators=5, max_depth=2, max_iter=5, random_state=0)
_MAX_INT = np.iinfo(np.int32).max


def _grown(seed=0, n=500):
    rs = np.random.RandomState(seed)
    X = rs.normal(size=(n, 4))
    leaves = rs.randint(0, 4, size=n)
    y = ((X[:, 0] * 3).astype(int) + leaves + (rs.rand(n) < 0.2)) % 3
    sub = grow_axis_subtrees(X, leaves, 4, y, np.ones(n), np.full((4, 3), 1 / 3),
                             classification=True, n_outputs=3, max_depth=None, seed=0,
                             mean=X.mean(axis=0), scale=X.std(axis=0))
    return sub, rs


def _walk(sub, x, leaf, depth):
    """(node, its depth) where a walk from ``leaf``'s root stops at ``depth``."""
    node, level = sub.root[leaf], 0
    while sub.left[node] >= 0 and level < depth:
        go_left = x[sub.feature[node]] <= sub.threshold[node]
        node, level = (sub.left[node] if go_left else sub.right[node]), level + 1
    return node, level


def test_nodes_at_depths_and_pruned_route_as_a_walk_cut_at_that_depth():
    sub, rs = _grown()
    assert sub.max_depth > 4
    X = rs.normal(size=(200, 4))
    leaves = rs.randint(0, 4, size=200)
    depths = [0, 1, 3, 4, sub.max_depth]
    nodes = sub.nodes_at_depths(X, leaves, depths)
    node_depth = sub.node_depth()
    for j, depth in enumerate(depths):
        walked = [_walk(sub, x, leaf, depth) for x, leaf in zip(X, leaves)]
        np.testing.assert_array_equal(nodes[:, j], [node for node, _ in walked])
        np.testing.assert_array_equal(node_depth[nodes[:, j]], [lvl for _, lvl in walked])
        cut = sub.pruned(depth)
        cut._check_arrays()  # children after parents, in range
        assert cut.max_depth == min(depth, sub.max_depth)
        np.testing.assert_array_equal(cut.predict(X, leaves), sub.value[nodes[:, j]])
        np.testing.assert_array_equal(cut.n_node_samples[cut.apply(X, leaves)],
                                      sub.n_node_samples[nodes[:, j]])
    whole = sub.pruned(sub.max_depth)  # nothing to cut: the same arrays
    for name in ("root", "feature", "threshold", "left", "right", "value", "n_node_samples"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(sub, name))
    assert sub.pruned(0).n_nodes == 4  # one node per root


def _oob_oracle(forest, X, y, depth):
    """Out-of-bag score of ``forest`` with its subtrees as grown cut at
    ``depth`` (0: none), each row's prediction averaged one member at a time."""
    grown = DGTForestClassifier if is_classifier(forest) else DGTForestRegressor
    grown = grown(**{**forest.get_params(), "subtree_depth": None}).fit(X, y)
    grown.subtrees_ = None if depth == 0 else [s.pruned(depth) for s in grown.subtrees_]
    rng = np.random.RandomState(forest.random_state)
    rng.randint(_MAX_INT, size=forest.n_estimators)
    sample_seeds = rng.randint(_MAX_INT, size=forest.n_estimators)
    Xv = check_predict_data(grown, X)
    n = len(X)
    total, count = 0.0, np.zeros(n)
    for k, seed in enumerate(sample_seeds):
        oob = _bootstrap_counts(seed, np.arange(n), n, n) == 0
        total = total + np.where(oob[:, None], grown._member_output(k, Xv), 0.0)
        count += oob
    seen = count > 0
    pred = total[seen] / count[seen, None]
    if is_classifier(forest):
        return accuracy_score(np.searchsorted(forest.classes_, y[seen]), pred.argmax(axis=1))
    return r2_score(y[seen], pred if np.ndim(y) == 2 else pred[:, 0])


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_auto_picks_the_depth_a_brute_force_out_of_bag_score_picks(task):
    if task == "classification":
        X, y = make_classification(300, 6, n_informative=4, n_classes=3, flip_y=0.1,
                                   random_state=0)
        forest = DGTForestClassifier(**FAST).fit(X, y)
    else:
        X, y = make_regression(300, 6, noise=10.0, random_state=0)
        forest = DGTForestRegressor(**FAST).fit(X, y)
    scores = forest.subtree_scores_
    tried = list(scores)
    grown = type(forest)(**{**forest.get_params(), "subtree_depth": None}).fit(X, y)
    assert tried[0] == 0 and tried[-1] == grown.subtree_depth_ == max(
        s.max_depth for s in grown.subtrees_)
    assert set(tried[1:-1]) <= set(SUBTREE_DEPTHS) and tried == sorted(tried)
    for depth in tried:
        np.testing.assert_allclose(scores[depth], _oob_oracle(forest, X, y, depth),
                                   rtol=1e-9, atol=1e-12)
    best = max(scores.values())
    assert forest.subtree_depth_ == next(d for d in tried if scores[d] == best)
    # the fitted forest is the grown one cut there
    if forest.subtree_depth_ == 0:
        assert forest.subtrees_ is None
        grown.subtrees_ = None
    else:
        grown.subtrees_ = [s.pruned(forest.subtree_depth_) for s in grown.subtrees_]
    expect = grown
    np.testing.assert_allclose(forest.predict(X) if task == "regression"
                               else forest.predict_proba(X),
                               expect.predict(X) if task == "regression"
                               else expect.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_multi_output_regression_scores_r2_averaged_over_the_outputs(scale):
    """R^2 averaged over the outputs (``r2_score``'s), so an output in large
    units does not choose the cut for the others: every score is that of a
    brute-force out-of-bag oracle, with the second output in units 1 or
    10,000 times larger (the greedy subtrees' own criterion, as
    RandomForest's, still sums raw squared errors)."""
    X, y1 = make_regression(300, 6, noise=30.0, random_state=1)
    y2 = np.sin(X[:, 0] * 2) + 0.3 * np.random.RandomState(0).normal(size=300)
    Y = np.column_stack([y1, y2 * scale])
    forest = DGTForestRegressor(**FAST).fit(X, Y)
    for depth, score in forest.subtree_scores_.items():
        np.testing.assert_allclose(score, _oob_oracle(forest, X, Y, depth), rtol=1e-9)
    best = max(forest.subtree_scores_.values())
    assert forest.subtree_scores_[forest.subtree_depth_] == best


def test_a_constant_output_scores_one_whatever_the_rounding_of_its_mean():
    """A constant output explains nothing and predicts itself at every
    depth: r2_score's 0 / 0 (1), whether or not its weighted mean rounds
    (0.1 does: sum(0.1 w) / sum(w) != 0.1; 0.375 does not), so the scores
    are the same for every constant (before: 0.1's rounding was its
    variance, and rounding errors of its predictions its R^2)."""
    X, y1 = make_regression(300, 6, noise=30.0, random_state=1)
    scores = []
    for c in (0.1, 0.375):
        forest = DGTForestRegressor(**FAST).fit(X, np.column_stack([y1, np.full(300, c)]))
        scores.append(forest.subtree_scores_)
    assert scores[0] == pytest.approx(scores[1], rel=1e-12)


def test_auto_keeps_deep_subtrees_for_fine_axis_structure_and_cuts_them_on_noise():
    rs = np.random.RandomState(0)
    X = rs.uniform(size=(600, 3))
    fine = (np.floor(X[:, 0] * 16) % 2).astype(int)  # 16 stripes on one axis
    deep = DGTForestClassifier(**FAST).fit(X, fine)
    assert deep.subtree_depth_ >= 3
    assert deep.subtree_scores_[deep.subtree_depth_] > deep.subtree_scores_[0] + 0.1
    # Labels independent of X, one class in five: pure leaves memorize the
    # minority rows, which costs out-of-bag accuracy against the majority.
    noise = (rs.rand(600) < 0.2).astype(int)
    for seed in range(3):
        forest = DGTForestClassifier(**{**FAST, "random_state": seed}).fit(X, noise)
        scores = forest.subtree_scores_
        assert forest.subtree_depth_ <= 4, scores
        assert scores[forest.subtree_depth_] > scores[max(scores)] + 0.03, scores


def test_auto_without_out_of_bag_rows_keeps_the_subtrees_as_grown():
    X, y = make_classification(200, 5, random_state=0)
    auto = DGTForestClassifier(**FAST, bootstrap=False).fit(X, y)
    grown = DGTForestClassifier(**FAST, bootstrap=False, subtree_depth=None).fit(X, y)
    assert auto.subtree_depth_ == grown.subtree_depth_ > 0 and auto.subtree_scores_ is None
    np.testing.assert_array_equal(auto.predict_proba(X), grown.predict_proba(X))


def test_fixed_depths_are_reported_and_pickles_keep_the_choice():
    X, y = make_classification(200, 5, random_state=0)
    depths = {}
    for depth in (0, 2, None):
        forest = DGTForestClassifier(**FAST, subtree_depth=depth).fit(X, y)
        depths[depth] = forest.subtree_depth_
        assert forest.subtree_scores_ is None
        assert forest.subtree_depth_ == (max(s.max_depth for s in forest.subtrees_)
                                         if forest.subtrees_ else 0)
    assert depths[0] == 0 and depths[2] == 2 and depths[None] > 2
    auto = DGTForestClassifier(**FAST).fit(X, y)
    loaded = pickle.loads(pickle.dumps(auto))
    assert loaded.subtree_depth_ == auto.subtree_depth_
    np.testing.assert_array_equal(loaded.predict_proba(X), auto.predict_proba(X))
    # a forest fitted before "auto" existed reads its parameter as its depth
    grown = DGTForestClassifier(**FAST, subtree_depth=None).fit(X, y)
    state = grown.__getstate__()
    del state["subtree_depth_"], state["subtree_scores_"]
    old = DGTForestClassifier.__new__(DGTForestClassifier)
    old.__setstate__(state)
    assert old.subtree_depth_ == grown.subtree_depth_ and old.subtree_scores_ is None


def test_node_depth_refuses_arrays_that_are_not_trees_instead_of_hanging():
    sub, _ = _grown()
    inner = int(np.flatnonzero(sub.left >= 0)[0])
    shared = pickle.loads(pickle.dumps(sub))  # both children one node: it has two parents
    shared.right = shared.right.copy()
    shared.right[inner] = shared.left[inner]
    for call in (shared.node_depth, lambda: shared.max_depth, lambda: shared.pruned(2)):
        with pytest.raises(ValueError, match="Inconsistent fitted AxisSubtrees"):
            call()
    # A forest pickled before subtree_depth_ reads the depth of its subtrees
    # when it loads: a loop there walked forever.
    X, y = make_classification(100, 5, random_state=0)
    state = DGTForestClassifier(**{**FAST, "n_estimators": 2}, subtree_depth=None).fit(
        X, y).__getstate__()
    del state["subtree_depth_"], state["subtree_scores_"]
    looped = state["subtrees_"][0]
    root = int(looped.root[np.flatnonzero(looped.left[looped.root] >= 0)[0]])
    looped.left = looped.left.copy()
    looped.left[root] = root
    old = DGTForestClassifier.__new__(DGTForestClassifier)
    with pytest.raises(ValueError, match="Inconsistent fitted AxisSubtrees"):
        old.__setstate__(state)


def test_equal_weighted_errors_choose_the_shallowest_whatever_their_rounding():
    # Balanced class weights: at depths 3 and 4 the out-of-bag rows
    # misclassify rows of the same weights, summed in other orders; their
    # float sums differed in the last bit and the deeper cut won the tie.
    X, y = make_classification(150, 5, n_informative=3, n_classes=3, weights=[0.6, 0.3, 0.1],
                               flip_y=0.15, random_state=99)
    params = dict(n_estimators=5, max_depth=2, max_iter=3, random_state=99,
                  class_weight="balanced")
    forest = DGTForestClassifier(**params).fit(X, y)
    grown = DGTForestClassifier(**params, subtree_depth=None).fit(X, y)
    # "balanced": n / (n_classes * n_c), as exact fractions
    weight = [Fraction(len(y), 3 * int(np.sum(y == c))) for c in y]
    rng = np.random.RandomState(99)
    rng.randint(_MAX_INT, size=5)
    oob = [_bootstrap_counts(seed, np.arange(len(y)), len(y), len(y)) == 0
           for seed in rng.randint(_MAX_INT, size=5)]
    Xv = check_predict_data(grown, X)
    exact, subtrees = {}, grown.subtrees_
    for depth in forest.subtree_scores_:
        grown.subtrees_ = None if depth == 0 else [s.pruned(depth) for s in subtrees]
        total = sum(np.where(o[:, None], grown._member_output(k, Xv), 0.0)
                    for k, o in enumerate(oob))
        seen = np.any(oob, axis=0)
        wrong = total[seen].argmax(axis=1) != y[seen]
        exact[depth] = sum(w for w, bad in zip(np.asarray(weight)[seen], wrong) if bad)
    best = min(exact.values())
    assert list(exact.values()).count(best) > 1  # a tie, as the rows were drawn
    assert forest.subtree_depth_ == next(d for d in exact if exact[d] == best), exact


def test_auto_without_a_leaf_to_split_keeps_none_and_scores_none_as_documented():
    X = np.random.RandomState(0).normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)  # one split: the members' leaves are pure
    forest = DGTForestClassifier(**FAST).fit(X, y)
    assert forest.subtrees_ is None and forest.subtree_depth_ == 0
    assert forest.subtree_scores_ is None
    doc = DGTForestClassifier.__doc__
    scores = doc[doc.index("subtree_scores_ :"):doc.index("feature_importances_ :")]
    assert "no\n        leaf could be split" in scores and "class weights" in scores
