"""Property-based tests (hypothesis) over every public estimator and torch layer.

The property: whatever the input (shape, dtype, layout, NaN / inf, constant
or duplicated columns, extreme scales, one class, pandas frames (also of
nullable ``Float64``), polars frames where polars is installed, sparse
matrices), ``fit`` either raises a documented exception with a message
(:class:`ValueError` -- including the package's ``MemoryLimitError`` --,
:class:`TypeError` for sparse input, :class:`FloatingPointError` for
divergence) or returns a model whose predictions are finite and valid
(right shape, labels among ``classes_``, probabilities summing to one). It
never crashes the process and never hands back a model that predicts NaN.

Profiles (registered in ``tests/conftest.py``): ``ci`` (default) runs a few
derandomized examples per estimator; ``HYPOTHESIS_PROFILE=deep`` runs many
more, random ones.
"""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from scipy import sparse

import sklearn_difftrees as sd

pd = pytest.importorskip("pandas")
try:  # optional: polars frames are generated where it is installed
    import polars as pl
except ImportError:  # pragma: no cover - polars is not a test dependency
    pl = None

#: The layouts of the generated inputs ("nullable": pandas Float64, NaN as pd.NA).
LAYOUTS = ["c", "readonly", "fortran", "strided", "pandas", "nullable", "sparse"] + (
    ["polars"] if pl is not None else [])

TINY = dict(random_state=0)
TRAIN = dict(max_iter=2, **TINY)

ESTIMATORS = {
    "DGTClassifier": lambda: sd.DGTClassifier(max_depth=2, **TRAIN),
    "DGTRegressor": lambda: sd.DGTRegressor(max_depth=2, **TRAIN),
    "DGTForestClassifier": lambda: sd.DGTForestClassifier(n_estimators=2, max_depth=2, **TRAIN),
    "DGTForestRegressor": lambda: sd.DGTForestRegressor(n_estimators=2, max_depth=2, **TRAIN),
    "DGTBanditClassifier": lambda: sd.DGTBanditClassifier(max_depth=2, n_passes=1, **TINY),
    "DGTBanditRegressor": lambda: sd.DGTBanditRegressor(max_depth=2, n_passes=1, **TINY),
    "LatentTreeClassifier": lambda: sd.LatentTreeClassifier(max_depth=2, **TRAIN),
    "LatentTreeRegressor": lambda: sd.LatentTreeRegressor(max_depth=2, **TRAIN),
    "LatentTreeClusterer": lambda: sd.LatentTreeClusterer(max_depth=2, **TRAIN),
    "NonGreedyObliqueTreeClassifier": lambda: sd.NonGreedyObliqueTreeClassifier(
        max_depth=2, **TRAIN),
    "NonGreedyObliqueTreeRegressor": lambda: sd.NonGreedyObliqueTreeRegressor(
        max_depth=2, **TRAIN),
    "TreeEnsembleLayerClassifier": lambda: sd.TreeEnsembleLayerClassifier(
        n_trees=2, max_depth=2, **TRAIN),
    "TreeEnsembleLayerRegressor": lambda: sd.TreeEnsembleLayerRegressor(
        n_trees=2, max_depth=2, **TRAIN),
    "ConvexPolytopeTreeClassifier": lambda: sd.ConvexPolytopeTreeClassifier(
        max_depth=2, growth_max_iter=2, **TRAIN),
    "ConvexPolytopeTreeRegressor": lambda: sd.ConvexPolytopeTreeRegressor(
        max_depth=2, growth_max_iter=2, **TRAIN),
}

#: What ``fit`` may raise on bad input (MemoryLimitError is a ValueError).
DOCUMENTED = (ValueError, TypeError, FloatingPointError)


@st.composite
def tables(draw):
    """``(X, y_class, y_reg, layout)``: a random table and its two targets."""
    n = draw(st.integers(1, 24))
    p = draw(st.integers(1, 6))
    rng = np.random.RandomState(draw(st.integers(0, 2**16)))
    X = rng.randn(n, p)
    if draw(st.booleans()):  # constant columns
        X[:, draw(st.integers(0, p - 1))] = draw(st.sampled_from([0.0, 1.0, -3e5]))
    if n > 1 and draw(st.booleans()):  # duplicated rows
        X[n // 2 :] = X[: n - n // 2]
    X = X * 10.0 ** draw(st.sampled_from([0, 0, -150, -20, 20, 150]))
    if draw(st.integers(0, 5)) == 0:  # NaN / inf somewhere
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, p - 1))] = draw(
            st.sampled_from([np.nan, np.inf, -np.inf]))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
    with np.errstate(over="ignore", invalid="ignore"):
        X = X.astype(dtype)
    n_classes = draw(st.integers(1, 3))
    y_class = np.arange(n) % n_classes
    rng.shuffle(y_class)
    if draw(st.booleans()):
        y_class = np.array(["a", "b", "c"])[y_class]
    y_reg = rng.randn(n) * 10.0 ** draw(st.sampled_from([0, -100, 100]))
    layout = draw(st.sampled_from(LAYOUTS))
    return X, y_class, y_reg, layout


