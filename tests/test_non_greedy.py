"""NonGreedyObliqueTree: CART start, the surrogate bound, projection, training, accuracy."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_difftrees import (
    NonGreedyObliqueTree,
    NonGreedyObliqueTreeClassifier,
    NonGreedyObliqueTreeRegressor,
    ObliqueTree,
)
from sklearn_difftrees.non_greedy._lai import leaf_losses, loss_augmented_inference
from sklearn_difftrees._core.embedding import cart_to_complete
from sklearn_difftrees.non_greedy._train import leaf_targets, project_rows
from _floors import SEEDS, split

FAST = dict(max_depth=3, max_iter=5, random_state=0)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def clf_data():
    return make_classification(400, 6, n_informative=4, n_classes=3, random_state=0)


@pytest.fixture(scope="module")
def reg_data():
    return make_regression(300, 5, noise=1.0, random_state=0)


def test_alias_is_the_classifier():
    assert NonGreedyObliqueTree is NonGreedyObliqueTreeClassifier


# ------------------------------------------------------------ CART start
@pytest.mark.parametrize("task", ["clf", "reg"])
@pytest.mark.parametrize("depth", [3, 6])
def test_cart_conversion_routes_like_cart(task, depth):
    """The complete heap-order tree reproduces CART's predictions exactly,
    including CART leaves above ``depth`` (zero rows: everything goes left)
    and samples lying exactly on a threshold (CART and we both send ties left)."""
    rng = np.random.RandomState(depth)
    X = rng.randint(0, 4, size=(300, 3)).astype(float)  # many ties, pure regions
    if task == "clf":
        y = (X[:, 0] > 1).astype(int) + (X[:, 1] > 2)
        cart = DecisionTreeClassifier(criterion="entropy", max_depth=depth).fit(X, y)
        loss, k = "log", 3
    else:
        y = X[:, 0] * 2.0 + (X[:, 1] > 2)
        cart = DecisionTreeRegressor(max_depth=depth).fit(X, y)
        loss, k = "squared", 1
    W, b, leaf_node = cart_to_complete(cart, depth, X.shape[1], norm=4.0)
    assert np.all(np.linalg.norm(np.c_[W, b], axis=1)[np.abs(W).sum(1) > 0] <= 4.0 + 1e-12)
    tree = ObliqueTree(W, b, np.zeros((2**depth, 1)))
    leaves = tree.apply(X) - tree.n_internal
    # Every sample reaches a complete-tree leaf mapped to its CART leaf.
    np.testing.assert_array_equal(leaf_node[leaves], cart.apply(X))
    if cart.get_depth() < depth:
        assert (np.abs(W).sum(axis=1) == 0).any()  # shallow CART leaves present
    # Ties (x == threshold) exist and go left in both.
    internal = cart.tree_.children_left != -1
    thr = cart.tree_.threshold[internal]
    Xt = X.copy()
    Xt[:, cart.tree_.feature[internal][0]] = thr[0]
    np.testing.assert_array_equal(leaf_node[tree.apply(Xt) - tree.n_internal], cart.apply(Xt))
    # Closed-form leaves reproduce CART's leaf values (regression: means).
    if task == "reg":
        theta, _ = leaf_targets(cart.apply(X), y[:, None], np.ones(len(y)),
                                cart.tree_.node_count, loss, k)
        np.testing.assert_allclose(theta[leaf_node[leaves], 0], cart.predict(X))


def test_without_co2_or_sgd_the_fitted_tree_is_cart(clf_data):
    X, y = clf_data
    est = NonGreedyObliqueTreeClassifier(max_depth=4, co2_iter=0, max_iter=0,
                                         early_stopping=False, random_state=0).fit(X, y)
    seed = np.random.RandomState(0).randint(np.iinfo(np.int32).max)  # as fit draws it
    cart = DecisionTreeClassifier(criterion="entropy", max_depth=4, random_state=seed)
    # Same data and (standardized) features: CART's partition is the same.
    Z = (X - est._feature_mean) / est._feature_scale
    cart.fit(Z, y)
    leaves = est.apply(X)
    codes = cart.apply(Z)
    # One CART leaf <-> one oblique leaf.
    pairs = set(zip(leaves, codes))
    assert len(pairs) == len(set(codes)) == len(set(leaves))
    # Leaves hold CART's class proportions smoothed by one pseudo-sample.
    n_leaf = cart.tree_.weighted_n_node_samples[codes]
    prior = (np.bincount(y) + 1.0) / (len(y) + 3)
    expected = (cart.predict_proba(Z) * n_leaf[:, None] + prior) / (n_leaf[:, None] + 1)
    np.testing.assert_allclose(est.predict_proba(X), expected, rtol=1e-10)
    assert est.n_iter_ == 0 and est.loss_curve_ == []


# ------------------------------------------------------------- the bound
def _raw_theta(est, tree):
    return np.log(tree.value) if est._loss == "log" else tree.value


@pytest.mark.parametrize("cls", [NonGreedyObliqueTreeClassifier, NonGreedyObliqueTreeRegressor])
@pytest.mark.parametrize("inference", ["fast", "exact"])
def test_surrogate_upper_bounds_the_loss_before_and_after_training(cls, inference,
                                                                    clf_data, reg_data):
    X, y = clf_data if cls is NonGreedyObliqueTreeClassifier else reg_data
    est = cls(max_depth=4, max_iter=10, inference=inference, early_stopping=False,
              random_state=0).fit(X, y)
    target = np.searchsorted(est.classes_, y) if est._loss == "log" else y[:, None]
    for tree in (est.init_tree_, est.tree_):
        theta = _raw_theta(est, tree)
        res = loss_augmented_inference(X, tree.weights, tree.bias, theta, target,
                                       loss=est._loss, inference=inference)
        np.testing.assert_array_equal(res.h_leaf + tree.n_internal, tree.apply(X))
        emp = leaf_losses(theta, res.h_leaf, target, est._loss)
        assert np.all(res.bound >= emp - 1e-9)
    # Training lowered the bound.
    assert est.loss_curve_[-1] < est.loss_curve_[0]


# ------------------------------------------------------------ projection
def test_projection_caps_every_row_norm():
    rng = np.random.RandomState(0)
    W, b = 5 * rng.normal(size=(20, 4)), 5 * rng.normal(size=20)
    W[0], b[0] = 0.01, 0.01  # already feasible: untouched
    W0, b0 = W.copy(), b.copy()
    project_rows(W, b, 2.0)
    norms = np.sqrt((W**2).sum(1) + b**2)
    assert np.all(norms <= 2.0 + 1e-12)
    np.testing.assert_array_equal(W[0], W0[0])
    big = np.sqrt((W0**2).sum(1) + b0**2) > 2.0
    np.testing.assert_allclose(norms[big], 2.0)
    # Projection keeps the direction (hence the routing).
    old = np.sqrt((W0[big] ** 2).sum(1) + b0[big] ** 2)
    np.testing.assert_allclose(W[big] / norms[big, None] * old[:, None], W0[big])


@pytest.mark.parametrize("nu", [0.5, 10.0])
def test_fitted_splits_respect_nu(nu, clf_data):
    X, y = clf_data
    est = NonGreedyObliqueTreeClassifier(max_depth=4, nu=nu, max_iter=5, random_state=0,
                                         learning_rate=0.5).fit(X, y)
    # Back to the standardized space the constraint lives in.
    W_std = est.tree_.weights * est._feature_scale
    b_std = est.tree_.bias + est.tree_.weights @ est._feature_mean
    norms = np.sqrt((W_std**2).sum(1) + b_std**2)
    assert np.all(norms <= nu * (1 + 1e-9))


def test_smaller_nu_gives_fewer_active_leaves(bundled):
    """Figure 3 of the paper: ``nu`` prunes the tree (pima, depth 6)."""
    X, y = bundled("pima")
    active = {}
    for nu in (0.1, 43.0):
        # greedy_floor=False: the pruned tree itself, not the CART that
        # replaces it when it fits the rows worse than two greedy levels.
        est = NonGreedyObliqueTreeClassifier(max_depth=6, nu=nu, max_iter=10, co2_iter=0,
                                             early_stopping=False, greedy_floor=False,
                                             random_state=0).fit(X, y)
        active[nu] = est.n_active_leaves_
        # inactive leaves are marked in the fitted tree
        leaves = np.unique(est.apply(X))
        assert est.n_active_leaves_ == leaves.size == est.tree_.n_leaves
        assert np.all(est.tree_.active[leaves]) and est.tree_.active.sum() == est.tree_.node_count
    assert active[0.1] < active[43.0] / 2


# --------------------------------------------------------------- training
def test_training_record_and_early_stopping(clf_data):
    X, y = clf_data
    est = NonGreedyObliqueTreeClassifier(**FAST).fit(X, y)
    assert len(est.loss_curve_) == est.n_iter_ == len(est.validation_scores_)
    assert est.best_validation_score_ >= 0
    est = NonGreedyObliqueTreeClassifier(**dict(FAST, early_stopping=False)).fit(X, y)
    assert est.validation_scores_ is None and est.best_validation_score_ is None
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        NonGreedyObliqueTreeClassifier(**FAST).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        NonGreedyObliqueTreeClassifier(**dict(FAST, max_iter=200, n_iter_no_change=2)).fit(X, y)


def test_default_fit_on_pima_emits_no_convergence_warning(bundled):
    """A new user's default fit on the bundled pima table warned: the
    validation log loss was still falling by more than ``tol`` when SGD ran
    out of the old ``max_iter=50`` (6 of 100 70/30 splits of pima, 21 of
    ecoli's, and a default fit at 100,000 rows), the leaf parameters
    converging slowly (with ``refit_leaves=True`` no run on ecoli passed 49
    epochs). The default budget is now 200 epochs, as DGT's and
    LatentTree's; these splits stop early at 79 to 98 epochs from the
    axis-aligned start of the time (``co2_oblique=False``), and before
    ``max_iter`` from the default start."""
    X, y = bundled("pima")
    for seed in (27, 51, 97):  # splits on which max_iter=50 ran out
        Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            axis = NonGreedyObliqueTreeClassifier(random_state=seed, co2_oblique=False)
            est = NonGreedyObliqueTreeClassifier(random_state=seed).fit(Xtr, ytr)
            axis.fit(Xtr, ytr)
        assert 50 < axis.n_iter_ < axis.max_iter == 200
        assert est.n_iter_ < est.max_iter


@pytest.mark.parametrize("params", [dict(stable=True), dict(inference="exact"),
                                    dict(co2_iter=0), dict(stable=True, inference="exact"),
                                    dict(refit_leaves=True)])
def test_variants_train(params, clf_data):
    X, y = clf_data
    est = NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=8, early_stopping=False,
                                         random_state=0, **params).fit(X, y)
    assert est.score(X, y) > 0.6
    assert np.all(np.isfinite(est.loss_curve_))


def test_refit_leaves_are_closed_form(reg_data):
    X, y = reg_data
    kw = dict(max_depth=3, max_iter=5, early_stopping=False, random_state=0)
    reg = NonGreedyObliqueTreeRegressor(refit_leaves=True, **kw).fit(X, y)
    leaves = reg.apply(X)
    for leaf in np.unique(leaves):
        np.testing.assert_allclose(reg.tree_.value[leaf - reg.tree_.n_internal, 0],
                                   y[leaves == leaf].mean(), rtol=1e-7)
    # Without it the leaves are the SGD-trained ones, not the means.
    plain = NonGreedyObliqueTreeRegressor(**kw).fit(X, y)
    np.testing.assert_array_equal(plain.tree_.weights, reg.tree_.weights)
    assert not np.allclose(plain.tree_.value, reg.tree_.value)


def test_stable_sgd_refreshes_assignments_when_the_bound_stalls(clf_data, capsys):
    X, y = clf_data
    NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=15, stable=True, tol=1e-2,
                                   early_stopping=False, n_iter_no_change=100,
                                   random_state=0, verbose=2).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if "] epoch " in line]
    assert len(lines) == 15
    refreshed = [i for i, line in enumerate(lines) if "assignments refreshed" in line]
    assert 0 < len(refreshed) < 15


def test_same_random_state_same_tree_and_global_rng_untouched(clf_data):
    X, y = clf_data
    np.random.seed(123)
    state = np.random.get_state()[1].copy()
    a = NonGreedyObliqueTreeClassifier(**FAST).fit(X, y)
    b = NonGreedyObliqueTreeClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(a.tree_.weights, b.tree_.weights)
    np.testing.assert_array_equal(a.tree_.value, b.tree_.value)
    np.testing.assert_array_equal(np.random.get_state()[1], state)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow on the way to inf
def test_divergence_raises(clf_data):
    X, y = clf_data
    with pytest.raises(FloatingPointError, match="diverged"):
        NonGreedyObliqueTreeRegressor(max_depth=2, learning_rate=1e300, nu=1e300, max_iter=3,
                                      random_state=0).fit(X, y)


def test_greedy_start_is_not_a_divergence_reference():
    """The start is a fitted CART whose validation loss can be near zero: a
    default regressor on 500 rows of 197_cpu_act saw its first epochs' loss at
    70 to 150 times the start's (still below the mean's) and raised (a new
    user's trial, 3 of 5 seeds); the reference is now the all-zero leaves'
    loss, so early stopping returns the best epoch (here the start)."""
    from sklearn.model_selection import train_test_split

    from sklearn_difftrees.datasets import load_dataset

    X, y = load_dataset("197_cpu_act", return_X_y=True)
    for seed in (0, 1):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=500, random_state=seed)
        fitted = NonGreedyObliqueTreeRegressor(random_state=seed).fit(X_tr, y_tr)
        start = NonGreedyObliqueTreeRegressor(random_state=seed, max_iter=0).fit(X_tr, y_tr)
        assert fitted.best_validation_score_ >= start.best_validation_score_
        assert fitted.score(X_te, y_te) > 0.9


def test_inputs_not_mutated_and_float32(clf_data):
    X, y = clf_data
    X32 = X.astype(np.float32)
    X0, y0 = X32.copy(), y.copy()
    w = np.ones(len(y))
    est = NonGreedyObliqueTreeClassifier(**FAST).fit(X32, y, sample_weight=w)
    np.testing.assert_array_equal(X32, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(w, 1.0)
    assert est.predict(X32).shape == (len(y),)


def test_bad_input():
    X = np.random.RandomState(0).normal(size=(30, 3))
    y = np.arange(30) % 2
    est = NonGreedyObliqueTreeClassifier(**FAST)
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.fit(np.where(X > 1, np.nan, X), y)
    with pytest.raises(ValueError, match="only one class"):
        est.fit(X, np.zeros(30))
    with pytest.raises(ValueError):
        est.fit(X[:1], y[:1])
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="nu"):
        NonGreedyObliqueTreeClassifier(nu=0.0).fit(X, y)
    with pytest.raises(ValueError, match="inference"):
        NonGreedyObliqueTreeClassifier(inference="slow").fit(X, y)
    with pytest.raises(ValueError, match="non-negative"):
        est.fit(X, y, sample_weight=-np.ones(30))


def test_multi_output_regression_and_class_weight(reg_data, clf_data):
    X, y = reg_data
    Y = np.c_[y, -2 * y + 5]
    reg = NonGreedyObliqueTreeRegressor(**FAST).fit(X, Y)
    assert reg.predict(X).shape == (len(y), 2) and reg.score(X, Y) > 0.5
    X, y = clf_data
    keep = (y != 2) | (np.arange(len(y)) % 8 == 0)  # class 2 is rare
    clf = NonGreedyObliqueTreeClassifier(**dict(FAST, class_weight="balanced"))
    clf.fit(X[keep], y[keep])
    assert (clf.predict(X[keep]) == 2).sum() >= (y[keep] == 2).sum() // 2


def test_fit_and_predict_without_torch(tmp_path):
    """Training uses numpy and the compiled kernels only."""
    from test_pickle import _run_child

    _run_child(
        """
        import numpy as np
        import warnings
        warnings.simplefilter("ignore")
        from sklearn_difftrees import NonGreedyObliqueTreeClassifier, NonGreedyObliqueTreeRegressor
        X = np.random.RandomState(0).normal(size=(200, 4))
        y = (X[:, 0] + X[:, 1] > 0).astype(int)
        clf = NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=3).fit(X, y)
        assert clf.score(X, y) > 0.8
        NonGreedyObliqueTreeRegressor(max_depth=3, max_iter=3, stable=True).fit(X, X[:, 0])
        assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules)
        print("OK")
        """,
        tmp_path,
    )


# --------------------------------------------------------------- accuracy
# NonGreedy (defaults) minus tuned CART (entropy) accuracy per split, seeds
# 0-5, AMD EPYC, 2026-11-23, main 93846c9: segmentation mean +0.002, sd
# 0.015; satimage (3000 rows) mean +0.019, sd 0.011. The floor is 3 standard
# errors of the 3-seed mean below the measured mean, and at most -0.02.
MEASURED = {"segmentation": (0.002, 0.015), "satimage": (0.019, 0.011)}


@pytest.mark.parametrize("name", ["segmentation", "satimage"])
def test_accuracy_floor_vs_depth_tuned_cart(name, bundled):
    """Default estimator >= depth-tuned CART - margin (means over 3 splits)."""
    X, y = bundled(name, n_max=3000)
    est, cart, majority = [], [], []
    for seed in SEEDS:
        Xtr, Xte, ytr, yte = split(X, y, seed)
        grid = GridSearchCV(DecisionTreeClassifier(criterion="entropy", random_state=seed),
                            {"max_depth": list(range(2, 13))}, cv=3).fit(Xtr, ytr)
        est.append(NonGreedyObliqueTreeClassifier(random_state=seed).fit(Xtr, ytr).score(Xte, yte))
        cart.append(grid.score(Xte, yte))
        majority.append(max(np.mean(yte == c) for c in np.unique(y)))
    mean, sd = MEASURED[name]
    floor = min(-0.02, mean - 3 * sd / np.sqrt(len(SEEDS)))
    assert np.mean(est) - np.mean(cart) >= floor, (est, cart)
    assert np.mean(est) >= np.mean(majority) + 0.3


# ---------------------------------------------------------- greedy floor
def _depth2_train_accuracy(X, y, criterion="gini", depth=2):
    cart = DecisionTreeClassifier(criterion=criterion, max_depth=depth, random_state=0)
    return cart.fit(X, y).score(X, y)


@pytest.mark.parametrize("name", ["pima", "crx", "ecoli"])
def test_defaults_fit_the_training_rows_at_least_as_well_as_two_greedy_levels(name, bundled):
    """bench_defaults' COLLAPSE test, on the splits where it fired before the floor.

    Before ``greedy_floor`` the default tree fit the training rows worse than
    a depth-2 CART on pima seeds 1 and 2 (77.09 vs 77.28%, 76.35 vs 77.47%),
    crx seed 1 (85.09 vs 85.51%) and ecoli seed 0 (83.33 vs 83.77%).
    """
    X, y = bundled(name)
    for seed in SEEDS:
        Xtr, _, ytr, _ = split(X, y, seed)
        est = NonGreedyObliqueTreeClassifier(random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(Xtr, ytr)
        assert est.score(Xtr, ytr) >= _depth2_train_accuracy(Xtr, ytr), (name, seed)


def test_greedy_floor_replaces_a_tree_that_fits_worse_than_two_greedy_levels(bundled,
                                                                              no_cross_check):
    """A heavily pruned tree (``nu=0.1``) falls back to CART; without the floor it is kept.
    (Without the cross-check, which would return the depth-tuned CART here.)"""
    X, y = bundled("pima")
    params = dict(max_depth=4, nu=0.1, max_iter=5, co2_iter=0, early_stopping=False,
                  random_state=0)
    floor = max(_depth2_train_accuracy(X, y, c) for c in ("gini", "entropy"))
    kept = NonGreedyObliqueTreeClassifier(greedy_floor=False, **params).fit(X, y)
    assert not kept.greedy_fallback_ and kept.score(X, y) < floor
    est = NonGreedyObliqueTreeClassifier(**params).fit(X, y)
    assert est.greedy_fallback_ and est.score(X, y) >= floor
    # The fallback is a CART of the fitted depth, embedded in the complete tree:
    # the same partition of the rows as CART's (information gain or Gini).
    assert est.max_depth_ == 4 and est.tree_.max_depth == 4
    leaves = est.apply(X)
    same = []
    for criterion in ("entropy", "gini"):
        codes = DecisionTreeClassifier(criterion=criterion, max_depth=4,
                                       random_state=0).fit(X, y).apply(X)
        n_pairs = len(set(zip(leaves, codes)))
        same.append(n_pairs == np.unique(codes).size == np.unique(leaves).size)
    assert any(same)
    # The regressor has the same floor (squared error).
    Xr, yr = make_regression(300, 5, noise=1.0, random_state=0)
    reg = NonGreedyObliqueTreeRegressor(**params).fit(Xr, yr)
    stump = DecisionTreeRegressor(max_depth=2, random_state=0).fit(Xr, yr)
    assert reg.greedy_fallback_ and reg.score(Xr, yr) >= stump.score(Xr, yr) - 1e-12


def test_greedy_floor_uses_exact_thresholds_below_the_binning_threshold():
    """Below ``BINNED_MIN_ROWS`` rows the floor's reference is the exact CART,
    as scikit-learn grows it: a tree whose start and splits sit on the 256
    quantile bins' edges (continuous feature, the class boundary between two
    edges) fits a few rows worse than the exact depth-1 / depth-2 CART, and
    falls back to it (a binned reference let it through)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(3000, 3))
    y = (X[:, 0] > 0.50037).astype(int)
    y[rng.uniform(size=3000) < 0.02] ^= 1
    for depth in (1, 2):
        est = NonGreedyObliqueTreeClassifier(max_depth=depth, random_state=0).fit(X, y)
        floor = max(_depth2_train_accuracy(X, y, c, depth=depth) for c in ("gini", "entropy"))
        assert est.greedy_fallback_ and est.score(X, y) >= floor


