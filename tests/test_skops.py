"""Safe persistence: every estimator round-trips through ``skops.io`` with
``sklearn_difftrees.io.trusted_types()`` and loads without torch."""

import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression

from sklearn_difftrees import DGTBanditClassifier, DGTBanditRegressor
from sklearn_difftrees.io import trusted_types

from test_pickle import PARAMS, _run_child

sio = pytest.importorskip("skops.io")


def _data(cls):
    if cls.__name__ == "LatentTreeClusterer" or not is_classifier(cls()):
        X, y = make_regression(150, 5, random_state=0)
    else:
        X, y = make_classification(150, 5, n_informative=3, n_classes=3, random_state=0)
        y = np.array(["a", "b", "c"])[y]
    return X, y


def _outputs(est, X):
    out = {}
    for method in ("predict", "predict_proba", "apply"):
        if hasattr(est, method):
            out[method] = getattr(est, method)(X)
    return out


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every estimator of test_pickle.PARAMS fitted, saved with skops, and its outputs."""
    directory = tmp_path_factory.mktemp("skops")
    X_test = np.random.RandomState(1).normal(size=(40, 5))
    np.save(directory / "X.npy", X_test)
    fitted = {}
    for cls, params in PARAMS.items():
        X, y = _data(cls)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(**params).fit(X, y)
        sio.dump(est, directory / f"{cls.__name__}.skops")
        fitted[cls.__name__] = (est, _outputs(est, X_test))
    return directory, X_test, fitted


def test_trusted_types_are_exactly_ours():
    types = trusted_types()
    assert types == sorted(set(types))
    assert all(t.startswith("sklearn_difftrees.") for t in types)
    assert "sklearn_difftrees._core.tree.ObliqueTree" in types
    assert not any("Layer" in t and "Classifier" not in t and "Regressor" not in t for t in types)


@pytest.mark.parametrize("cls", list(PARAMS), ids=lambda c: c.__name__)
def test_skops_round_trip_asks_only_for_trusted_types(cls, saved):
    directory, X_test, fitted = saved
    path = directory / f"{cls.__name__}.skops"
    untrusted = sio.get_untrusted_types(file=path)
    assert set(untrusted) <= set(trusted_types()), untrusted
    assert f"{cls.__module__}.{cls.__qualname__}" in untrusted
    loaded = sio.load(path, trusted=trusted_types())
    est, expected = fitted[cls.__name__]
    assert loaded.get_params() == est.get_params()
    for method, values in _outputs(loaded, X_test).items():
        np.testing.assert_array_equal(values, expected[method], err_msg=method)


def test_skops_refuses_untrusted_types_by_default(saved):
    directory, _, _ = saved
    with pytest.raises(Exception, match="[Uu]ntrusted"):
        sio.load(directory / "DGTClassifier.skops")


def test_skops_files_load_and_predict_without_torch(saved, tmp_path):
    directory, X_test, fitted = saved
    names = sorted(fitted)
    _run_child(
        f"""
        import numpy as np
        import skops.io as sio
        from sklearn_difftrees.io import trusted_types
        X = np.load({str(directory / "X.npy")!r})
        for name in {names!r}:
            est = sio.load({str(directory)!r} + "/" + name + ".skops", trusted=trusted_types())
            np.save({str(tmp_path)!r} + "/" + name + ".npy", est.predict(X), allow_pickle=True)
            if hasattr(est, "predict_proba"):
                np.save({str(tmp_path)!r} + "/" + name + ".proba.npy", est.predict_proba(X))
        assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules)
        print("OK")
        """,
        tmp_path,
    )
    for name in names:
        _, expected = fitted[name]
        pred = np.load(tmp_path / f"{name}.npy", allow_pickle=True)
        np.testing.assert_array_equal(pred, expected["predict"], err_msg=name)
        if "predict_proba" in expected:
            proba = np.load(tmp_path / f"{name}.proba.npy")
            np.testing.assert_array_equal(proba, expected["predict_proba"], err_msg=name)


@pytest.mark.parametrize("cls", [DGTBanditClassifier, DGTBanditRegressor], ids=lambda c: c.__name__)
def test_skops_bandit_resumes_update_exactly(cls, tmp_path):
    """The online learner state (weights, optimizer buffers, pending gradient)
    survives skops: the loaded bandit continues exactly like the original."""
    from test_bandit import _logged, _tree_data

    X, y = _tree_data(40, 1, regression=cls is DGTBanditRegressor)
    params = dict(max_depth=3, random_state=0)
    if cls is DGTBanditClassifier:
        params["classes"] = [0, 1, 2]
    est = cls(**params)
    est.update(X[:10], *_logged(est, X[:10], y[:10]))  # 10 % 4: a pending gradient
    sio.dump(est, tmp_path / "bandit.skops")
    copy = sio.load(tmp_path / "bandit.skops", trusted=trusted_types())
    feedback = _logged(est, X[10:], y[10:], seed=3)
    est.update(X[10:], *feedback)
    copy.update(X[10:], *feedback)
    np.testing.assert_array_equal(copy.tree_.weights, est.tree_.weights)
    np.testing.assert_array_equal(copy.tree_.value, est.tree_.value)
    assert copy.n_rounds_ == est.n_rounds_