def _lay_out(X, layout):
    if layout == "readonly":
        X = X.copy()
        X.setflags(write=False)
    elif layout == "fortran":
        X = np.asfortranarray(X)
    elif layout == "strided":
        X = np.repeat(X, 2, axis=1)[:, ::2]
    elif layout in ("pandas", "nullable"):
        X = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
        if layout == "nullable":
            X = X.astype("Float64")  # NaN becomes pd.NA
    elif layout == "polars":
        X = pl.DataFrame(X, schema=[f"f{j}" for j in range(X.shape[1])])
    elif layout == "sparse":
        X = sparse.csr_matrix(X)
    return X


def _check_model(est, X, Xin, y):
    """Predictions of a fitted model are finite and valid."""
    n = X.shape[0]
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(Xin)
        assert proba.shape == (n, len(est.classes_))
        assert np.isfinite(proba).all()
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    pred = est.predict(Xin)
    assert pred.shape[0] == n
    if hasattr(est, "classes_"):
        assert np.isin(pred, est.classes_).all()
        # Labels never seen in training are scored, not crashed on.
        est.score(Xin, np.full(n, "unseen") if y.dtype.kind == "U" else np.full(n, 99))
    else:
        assert np.isfinite(np.asarray(pred, dtype=float)).all()
    # Fresh rows at the training scale.
    fresh = np.random.RandomState(1).randn(3, X.shape[1]) * (np.abs(X).max() + 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = est.predict(fresh)
    if not hasattr(est, "classes_"):
        assert np.isfinite(np.asarray(out, dtype=float)).all()


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=tables())
def test_estimators_fail_clearly_or_predict_finite(name, data):
    X, y_class, y_reg, layout = data
    est = ESTIMATORS[name]()
    is_clf = name.endswith("Classifier")
    y = y_class if is_clf else y_reg
    Xin = _lay_out(X, layout)
    event(f"layout {layout}")
    Xin_before = Xin.copy() if hasattr(Xin, "copy") else Xin
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name == "LatentTreeClusterer":
                est.fit(Xin)
            else:
                est.fit(Xin, y)
    except DOCUMENTED as exc:
        assert str(exc), "an exception without a message"
        event(f"raised {type(exc).__name__}")
        return
    finally:
        # The user's array or frame is never modified.
        if layout in ("pandas", "nullable", "polars"):
            assert Xin.equals(Xin_before)
            assert list(Xin.dtypes) == list(Xin_before.dtypes)
        elif layout != "sparse":
            np.testing.assert_array_equal(Xin, Xin_before)
    assert np.isfinite(np.asarray(X, dtype=float)).all(), "fit accepted NaN / inf"
    event("fitted")
    if name == "LatentTreeClusterer":
        assert est.predict(Xin).shape == (X.shape[0],)
        return
    _check_model(est, X, Xin, y)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 6),
    p=st.integers(1, 5),
    depth=st.integers(1, 4),
    backend=st.sampled_from(["conditional", "dense"]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    poison=st.sampled_from([None, float("nan"), float("inf")]),
    scale=st.sampled_from([1.0, 1e-30, 1e30]),
    shape=st.sampled_from(["ok", "1d", "3d", "wrong_width"]),
)
def test_torch_layers_fail_clearly_or_output_finite(n, p, depth, backend, dtype, poison,
                                                    scale, shape):
    torch.manual_seed(0)
    x = torch.randn(n, p, dtype=dtype) * scale
    if poison is not None and n:
        x[n // 2, p // 2] = poison
    if shape == "1d":
        x = x.reshape(-1)
    elif shape == "3d":
        x = x.reshape(1, n, p)
    elif shape == "wrong_width":
        x = torch.randn(n, p + 1, dtype=dtype)
    layers = [
        sd.TreeEnsembleLayer(p, 2, n_trees=2, depth=depth, backend=backend).to(dtype),
        sd.LatentTreeLayer(p, max_depth=depth).to(dtype),
    ]
    for layer in layers:
        x_in = x.clone().requires_grad_(True)
        try:
            out = layer(x_in)
        except ValueError as exc:
            assert str(exc)
            empty = n == 0 and isinstance(layer, sd.LatentTreeLayer)  # documented
            assert shape != "ok" or (poison is not None and n) or empty
            continue
        assert shape == "ok" and (poison is None or n == 0), "bad input accepted"
        assert torch.isfinite(out).all()
        if n and out.requires_grad:
            out.sum().backward()
            assert x_in.grad.shape == x_in.shape
