"""Indicator columns of categorical features (``categorical_features``)."""

import pickle

import numpy as np
import pandas as pd
import pytest

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTClassifier,
    DGTForestClassifier,
    DGTRegressor,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
    export_text,
)
from sklearn_difftrees._core.categorical import (
    AUTO_MAX_CATEGORIES,
    expand_indicators,
    fit_indicators,
    indicator_names,
    indicator_spec,
    term_spread,
)

# Every family with the parameter, at depth 1 and few epochs.
FAMILIES = {
    "DGT": lambda **kw: DGTClassifier(max_depth=1, max_iter=60, **kw),
    "LatentTree": lambda **kw: LatentTreeClassifier(max_depth=1, max_iter=60, **kw),
    "NonGreedy": lambda **kw: NonGreedyObliqueTreeClassifier(max_depth=1, max_iter=30, **kw),
    "CPT": lambda **kw: ConvexPolytopeTreeClassifier(max_depth=1, max_iter=5, **kw),
    "TEL": lambda **kw: TreeEnsembleLayerClassifier(max_depth=1, max_iter=60, **kw),
}


def _codes(n=300, seed=0):
    """Three columns of codes 0/1/2 and one continuous; the class is
    ``x0 == 1``: one indicator split, but no single hyperplane of x."""
    rng = np.random.RandomState(seed)
    X = np.column_stack([rng.randint(0, 3, size=(n, 3)), rng.normal(size=n)]).astype(float)
    return X, (X[:, 0] == 1).astype(int)


# ------------------------------------------------------------------ core helpers
def test_auto_picks_integer_columns_of_3_to_10_values():
    rng = np.random.RandomState(0)
    X = np.column_stack([
        rng.randint(0, 3, 50),                        # 3 codes: yes
        rng.randint(0, 2, 50),                        # binary: its own indicator
        rng.normal(size=50),                          # continuous: no
        rng.randint(0, AUTO_MAX_CATEGORIES, 200)[:50],  # up to 10 codes: yes
        np.arange(50) % (AUTO_MAX_CATEGORIES + 1),    # 11 values: no
        rng.randint(0, 3, 50) + 0.5,                  # 3 values, not integers: no
    ]).astype(float)
    mask, categories = fit_indicators("auto", X)
    np.testing.assert_array_equal(mask, [True, False, False, True, False, False])
    np.testing.assert_array_equal(categories[0], [0, 1, 2])
    assert categories[3].size == np.unique(X[:, 3]).size
    assert [c is None for c in categories] == [False, True, True, False, True, True]
    assert fit_indicators(None, X)[0].sum() == 0


def test_explicit_columns_by_index_mask_and_name():
    X = np.column_stack([np.arange(12) % 3, np.arange(12) % 4 + 0.5, np.arange(12)])
    assert fit_indicators([1], X)[0].tolist() == [False, True, False]
    assert fit_indicators([False, True, True], X)[0].tolist() == [False, True, True]
    names = np.array(["a", "b", "c"], dtype=object)
    assert fit_indicators(["c"], X, names)[0].tolist() == [False, False, True]
    assert fit_indicators([], X)[0].sum() == 0


@pytest.mark.parametrize("spec, match", [
    ([3], r"indices must be in \[0, 2\]"),
    ([True, False], "boolean mask must have 3"),
    (["a"], "has none"),
    ([[0, 1]], "1-D"),
    ([0.5], "dtype"),
])
def test_explicit_columns_errors(spec, match):
    X = np.zeros((6, 3))
    with pytest.raises(ValueError, match=match):
        fit_indicators(spec, X)


def test_too_many_categories_for_an_explicit_column():
    X = np.arange(600, dtype=float)[:, None]
    with pytest.raises(ValueError, match="more than 255"):
        fit_indicators([0], X)


