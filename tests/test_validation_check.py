"""The validation check of larger tables (the core's
``selection.validation_check``) and its use by every single-model family.

Above ``CROSS_CHECK_MAX_ROWS`` fit rows the out-of-fold cross-check does not
run; the fitted model itself is then compared with the depth-tuned CART
grown on the training part, row by row on the early-stopping validation
rows (and on the training rows where the CART predicts the validation rows
at least as well). A table whose classes follow a few thresholds (a thyroid
screen) is one where a trained oblique model can fall a point or two short
of the CART on every row.
"""

import types
import warnings

import numpy as np
import pytest

import sklearn_difftrees as sd
from sklearn_difftrees._core import selection
from sklearn_difftrees._core._warn import internal_fit

from _floors import fit_quiet


def _thresholds(n=600, seed=0):
    """Three classes from two thresholds of two features (a CART of depth 2
    is exact), three noise features."""
    X = np.random.RandomState(seed).normal(size=(n, 5))
    return X, np.where(X[:, 0] > 0.5, 2, (X[:, 1] > 0).astype(np.int64))


def _split(n, seed=0):
    va = np.sort(np.random.RandomState(seed).choice(n, n // 5, replace=False))
    return np.setdiff1d(np.arange(n), va), va


def _check(decision, X, Y, tr, va, classification=True, est=None):
    return selection.validation_check(
        est, decision, X, X, Y, np.ones(X.shape[0]), tr, va,
        classification=classification, max_depth=4, seed=0)


def test_validation_check_scores_the_model_against_the_tuned_cart():
    X, y = _thresholds()
    tr, va = _split(y.size)
    # A constant model errs on two thirds of the rows; the CART on none.
    majority = np.bincount(y).argmax()
    res = _check(lambda X: np.eye(3)[np.full(X.shape[0], majority)], X, y, tr, va)
    assert res.gain == pytest.approx(np.mean(y[va] != majority)) and res.z > 5
    # A model that is right on every row: the CART cannot win.
    truth = dict(zip(map(bytes, X), y))
    exact = _check(lambda X: np.eye(3)[[truth[bytes(r)] for r in X]], X, y, tr, va)
    assert exact.gain <= 0 and exact.z <= 0


def test_validation_check_lets_the_training_rows_decide_a_validation_tie():
    X, y = _thresholds()
    tr, va = _split(y.size)
    wrong = np.zeros(y.size, bool)
    wrong[tr[::10]] = True  # right on every validation row, wrong on 10% of the others

    def decision(Xs):
        assert Xs.shape[0] == y.size  # every fit row, in their order
        return np.eye(3)[np.where(wrong, (y + 1) % 3, y)]

    res = _check(decision, X, y, tr, va)
    # The CART ties on the validation rows and fits the training rows better:
    # it dominates, and the statistic is the training rows' sign test.
    assert res.gain == 0
    assert res.z == pytest.approx(np.sqrt(wrong.sum()), rel=0.2) and res.z > 5


def test_validation_check_of_a_regressor_compares_standardized_predictions():
    rs = np.random.RandomState(0)
    X = rs.normal(size=(500, 3))
    y = 1e4 + 1e3 * (X[:, 0] > 0)  # in raw units; Y is standardized
    mean, scale = y.mean(), y.std()
    Y = ((y - mean) / scale)[:, None]
    tr, va = _split(y.size)
    est = types.SimpleNamespace(_target_mean=np.array([mean]), _target_scale=np.array([scale]))
    res = _check(lambda Xs: np.full(Xs.shape[0], mean), X, Y, tr, va, False, est)
    assert res.criterion == "squared_error" and res.z > 5
    # The exact raw predictions are as good as the CART's (no advantage), and
    # so are predictions off by rounding (the statistic is scale-free: a
    # consistent 1e-9 would otherwise make the CART win on every row).
    exact = _check(lambda Xs: 1e4 + 1e3 * (Xs[:, 0] > 0), X, Y, tr, va, False, est)
    assert exact.gain <= 1e-12
    noisy = _check(lambda Xs: (1e4 + 1e3 * (Xs[:, 0] > 0)) * (1 + 1e-9), X, Y, tr, va,
                   False, est)
    assert noisy.gain == 0 and noisy.z == 0


def test_a_regressor_is_not_judged_on_its_fit_out_of_fold(monkeypatch):
    """A regressor's leaves (shrunk towards the mean, or fitted on every row)
    always fit the training rows worse than the CART's means of them: where
    the CART is better out of fold but not clearly, a regressor stays,
    however it fits (a classifier with this fit would not: see
    tests/test_cross_check.py)."""
    rs = np.random.RandomState(0)
    X = rs.normal(size=(500, 3))
    y = (X[:, 0] > 0) + 0.1 * rs.normal(size=500)
    Y = ((y - y.mean()) / y.std())[:, None]
    est = types.SimpleNamespace(_target_mean=np.array([y.mean()]),
                                _target_scale=np.array([y.std()]), verbose=0)
    monkeypatch.setattr(selection, "cross_check",
                        lambda *a, **k: selection.CrossCheck(0.01, 1.0, "squared_error"))
    assert selection.cross_checked_cart(est, X, X, Y, np.ones(y.size), classification=False,
                                        max_depth=3, seed=0,
                                        decision=lambda Xs: np.full(len(Xs), y.mean())) is None


def test_validation_check_applies_above_the_cross_check_only_outside_checks(monkeypatch):
    n = selection.CROSS_CHECK_MAX_ROWS
    assert not selection.validation_check_applies(n)
    assert selection.validation_check_applies(n + 1)
    with internal_fit():
        assert not selection.validation_check_applies(n + 1)
    monkeypatch.setattr(selection, "CROSS_CHECK_MAX_ROWS", 10)
    assert selection.validation_check_applies(11) and not selection.cross_check_applies(11)


FAMILIES = ["DGT", "LatentTree", "NonGreedyObliqueTree", "TreeEnsembleLayer",
            "ConvexPolytopeTree"]


def _make(family, task, **params):
    suffix = "Regressor" if task == "regression" else "Classifier"
    return getattr(sd, family + suffix)(random_state=0, max_iter=3, **params)


def _data(task):
    X, y = _thresholds(400)
    if task == "binary":
        return X, np.where(y == 2, "high", "low")  # string labels: classes_ maps the codes
    return X, (y if task == "classification" else y * 10.0 + 100.0)


def _record(monkeypatch, result):
    """Replace the core's validation_check: record its arguments and the
    model's output, return ``result``."""
    calls = []

    def fake(est, decision, X, Z, Y, w, tr, va, **kwargs):
        calls.append(dict(out=np.asarray(decision(X)), X=X, Y=Y, tr=tr, va=va, **kwargs))
        return result

    monkeypatch.setattr(selection, "validation_check", fake)
    monkeypatch.setattr(selection, "CROSS_CHECK_MAX_ROWS", 100)
    return calls


@pytest.mark.parametrize("task", ["classification", "binary", "regression"])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_checks_the_model_it_returns(monkeypatch, family, task):
    """Each family hands the check its fitted model's output on every fit
    row and its own validation split: where the CART does not win, the
    returned model predicts exactly what was checked."""
    calls = _record(monkeypatch, selection.CrossCheck(0.0, -np.inf, "gini"))
    X, y = _data(task)
    est = fit_quiet(_make(family, task), X, y)
    assert len(calls) == 1  # (the greedy floor may have replaced the model before)
    call = calls[0]
    np.testing.assert_array_equal(call["X"], X)  # no zero weights: every row, in order
    tr, va = call["tr"], call["va"]
    assert va.size == pytest.approx(0.1 * y.size, abs=1) if family != "ConvexPolytopeTree" \
        else va.size > 0
    np.testing.assert_array_equal(np.sort(np.concatenate([tr, va])), np.arange(y.size))
    if task != "regression":
        np.testing.assert_array_equal(est.classes_[call["out"].argmax(1)], est.predict(X))
        np.testing.assert_array_equal(est.classes_[call["Y"]], y)
    else:
        np.testing.assert_allclose(np.ravel(call["out"]), est.predict(X), rtol=1e-9)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_checked_rows_are_the_fit_rows_of_positive_weight(monkeypatch, family):
    """Rows of zero weight are not in the data: the check sees the others, in
    order, and its training and validation positions cover exactly them."""
    calls = _record(monkeypatch, selection.CrossCheck(0.0, -np.inf, "gini"))
    X, y = _data("classification")
    sw = np.ones(y.size)
    sw[::7] = 0.0
    est = _make(family, "classification")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, sample_weight=sw)
    (call,) = calls
    np.testing.assert_array_equal(call["X"], X[sw > 0])
    np.testing.assert_array_equal(np.sort(np.concatenate([call["tr"], call["va"]])),
                                  np.arange(int((sw > 0).sum())))
    np.testing.assert_array_equal(est.classes_[call["out"].argmax(1)], est.predict(X[sw > 0]))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_cart_that_wins_on_the_validation_rows_is_returned(monkeypatch, family):
    _record(monkeypatch, selection.CrossCheck(1.0, np.inf, "gini"))
    X, y = _data("classification")
    est = fit_quiet(_make(family, "classification"), X, y)
    assert est.greedy_fallback_
    # The CART of two thresholds, grown on every fit row, is exact here.
    assert est.score(X, y) == 1.0


@pytest.mark.parametrize("family", FAMILIES)
def test_no_validation_check_without_validation_rows_or_inside_a_check(monkeypatch, family):
    calls = _record(monkeypatch, selection.CrossCheck(1.0, np.inf, "gini"))
    X, y = _data("classification")
    if family != "ConvexPolytopeTree":  # its max_depth="auto" holds rows out regardless
        fit_quiet(_make(family, "classification", early_stopping=False), X, y)
    with internal_fit():
        fit_quiet(_make(family, "classification"), X, y)
    assert calls == []


def test_forest_members_are_not_checked(monkeypatch):
    calls = _record(monkeypatch, selection.CrossCheck(1.0, np.inf, "gini"))
    X, y = _data("classification")
    fit_quiet(sd.DGTForestClassifier(n_estimators=2, max_iter=2, random_state=0), X, y)
    assert calls == []
