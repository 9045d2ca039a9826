"""A new user's trial of the online bandit API (2026-11-26): set_params between
calls, a learner created from one context, the baselines' bad inputs."""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_difftrees import DGTBanditClassifier, DGTBanditRegressor
from sklearn_difftrees.bandit import (EpsilonGreedyLinearBandit, OnlineLinearRegressionBandit,
                                      simulate)


def _data(n=60, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, 5))
    return X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)


def _play(clf, X, y):
    a, p = clf.sample_actions(X)
    return clf.update(X, a, (a != y).astype(float), p)


def _stream(clf, X, y, stop=43):
    """A learner created on all of X that played the first ``stop`` rounds (a
    pending gradient: 43 % 4 = 3)."""
    clf.sample_actions(X, random_state=0)
    return _play(clf, X[:stop], y[:stop])


@pytest.mark.parametrize("name, value", [("learning_rate", 0.5), ("linear_learning_rate", 1.0),
                                         ("prior_strength", 0.5)])
@pytest.mark.parametrize("roundtrip", [False, True])
def test_set_params_between_updates_applies_to_the_next_update(name, value, roundtrip):
    """A rate changed with set_params between two updates is the one the next
    update uses, whether the learner stayed live or went through a pickle:
    before, the cached engine (live) and the restored optimizer state
    (pickled: torch's load_state_dict restores the old lr) ignored
    learning_rate, and the live engine ignored linear_learning_rate and
    prior_strength while a pickled copy applied them."""
    X, y = _data()
    changed = _stream(DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), X, y)
    if roundtrip:
        changed = pickle.loads(pickle.dumps(changed))
    changed.set_params(**{name: value})
    fresh = _stream(DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), X, y)
    # the reference: the same stream with the new value from the start of the
    # next call, by a learner rebuilt from its numpy state with that value
    ref = pickle.loads(pickle.dumps(fresh))
    ref.set_params(**{name: value})
    ref._state["optimizer"]["param_groups"][0]["lr"] = ref.learning_rate
    fb = X[43:], *(lambda a, p: (a, (a != y[43:]).astype(float), p))(
        *changed.sample_actions(X[43:], random_state=1))
    changed.update(*fb)
    ref.update(*fb)
    fresh.update(*fb)
    np.testing.assert_allclose(changed.predict_proba(X), ref.predict_proba(X))
    np.testing.assert_allclose(changed.tree_.weights, ref.tree_.weights, rtol=1e-6, atol=1e-7)
    assert not np.allclose(np.r_[changed.tree_.weights.ravel(), changed.tree_.value.ravel()],
                           np.r_[fresh.tree_.weights.ravel(), fresh.tree_.value.ravel()])


@pytest.mark.parametrize("roundtrip", [False, True])
def test_accumulation_steps_changed_mid_stream(roundtrip):
    """Lowering accumulation_steps below the pending rounds crashed a pickled
    learner ("negative dimensions are not allowed") and was ignored by a live
    one; now the pending rounds make one step and the new value applies."""
    X, y = _data()
    clf = _stream(DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), X, y)
    assert clf._state["pending"] == 3
    if roundtrip:
        clf = pickle.loads(pickle.dumps(clf))
    clf.set_params(accumulation_steps=1)
    _play(clf, X[43:50], y[43:50])
    assert clf._state["pending"] == 0 and clf.n_rounds_ == 50
    clf.set_params(accumulation_steps=8)
    _play(clf, X[50:53], y[50:53])
    assert clf._state["pending"] == 3


@pytest.mark.parametrize("make, name, value", [
    (lambda: DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), "max_depth", 2),
    (lambda: DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), "n_layers", 2),
    (lambda: DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), "optimizer",
     "adam"),
    (lambda: DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), "momentum", 0.5),
    (lambda: DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0),
     "leaf_estimator", "counts"),
    (lambda: DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), "classes",
     [0, 1, 2, 3]),
    (lambda: DGTBanditRegressor(max_depth=3, random_state=0), "max_depth", 2),
])
@pytest.mark.parametrize("roundtrip", [False, True])
def test_set_params_of_the_learners_shape_mid_stream_is_refused(make, name, value, roundtrip):
    """Before: silently ignored by the live learner, and after a pickle a torch
    RuntimeError (size mismatch), a KeyError ('betas') or a silently mixed
    policy. Now update and sample_* name the parameter; setting it back, or
    fit, works."""
    X, y = _data()
    est = make()
    if isinstance(est, DGTBanditRegressor):
        played, u = est.sample_predictions(X)
        est.update(X, played, played**2, u)
    else:
        _stream(est, X, y)
    before = est.get_params()[name]
    if roundtrip:
        est = pickle.loads(pickle.dumps(est))
    est.set_params(**{name: value})
    sample = est.sample_predictions if isinstance(est, DGTBanditRegressor) else est.sample_actions
    with pytest.raises(ValueError, match=f"{name} was changed"):
        sample(X[:3])
    if not isinstance(est, DGTBanditRegressor):
        with pytest.raises(ValueError, match=f"{name} was changed"):
            est.update(X[:3], [0, 1, 2], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0])
        est.predict(X[:3])  # prediction uses the learner as it is
        est.set_params(**{name: before})
        _play(est, X[:3], y[:3])