def test_expand_names_and_fold_agree():
    X = np.array([[0.0, 5.0], [1.0, 5.0], [2.0, 7.0], [9.0, 5.0]])
    spec = [(0, np.array([0.0, 1.0, 2.0]))]
    Z = expand_indicators(X, spec)
    np.testing.assert_array_equal(Z[:, :2], X)
    # the unseen value 9 sets no indicator
    np.testing.assert_array_equal(Z[:, 2:], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert indicator_names(["a", "b"], spec) == ["a", "b", "[a==0]", "[a==1]", "[a==2]"]
    assert expand_indicators(X, []) is X


# ------------------------------------------------------------------ estimators
@pytest.mark.parametrize("name", FAMILIES)
def test_indicators_let_a_depth_1_tree_isolate_a_middle_code(name):
    X, y = _codes()
    est = FAMILIES[name](random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.is_categorical_, [True, True, True, False])
    assert len(est.categories_) == 4 and est.categories_[3] is None
    assert est.score(X, y) >= 0.95
    imp = est.feature_importances_ if hasattr(est, "feature_importances_") else None
    if imp is not None:
        assert imp.shape == (4,) and np.isclose(imp.sum(), 1.0)


@pytest.mark.parametrize("name", ["DGT", "NonGreedy"])
def test_without_indicators_a_depth_1_hard_tree_cannot(name):
    X, y = _codes()
    est = FAMILIES[name](random_state=0, categorical_features=None).fit(X, y)
    assert not est.is_categorical_.any() and est.categories_ == [None] * 4
    assert est.score(X, y) <= 0.8  # one hyperplane: at best 2 of the 3 codes right


def test_unseen_code_predicts_and_input_is_not_modified():
    X, y = _codes()
    est = DGTClassifier(max_depth=2, max_iter=5, random_state=0).fit(X, y)
    X_new = X[:5].copy()
    X_new[:, 0] = 7.0  # a code never seen in training
    before = X_new.copy()
    proba = est.predict_proba(X_new)
    assert np.isfinite(proba).all()
    np.testing.assert_array_equal(X_new, before)


def test_export_text_names_the_indicator_columns():
    X, y = _codes()
    est = DGTClassifier(max_depth=1, max_iter=60, random_state=0).fit(X, y)
    text = export_text(est, feature_names=["a", "b", "c", "d"])
    assert "[a==1]" in text


def test_dataframe_column_names_choose_the_columns():
    pd = pytest.importorskip("pandas")
    X, y = _codes()
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    est = DGTClassifier(max_depth=1, max_iter=5, random_state=0,
                        categorical_features=["b"]).fit(df, y)
    np.testing.assert_array_equal(est.is_categorical_, [False, True, False, False])
    assert est.predict(df).shape == (300,)


def test_auto_takes_pandas_category_columns_of_any_size():
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    codes = rng.randint(0, 12, 300)  # 12 values: more than "auto" takes from numbers
    df = pd.DataFrame({"c": pd.Categorical(codes), "n": codes.astype(float)})
    y = (codes % 3 == 0).astype(int)
    est = DGTClassifier(max_depth=1, max_iter=3, random_state=0).fit(df, y)
    np.testing.assert_array_equal(est.is_categorical_, [True, False])
    assert est.categories_[0].size == 12
    assert est.predict(df).shape == (300,)


@pytest.mark.parametrize("frame", [False, True])
def test_forest_adds_the_columns_once_and_members_take_the_forests_input(frame):
    """The members train on the 4 + 9 columns the forest expands once, then
    take the forest's X (as scikit-learn's forests' members do): their
    probabilities average to the forest's, their importances fold onto the 4
    features, and a clone refits with the forest's categorical handling."""
    import warnings

    from sklearn.base import clone

    X, y = _codes(n=200)
    if frame:
        X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    # subtree_depth=0: the forest's output is its members' (the subtrees
    # below their leaves split the same expanded columns; test_forest_subtrees)
    forest = DGTForestClassifier(n_estimators=3, max_depth=1, max_iter=20, subtree_depth=0,
                                 random_state=0).fit(X, y)
    assert forest.is_categorical_.sum() == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no feature-name warning with a frame
        members = [m.predict_proba(X) for m in forest.estimators_]
    np.testing.assert_allclose(np.mean(members, axis=0), forest.predict_proba(X), atol=1e-12)
    for member in forest.estimators_:
        assert member.categorical_features == "auto" and member.n_features_in_ == 4
        assert member.tree_.weights.shape[1] == 4 + 9
        assert member.feature_importances_.shape == (4,)
    np.testing.assert_array_equal(forest.estimators_[0].apply(X), forest.apply(X)[:, 0])
    assert forest.feature_importances_.shape == (4,)
    assert clone(forest.estimators_[0]).fit(X, y).is_categorical_.sum() == 3


def test_warm_start_keeps_the_first_fits_columns():
    X, y = _codes()
    est = DGTRegressor(max_depth=2, max_iter=3, warm_start=True, random_state=0)
    est.fit(X, y.astype(float))
    categories = [c.copy() for c in est.categories_[:3]]
    X2 = X.copy()
    X2[:10, 0] = 5.0  # a new code: the continuation keeps the first fit's columns
    est.fit(X2, y.astype(float))
    for a, b in zip(categories, est.categories_[:3]):
        np.testing.assert_array_equal(a, b)


def test_memory_limit_names_the_parameter(monkeypatch):
    from sklearn_difftrees._core._memory import MemoryLimitError

    X, y = _codes()
    monkeypatch.setenv("SKLEARN_DIFFTREES_MAX_MEMORY", "20KiB")  # the raw X fits, 4x not
    with pytest.raises(MemoryLimitError, match="categorical_features='auto' .9 indicator"):
        DGTClassifier(max_depth=1, max_iter=1).fit(X, y)


def test_pickled_model_predicts_the_same():
    X, y = _codes()
    est = LatentTreeClassifier(max_depth=2, max_iter=5, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict_proba(X), est.predict_proba(X))


@pytest.mark.parametrize("name", FAMILIES)
def test_onnx_graph_builds_the_indicator_columns(name):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from sklearn_difftrees import to_onnx

    X, y = _codes()
    est = FAMILIES[name](random_state=0).fit(X, y)
    X_new = X[:40].copy()
    X_new[:3, 0] = 7.0  # unseen code
    model = to_onnx(est, X_new)
    sess = ort.InferenceSession(model.SerializeToString())
    outputs = sess.run(None, {"X": X_new})
    np.testing.assert_array_equal(outputs[0], est.predict(X_new))
    np.testing.assert_allclose(outputs[1], est.predict_proba(X_new), rtol=1e-5, atol=1e-6)


def test_zero_weight_rows_add_no_categories():
    """Zero-weight rows are not in the data: a code only they hold gets no
    indicator column (nor pushes a feature past 10 values), and the fit equals
    the fit without those rows."""
    X, y = _codes(n=200)
    X[:3, 1] = 5.0  # a fourth code of feature 1, only in the zero-weight rows
    X[3:6, 2] = np.arange(3, 6)  # codes 3..5 of feature 2
    w = np.ones(200)
    w[:6] = 0.0
    params = dict(max_depth=2, max_iter=5, random_state=0)
    weighted = DGTClassifier(**params).fit(X, y, sample_weight=w)
    ref = DGTClassifier(**params).fit(X[6:], y[6:])
    np.testing.assert_array_equal(weighted.categories_[1], [0, 1, 2])
    assert [c is None for c in weighted.categories_] == [False, False, False, True]
    assert [c is None for c in ref.categories_] == [False, False, False, True]
    np.testing.assert_array_equal(weighted.tree_.weights, ref.tree_.weights)
    np.testing.assert_array_equal(weighted.predict_proba(X), ref.predict_proba(X))


def test_indicator_names_keep_every_digit():
    spec = [(0, np.array([1234567.0, 1234568.0, 2.5])), (1, np.array([0.1234567, 0.1234568, 0.0]))]
    names = indicator_names(["a", "b"], spec)
    assert names[2:] == ["[a==1234567]", "[a==1234568]", "[a==2.5]",
                         "[b==0.1234567]", "[b==0.1234568]", "[b==0]"]


@pytest.mark.parametrize("fit_dtype", [np.float64, np.float32])
def test_float32_and_float64_input_set_the_same_indicators(fit_dtype):
    """Codes 0.1/0.2/0.3 named explicitly: float32 0.1 is not float64 0.1, and
    a model fit in one precision set no indicator for input in the other
    (accuracy 1.0 -> 0.68 on the same rows). Python and ONNX agree."""
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.choice([0.1, 0.2, 0.3], 200), rng.normal(size=200)])
    y = (X[:, 0] == 0.2).astype(int)
    est = DGTClassifier(max_depth=1, max_iter=60, random_state=0,
                        categorical_features=[0]).fit(X.astype(fit_dtype), y)
    ref = est.predict_proba(X.astype(fit_dtype))
    for dtype in (np.float64, np.float32):
        np.testing.assert_allclose(est.predict_proba(X.astype(dtype)), ref, rtol=1e-5, atol=1e-6)
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from sklearn_difftrees import to_onnx

    for dtype in (np.float64, np.float32):
        sess = ort.InferenceSession(to_onnx(est, X[:5].astype(dtype)).SerializeToString())
        np.testing.assert_allclose(sess.run(None, {"X": X.astype(dtype)})[1], ref,
                                   rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ importances
def _weighted_std(t, w):
    mean = np.average(t, weights=w)
    return np.sqrt(np.average((t - mean) ** 2, weights=w))


@pytest.mark.parametrize("name", ["DGT", "CPT"])
def test_term_spread_is_the_spread_of_each_feature_term_over_the_fit_rows(name):
    """Oracle: the standard deviation, over the (weighted) training rows, of
    each input feature's part of every split's linear score, computed on
    the expanded rows themselves; a feature with indicator columns counts
    them with its own column (a two-valued one has none: its own column is
    its indicator)."""
    rng = np.random.RandomState(0)
    n = 400
    X = np.column_stack([rng.randint(0, 5, n), rng.randint(0, 2, n) * 3.0 + 1.0,
                         rng.normal(size=n), rng.randint(0, 4, n)]).astype(float)
    y = ((X[:, 0] == 2) ^ (X[:, 2] > 0)).astype(int)
    w = rng.uniform(0.5, 2.0, n)
    est = FAMILIES[name](random_state=0, categorical_features=[0, 1, 3]).fit(
        X, y, sample_weight=w)
    assert [v.size for j, v in indicator_spec(est)] == [5, 4]  # two values: none
    Z = expand_indicators(X, indicator_spec(est))
    columns = {0: [0, 4, 5, 6, 7, 8], 1: [1], 2: [2], 3: [3, 9, 10, 11, 12]}
    if name == "DGT":
        coef = est.tree_.weights
    else:
        coef = est.tree_.facet_coef
    assert coef.shape[1] == Z.shape[1] and np.abs(coef).sum() > 0
    got = term_spread(est, coef)
    expected = np.array([[_weighted_std(Z[:, cols] @ row[cols], w) for j, cols in columns.items()]
                         for row in coef])
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())


