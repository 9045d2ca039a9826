"""What the second adversarial review (2026-11-26, branch review2) found.

Each test failed on the code before the fix it guards.
"""

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError

import sklearn_difftrees as sd
import sklearn_difftrees._core.base
import sklearn_difftrees.non_greedy._classes
import sklearn_difftrees.polytope._classes

from _inputs import _data, _quiet

# ------------------------------------------- 1. a failed fit is all or nothing
#: Every estimator whose ``fit`` trains from scratch (the bandits' refused
#: fits and updates: test_review3.py).
FAILING_FIT = [
    sd.DGTClassifier(max_depth=2, max_iter=3, hidden_width=8, random_state=0),
    sd.DGTRegressor(max_depth=2, max_iter=3, hidden_width=8, random_state=0),
    sd.DGTForestClassifier(n_estimators=2, max_depth=2, max_iter=3, hidden_width=8,
                           random_state=0),
    sd.DGTForestRegressor(n_estimators=2, max_depth=2, max_iter=3, hidden_width=8,
                          random_state=0),
    sd.LatentTreeClassifier(max_depth=2, max_iter=3, random_state=0),
    sd.LatentTreeRegressor(max_depth=2, max_iter=3, random_state=0),
    sd.LatentTreeClusterer(max_depth=2, max_iter=3, random_state=0),
    sd.NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3, random_state=0),
    sd.NonGreedyObliqueTreeRegressor(max_depth=2, max_iter=3, random_state=0),
    sd.TreeEnsembleLayerClassifier(n_trees=2, max_depth=2, max_iter=3, random_state=0),
    sd.TreeEnsembleLayerRegressor(n_trees=2, max_depth=2, max_iter=3, random_state=0),
    sd.ConvexPolytopeTreeClassifier(max_depth=2, max_facets=2, growth_max_iter=3,
                                    max_iter=3, random_state=0),
    sd.ConvexPolytopeTreeRegressor(max_depth=2, max_facets=2, growth_max_iter=3,
                                   max_iter=3, random_state=0),
]


def _interrupt_at_the_last_step(monkeypatch):
    """Make the last step of every fit (``check_finite_model``, after every
    fitted attribute is set) raise ``KeyboardInterrupt``, as a Ctrl-C would."""

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    for module in (sklearn_difftrees._core.base, sklearn_difftrees.non_greedy._classes,
                   sklearn_difftrees.polytope._classes):
        monkeypatch.setattr(module, "check_finite_model", interrupt)


def _fit(est, X, y):
    return _quiet(est.fit, X) if isinstance(est, sd.LatentTreeClusterer) else _quiet(est.fit, X, y)


@pytest.mark.parametrize("est", FAILING_FIT, ids=lambda e: type(e).__name__)
def test_failed_fit_leaves_the_estimator_as_it_was(est, monkeypatch):
    X, y_reg, y_bin = _data(120)
    # 3 classes first, then 2; the regressors' targets change scale.
    first = (np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0)]
             if is_classifier(est) else y_reg)
    second = np.where(y_bin == 1, "p", "q") if is_classifier(est) else 1e3 * y_reg

    # A fresh estimator whose fit is interrupted is not fitted (it had its
    # n_features_in_, classes_, ... and predict raised AttributeError).
    fresh = clone(est)
    with monkeypatch.context() as patch:
        _interrupt_at_the_last_step(patch)
        with pytest.raises(KeyboardInterrupt):
            _fit(fresh, X[:, :3], second)
    assert vars(fresh) == vars(clone(est))
    with pytest.raises(NotFittedError):
        fresh.predict(X)

    # A fitted estimator keeps its model (it mixed the new classes_ or target
    # scale with the old tree: wrong labels, IndexError, 1000 x predictions).
    fitted = _fit(clone(est), X, first)
    expected = fitted.predict(X)
    attrs = dict(vars(fitted))
    with monkeypatch.context() as patch:
        _interrupt_at_the_last_step(patch)
        with pytest.raises(KeyboardInterrupt):
            _fit(fitted, X[:, :3] if not hasattr(fitted, "classes_") else X, second)
    assert vars(fitted).keys() == attrs.keys()
    assert all(vars(fitted)[k] is v for k, v in attrs.items())
    np.testing.assert_array_equal(fitted.predict(X), expected)


def test_failed_fit_by_divergence_is_not_fitted():
    X, y, _ = _data(200)
    est = sd.DGTRegressor(learning_rate=1e6, max_iter=6, random_state=0)
    with pytest.raises(FloatingPointError, match="learning_rate"):
        _quiet(est.fit, X, y)
    with pytest.raises(NotFittedError):
        est.predict(X)


