"""More input handling beyond tests/test_hardening.py: a refused
``warm_start`` fit loses nothing, bandit actions outside ``classes_``, memory
limits of huge hidden layers, the depth of a tree whose growth stopped early,
and what a new user's review found (huge batches, string category columns,
huge weights, LatentTree inputs near the float limit).

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
    # Another depth names the depth continued (as DGT's), other shapes the rest.
    match = "whose tree has depth 2; got max_depth=3" if "max_depth" in change else "other shapes"
    with pytest.raises(ValueError, match=f"warm_start=True continues the previous fit.*{match}"):
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


# ---------------------- 5. what a new user's review found (2026-11-26, each failed before)
@pytest.mark.parametrize("make", [
    lambda b: sd.DGTForestClassifier(n_estimators=2, batch_size=b, **FAST),
    lambda b: sd.ConvexPolytopeTreeClassifier(batch_size=b, **FAST),
])
def test_batch_larger_than_the_data_is_one_step(make):
    # The batched trainer sized its buffers by batch_size: 10**9 on 120 rows
    # was OOM-killed (23 GB); 10**12 asks torch for terabytes.
    X, _, y = _data()
    big = _quiet(make(10**12).fit, X, y)
    ref = _quiet(make(X.shape[0]).fit, X, y)
    np.testing.assert_array_equal(big.predict_proba(X), ref.predict_proba(X))


def _colour_frame(n=150, seed=0):
    rng = np.random.RandomState(seed)
    df = pd.DataFrame({"a": rng.randn(n),
                       "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n))})
    return df, ((df.colour == "red") ^ (df.a > 0)).astype(int).to_numpy()


@pytest.mark.parametrize("cls", [sd.NonGreedyObliqueTreeClassifier, sd.DGTClassifier])
def test_string_category_columns_are_coded(cls):
    # "could not convert string to float: 'red'" for a documented input.
    df, y = _colour_frame()
    before = df.copy()
    est = _quiet(cls(**FAST).fit, df, y)
    pd.testing.assert_frame_equal(df, before)  # the user's frame is untouched
    assert est.is_categorical_.tolist() == [False, True]
    as_object = df.assign(colour=df.colour.astype(object))
    np.testing.assert_array_equal(est.predict(as_object), est.predict(df))
    coded = df.assign(colour=df.colour.cat.codes.astype(float))
    ref = _quiet(cls(**FAST).fit, coded, y)  # the same model as on the codes
    np.testing.assert_array_equal(est.predict_proba(df), ref.predict_proba(coded))
    unseen = df.head(2).assign(colour=pd.Categorical(["purple", "red"]))
    np.testing.assert_array_equal(est.predict(unseen), ref.predict(
        coded.head(2).assign(colour=[-1.0, 2.0])))
    with pytest.raises(ValueError, match="NaN in the category column 'colour'"):
        est.predict(df.head(2).assign(colour=pd.Categorical([None, "red"])))
    with pytest.raises(ValueError, match="ONNX graph takes numbers only"):
        sd.to_onnx(est, df.head(2))


@pytest.mark.parametrize("cls", [sd.DGTClassifier, sd.LatentTreeClassifier,
                                 sd.TreeEnsembleLayerClassifier,
                                 sd.NonGreedyObliqueTreeClassifier,
                                 sd.ConvexPolytopeTreeClassifier, sd.DGTForestClassifier])
def test_huge_sample_weights_count_relative_to_each_other(cls):
    # Finite weights whose sum overflows: "diverged ... smaller learning_rate",
    # "at least one non-zero number", "contains infinity".
    X, _, y = _data()
    rng = np.random.RandomState(1)
    w = rng.rand(X.shape[0]) * 1e308 + 1e307
    params = dict(n_estimators=2) if cls is sd.DGTForestClassifier else {}
    huge = _quiet(cls(**params, **FAST).fit, X, y, sample_weight=w)
    ref = _quiet(cls(**params, **FAST).fit, X, y, sample_weight=w / w.max())
    np.testing.assert_array_equal(huge.predict_proba(X), ref.predict_proba(X))
    one = np.r_[1e308, np.ones(X.shape[0] - 1)]  # one row carries all the weight
    if cls is not sd.ConvexPolytopeTreeClassifier:  # its growth needs no validation rows
        with pytest.raises(ValueError, match="2 samples of positive weight"):
            _quiet(cls(**params, **FAST).fit, X, y, sample_weight=one)


@pytest.mark.parametrize("cls", [sd.LatentTreeClassifier, sd.LatentTreeRegressor])
def test_latent_tree_predictions_stay_finite_near_the_float_limit(cls):
    # predict_proba was NaN (predict: class 0), the regressor inf.
    X, y_reg, y_clf = _data()
    est = _quiet(cls(**FAST).fit, X, y_clf if is_classifier(cls()) else y_reg)
    Z = np.vstack([X[:3], np.full((2, X.shape[1]), 1.7e308), np.full((1, X.shape[1]), -1e300)])
    out = est.predict_proba(Z) if is_classifier(est) else est.predict(Z)
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[:3], (est.predict_proba(X[:3]) if is_classifier(est)
                                            else est.predict(X[:3])))
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    sess = ort.InferenceSession(sd.to_onnx(est, X[:2]).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    got = sess.run(None, {"X": Z})[-1]
    np.testing.assert_allclose(np.asarray(got).reshape(out.shape), out, rtol=1e-9, atol=1e-9)


def test_forest_max_samples_of_one_row_is_refused():
    X, _, y = _data()
    with pytest.raises(ValueError, match="max_samples=1 draws 1 row"):
        sd.DGTForestClassifier(max_samples=1, n_estimators=2, **FAST).fit(X, y)