def test_predict_follows_the_leaf_estimator_the_learner_was_created_with():
    X, y = _data()
    clf = _stream(DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0), X, y)
    proba = clf.predict_proba(X)
    pred = clf.predict(X)
    clf.set_params(leaf_estimator="counts")  # not the learner's leaves
    np.testing.assert_array_equal(clf.predict_proba(X), proba)
    np.testing.assert_array_equal(clf.predict(X), pred)


@pytest.mark.parametrize("leaf_estimator", ["linear", "counts", "gradient"])
def test_exploration_changed_with_set_params_applies_at_once(leaf_estimator):
    """With counted or trained leaves the policy came from tree_.value, built
    with the exploration of the last update: after set_params(exploration=0)
    sample_actions still explored (propensity 0.73 with K = 3) until the next
    update."""
    X, y = _data()
    clf = _stream(DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0,
                                      leaf_estimator=leaf_estimator), X, y)
    greedy = clf.predict(X)
    clf.set_params(exploration=0.0)
    a, p = clf.sample_actions(X)
    np.testing.assert_array_equal(p, 1.0)
    np.testing.assert_array_equal(a, greedy)
    np.testing.assert_array_equal(clf.predict_proba(X).max(axis=1), 1.0)
    np.testing.assert_array_equal(clf.tree_.value.max(axis=-1), 1.0)


@pytest.mark.parametrize("make", [
    lambda: DGTBanditClassifier(classes=[0, 1, 2], random_state=0),
    lambda: DGTBanditRegressor(random_state=0),
    lambda: EpsilonGreedyLinearBandit([0, 1, 2], random_state=0),
    lambda: OnlineLinearRegressionBandit(random_state=0),
])
def test_a_learner_created_from_one_context_warns(make):
    """With standardize=True a learner created from one context cannot scale
    its features (each becomes (x - x0) / |x0|) and, for the DGT bandits, its
    splits start with every weight at 0: on digits, simulate with
    batch_size=1 and no init_contexts reached 29-49% instead of 84-87%,
    silently."""
    X, y = _data()
    est = make()
    sample = getattr(est, "sample_actions", None) or est.sample_predictions
    with pytest.warns(UserWarning, match="created from 1 context"):
        sample(X[:1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sample(X[1:2])  # once, at creation
        make().set_params(standardize=False)
        est2 = make().set_params(standardize=False)
        (getattr(est2, "sample_actions", None) or est2.sample_predictions)(X[:1])
        est3 = make()
        (getattr(est3, "sample_actions", None) or est3.sample_predictions)(X[:2])
        simulate(make(), X, y if hasattr(est, "sample_actions") else y / 2.0, init_contexts=X)


def test_online_linear_regression_bandit_refuses_an_overflowing_update():
    """Losses of 1e300 overflowed its RMSprop buffer to inf (RuntimeWarnings
    only): every later step was 0, a learner frozen for good."""
    X, y = _data()
    reg = OnlineLinearRegressionBandit(random_state=0)
    played, u = reg.sample_predictions(X)
    reg.update(X[:10], played[:10], (played[:10] - y[:10]) ** 2, u[:10])
    coef = reg.coef_.copy()
    with pytest.raises(FloatingPointError, match="losses"):
        reg.update(X[10:13], played[10:13], np.full(3, 1e300), u[10:13])
    np.testing.assert_array_equal(reg.coef_, coef)
    reg.update(X[13:20], played[13:20], (played[13:20] - y[13:20]) ** 2, u[13:20])
    assert np.all(np.isfinite(reg.coef_)) and not np.array_equal(reg.coef_, coef)


def test_epsilon_greedy_needs_two_actions():
    """DGTBanditClassifier refuses a single action; the baseline played it."""
    X, _ = _data()
    with pytest.raises(ValueError, match="at least 2"):
        EpsilonGreedyLinearBandit([0]).sample_actions(X)


@pytest.mark.parametrize("created_by", ["init_contexts", "burn_in"])
def test_simulate_keeps_the_feature_names_of_a_dataframe(created_by):
    """simulate turned X_stream and init_contexts into arrays but passed X_eval
    as given: a DataFrame warned "X has feature names, but ... was fitted
    without" at every evaluation, and a learner created from a DataFrame
    beforehand warned the reverse at every round."""
    pd = pytest.importorskip("pandas")
    X, y = _data(80)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    curves = []
    for X_ in (df, X):
        clf = DGTBanditClassifier(classes=[0, 1, 2], max_depth=3, random_state=0)
        kw = {"init_contexts": X_}
        if created_by == "burn_in":
            clf.sample_actions(X_, random_state=0)
            kw = {}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            curves.append(simulate(clf, X_, y, X_eval=X_, y_eval=y, eval_every=20,
                                   batch_size=4, random_state=0, **kw))
    assert curves[0].scores == curves[1].scores