# ------------------------------------------------------- max_depth="auto"
@pytest.mark.parametrize("task", ["clf", "reg"])
def test_cv_depth_scores_are_the_deep_cart_cut_at_each_depth(task):
    """Oracle: per fold, scikit-learn's deep CART grown on the same binned
    codes (``FeatureBins``), walked node by node down to depth d."""
    from sklearn.model_selection import KFold, StratifiedKFold

    from sklearn_difftrees._core.greedy import FeatureBins, cv_depth

    rng = np.random.RandomState(0)
    X = rng.normal(size=(240, 4))
    w = rng.uniform(0.5, 2.0, size=240)
    if task == "clf":
        y = (X[:, 0] + 0.5 * rng.normal(size=240) > 0).astype(int) + (X[:, 1] > 0.8)
        est, folds, kw = DecisionTreeClassifier, StratifiedKFold, dict(criterion="entropy")
    else:
        y = X[:, 0] ** 2 + 0.3 * rng.normal(size=240)
        est, folds, kw = DecisionTreeRegressor, KFold, {}
    depth, scores = cv_depth(X, y, w, max_depth=6, classification=task == "clf", n_folds=3,
                             seed=7)
    expected = np.zeros(6)
    codes = FeatureBins(X).transform(X)
    for a, b in folds(3, shuffle=True, random_state=7).split(X, y if task == "clf" else None):
        t = est(max_depth=6, random_state=7, **kw).fit(codes[a], y[a], sample_weight=w[a]).tree_
        for d in range(1, 7):
            pred = []
            for x in codes[b]:
                node = 0
                for _ in range(d):
                    if t.children_left[node] == -1:
                        break
                    go_left = x[t.feature[node]] <= t.threshold[node]
                    node = t.children_left[node] if go_left else t.children_right[node]
                pred.append(t.value[node, 0].argmax() if task == "clf" else t.value[node, 0, 0])
            pred = np.array(pred)
            if task == "clf":
                expected[d - 1] += ((pred == y[b]) * w[b]).sum() / w[b].sum()
            else:
                expected[d - 1] -= ((pred - y[b]) ** 2 * w[b]).sum() / w[b].sum()
    # Exact down to depth 2; deeper, nodes of a few rows have equally good
    # splits that the two trees may break differently (scikit-learn draws a
    # random feature order), which moves a held-out row or two (on the rows
    # grown on they agree exactly: tests/test_binned_greedy.py).
    np.testing.assert_allclose(scores[:2], expected[:2] / 3, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scores, expected / 3, atol=0.02)
    assert depth == int(np.argmax(scores)) + 1
    deep, _ = cv_depth(X, y, w, max_depth=8, classification=task == "clf", n_folds=3, seed=7)
    assert 2 <= deep <= 7  # neither a stump nor the deepest tree on this signal
    floor = min(depth, 4)  # min_depth above the choice: the best of the deeper ones
    low, _ = cv_depth(X, y, w, max_depth=6, classification=task == "clf", n_folds=3, seed=7,
                      min_depth=floor + 1)
    assert low == int(np.argmax(scores[floor:])) + floor + 1


