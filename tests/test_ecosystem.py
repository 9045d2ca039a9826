"""The estimators inside scikit-learn's tooling: threads, metadata routing."""

import sys
import threading
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_difftrees as sd

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = {
    sd.DGTClassifier: dict(max_depth=2, max_iter=3),
    sd.DGTRegressor: dict(max_depth=2, max_iter=3),
    sd.DGTForestClassifier: dict(n_estimators=2, max_depth=2, max_iter=3),
    sd.LatentTreeClassifier: dict(max_depth=2, max_iter=3),
    sd.LatentTreeRegressor: dict(max_depth=2, max_iter=3),
    sd.NonGreedyObliqueTreeClassifier: dict(max_depth=2, max_iter=3),
    sd.TreeEnsembleLayerClassifier: dict(n_trees=2, max_depth=2, max_iter=3),
    sd.ConvexPolytopeTreeClassifier: dict(max_depth=2, max_facets=3, growth_max_iter=3,
                                          max_iter=3),
    sd.ConvexPolytopeTreeRegressor: dict(max_depth=2, max_facets=3, growth_max_iter=3,
                                         max_iter=3),
}


def _data(cls, frame=False):
    X, y = load_iris(return_X_y=True, as_frame=frame)
    if issubclass(cls, sklearn.base.RegressorMixin):
        y = X.iloc[:, 0] if frame else X[:, 0]
        X = X.iloc[:, 1:] if frame else X[:, 1:]
    return X, y


@pytest.mark.parametrize("cls", list(FAST), ids=lambda c: c.__name__)
def test_fits_leave_the_process_warning_filters_alone(cls, monkeypatch):
    # warnings.catch_warnings saves and restores the process's whole filter
    # list: two threads' blocks that overlap restore each other's lists, and
    # one thread's "ignore" stays for good. The package opens one only in
    # _core/_warn.py (under a lock, for scikit-learn's own warnings).
    opened = []
    real = warnings.catch_warnings

    class Counting(real):
        def __init__(self, *args, **kwargs):
            opened.append(sys._getframe(1).f_code.co_filename)
            super().__init__(*args, **kwargs)

    X, y = _data(cls, frame=True)  # names: the final guard predicts on the array
    monkeypatch.setattr(warnings, "catch_warnings", Counting)
    cls(random_state=0, **FAST[cls]).fit(X, y)
    monkeypatch.undo()
    ours = [f for f in opened if "sklearn_difftrees" in f and not f.endswith("_warn.py")]
    assert ours == []


def test_threaded_fits_leave_no_ignore_filter_behind():
    # Two threads fitting at once (joblib's threading backend, a web server):
    # the process's filters stay as they were, and a later user's warning shows.
    X, y = _data(sd.DGTRegressor)
    before = list(warnings.filters)
    errors = []

    def fit():
        try:
            for _ in range(4):
                sd.DGTRegressor(random_state=0, **FAST[sd.DGTRegressor]).fit(X, y)
        except Exception as exc:  # pragma: no cover - shown by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=fit) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    added = [f for f in warnings.filters if f not in before and f[0] == "ignore"]
    warnings.filters[:] = before
    assert added == []


@pytest.mark.parametrize("cls", [sd.DGTClassifier, sd.LatentTreeClassifier,
                                 sd.NonGreedyObliqueTreeClassifier,
                                 sd.TreeEnsembleLayerClassifier,
                                 sd.ConvexPolytopeTreeClassifier], ids=lambda c: c.__name__)
def test_cross_check_clones_do_not_warn_about_their_part_of_the_rows(cls):
    # 44 classes in 100 rows do not trip scikit-learn's "more than 50% of the
    # samples are unique classes", but the cross-check's clones see two thirds
    # of the rows, which do: three such warnings per fit (a blanket filter had
    # dropped them before the filters became thread-safe).
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(100, 4)), np.arange(100) % 44
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cls(random_state=0, **FAST[cls]).fit(X, y)
    assert not [w for w in caught if "unique classes" in str(w.message)]


def test_sklearn_filters_never_reach_the_users_own_warnings():
    # A filter of ignore_sklearn that a scikit-learn block in another thread
    # restores for good names the modules of scikit-learn and of this package
    # only: the user's own warnings of the same category and message show.
    from sklearn_difftrees._core._warn import ignore_sklearn

    with ignore_sklearn(message="lbfgs failed", category=ConvergenceWarning):
        leaked = [f for f in warnings.filters if f[0] == "ignore"][0]
    assert leaked[3] is not None and leaked[3].match("sklearn.linear_model._logistic")
    assert leaked[3].match("sklearn_difftrees._core.validation")
    assert not leaked[3].match(__name__) and not leaked[3].match("__main__")


def test_package_warnings_held_per_thread():
    from sklearn_difftrees._core._warn import held, quiet, reissue, warn

    with held() as caught:
        warn("inner", ConvergenceWarning)
    assert caught == [("inner", ConvergenceWarning)]
    with pytest.warns(UserWarning, match="kept"):
        with quiet(ConvergenceWarning):
            warn("dropped", ConvergenceWarning)
            warn("kept", UserWarning)
    with pytest.warns(UserWarning, match="new name"):
        reissue([("old name", UserWarning)], rename=("old", "new"))
    # Another thread does not see this thread's held list.
    def from_a_thread():
        warn("from the thread", UserWarning)

    with held() as mine:
        with pytest.warns(UserWarning, match="from the thread"):
            t = threading.Thread(target=from_a_thread)
            t.start()
            t.join()
    assert mine == []


@pytest.mark.parametrize("cls", [sd.DGTClassifier, sd.ConvexPolytopeTreeClassifier],
                         ids=lambda c: c.__name__)
def test_metadata_routing_reaches_fit(cls):
    X, y = _data(cls)
    w = np.random.RandomState(0).uniform(0.1, 1.0, size=y.shape[0])
    with sklearn.config_context(enable_metadata_routing=True):
        est = cls(random_state=0, **FAST[cls]).set_fit_request(sample_weight=True)
        pipe = make_pipeline(StandardScaler().set_fit_request(sample_weight=False), est)
        pipe.fit(X, y, sample_weight=w)
        ref = cls(random_state=0, **FAST[cls]).fit(StandardScaler().fit_transform(X), y,
                                                  sample_weight=w)
        np.testing.assert_array_equal(pipe.predict_proba(X),
                                      ref.predict_proba(StandardScaler().fit_transform(X)))
        est.set_score_request(sample_weight=True)
        scores = cross_validate(pipe, X, y, params={"sample_weight": w}, cv=2)
    assert np.isfinite(scores["test_score"]).all()


@pytest.mark.parametrize("cls", [sd.DGTClassifier, sd.TreeEnsembleLayerClassifier,
                                 sd.DGTBanditRegressor], ids=lambda c: c.__name__)
def test_several_targets_for_a_single_target_estimator_say_what_to_do(cls):
    # Was scikit-learn's "y should be a 1d array, got an array of shape (150, 2)".
    X, y = load_iris(return_X_y=True)
    kind = "Classifier" if sklearn.base.is_classifier(cls()) else "Regressor"
    with pytest.raises(ValueError, match=f"fits one target.*MultiOutput{kind}"):
        cls().fit(X, np.c_[y, y])
    fast = dict(n_passes=1) if cls is sd.DGTBanditRegressor else dict(max_iter=2)
    with pytest.warns(sklearn.exceptions.DataConversionWarning):  # a column: as before
        cls(**fast).fit(X, y[:, None].astype(float))
