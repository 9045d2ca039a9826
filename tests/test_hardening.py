"""Regression tests of issue 13: no crash, no silent garbage, clear errors.

Each test failed on the code before the fix it guards (segfaults were run in
a child process so that the suite survives them).
"""

import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import is_classifier
from sklearn.exceptions import ConvergenceWarning

import sklearn_difftrees as sd
from sklearn_difftrees._core._memory import ENV_VAR, MemoryLimitError, check_memory, memory_limit
from sklearn_difftrees._core.tree import ObliqueTree
from sklearn_difftrees._core.validation import fit_standardizer

from _inputs import FAST, _data, _quiet


# ----------------------------------------------------------- 1. fitted arrays
@pytest.fixture(scope="module")
def fitted_dgt():
    X, _, y = _data()
    return _quiet(sd.DGTClassifier(max_depth=3, **FAST).fit, X, y), X


def test_derived_sizes_are_read_only(fitted_dgt):
    est, _ = fitted_dgt
    with pytest.raises(AttributeError, match="derived from the arrays"):
        est.tree_.max_depth = 20
    for name in ("n_features", "n_outputs"):
        with pytest.raises(AttributeError):
            setattr(est.tree_, name, 3)


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: setattr(t, "weights", np.zeros((63, t.n_features))),
        lambda t: setattr(t, "weights", np.zeros((5, t.n_features))),
        lambda t: setattr(t, "bias", np.zeros(2)),
        lambda t: setattr(t, "weights", np.asfortranarray(np.zeros((7, t.n_features)))),
        lambda t: setattr(t, "weights", t.weights.astype(np.float32)),
        lambda t: setattr(t, "value", np.zeros((3, 2))),
        lambda t: setattr(t, "weights", np.full_like(t.weights, np.nan)),
    ],
)
def test_edited_oblique_tree_raises_instead_of_crashing(fitted_dgt, edit):
    est, X = fitted_dgt
    est = pickle.loads(pickle.dumps(est))
    edit(est.tree_)
    for method in (est.predict, est.apply, est.decision_path):
        with pytest.raises(ValueError, match="Inconsistent fitted ObliqueTree"):
            method(X)


def test_hand_made_oblique_pickle_is_validated(fitted_dgt):
    est, _ = fitted_dgt
    state = est.tree_.__getstate__()
    state["weights"] = state["weights"][:3]  # depth 2 weights, depth 3 bias
    tree = ObliqueTree.__new__(ObliqueTree)
    with pytest.raises(ValueError):
        tree.__setstate__(state)


