"""Models loaded read-only (``joblib.load(..., mmap_mode="r")``: their arrays
are memory maps that cannot be written) keep learning: a bandit's ``update``
and a ``warm_start`` continuation copy what they change instead of writing
into the loaded arrays."""

import warnings

import joblib
import numpy as np

from sklearn_difftrees import DGTBanditClassifier, DGTClassifier


def _mmap_copy(model, tmp_path):
    path = tmp_path / "model.joblib"
    joblib.dump(model, path)
    return joblib.load(path, mmap_mode="r")


def test_bandit_update_on_a_read_only_model(bundled, tmp_path):
    X, y = bundled("pima")
    model = DGTBanditClassifier(random_state=0).fit(X[:300], y[:300])
    loaded = _mmap_copy(model, tmp_path)
    actions, propensities = loaded.sample_actions(X[300:340], random_state=0)
    losses = (actions != y[300:340]).astype(float)
    loaded.update(X[300:340], actions, losses, propensities)  # raised: output array is read-only
    model.update(X[300:340], actions, losses, propensities)
    assert loaded.n_rounds_ == model.n_rounds_ == 340
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_warm_start_from_a_read_only_model(bundled, tmp_path):
    X, y = bundled("pima")
    model = DGTClassifier(max_iter=2, warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    loaded = _mmap_copy(model, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded.fit(X, y)  # warned: "The given NumPy array is not writable"
    assert not [w for w in caught if "not writable" in str(w.message)]
    assert loaded.n_iter_ >= 1