# ------------------------------- 2. LatentTreeLayer.fix_pruning checks its rows
@pytest.mark.parametrize("x, error, match", [
    ("wide", ValueError, r"expects input of shape \(n, 4\); got \(5, 3\)"),
    ("1d", ValueError, r"expects input of shape \(n, 4\); got \(4,\)"),
    ("numpy", TypeError, "expects a torch.Tensor input; got ndarray"),
])
def test_fix_pruning_checks_its_input_as_forward_does(x, error, match):
    torch = pytest.importorskip("torch")
    layer = sd.LatentTreeLayer(in_features=4, max_depth=2)
    x = {"wide": torch.randn(5, 3), "1d": torch.randn(4),
         "numpy": np.zeros((5, 4), dtype=np.float32)}[x]
    # fix_pruning raised torch's matmul error, an IndexError or an
    # AttributeError; forward raised the first two clearly already.
    with pytest.raises(error, match=match):
        layer.fix_pruning(x)
    with pytest.raises(error, match=match):
        layer(x)


def test_fix_pruning_solves_without_autograd(monkeypatch):
    """fix_pruning solves under torch.no_grad (the input checks moved into a
    helper once took the decorator with them: a graph was built for nothing)."""
    torch = pytest.importorskip("torch")
    layer = sd.LatentTreeLayer(in_features=4, max_depth=2)
    seen, rewards = [], layer.rewards
    monkeypatch.setattr(layer, "rewards", lambda x: (seen.append(torch.is_grad_enabled()),
                                                     rewards(x))[1])
    layer.fix_pruning(torch.randn(16, 4))
    assert seen == [False]


# ------------------- 3. the bandit baselines check their feedback as DGT's do
def _baseline_feedback(make):
    """``(learner, update(**changes))`` after one ordinary round of 6 rows."""
    from sklearn_difftrees.bandit import EpsilonGreedyLinearBandit

    X = np.random.RandomState(0).randn(6, 3)
    learner = make()
    if isinstance(learner, EpsilonGreedyLinearBandit):
        actions, p = learner.sample_actions(X, random_state=0)
        good = dict(actions=actions, losses=np.zeros(6), propensities=p)
    else:
        played, u = learner.sample_predictions(X, random_state=0)
        good = dict(played=played, losses=np.zeros(played.shape), perturbations=u)
    learner.update(X, **good)
    return learner, lambda **changes: learner.update(X, **{**good, **changes})


@pytest.mark.parametrize("make, changes, match", [
    # An action outside classes_ was credited to a neighbouring class (1.5 ->
    # 2, -1 -> 0) or raised an IndexError (7, "x").
    ("eps", dict(actions=[1.5] * 6), "values of classes_"),
    ("eps", dict(actions=[-1] * 6), "values of classes_"),
    ("eps", dict(actions=["x"] * 6), "values of classes_"),
    ("eps", dict(actions=[0] * 5), r"actions must have shape \(6,\)"),
    ("eps", dict(losses=[np.nan] + [0] * 5), "losses must be finite"),
    ("eps", dict(losses=np.zeros((6, 1))), r"losses must have shape \(6,\)"),
    ("eps", dict(propensities=np.zeros(6)), r"propensities must lie in \(0, 1\]"),
    # A NaN loss made every later prediction NaN; other lengths were
    # broadcast or cut; one-point losses fed to a two-point learner were
    # taken as one-point feedback.
    ("ols", dict(losses=[np.nan] + [0] * 5), "losses must be finite"),
    ("ols", dict(losses=np.zeros(7)), r"losses must have shape \(6,\)"),
    ("ols", dict(perturbations=np.ones(5)), r"perturbations must have shape \(6,\)"),
    ("ols", dict(perturbations=np.full(6, 0.5)), "perturbations must be -1 or \\+1"),
    ("ols2", dict(losses=np.zeros(6)), r"losses must have shape \(6, 2\)"),
])
def test_bandit_baselines_check_their_feedback(make, changes, match):
    from sklearn_difftrees.bandit import EpsilonGreedyLinearBandit, OnlineLinearRegressionBandit

    make = {"eps": lambda: EpsilonGreedyLinearBandit([0, 1, 2], random_state=0),
            "ols": lambda: OnlineLinearRegressionBandit(random_state=0),
            "ols2": lambda: OnlineLinearRegressionBandit(feedback="two_point",
                                                         random_state=0)}[make]
    learner, update = _baseline_feedback(make)
    with pytest.raises(ValueError, match=match):
        update(**changes)
    X = np.random.RandomState(1).randn(4, 3)
    assert np.all(np.isfinite(learner.predict(X).astype(float)))


