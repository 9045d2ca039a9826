"""Every family inside scikit-learn's meta-estimators, as users combine them.

Calibration (also of a frozen, already fitted model), bagging and boosting
(which pass ``sample_weight``), stacking and soft voting, one-vs-rest,
several targets, threshold tuning, self-training (labels ``-1``), feature
selection through ``feature_importances_``, permutation importance and a
transformed target. Each check asserts what the meta-estimator promises
(probabilities that sum to 1, the frozen model untouched, the selected
features), not only that it runs.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import TransformedTargetRegressor
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.ensemble import (AdaBoostClassifier, AdaBoostRegressor, BaggingClassifier,
                              BaggingRegressor, StackingClassifier, VotingClassifier)
from sklearn.feature_selection import RFE, SelectFromModel
from sklearn.frozen import FrozenEstimator
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import TunedThresholdClassifierCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier
from sklearn.semi_supervised import SelfTrainingClassifier

import sklearn_difftrees as sd

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = {"max_iter": 3, "random_state": 0}
# (classifier, regressor, small settings) of every family
FAMILIES = [
    (sd.DGTClassifier, sd.DGTRegressor, dict(max_depth=3)),
    (sd.LatentTreeClassifier, sd.LatentTreeRegressor, dict(max_depth=3)),
    (sd.NonGreedyObliqueTreeClassifier, sd.NonGreedyObliqueTreeRegressor, dict(max_depth=3)),
    (sd.TreeEnsembleLayerClassifier, sd.TreeEnsembleLayerRegressor,
     dict(max_depth=2, n_trees=3)),
    (sd.ConvexPolytopeTreeClassifier, sd.ConvexPolytopeTreeRegressor,
     dict(max_depth=2, max_facets=3, growth_max_iter=3)),
    (sd.DGTForestClassifier, sd.DGTForestRegressor, dict(n_estimators=3, max_depth=3)),
]
CLASSIFIERS = [classifier(**params, **FAST) for classifier, _, params in FAMILIES]
REGRESSORS = [regressor(**params, **FAST) for _, regressor, params in FAMILIES]


def _name(estimator):
    return type(estimator).__name__


def _assert_probabilities(proba, n_rows, n_classes):
    assert proba.shape == (n_rows, n_classes)
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def binary():
    X, y = load_breast_cancer(return_X_y=True)
    return X[::2], y[::2]


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=_name)
def test_calibration_bagging_boosting(estimator, iris):
    X, y = iris
    _assert_probabilities(CalibratedClassifierCV(clone(estimator), cv=3).fit(X, y)
                          .predict_proba(X), len(y), 3)
    bagging = BaggingClassifier(clone(estimator), n_estimators=2, random_state=0).fit(X, y)
    _assert_probabilities(bagging.predict_proba(X), len(y), 3)
    boosting = AdaBoostClassifier(clone(estimator), n_estimators=2, random_state=0).fit(X, y)
    assert len(boosting.estimators_) >= 1
    assert set(boosting.predict(X)) <= set(y)


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=_name)
def test_calibrating_a_frozen_model_leaves_it_untouched(estimator, binary):
    X, y = binary
    fitted = clone(estimator).fit(X, y)
    before = fitted.predict_proba(X)
    calibrated = CalibratedClassifierCV(FrozenEstimator(fitted)).fit(X, y)
    _assert_probabilities(calibrated.predict_proba(X), len(y), 2)
    np.testing.assert_array_equal(fitted.predict_proba(X), before)


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=_name)
def test_stacking_voting_one_vs_rest_several_targets(estimator, iris):
    X, y = iris
    stacking = StackingClassifier([("tree", clone(estimator))], cv=3).fit(X, y)
    assert stacking.predict(X).shape == y.shape
    voting = VotingClassifier([("tree", clone(estimator)), ("lr", LogisticRegression())],
                              voting="soft").fit(X, y)
    _assert_probabilities(voting.predict_proba(X), len(y), 3)
    ovr = OneVsRestClassifier(clone(estimator)).fit(X, y)
    assert ovr.predict_proba(X).shape == (len(y), 3)
    Y = np.c_[y, y % 2]
    multi = MultiOutputClassifier(clone(estimator)).fit(X, Y)
    assert multi.predict(X).shape == Y.shape
    assert [list(e.classes_) for e in multi.estimators_] == [[0, 1, 2], [0, 1]]


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=_name)
def test_threshold_tuning_and_self_training(estimator, binary, iris):
    X, y = binary
    tuned = TunedThresholdClassifierCV(clone(estimator), cv=3).fit(X, y)
    assert 0.0 <= tuned.best_threshold_ <= 1.0
    X, y = iris
    partial = y.copy()
    partial[::3] = -1  # unlabelled rows
    self_trained = SelfTrainingClassifier(clone(estimator), max_iter=2).fit(X, partial)
    assert list(self_trained.estimator_.classes_) == [0, 1, 2]
    assert set(self_trained.predict(X)) <= {0, 1, 2}


@pytest.mark.parametrize("estimator", CLASSIFIERS + REGRESSORS, ids=_name)
def test_feature_selection_and_permutation_importance(estimator):
    if hasattr(estimator, "predict_proba"):
        X, y = load_iris(return_X_y=True)
    else:
        X, y = load_diabetes(return_X_y=True)
        X, y = X[::2], y[::2]
    rfe = RFE(clone(estimator), n_features_to_select=2).fit(X, y)
    assert rfe.support_.sum() == 2 and rfe.transform(X).shape == (len(y), 2)
    selected = SelectFromModel(clone(estimator)).fit(X, y)
    assert 1 <= selected.transform(X).shape[1] <= X.shape[1]
    fitted = clone(estimator).fit(X, y)
    result = permutation_importance(fitted, X, y, n_repeats=2, random_state=0)
    assert result.importances.shape == (X.shape[1], 2)
    assert np.all(np.isfinite(result.importances))


@pytest.mark.parametrize("estimator", REGRESSORS, ids=_name)
def test_regressors_in_target_transforms_bagging_boosting(estimator):
    X, y = load_diabetes(return_X_y=True)
    X, y = X[::2], y[::2]
    transformed = TransformedTargetRegressor(clone(estimator), func=np.log,
                                             inverse_func=np.exp).fit(X, y)
    assert transformed.predict(X).shape == y.shape
    # The inner model learned the log-target (25 to 346 here, logs 3.2 to 5.9):
    # its predictions are in log units and follow it (correlation 0.68 to 0.77
    # measured on these rows at these settings).
    inner, log_y = transformed.regressor_.predict(X), np.log(y)
    assert log_y.min() - 1 <= inner.min() and inner.max() <= log_y.max() + 1
    assert np.corrcoef(inner, log_y)[0, 1] > 0.5
    bagging = BaggingRegressor(clone(estimator), n_estimators=2, random_state=0).fit(X, y)
    assert np.all(np.isfinite(bagging.predict(X)))
    boosting = AdaBoostRegressor(clone(estimator), n_estimators=2, random_state=0).fit(X, y)
    assert len(boosting.estimators_) >= 1 and np.all(np.isfinite(boosting.predict(X)))
