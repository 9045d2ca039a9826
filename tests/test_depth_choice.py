"""``max_depth="auto"`` of the DGT estimators (the classifier's default): the
depth a greedy tree cross-validates best at, chosen before training."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sklearn_difftrees import DGTClassifier, DGTForestClassifier, DGTRegressor
from sklearn_difftrees.dgt._classes import AUTO_MAX_DEPTH, AUTO_MIN_DEPTH

FAST = dict(max_iter=3, random_state=0)


def _data(n_classes=3, n=300, seed=0):
    return make_classification(n_samples=n, n_features=8, n_informative=6,
                               n_classes=n_classes, n_clusters_per_class=1,
                               random_state=seed)


def test_auto_depth_is_the_best_cv_depth_in_range():
    X, y = _data()
    est = DGTClassifier(**FAST).fit(X, y)  # the default is "auto"
    scores = est.depth_scores_
    assert scores.shape == (AUTO_MAX_DEPTH,)
    low = max(AUTO_MIN_DEPTH, int(np.ceil(np.log2(3))))
    allowed = scores[low - 1:]
    # The shallowest depth of the best mean CV score (the oracle: the scores).
    assert est.max_depth_ == low + int(np.argmax(allowed >= allowed.max() - 1e-12))
    assert est.tree_.max_depth == est.max_depth_


def test_auto_depth_never_goes_below_its_floor():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(int)  # one split: the greedy tree's best depth is 1
    est = DGTClassifier(**FAST).fit(X, y)
    assert est.depth_scores_[0] >= est.depth_scores_.max() - 0.02
    assert est.max_depth_ == AUTO_MIN_DEPTH


def test_many_classes_get_a_leaf_each(monkeypatch):
    monkeypatch.setattr("sklearn_difftrees.dgt._classes.AUTO_MIN_DEPTH", 2)
    X, y = _data(n_classes=12, n=1200)
    est = DGTClassifier(**FAST).fit(X, y)
    assert est.max_depth_ >= 4  # 2**4 = 16 >= 12 leaves


def test_auto_trains_the_tree_of_its_chosen_depth():
    """The choice draws nothing from ``random_state``: fitting the chosen depth
    directly gives the same tree, bit for bit."""
    X, y = _data(seed=1)
    auto = DGTClassifier(**FAST).fit(X, y)
    fixed = DGTClassifier(max_depth=auto.max_depth_, **FAST).fit(X, y)
    np.testing.assert_array_equal(auto.tree_.weights, fixed.tree_.weights)
    np.testing.assert_array_equal(auto.tree_.value, fixed.tree_.value)
    assert fixed.depth_scores_ is None and fixed.max_depth_ == auto.max_depth_


@pytest.mark.parametrize("init", ["random", "cart"])
def test_auto_depth_regressor_and_cart_start(init):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(400, 5))
    y = np.where(X[:, 0] > 0, 2.0, -1.0) + 0.1 * rng.normal(size=400)  # one split
    est = DGTRegressor(max_depth="auto", init=init, max_iter=40, random_state=0).fit(X, y)
    assert AUTO_MIN_DEPTH <= est.max_depth_ <= AUTO_MAX_DEPTH
    assert est.tree_.max_depth == est.max_depth_
    assert est.score(X, y) > 0.8


def test_forest_auto_depth_is_chosen_once_and_shared():
    # The forest chooses once, on its own rows, as a single tree would
    # (auto_depth is the single tree's choice); every member gets that depth,
    # and the choice draws after the members' seeds, so fitting the chosen int
    # depth gives the same forest.
    from sklearn_difftrees.dgt._classes import auto_depth

    X, y = _data(n=400)
    forest = DGTForestClassifier(n_estimators=3, max_iter=3, random_state=0).fit(X, y)
    assert AUTO_MIN_DEPTH <= forest.max_depth_ <= AUTO_MAX_DEPTH
    seed = np.random.RandomState(0).randint(np.iinfo(np.int32).max, size=7)[-1]
    depth, scores = auto_depth(X, y, np.ones(len(y)), 3, int(seed))
    assert forest.max_depth_ == depth
    np.testing.assert_allclose(forest.depth_scores_, scores)
    assert {m.max_depth_ for m in forest.estimators_} == {depth}
    fixed = DGTForestClassifier(n_estimators=3, max_iter=3, random_state=0,
                                max_depth=depth).fit(X, y)
    assert fixed.max_depth_ == depth and fixed.depth_scores_ is None
    np.testing.assert_array_equal(fixed.predict_proba(X), forest.predict_proba(X))


def test_forest_regressor_accepts_auto_depth():
    # The regressor's default stays 8; "auto" resolves once, by the regression
    # rule (CART's CV on the forest's rows), for every member.
    from sklearn.datasets import make_regression

    from sklearn_difftrees import DGTForestRegressor

    X, y = make_regression(300, 5, random_state=0)
    forest = DGTForestRegressor(max_depth="auto", n_estimators=2, max_iter=2,
                                random_state=0).fit(X, y)
    assert AUTO_MIN_DEPTH <= forest.max_depth_ <= AUTO_MAX_DEPTH
    assert forest.depth_scores_.shape == (AUTO_MAX_DEPTH,)
    assert {m.max_depth_ for m in forest.estimators_} == {forest.max_depth_}
    assert DGTForestRegressor(n_estimators=1, max_iter=1, random_state=0).fit(
        X, y).max_depth_ == 8


def test_warm_start_keeps_the_chosen_depth():
    X, y = _data()
    est = DGTClassifier(warm_start=True, **FAST).fit(X, y)
    depth = est.max_depth_
    est.fit(X[:150], y[:150])  # another sample would choose anew; warm keeps the model
    assert est.max_depth_ == depth and est.tree_.max_depth == depth


# -- the greedy floor (DGT's, shared reference with NonGreedy / ConvexPolytopeTree) --------

def _route_everything_left(monkeypatch):
    """Make the trained splits useless: every row reaches the leftmost leaf."""
    from sklearn_difftrees.dgt._classes import _BaseDGT

    def splits(self, module):
        W, b = module.collapse()
        return np.zeros_like(W), np.full_like(b, -1.0)

    monkeypatch.setattr(_BaseDGT, "_module_to_splits", splits)


@pytest.mark.parametrize("greedy_floor", [True, False])
def test_greedy_floor_replaces_a_collapsed_classifier(monkeypatch, greedy_floor):
    from sklearn.tree import DecisionTreeClassifier

    _route_everything_left(monkeypatch)
    X, y = _data(seed=2)
    est = DGTClassifier(max_depth=3, greedy_floor=greedy_floor, **FAST).fit(X, y)
    stump = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y).score(X, y)
    assert est.greedy_fallback_ is greedy_floor
    if greedy_floor:
        assert est.score(X, y) >= stump - 1e-12
        assert est.get_depth() <= 3 and est.tree_.max_depth == 3
        assert np.unique(est.predict(X)).size > 1
    else:
        assert np.unique(est.predict(X)).size == 1  # the collapsed tree, kept


def test_greedy_floor_replaces_a_collapsed_regressor(monkeypatch):
    from sklearn.tree import DecisionTreeRegressor

    _route_everything_left(monkeypatch)
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 4))
    Y = np.c_[np.where(X[:, 0] > 0, 3.0, -1.0), X[:, 1]] + 0.1 * rng.normal(size=(300, 2))
    est = DGTRegressor(max_depth=3, **FAST).fit(X, Y)
    stump = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, Y).score(X, Y)
    assert est.greedy_fallback_
    assert est.score(X, Y) >= stump - 1e-9
    assert est.predict(X).shape == Y.shape


def test_greedy_floor_leaves_a_good_fit_alone():
    X, y = _data(seed=3)
    on = DGTClassifier(max_depth=3, max_iter=30, random_state=0).fit(X, y)
    off = DGTClassifier(max_depth=3, max_iter=30, random_state=0, greedy_floor=False).fit(X, y)
    assert not on.greedy_fallback_
    np.testing.assert_array_equal(on.tree_.weights, off.tree_.weights)
    np.testing.assert_array_equal(on.tree_.value, off.tree_.value)


def test_warm_start_refuses_another_depth():
    X, y = _data()
    est = DGTClassifier(max_depth=3, warm_start=True, **FAST).fit(X, y)
    est.set_params(max_depth=4)
    with pytest.raises(ValueError, match="warm_start=True continues"):
        est.fit(X, y)


@pytest.mark.usefixtures("no_cross_check")  # the fit's own rows, not its clones'
def test_depth_choice_subsamples_large_data(monkeypatch, rows_seen):
    """Beyond AUTO_CV_MAX_ROWS fit rows, the CV sees a seeded subsample of that size."""
    import sklearn_difftrees._core.greedy as greedy

    seen = rows_seen(greedy, "cv_depth")
    monkeypatch.setattr("sklearn_difftrees.dgt._classes.AUTO_CV_MAX_ROWS", 100)
    X, y = _data(n=400)
    DGTClassifier(**FAST).fit(X, y)
    assert seen == [100]