def test_auto_depth_attributes_and_fixed_depth_kept(clf_data):
    X, y = clf_data
    est = NonGreedyObliqueTreeClassifier(max_iter=3, random_state=0).fit(X, y)
    assert 2 <= est.max_depth_ <= 12 and est.depth_scores_.shape == (12,)
    assert est.tree_.max_depth == est.max_depth_
    assert est.max_depth_ == int(np.argmax(est.depth_scores_[1:])) + 2
    fixed = NonGreedyObliqueTreeClassifier(max_depth=4, max_iter=3, random_state=0).fit(X, y)
    assert fixed.max_depth_ == 4 and fixed.depth_scores_ is None


@pytest.mark.parametrize("name", ["pima", "crx"])
def test_default_depth_on_small_noisy_sets(name):
    """Small noisy binary sets: the default (depth chosen by CV) matches depth-tuned
    CART within 2 points on the mean of 3 splits, with few leaves. The former fixed
    depth 8 trailed by 3.9 (pima) and 3.5 (crx) points with 40-50 leaves; the
    per-split spread of the difference is about 2 points."""
    from sklearn_difftrees.datasets import load_dataset

    X, y = load_dataset(name, return_X_y=True)
    diffs, leaves = [], []
    for seed in range(3):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed,
                                              stratify=y)
        cart = GridSearchCV(DecisionTreeClassifier(random_state=0),
                            {"max_depth": list(range(2, 13))}, cv=3).fit(Xtr, ytr)
        est = NonGreedyObliqueTreeClassifier(random_state=seed).fit(Xtr, ytr)
        diffs.append(est.score(Xte, yte) - cart.score(Xte, yte))
        leaves.append(est.n_active_leaves_)
    assert np.mean(diffs) >= -0.02, diffs
    assert np.mean(leaves) <= 20, leaves


