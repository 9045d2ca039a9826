"""More input handling beyond tests/test_hardening.py: a refused
``warm_start`` fit loses nothing, bandit actions outside ``classes_``, memory
limits of huge hidden layers, the depth of a tree whose growth stopped early.

Each test failed on the code before the fix it guards.
"""

import warnings

import numpy as np
import pytest

from sklearn.base import is_classifier

import sklearn_difftrees as sd
from sklearn_difftrees._core._memory import MemoryLimitError

pd = pytest.importorskip("pandas")

from _inputs import FAST, _data, _quiet


# ------------------------------------- 1. a refused warm_start keeps the model
WARM = [sd.DGTClassifier, sd.DGTRegressor, sd.LatentTreeClassifier,
        sd.LatentTreeRegressor, sd.TreeEnsembleLayerClassifier,
        sd.TreeEnsembleLayerRegressor]


@pytest.mark.parametrize("cls", WARM)
def test_refused_warm_start_keeps_the_fitted_model(cls):
    # validate_data(reset=True) ran before the refusal: n_features_in_ and
    # feature_names_in_ took the new X's, so the old model no longer
    # predicted on its own data; renamed columns were silently accepted.
    X, y_reg, y_clf = _data()
    y = y_clf if cls.__name__.endswith("Classifier") else y_reg
    df = pd.DataFrame(X, columns=list("abcd"))
    est = _quiet(cls(warm_start=True, max_depth=2, **FAST).fit, df, y)
    ref = est.predict(df)
    for other in (X[:, :3], df.iloc[:, :3], df.set_axis(list("wxyz"), axis=1)):
        with pytest.raises(ValueError, match="warm_start=True"):
            _quiet(est.fit, other, y)
        assert est.n_features_in_ == 4 and list(est.feature_names_in_) == list("abcd")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(est.predict(df), ref)


@pytest.mark.parametrize("cls", [c for c in WARM if c.__name__.endswith("Classifier")])
def test_warm_start_refusing_other_classes_keeps_classes(cls):
    # The refusal came after classes_ had been set to the new labels: the
    # model of 3 classes kept classes_ [0 1], so predict raised IndexError
    # (or returned the refused labels, e.g. strings).
    X, _, _ = _data()
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    est = _quiet(cls(warm_start=True, max_depth=2, **FAST).fit, X, y)
    ref = est.predict(X)
    for other in ((y > 0).astype(int), np.array(["a", "b", "c"])[y]):
        with pytest.raises(ValueError, match="classes seen in the first fit"):
            _quiet(est.fit, X, other)
        np.testing.assert_array_equal(est.classes_, [0, 1, 2])
        assert est.n_classes_ == 3
        np.testing.assert_array_equal(est.predict(X), ref)


@pytest.mark.parametrize("cls", [sd.LatentTreeClassifier, sd.LatentTreeRegressor])
@pytest.mark.parametrize("change", [dict(max_depth=3), dict(head="mlp")])
def test_warm_start_with_other_shapes_is_a_value_error(cls, change):
    # LatentTree raised torch's RuntimeError from load_state_dict.
    X, y_reg, y_clf = _data()
    y = y_clf if cls.__name__.endswith("Classifier") else y_reg
    est = _quiet(cls(warm_start=True, max_depth=2, **FAST).fit, X, y)
    ref = est.predict(X)
    with pytest.raises(ValueError, match="warm_start=True.*other shapes"):
        est.set_params(**change).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), ref)


# --------------------------------------- 2. bandit actions are not truncated
@pytest.mark.parametrize("classes, actions", [
    ([0, 1, 2], [1.9, 0.5]),        # was cast to int: classes 1 and 0
    (["a", "b"], ["abc", "bzz"]),  # was cast to '<U1': classes "a" and "b"
    ([0, 1, 2], ["x", "1"]),        # "x" raised numpy's int() error, "1" passed
])
def test_bandit_update_refuses_actions_outside_classes(classes, actions):
    X, _, _ = _data(2, 3)
    est = sd.DGTBanditClassifier(classes=classes, max_depth=2, random_state=0)
    with pytest.raises(ValueError, match="actions must be values of classes_"):
        est.update(X, actions, [0.1, 0.2], [0.5, 0.5])
    # Actions of another dtype but equal values are the classes.
    est.update(X, np.asarray(classes[:2], dtype=object), [0.1, 0.2], [0.5, 0.5])


# ------------------------------ 3. hidden layers / heads beyond the memory limit
@pytest.mark.parametrize("make", [
    lambda: sd.DGTClassifier(n_layers=3, hidden_width=100_000, **FAST),
    lambda: sd.DGTForestRegressor(n_estimators=2, n_layers=2, hidden_width=10**9, **FAST),
    lambda: sd.DGTBanditClassifier(n_layers=3, hidden_width=100_000, n_passes=1),
    lambda: sd.LatentTreeClassifier(head="mlp", head_width=100_000, **FAST),
])
def test_huge_hidden_layers_raise_memory_limit_error(make):
    # torch's RuntimeError "can't allocate 40000000000 bytes", or (width 1e9,
    # n_layers=2) a fit that took 22 GiB of resident memory.
    X, y_reg, y_clf = _data(40, 3)
    est = make()
    y = y_clf if is_classifier(est) else y_reg
    with pytest.raises(MemoryLimitError, match="hidden layers|head_width"):
        est.fit(X, y)


# ------------------------------------ 4. depth of a polytope tree that stops early
@pytest.mark.parametrize("cls", [sd.ConvexPolytopeTreeClassifier, sd.ConvexPolytopeTreeRegressor])
def test_polytope_depth_when_growth_stops_above_max_depth(cls):
    # Every leaf above the last level: get_depth() took the max of an empty
    # array ("zero-size array to reduction operation maximum").
    X = np.random.RandomState(0).normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int) if is_classifier(cls()) else X[:, 0]
    est = cls(max_depth=2, max_facets=3, growth_max_iter=3, min_weight_fraction_leaf=0.5,
              **FAST).fit(X, y)
    assert not est.tree_.active[est.tree_.n_internal:].any()
    assert est.get_n_leaves() == 2 and est.get_depth() == 1
