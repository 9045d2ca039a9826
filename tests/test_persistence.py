"""What a pickle holds: the version stamp, and only what prediction needs."""

import pickle
import warnings

import numpy as np
import pytest
import sklearn.exceptions
from sklearn.datasets import make_classification

import sklearn_difftrees
from sklearn_difftrees import (
    DGTClassifier,
    DGTRegressor,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
)
from sklearn_difftrees._core import persistence
from sklearn_difftrees.bandit import EpsilonGreedyLinearBandit, OnlineLinearRegressionBandit
from sklearn_difftrees.exceptions import InconsistentVersionWarning

from test_pickle import PARAMS

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

#: Every public estimator class (the bandit baselines included).
ALL_ESTIMATORS = sorted(
    set(PARAMS) | {EpsilonGreedyLinearBandit, OnlineLinearRegressionBandit},
    key=lambda c: c.__name__,
)


@pytest.fixture(scope="module")
def data():
    return make_classification(150, 5, n_informative=3, random_state=0)


def _dumps_as(est, version, monkeypatch):
    """Pickle ``est`` as version ``version`` of the package would."""
    with monkeypatch.context() as m:
        m.setattr(persistence, "__version__", version)
        return pickle.dumps(est)


@pytest.mark.parametrize("cls", ALL_ESTIMATORS, ids=lambda c: c.__name__)
def test_every_estimator_stamps_the_version_and_warns_on_another(cls, monkeypatch):
    est = cls(classes=[0, 1]) if cls is EpsilonGreedyLinearBandit else cls()
    state = est.__getstate__()
    assert state[persistence.VERSION_KEY] == sklearn_difftrees.__version__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same version loads silently
        same = pickle.loads(pickle.dumps(est))
    assert persistence.VERSION_KEY not in same.__dict__
    assert same.get_params() == est.get_params()

    blob = _dumps_as(est, "0.0.1", monkeypatch)
    with pytest.warns(InconsistentVersionWarning, match=r"0\.0\.1") as record:
        old = pickle.loads(blob)
    warning = record[0].message
    assert warning.original_version == "0.0.1"
    assert warning.current_version == sklearn_difftrees.__version__
    assert warning.estimator_name == cls.__name__
    # scikit-learn's warning class covers ours (one filter silences both).
    assert isinstance(warning, sklearn.exceptions.InconsistentVersionWarning)
    assert persistence.VERSION_KEY not in old.__dict__


def test_pickle_without_a_stamp_warns(data):
    X, y = data
    est = NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=2, random_state=0).fit(X, y)
    state = est.__getstate__()
    del state[persistence.VERSION_KEY]  # as pickled before versions were recorded
    copy = NonGreedyObliqueTreeClassifier.__new__(NonGreedyObliqueTreeClassifier)
    with pytest.warns(InconsistentVersionWarning, match="unknown"):
        copy.__setstate__(state)
    np.testing.assert_array_equal(copy.predict(X), est.predict(X))


def test_fitted_model_loaded_by_another_version_warns_and_predicts(data, monkeypatch):
    X, y = data
    est = DGTClassifier(max_depth=2, max_iter=2, hidden_width=8, random_state=0).fit(X, y)
    blob = _dumps_as(est, "9.9", monkeypatch)
    with pytest.warns(InconsistentVersionWarning):
        old = pickle.loads(blob)
    np.testing.assert_array_equal(old.predict(X), est.predict(X))


# ------------------------------------------------------------ warm_start state
_WARM = [
    (DGTClassifier, dict(max_depth=2, max_iter=3, hidden_width=8)),
    (DGTRegressor, dict(max_depth=2, max_iter=3, hidden_width=8)),
    (LatentTreeClassifier, dict(max_depth=2, max_iter=3)),
    (TreeEnsembleLayerClassifier, dict(n_trees=3, max_depth=2, max_iter=3)),
]


@pytest.mark.parametrize("cls, params", _WARM, ids=lambda v: getattr(v, "__name__", ""))
def test_training_state_is_kept_only_with_warm_start(cls, params, data):
    X, y = data
    if cls is DGTRegressor:
        y = X[:, 0] + X[:, 1]
    cold = cls(random_state=0, **params).fit(X, y)
    assert "_module_state" not in cold.__getstate__()
    warm = cls(random_state=0, warm_start=True, **params).fit(X, y)
    assert "_module_state" in warm.__getstate__()
    # Dropping the training state changes nothing in the predictions.
    np.testing.assert_array_equal(cold.predict(X), warm.predict(X))
    # A warm pickle continues training exactly like the original.
    copy = pickle.loads(pickle.dumps(warm))
    warm.fit(X, y)
    copy.fit(X, y)
    np.testing.assert_array_equal(copy.predict(X), warm.predict(X))
    if hasattr(warm, "tree_"):
        np.testing.assert_array_equal(copy.tree_.weights, warm.tree_.weights)


def test_default_dgt_pickle_is_dominated_by_the_tree(bundled):
    """The default classifier's pickle is little more than its tree arrays."""
    X, y = bundled("breast_cancer_wisconsin")
    est = DGTClassifier(max_iter=2, random_state=0).fit(X, y)
    total = len(pickle.dumps(est, protocol=5))
    tree = len(pickle.dumps(est.tree_, protocol=5))
    assert tree <= total < tree + 8 * 1024, (total, tree)