def _twonorm(n, seed):
    """Two 20-D Gaussians of means -/+ 2/sqrt(20): one hyperplane separates
    them (Bayes error about 2.3%), where a CART needs depth 10-12."""
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, n)
    a = 2 / np.sqrt(20)
    return rng.randn(n, 20) + np.where(y[:, None] == 1, a, -a), y


def test_auto_depth_keeps_a_clearly_better_shallow_tree(monkeypatch):
    """max_depth="auto" also trains depths 1, 2, 4 and keeps one that is
    clearly better on the validation rows. Measured (8,000 rows, seeds 0-2):
    depths 1, 2, 1 and test accuracy 97.17 / 97.00 / 97.88% against the
    cross-validated depths 12, 12, 10 at 94.21 / 94.00 / 94.96% (+2.9 to
    +3.0 points per seed)."""
    import sklearn_difftrees.non_greedy._classes as ng

    def fit_all(shallow):
        monkeypatch.setattr(ng, "SHALLOW_DEPTHS", shallow)
        out = []
        for seed in range(3):
            X, y = _twonorm(8000, seed)
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed,
                                                      stratify=y)
            # Axis-aligned starts: from the discriminant start the depth-12
            # tree's root already holds the separating hyperplane.
            est = NonGreedyObliqueTreeClassifier(random_state=seed, co2_oblique=False)
            est.fit(X_tr, y_tr)
            out.append((est.max_depth_, est.score(X_te, y_te)))
        return np.array(out)

    default, cv_only = fit_all((1, 2, 4)), fit_all(())
    assert np.all(default[:, 0] <= 4) and np.all(cv_only[:, 0] >= 8)
    assert default[:, 1].mean() > cv_only[:, 1].mean() + 0.015