# ------------- 4. the memory limit counts the conditional TEL backend's records
def test_conditional_tel_records_count_against_the_memory_limit(monkeypatch):
    """At the start of training nearly every node is fractional for every row,
    so a recording conditional pass holds up to ``n_trees * (2**(depth+1) -
    1)`` entries per row: n_trees=100, max_depth=10 on batches of 1024 rows
    peaked at 5 GB under the 4 GiB limit, and n_trees=1000, max_depth=12 was
    killed by the OS instead of raising MemoryLimitError (the check counted
    only the parameters). The records are checked as they grow."""
    torch = pytest.importorskip("torch")
    from sklearn_difftrees._core._memory import MemoryLimitError

    # Parameters ~7 MiB, records of a 64-row batch ~30 MiB.
    monkeypatch.setenv("SKLEARN_DIFFTREES_MAX_MEMORY", "20MiB")
    X, _, y = _data(80)
    est = sd.TreeEnsembleLayerClassifier(n_trees=10, max_depth=10, batch_size=64, max_iter=1,
                                         backend="conditional", init="random",
                                         early_stopping=False, random_state=0)
    with pytest.raises(MemoryLimitError, match="fractional nodes per row"):
        _quiet(est.fit, X, y)
    # A band far wider than the scores: every node is fractional for every
    # row, whatever the layer's random start.
    layer = sd.TreeEnsembleLayer(4, 1, n_trees=10, depth=10, gamma=1e4, backend="conditional")
    x = torch.randn(64, 4)
    with pytest.raises(MemoryLimitError, match="on a batch of 64 rows"):
        layer(x)
    with torch.no_grad():  # no record: prediction needs one row's buffer
        assert layer(x).shape == (64, 1)
    assert layer(x[:8]).shape == (8, 1)  # a smaller batch fits


# ------------------- 5. the memory limit counts every member a forest trains
def test_forest_memory_check_counts_its_members(monkeypatch):
    """A forest's members are built, held and trained together (one batched
    model per chunk), but each was checked alone: 30 members of max_depth=10
    on 3000 features peaked at 3.3 GB under a 400 MiB limit."""
    from sklearn_difftrees._core._memory import MemoryLimitError

    monkeypatch.setenv("SKLEARN_DIFFTREES_MAX_MEMORY", "2MiB")
    rng = np.random.RandomState(0)
    X = rng.randn(40, 200)
    y = (X[:, 0] > 0).astype(int)
    # One member (depth 8 on 200 features: ~0.8 MiB) fits the limit ...
    _quiet(sd.DGTClassifier(max_depth=8, max_iter=1, init="random", random_state=0).fit, X, y)
    forest = sd.DGTForestClassifier(n_estimators=4, max_depth=8, max_iter=1, random_state=0)
    # ... four held at once do not, and the error names the forest.
    with pytest.raises(MemoryLimitError,
                       match=r"DGTForestClassifier members .*\(4 models held at once\)"):
        _quiet(forest.fit, X, y)
    monkeypatch.setenv("SKLEARN_DIFFTREES_MAX_MEMORY", "64MiB")
    _quiet(forest.fit, X, y)
    assert not hasattr(forest.estimators_[0], "_owner_name")


# ------------------------- 6. ConvexPolytopeTree's facets count against the limit
def test_polytope_facets_count_against_the_memory_limit(monkeypatch):
    """Growth projects every row of a node on each of its facets (~32 bytes
    per row and facet): max_facets=10**7 on 100 rows asked numpy for 6 GiB
    after 25 s (or was killed) instead of raising MemoryLimitError."""
    from sklearn_difftrees._core._memory import MemoryLimitError

    monkeypatch.setenv("SKLEARN_DIFFTREES_MAX_MEMORY", "1MiB")
    X, _, y = _data(100)
    est = sd.ConvexPolytopeTreeClassifier(max_facets=1000, max_depth=1, growth_max_iter=1,
                                          max_iter=1, random_state=0)
    with pytest.raises(MemoryLimitError, match="max_facets=1000 on 100 training rows"):
        _quiet(est.fit, X, y)
    _quiet(est.set_params(max_facets=10).fit, X, y)