def test_a_noise_category_is_not_ranked_by_its_number_of_indicators():
    """Its importance is its term's spread, at most the sum of its columns'
    ``|w| * std`` (the standard deviation of a sum is at most the sum of
    theirs), which importances added before: an 8-valued noise column then
    ranked first on pima's rows."""
    from sklearn_difftrees.datasets import load_dataset

    X, y = load_dataset("pima", return_X_y=True)
    rng = np.random.RandomState(0)
    X = np.column_stack([X, rng.randint(0, 8, len(X))]).astype(float)
    # Oblique splits whatever the machine: no greedy floor or cross-check (a
    # CART in their place would give the noise column no weight at all).
    est = DGTClassifier(max_depth=3, max_iter=30, init="random", greedy_floor=False,
                        random_state=0).fit(X, y)
    assert est.is_categorical_.tolist() == [False] * 8 + [True]
    W, scale = est.tree_.weights, est._feature_scale
    summed = np.abs(W[:, 8]) * scale[8] + np.abs(W[:, 9:]) @ scale[9:]
    spread = term_spread(est, W)[:, 8]
    assert np.all(spread <= summed + 1e-12) and spread.sum() < summed.sum()


def test_a_polytope_tree_pickled_before_it_kept_its_means_still_has_importances():
    X, y = _codes()
    est = FAMILIES["CPT"](random_state=0).fit(X, y)
    state = est.__getstate__()
    del state["_feature_mean"]  # what such a pickle holds
    old = type(est).__new__(type(est))
    old.__setstate__(state)
    imp = old.feature_importances_  # the indicators' |w| * std summed, as then
    assert imp.shape == (4,) and np.isclose(imp.sum(), 1.0)