def test_auto_depth_shallow_candidates_on_a_subsample_are_retrained(monkeypatch):
    """Beyond GREEDY_MAX_ROWS training rows (shrunk here) the shallower
    candidates train on a seeded subsample of that many, and the one kept is
    trained again on every training row (the threshold is lowered here so
    that a candidate is kept whatever its statistic)."""
    import sklearn_difftrees.non_greedy._classes as ng

    monkeypatch.setattr(ng, "GREEDY_MAX_ROWS", 1000)
    monkeypatch.setattr(ng, "SHALLOW_Z", -np.inf)
    rows, train_at = [], ng._BaseNonGreedy._train_at

    def spy(self, depth, Z, *args):
        rows.append((depth, Z.shape[0]))
        return train_at(self, depth, Z, *args)

    monkeypatch.setattr(ng._BaseNonGreedy, "_train_at", spy)
    X, y = _twonorm(8000, 0)
    est = NonGreedyObliqueTreeClassifier(random_state=0).fit(X, y)
    n_train = rows[0][1]
    assert n_train > 1000
    assert [n for d, n in rows[1:-1]] == [1000] * (len(rows) - 2)  # the candidates
    assert rows[-1] == (est.max_depth_, n_train) and est.max_depth_ <= 4  # the winner again


def test_discriminant_start_finds_a_linear_boundary():
    """Classes from a noisy linear score over 13 features (the shape of a
    heart-disease table, benchmarks/extra_sets.py's heartlike): SGD from the
    axis-aligned CO2 stumps did not find the direction (test accuracy 66.3%
    over the three protocol splits, one BAD against tuned CART's 67.4%);
    a discriminant direction at the root does (80.95%). Here: a generated
    table of the same kind, three seeds; measured 0.689 / 0.689 / 0.600
    axis-aligned against 0.800 / 0.700 / 0.856 with the discriminant start."""
    from sklearn.model_selection import train_test_split

    scores = {True: [], False: []}
    for seed in range(3):
        rng = np.random.RandomState(seed)
        X = rng.normal(size=(300, 13)) * rng.uniform(0.5, 20, size=13)
        score = (X / X.std(axis=0)) @ rng.normal(size=13) + rng.normal(scale=1.5, size=300)
        y = (score > 0).astype(int)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed,
                                                  stratify=y)
        for flag in scores:
            est = NonGreedyObliqueTreeClassifier(random_state=seed, co2_oblique=flag)
            scores[flag].append(est.fit(X_tr, y_tr).score(X_te, y_te))
    assert np.mean(scores[True]) > np.mean(scores[False]) + 0.05, scores