def test_edit_that_used_to_segfault_runs_in_child():
    # The reported crash: max_depth raised above the arrays. Run in a child
    # so that a regression fails this test instead of killing the suite.
    code = textwrap.dedent(
        """
        import numpy as np, warnings
        warnings.simplefilter("ignore")
        import sklearn_difftrees as sd
        X = np.random.RandomState(0).randn(60, 3); y = (X[:, 0] > 0).astype(int)
        est = sd.DGTClassifier(max_depth=2, max_iter=2, random_state=0).fit(X, y)
        for edit in ("max_depth", "weights"):
            try:
                if edit == "max_depth":
                    est.tree_.max_depth = 20
                else:
                    est.tree_.weights = np.zeros((2**20 - 1, 1))
                est.predict(X)
            except (AttributeError, ValueError):
                pass
        print("survived")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0 and "survived" in out.stdout, out.stderr[-2000:]


def test_edited_polytope_tree_raises():
    X, _, y = _data()
    est = _quiet(sd.ConvexPolytopeTreeClassifier(max_depth=2, max_iter=3, random_state=0).fit, X, y)
    tree = est.tree_
    ptr = tree.facet_ptr.copy()
    ptr[-1] += 1000  # facet rows that do not exist
    tree.facet_ptr = ptr
    with pytest.raises(ValueError, match="PolytopeTree"):
        est.predict(X)
    with pytest.raises(AttributeError):
        tree.max_depth = 9


def test_edited_tel_arrays_raise():
    X, _, y = _data()
    est = _quiet(sd.TreeEnsembleLayerClassifier(n_trees=3, max_depth=3, **FAST).fit, X, y)
    est.weights_ = est.weights_[:, :3]  # depth-2 splits, depth-3 leaves
    with pytest.raises(ValueError, match="Inconsistent fitted tree ensemble"):
        est.predict(X)


# ----------------------------------------------------------- 3. huge values
@pytest.mark.parametrize("cls", [sd.DGTRegressor, sd.LatentTreeRegressor,
                                 sd.TreeEnsembleLayerRegressor])
def test_huge_inputs_and_targets(cls):
    X, y, _ = _data(200)
    base = _quiet(cls(**FAST).fit, X, y)
    big_x = _quiet(cls(**FAST).fit, X * 1e200, y)
    pred = big_x.predict(X * 1e200)
    assert np.isfinite(pred).all()
    # Not a constant predictor: the standardization saw the spread.
    assert np.std(pred) > 0.1 * np.std(base.predict(X))
    big_y = _quiet(cls(**FAST).fit, X, y * 1e155)
    pred = big_y.predict(X)
    assert np.isfinite(pred).all() and np.std(pred / 1e155) > 0


def test_standardizer_is_scale_free():
    X, _, _ = _data(50)
    w = np.ones(50)
    m1, s1 = fit_standardizer(X, w)
    m2, s2 = fit_standardizer(X * 1e200, w)
    m3, s3 = fit_standardizer(X * 1e-200, w)
    np.testing.assert_allclose(m2 / 1e200, m1, rtol=1e-12)
    np.testing.assert_allclose(s2 / 1e200, s1, rtol=1e-12)
    np.testing.assert_allclose(s3 / 1e-200, s1, rtol=1e-12)


# ------------------------------------------------------- 4. NaN into layers
def test_tree_ensemble_layer_rejects_nan():
    layer = sd.TreeEnsembleLayer(3, 1, n_trees=2, depth=2)
    x = torch.randn(5, 3)
    x[2, 1] = float("nan")
    for backend in ("conditional", "dense"):
        layer.backend = backend
        with pytest.raises(ValueError, match="NaN or infinite"):
            layer(x)


# ------------------------------------------- 5. in-place edit before backward
def test_tel_conditional_backward_sees_in_place_edits():
    torch.manual_seed(0)
    layer = sd.TreeEnsembleLayer(3, 2, n_trees=2, depth=2, backend="conditional")
    out = layer(torch.randn(8, 3)).sum()
    with torch.no_grad():
        layer.weight.mul_(2.0)
    with pytest.raises(RuntimeError, match="inplace"):
        out.backward()


# ---------------------------------------------------------- 6. divergence
@pytest.mark.parametrize("cls", [sd.DGTRegressor, sd.LatentTreeRegressor,
                                 sd.TreeEnsembleLayerRegressor])
@pytest.mark.parametrize("early_stopping", [True, False])
def test_divergence_raises(cls, early_stopping):
    X, y, _ = _data(200)
    est = cls(learning_rate=1e6, max_iter=6, early_stopping=early_stopping, random_state=0)
    with pytest.raises(FloatingPointError, match="learning_rate"):
        _quiet(est.fit, X, y)


def test_forest_divergence_raises():
    # The batched forest trainer measures divergence against each member's
    # untrained validation loss too.
    X, y, _ = _data(200)
    est = sd.DGTForestRegressor(n_estimators=2, learning_rate=1e6, max_iter=6, random_state=0)
    with pytest.raises(FloatingPointError, match="learning_rate"):
        _quiet(est.fit, X, y)


def test_greedy_start_measures_divergence_from_an_uninformed_output():
    # A kept start that is already a fitted tree (init="cart") can have a
    # validation loss near zero; ordinary losses after it (here 2.0, below
    # 10 x ln(3) + 1) are not divergence. Without the uninformed reference
    # the same epochs raise.
    from sklearn_difftrees._core._monitor import EpochMonitor

    def run(reference):
        monitor = EpochMonitor(name="M", max_iter=6, n_iter_no_change=10, tol=0.0,
                               learning_rate=0.01, has_validation=True)
        monitor.start(0.05, 0.99, reference=reference)
        for epoch in range(1, 6):
            monitor.end_epoch(epoch, 1.0, 0.0, validation=(2.0, 0.5))
        return monitor.finish()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert run(reference=np.log(3)).best_epoch == 0  # the start is kept
    with pytest.raises(FloatingPointError, match="diverged"):
        run(reference=None)
    # End to end (scikit-learn's check_estimators_dtypes data): a forest of
    # CART-started members whose starts fit the two validation rows almost
    # perfectly.
    X = 3 * np.random.RandomState(0).uniform(size=(20, 5))
    _quiet(sd.DGTForestClassifier(n_estimators=3, max_depth=2, max_iter=5, hidden_width=8,
                                  random_state=0).fit, X, X.astype(int)[:, 0])


@pytest.mark.parametrize("cls", [sd.DGTBanditRegressor, sd.DGTBanditClassifier])
def test_bandit_divergence_raises_and_keeps_last_good_state(cls):
    X, y, yc = _data(200)
    target = yc if cls is sd.DGTBanditClassifier else y
    with pytest.raises(FloatingPointError, match="learning_rate"):
        _quiet(cls(learning_rate=1e6, random_state=0).fit, X, target)


def test_default_fits_do_not_trip_divergence(bundled):
    X, y = bundled("pima", n_max=300)
    for est in (sd.LatentTreeClassifier(max_iter=5, random_state=0),
                sd.TreeEnsembleLayerClassifier(max_iter=5, random_state=0)):
        _quiet(est.fit, X, y)


# --------------------------------------------------------------- 7. memory
def test_memory_limit_parsing(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert memory_limit() == 4 * 2**30
    monkeypatch.setenv(ENV_VAR, "512MiB")
    assert memory_limit() == 512 * 2**20
    monkeypatch.setenv(ENV_VAR, "2GB")
    assert memory_limit() == 2 * 10**9
    monkeypatch.setenv(ENV_VAR, "none")
    assert memory_limit() is None
    check_memory("x", 1e30, "anything")
    monkeypatch.setenv(ENV_VAR, "lots")
    with pytest.raises(ValueError, match=ENV_VAR):
        memory_limit()


def test_configurations_beyond_the_limit_raise_before_allocating(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    X, _, y = _data(50)
    with pytest.raises(MemoryLimitError, match="max_depth=24"):
        sd.TreeEnsembleLayerClassifier(max_depth=24, max_iter=1).fit(X, y)
    with pytest.raises(MemoryLimitError, match=ENV_VAR):
        sd.TreeEnsembleLayer(20, 1, n_trees=20, depth=20)
    with pytest.raises(MemoryLimitError):
        sd.LatentTreeLayer(20, max_depth=30)
    # The limit is overridable.
    monkeypatch.setenv(ENV_VAR, "1MiB")
    with pytest.raises(MemoryLimitError):
        sd.TreeEnsembleLayer(20, 1, n_trees=20, depth=8)
    assert issubclass(MemoryLimitError, MemoryError) and issubclass(MemoryLimitError, ValueError)


def test_tel_node_statistics_match_dense_oracle():
    from sklearn_difftrees.tel._classes import _node_statistics
    from sklearn_difftrees.tel._kernels import smooth_step

    rng = np.random.RandomState(0)
    Z = rng.randn(300, 3)
    W, b, O = rng.randn(4, 15, 3), 0.5 * rng.randn(4, 15), rng.randn(4, 16, 2)
    for gamma in (0.5, 2.0, 6.0):
        s = smooth_step(np.einsum("np,tip->nti", Z, W) + b, gamma)
        prob = np.ones((300, 4, 31))
        for node in range(15):
            prob[:, :, 2 * node + 1] = prob[:, :, node] * (1 - s[:, :, node])
            prob[:, :, 2 * node + 2] = prob[:, :, node] * s[:, :, node]
        reached = prob > 0
        soft = (((s > 0) & (s < 1)) & reached[:, :, :15]).sum(0)
        soft = soft / np.maximum(reached.sum(0)[:, :15], 1)
        got = _node_statistics(Z, W, b, O, gamma, max_entries=200)
        np.testing.assert_allclose(got[0], reached.mean(0), atol=1e-12)
        np.testing.assert_allclose(got[1], prob.mean(0), atol=1e-12)
        np.testing.assert_allclose(got[2], soft, atol=1e-12)


# ------------------------------------------------------------ 8. clear errors
@pytest.mark.parametrize("cls", [sd.DGTClassifier, sd.LatentTreeClassifier,
                                 sd.TreeEnsembleLayerClassifier])
def test_warm_start_with_other_features(cls):
    X, _, y = _data()
    est = _quiet(cls(warm_start=True, **FAST).fit, X, y)
    with pytest.raises(ValueError, match="warm_start=True"):
        est.fit(X[:, :3], y)


def test_layer_arguments_and_inputs():
    for kwargs in ({"in_features": 0}, {"in_features": 3.5}, {"max_depth": 2.0},
                   {"max_depth": 0}, {"in_features": True}):
        args = {"in_features": 3, "max_depth": 2, **kwargs}
        with pytest.raises(ValueError, match="must be an integer"):
            sd.LatentTreeLayer(**args)
    with pytest.raises(ValueError, match="must be an integer"):
        sd.TreeEnsembleLayer(3.0, 1)
    layer = sd.LatentTreeLayer(3, max_depth=2)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        layer(torch.randn(3))
    with pytest.raises(ValueError, match="NaN"):
        layer(torch.full((4, 3), float("nan")))


# ------------------------------------------------- 9. feature names (pandas)
@pytest.mark.parametrize("cls", [sd.LatentTreeClassifier, sd.LatentTreeClusterer])
def test_latent_tree_dataframe_fit_does_not_warn(cls):
    pd = pytest.importorskip("pandas")
    X, _, y = _data()
    df = pd.DataFrame(X, columns=list("abcd"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = cls(**FAST)
        est.fit(df, y) if cls is sd.LatentTreeClassifier else est.fit(df)
        est.predict(df)
    assert not [w for w in caught if "feature names" in str(w.message)]


# ------------------------------------------------ 10. target_features masks
def test_clusterer_target_features_mask():
    X, _, _ = _data()
    mask = np.array([False, True, False, True])
    a = _quiet(sd.LatentTreeClusterer(target_features=mask, **FAST).fit, X)
    b = _quiet(sd.LatentTreeClusterer(target_features=[1, 3], **FAST).fit, X)
    np.testing.assert_array_equal(a._targets, [1, 3])
    np.testing.assert_allclose(a.tree_.weights, b.tree_.weights)
    with pytest.raises(ValueError, match="boolean target_features mask"):
        sd.LatentTreeClusterer(target_features=mask[:3], **FAST).fit(X)
    with pytest.raises(ValueError, match="integer column indices"):
        sd.LatentTreeClusterer(target_features=[1.5], **FAST).fit(X)


# ----------------------------------------------- 11. near-constant features
def test_near_constant_feature_warns_and_keeps_n_features():
    X, _, y = _data()
    X[:, 2] = 1.0 + 1e-15 * np.arange(X.shape[0])
    with pytest.warns(UserWarning, match=r"column\(s\) 2"):
        est = sd.DGTClassifier(**FAST).fit(X, y)
    assert est.n_features_in_ == 4
    assert est.predict(X).shape == (X.shape[0],)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        X[:, 2] = 7.0  # exactly constant: no information, no warning
        fit_standardizer(X, np.ones(X.shape[0]))


_FAMILIES_FOR_CONSTANT = [
    lambda: sd.DGTRegressor(greedy_floor=False, **FAST),
    lambda: sd.LatentTreeRegressor(**FAST),
    lambda: sd.TreeEnsembleLayerRegressor(**FAST),
    lambda: sd.ConvexPolytopeTreeRegressor(**FAST),
    lambda: sd.NonGreedyObliqueTreeRegressor(**FAST),
    lambda: sd.DGTBanditRegressor(random_state=0),
    lambda: sd.DGTBanditClassifier(split_init="random", random_state=0),
]


@pytest.mark.parametrize("make", _FAMILIES_FOR_CONSTANT)
@pytest.mark.parametrize("spread", [0.0, 1e-13])
def test_constant_feature_never_changes_predictions(make, spread):
    # A column constant (spread 0) or numerically constant (spread below
    # 1e-12 of its magnitude: the warning says "ignored") over the training
    # rows is dropped by every family: another value at predict time changes
    # nothing, and it gets no importance. Before, only exact constants were
    # dropped (np.ptp == 0), and the bandits dropped none.
    X, y, y_cls = _data(200, 3)
    X[:, 2] = 5.0 + spread * np.random.RandomState(1).randn(200)
    est = make()
    target = y_cls if is_classifier(est) else y
    est = _quiet(est.fit, X, target)
    X_other = X.copy()
    X_other[:, 2] = 50.0
    np.testing.assert_array_equal(est.predict(X_other), est.predict(X))
    if isinstance(est, (sd.DGTBanditRegressor, sd.DGTBanditClassifier)):
        # An online learner keeps the column's weights trainable (from 0),
        # should it vary in later rounds; standardized, it is ~1e-16 here.
        assert est.feature_importances_[2] < 1e-9
    elif hasattr(est, "feature_importances_"):
        assert est.feature_importances_[2] == 0.0


def test_tiny_scale_features_are_not_dropped():
    X, _, _ = _data(50)
    _, scale = fit_standardizer(X * 1e-20, np.ones(50))
    np.testing.assert_allclose(scale, X.std(0) * 1e-20, rtol=1e-10)


# ------------------------------------------------------------- 12. PAV ties
def test_latent_tree_backends_share_the_tie_rule():
    from sklearn_difftrees.latent_tree._torch import tree_isotonic

    # lam = 0: a single-node group's value is clip(max v, 0, 1), so the row
    # holding the max sits exactly at v == a; v == 0 and a == 1 ties too.
    q = torch.tensor(
        [[0.5, -0.2, 0.1, -0.5, 0.0, 0.3, -0.1],
         [0.5, 0.1, -0.5, 0.2, -0.5, 0.0, 0.6],
         [0.5, -0.5, 0.1, -0.5, 0.0, 0.3, -0.5]],
        dtype=torch.float64,
    )
    rng = np.random.RandomState(0)
    ga = torch.from_numpy(rng.randn(7))
    gz = torch.from_numpy(rng.randn(3, 7))
    for lam in (0.0, 0.5):
        grads, values = [], []
        for backend in ("kernel", "torch"):
            qq = q.clone().requires_grad_(True)
            a, z = tree_isotonic(qq, lam, backend)
            ((a * ga).sum() + (z * gz).sum()).backward()
            grads.append(qq.grad.numpy())
            values.append((a.detach().numpy(), z.detach().numpy()))
        np.testing.assert_allclose(values[0][0], values[1][0], atol=1e-12)
        np.testing.assert_allclose(values[0][1], values[1][1], atol=1e-12)
        np.testing.assert_allclose(grads[0], grads[1], atol=1e-12)


# ------------------------------------------- 13. weights: scale and class_weight
@pytest.mark.parametrize("make", [
    lambda: sd.NonGreedyObliqueTreeRegressor(random_state=0),
    lambda: sd.DGTForestRegressor(n_estimators=3, **FAST),
    lambda: sd.DGTClassifier(init="cart", **FAST),
    lambda: sd.ConvexPolytopeTreeClassifier(**FAST),
])
def test_uniform_sample_weight_of_any_value_fits_the_unweighted_model(make):
    # Equal weights become exactly 1 (check_fit_data / normalize_weights):
    # w / w.mean() left 0.9999999999999999 on some rows, and the greedy
    # starts broke their ties differently (NonGreedy moved predictions by
    # 0.56, a forest by 0.5 on every row).
    X, y, y_cls = _data(200, 4)
    est = make()
    target = y_cls if is_classifier(est) else y
    reference = _quiet(est.fit, X, target).predict(X)
    for c in (1 / 200, 3.7):
        weighted = _quiet(est.fit, X, target, sample_weight=np.full(200, c)).predict(X)
        np.testing.assert_array_equal(weighted, reference)


@pytest.mark.parametrize("make", [
    lambda: sd.NonGreedyObliqueTreeClassifier(random_state=0),
    lambda: sd.NonGreedyObliqueTreeRegressor(random_state=0),
    lambda: sd.DGTForestClassifier(n_estimators=3, **FAST),
    lambda: sd.DGTForestRegressor(n_estimators=3, **FAST),
    lambda: sd.DGTClassifier(init="cart", **FAST),
    lambda: sd.LatentTreeRegressor(**FAST),
    lambda: sd.TreeEnsembleLayerClassifier(**FAST),
    lambda: sd.ConvexPolytopeTreeClassifier(**FAST),
])
def test_integer_weights_times_a_constant_fit_the_same_model(make):
    # Weights count relative to each other, as for scikit-learn's trees: w and
    # 3 w, 10 w are the same weights bit for bit once divided by their largest
    # (check_fit_data). Divided by their mean they differed by an ulp on most
    # rows, and the greedy starts and subtrees broke their ties on it (a new
    # user's trial: NonGreedy agreed on 83% of vehicle's rows, a forest
    # regressor with 7 w diverged where w fitted).
    X, y, y_cls = _data(200, 4)
    w = np.random.RandomState(1).randint(1, 4, size=200).astype(float)
    est = make()
    target = y_cls if is_classifier(est) else y
    predict = est.predict_proba if is_classifier(est) else est.predict
    _quiet(est.fit, X, target, sample_weight=w)
    reference = predict(X)
    for c in (3.0, 10.0):
        _quiet(est.fit, X, target, sample_weight=c * w)
        np.testing.assert_array_equal(predict(X), reference)


@pytest.mark.parametrize("est", [
    sd.DGTClassifier(**FAST), sd.DGTForestClassifier(**FAST),
    sd.LatentTreeClassifier(**FAST), sd.NonGreedyObliqueTreeClassifier(**FAST),
    sd.TreeEnsembleLayerClassifier(**FAST), sd.ConvexPolytopeTreeClassifier(**FAST),
])
@pytest.mark.parametrize("class_weight, message", [
    ({0: 0, 1: 0}, "at least one positive weight"),
    ({0: -1, 1: 1}, "must be non-negative"),
    # A NaN class weight passed the sign checks: most families dropped the
    # class's rows silently (NaN > 0 is False); inf ended in "X holds values
    # too small to standardize".
    ({0: np.nan, 1: 1}, "must be finite"),
    ({0: np.inf, 1: 1}, "must be finite"),
])
def test_class_weight_gets_the_errors_of_sample_weight(est, class_weight, message):
    X, _, y = _data()
    with pytest.raises(ValueError, match=message):
        est.set_params(class_weight=class_weight).fit(X, y)


# ------------------------------------------------- 14. reported by a new user
def test_subnormal_inputs_get_a_clear_error():
    # 1e-310 * X standardized to a scale whose inverse overflows: the fit
    # ended in "Inconsistent fitted ObliqueTree" (forests: "too large").
    X, y, _ = _data(60, 3)
    for est in (sd.DGTRegressor(**FAST), sd.DGTForestRegressor(n_estimators=2, **FAST)):
        with pytest.raises(ValueError, match="too small to standardize"):
            _quiet(est.fit, X * 1e-310, y)
    X[:, 2] = 1e-310  # a constant subnormal column is only ignored
    _quiet(sd.DGTRegressor(**FAST).fit, X, y)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_forest_on_a_handful_of_rows(n):
    # A bootstrap of 4 rows drew a single distinct row for some members (6 of
    # 10 seeds failed with "early_stopping needs at least 2 samples").
    X, _, _ = _data(n, 3)
    y = np.arange(n) % 2
    for seed in range(5):
        forest = _quiet(sd.DGTForestClassifier(n_estimators=30, max_iter=2, random_state=seed).fit,
                        X, y)
        assert forest.predict(X).shape == (n,)


def test_dendrogram_purity_needs_one_tree():
    from sklearn_difftrees.metrics import dendrogram_purity

    X, _, y = _data(60, 3)
    forest = _quiet(sd.DGTForestClassifier(n_estimators=2, **FAST).fit, X, y)
    with pytest.raises(TypeError, match="estimators_"):
        dendrogram_purity(forest, X, y)
    tel = _quiet(sd.TreeEnsembleLayerClassifier(**FAST).fit, X, y)
    with pytest.raises(TypeError, match="decision_path"):
        dendrogram_purity(tel, X, y)
    assert 0 <= dendrogram_purity(forest.estimators_[0], X, y) <= 1


def test_latent_tree_apply_is_int64():
    X, _, y = _data(60, 3)
    est = _quiet(sd.LatentTreeClassifier(max_depth=2, **FAST).fit, X, y)
    assert est.apply(X).dtype == np.int64


@pytest.mark.parametrize("make, name", [
    (lambda: sd.DGTForestClassifier(n_estimators=2, max_iter=2, early_stopping=False),
     "DGTForestClassifier"),
    (lambda: sd.LatentTreeClusterer(max_iter=2, early_stopping=False), "LatentTreeClusterer"),
])
def test_warnings_name_the_estimator_the_user_fitted(make, name):
    # They named the inner estimator (DGTClassifier, LatentTreeRegressor).
    X, _, y = _data()
    with pytest.warns(ConvergenceWarning, match=f"^{name}"):
        if isinstance(make(), sd.LatentTreeClusterer):
            make().fit(X)
        else:
            make().fit(X, y)


# ------------------------------------- 15. constant targets and one-leaf trees
@pytest.mark.parametrize("make", [
    lambda: sd.LatentTreeRegressor(**FAST),
    lambda: sd.TreeEnsembleLayerRegressor(**FAST),
    lambda: sd.DGTRegressor(**FAST),
    lambda: sd.NonGreedyObliqueTreeRegressor(random_state=0),
    lambda: sd.ConvexPolytopeTreeRegressor(**FAST),
    lambda: sd.DGTForestRegressor(n_estimators=3, **FAST),
])
def test_constant_target_is_predicted_exactly(make):
    # LatentTree's head and TEL's leaves are trained from a random start and
    # predicted 4.71 to 5.17 for y = 5; and the standardizer's mean of a
    # constant column was 4.999999999999999. A constant target column now
    # predicts its value, beside a column that varies (multi-output).
    X, y, _ = _data(150, 3)
    est = _quiet(make().fit, X, np.full(150, 5.0))
    np.testing.assert_array_equal(est.predict(X), 5.0)
    if not isinstance(est, (sd.ConvexPolytopeTreeRegressor, sd.DGTForestRegressor)):
        both = _quiet(make().fit, X, np.c_[np.full(150, -2.5), y]).predict(X)
        np.testing.assert_array_equal(both[:, 0], -2.5)
        assert np.ptp(both[:, 1]) > 0


def test_depth_counts_splits_not_pass_through_nodes():
    # A complete tree whose nodes send every training row the same way has
    # one leaf: its depth is 0 (it was max_depth, e.g. NonGreedy's 2), and
    # n_leaves <= 2**depth as for scikit-learn's trees.
    X, _, _ = _data(100, 3)
    est = _quiet(sd.NonGreedyObliqueTreeRegressor(random_state=0).fit, X, np.full(100, 1.0))
    assert est.get_n_leaves() == 1 and est.get_depth() == 0
    # Root splits on x0, then every node below sends all rows one way: depth 1.
    W = np.zeros((7, 3))
    W[0, 0] = 1.0
    tree = ObliqueTree(W, np.r_[0.0, np.full(6, 1.0)], np.arange(8.0)[:, None]).finalize(X)
    assert tree.n_leaves == 2 and tree.depth == 1


def test_clusterer_progress_names_the_clusterer(capsys):
    X, _, _ = _data(80, 3)
    _quiet(sd.LatentTreeClusterer(max_iter=2, verbose=2, random_state=0).fit, X)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "LatentTreeClusterer" in text and "LatentTreeRegressor" not in text


# ------------------------------------------- 14. warnings of internal fits
@pytest.mark.parametrize("make", [
    lambda: sd.DGTRegressor(**FAST), lambda: sd.LatentTreeRegressor(**FAST),
    lambda: sd.TreeEnsembleLayerRegressor(**FAST),
    lambda: sd.NonGreedyObliqueTreeRegressor(max_iter=5, random_state=0),
    lambda: sd.ConvexPolytopeTreeRegressor(**FAST),
    lambda: sd.DGTForestRegressor(n_estimators=3, **FAST),
])
def test_one_row_validation_part_scores_nan_without_warnings(make):
    """Ten rows leave one validation row, where R^2 is undefined: NaN scores,
    without scikit-learn's warning at every epoch (a user's trial: 21 lines
    for a DGTRegressor, 630 for a forest)."""
    from sklearn.exceptions import UndefinedMetricWarning

    rng = np.random.RandomState(0)
    X, y = rng.randn(10, 3), rng.randn(10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("error", UndefinedMetricWarning)
        make().fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: sd.DGTClassifier(**FAST), lambda: sd.LatentTreeClassifier(**FAST),
    lambda: sd.TreeEnsembleLayerClassifier(**FAST),
    lambda: sd.ConvexPolytopeTreeClassifier(**FAST),
    lambda: sd.NonGreedyObliqueTreeClassifier(max_iter=5, random_state=0),
    lambda: sd.DGTForestClassifier(n_estimators=3, **FAST),
])
def test_many_classes_of_few_rows_fit_without_scikit_learns_class_count_warning(make):
    """200 classes of 2 rows: scikit-learn's trees fit them silently, and so
    do these; their CARTs grown on subsets of the rows warned that "the
    number of unique classes is greater than 50%" (up to 98 times)."""
    rng = np.random.RandomState(0)
    y = np.repeat(np.arange(200), 2)
    X = rng.randn(400, 5) + y[:, None] * 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("error", message="The number of unique classes")
        make().fit(X, y)