@pytest.mark.parametrize("frame", ["object", "string", "datetime", "timedelta"])
def test_unreadable_frame_columns_are_refused_by_name(frame):
    """Strings outside a category column, dates and durations: a clear error
    naming the column, at fit and at predict (scikit-learn's validation
    said "could not convert string to float" or a DType promotion error)."""
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60)})
    y = (X.a > 0).astype(int).to_numpy()
    bad = {"object": rng.choice(["red", "blue"], 60).astype(object),
           "string": pd.array(rng.choice(["red", "blue"], 60), dtype="string"),
           "datetime": pd.date_range("2020-01-01", periods=60),
           "timedelta": pd.to_timedelta(np.arange(60), unit="D")}[frame]
    est = FAMILIES["NonGreedy"](random_state=0)
    match = "'colour' of X holds " + ("dates" if "time" in frame else "strings")
    with pytest.raises(ValueError, match=match):
        est.fit(X.assign(colour=bad), y)
    est.fit(X.assign(colour=0.0), y)
    with pytest.raises(ValueError, match=match):
        est.predict(X.assign(colour=bad))


def test_an_object_column_of_numbers_is_still_read_as_numbers():
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60).astype(object)})
    y = (X.a > 0).astype(int).to_numpy()
    est = FAMILIES["NonGreedy"](random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), est.predict(X.astype(float)))