def test_oblique_start_of_the_regressor_follows_a_linear_target():
    """A target linear in 10 features of different scales plus noise: from
    axis-aligned CO2 stumps the regressor stays a staircase (test RMSE
    2.237 / 1.989 / 2.250 over three seeds, target sd 3.2); the direction
    of the node's least-squares fit starts the root on the gradient (0.948
    / 1.225 / 1.116)."""
    from sklearn.model_selection import train_test_split

    from sklearn_difftrees import NonGreedyObliqueTreeRegressor

    rmse = {True: [], False: []}
    for seed in range(3):
        rng = np.random.RandomState(seed)
        X = rng.normal(size=(400, 10)) * rng.uniform(0.5, 20, size=10)
        y = (X / X.std(axis=0)) @ rng.normal(size=10) + rng.normal(scale=0.5, size=400)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed)
        for flag in rmse:
            est = NonGreedyObliqueTreeRegressor(random_state=seed, co2_oblique=flag)
            rmse[flag].append(np.sqrt(np.mean((est.fit(X_tr, y_tr).predict(X_te) - y_te) ** 2)))
    assert np.mean(rmse[True]) < 0.75 * np.mean(rmse[False]), rmse


def _dense_best_split(t, y, w, K):
    """Oracle of _best_projection_split: every prefix's class weights held."""
    order = np.argsort(t, kind="stable")
    t, y, w = t[order], y[order], w[order]
    counts = np.zeros((t.size, K))
    counts[np.arange(t.size), y] = w
    left = np.cumsum(counts, axis=0)[:-1]
    right = left[-1] + counts[-1] - left

    def entropy(c):
        n = c.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = c / n[:, None]
            return -(np.where(q > 0, q * np.log(q), 0.0)).sum(axis=1) * n

    cost = entropy(left) + entropy(right)
    i = int(np.argmin(cost))
    return 0.5 * (t[i] + t[i + 1])


