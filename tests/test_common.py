"""scikit-learn's estimator checks over every public estimator of the package."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import sklearn_difftrees
# -- method imports (one line per family) --
from sklearn_difftrees import LatentTreeClassifier, LatentTreeClusterer, LatentTreeRegressor
from sklearn_difftrees import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor
from sklearn_difftrees import NonGreedyObliqueTreeClassifier, NonGreedyObliqueTreeRegressor
from sklearn_difftrees import TreeEnsembleLayerClassifier, TreeEnsembleLayerRegressor
from sklearn_difftrees import (
    DGTBanditClassifier,
    DGTBanditRegressor,
    DGTClassifier,
    DGTForestClassifier,
    DGTForestRegressor,
    DGTRegressor,
)

#: Fast parameters per public estimator class. A new public estimator that is
#: missing here makes ``test_every_public_estimator_is_registered`` fail.
FAST_PARAMS = {
    DGTClassifier: dict(max_depth=2, max_iter=5, hidden_width=8, random_state=0),
    # The regressor needs more epochs for check_regressors_train (R^2 > 0.5).
    DGTRegressor: dict(max_depth=2, max_iter=50, hidden_width=8, random_state=0),
    DGTForestClassifier: dict(
        n_estimators=3, max_depth=2, max_iter=5, hidden_width=8, random_state=0
    ),
    # Without early stopping 10 epochs reach the regressors' R^2 > 0.5 (0.57)
    # at a fifth of the cost of the tree's 50.
    DGTForestRegressor: dict(
        n_estimators=3, max_depth=2, max_iter=10, early_stopping=False, hidden_width=8,
        random_state=0,
    ),
    # Bandit learners see only the loss of the action / value they play: a
    # few passes at a larger step reach check_classifiers_train's accuracy
    # (> 0.83 on blobs) and check_regressors_train's R^2 > 0.5.
    DGTBanditClassifier: dict(max_depth=2, n_passes=5, learning_rate=3e-2, random_state=0),
    DGTBanditRegressor: dict(
        max_depth=2, n_passes=10, feedback="two_point", learning_rate=3e-2, random_state=0
    ),
    # -- latent_tree fast params --
    LatentTreeClassifier: dict(max_depth=2, max_iter=10, random_state=0),
    LatentTreeRegressor: dict(max_depth=2, max_iter=30, random_state=0),
    LatentTreeClusterer: dict(max_depth=2, max_iter=20, random_state=0),
    # -- non_greedy fast params --
    NonGreedyObliqueTreeClassifier: dict(max_depth=2, max_iter=5, random_state=0),
    NonGreedyObliqueTreeRegressor: dict(max_depth=2, max_iter=5, random_state=0),
    # -- tel fast params --
    TreeEnsembleLayerClassifier: dict(n_trees=3, max_depth=2, max_iter=10, random_state=0),
    # check_regressors_train needs R^2 > 0.5: a larger step reaches it in 30 epochs.
    TreeEnsembleLayerRegressor: dict(
        n_trees=3, max_depth=2, max_iter=30, learning_rate=5e-2, random_state=0
    ),
    # -- polytope fast params --
    ConvexPolytopeTreeClassifier: dict(
        max_depth=2, max_facets=3, growth_max_iter=5, max_iter=5, random_state=0
    ),
    # check_regressors_train needs R^2 > 0.5: a deeper tree, a few more epochs.
    ConvexPolytopeTreeRegressor: dict(
        max_depth=3, max_facets=3, growth_max_iter=10, max_iter=10, random_state=0
    ),
}


def _public_estimator_classes():
    classes = []
    for name in sklearn_difftrees.__all__:
        obj = getattr(sklearn_difftrees, name)
        # Aliases (DGTForest = DGTForestRegressor) are checked once.
        if isinstance(obj, type) and issubclass(obj, BaseEstimator) and obj not in classes:
            classes.append(obj)
    return classes


PUBLIC_ESTIMATORS = _public_estimator_classes()


def _fast_instances():
    return [cls(**FAST_PARAMS[cls]) for cls in PUBLIC_ESTIMATORS if cls in FAST_PARAMS]


def _expected_failed_checks(estimator):
    return {
        "check_sample_weight_equivalence_on_dense_data": (
            "Training is float32 stochastic optimisation: repeating a row and "
            "weighting it by 2 change the mini-batches and the optimisation path, "
            "so the fitted trees differ. Replaced by "
            "test_zero_weight_rows_are_ignored below."
        ),
    }


def test_every_public_estimator_is_registered():
    assert set(PUBLIC_ESTIMATORS) >= {
        DGTClassifier,
        DGTRegressor,
        DGTForestClassifier,
        DGTForestRegressor,
        DGTBanditClassifier,
        DGTBanditRegressor,
    }
    missing = [cls.__name__ for cls in PUBLIC_ESTIMATORS if cls not in FAST_PARAMS]
    assert not missing, f"add fast parameters for {missing} to FAST_PARAMS"


@parametrize_with_checks(_fast_instances(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# --------------------------------------------------- sample-weight replacement
def _separable_with_corruption(seed=0, n=400):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", [DGTClassifier, DGTRegressor])
def test_zero_weight_rows_are_ignored(cls):
    """Rows of weight 0 (with corrupted labels) do not change the fitted model.

    The package drops zero-weight rows before training, and the data
    standardization is weighted, so the model fitted on all rows with weights
    0/1 is the model fitted on the clean rows only: identical trees and
    predictions. The corrupted labels are flipped (classification) or replaced
    by large noise (regression), which would visibly change any model that
    used them.
    """
    X, y = _separable_with_corruption()
    n_clean = 200
    X_tr, y_tr = X[:300], y[:300].astype(float)
    X_te, y_te = X[300:], y[300:]
    y_bad = y_tr.copy()
    if cls is DGTClassifier:
        y_bad[n_clean:] = 1 - y_bad[n_clean:]
    else:
        y_bad[n_clean:] = np.random.RandomState(1).normal(scale=50, size=300 - n_clean)
    # Interleave so the zero-weight rows are not a trailing block.
    perm = np.random.RandomState(2).permutation(300)
    X_all, y_all = X_tr[perm], y_bad[perm]
    w = (perm < n_clean).astype(float)
    params = dict(max_depth=2, max_iter=30, hidden_width=8, random_state=0,
                  early_stopping=False, n_iter_no_change=1000)

    clean_rows = np.flatnonzero(w > 0)  # keeps the order of X_all
    ref = cls(**params).fit(X_all[clean_rows], y_all[clean_rows])
    weighted = cls(**params).fit(X_all, y_all, sample_weight=w)
    naive = cls(**params).fit(X_all, y_all)

    np.testing.assert_array_equal(weighted.tree_.weights, ref.tree_.weights)
    np.testing.assert_array_equal(weighted.tree_.value, ref.tree_.value)
    np.testing.assert_array_equal(weighted.predict(X_te), ref.predict(X_te))
    if cls is DGTClassifier:
        acc = accuracy_score(y_te, weighted.predict(X_te))
        assert acc >= 0.9
        # Sanity: the corrupted rows matter when they are not zero-weighted.
        assert not np.array_equal(naive.tree_.value, weighted.tree_.value)