@pytest.mark.parametrize("seed", range(5))
def test_projection_split_matches_the_dense_scan(seed):
    # The O(n)-memory sweep of the class entropies (500 classes of 100,000
    # rows held 2.5 GB in the dense scan) picks the dense scan's threshold.
    from sklearn_difftrees.non_greedy._train import _best_projection_split

    rng = np.random.RandomState(seed)
    n, K = rng.randint(50, 400), rng.randint(2, 30)
    t, y, w = rng.normal(size=n), rng.randint(0, K, n), rng.exponential(size=n)
    assert _best_projection_split(t, y, w, K) == pytest.approx(_dense_best_split(t, y, w, K))
    assert _best_projection_split(np.ones(n), y, w, K) is None  # nothing to split


def test_oblique_start_skips_wide_tables(monkeypatch):
    # Beyond DISCRIMINANT_MAX_FEATURES features no direction is computed
    # (O(p**3) per node): the start is the axis-aligned one, bit for bit.
    import sklearn_difftrees.non_greedy._train as train

    monkeypatch.setattr(train, "DISCRIMINANT_MAX_FEATURES", 5)
    X, y = make_classification(n_samples=400, n_features=8, random_state=0)
    a = NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3, random_state=0).fit(X, y)
    b = NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3, random_state=0,
                                       co2_oblique=False).fit(X, y)
    np.testing.assert_array_equal(a.tree_.weights, b.tree_.weights)
