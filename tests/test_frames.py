"""DataFrame inputs across every public estimator: pandas nullable and
pyarrow-backed dtypes, category columns, polars frames and Series, targets
of every pandas dtype, feature names and the user's frame left as it was.

The shared input handling (``_core/validation.py``, ``_core/categorical.py``,
``_core/frames.py``) reads them all; each refusal is a ``ValueError`` that
names the problem (scikit-learn's ``DecisionTreeClassifier`` raises on the
same inputs, or accepts them where these tests fit). polars and pyarrow are
optional: their tests skip without them.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier

import sklearn_difftrees as sd

pd = pytest.importorskip("pandas")

from _inputs import _quiet  # noqa: E402

SUPERVISED = [
    sd.DGTClassifier, sd.DGTRegressor, sd.DGTForestClassifier, sd.DGTForestRegressor,
    sd.DGTBanditClassifier, sd.DGTBanditRegressor, sd.LatentTreeClassifier,
    sd.LatentTreeRegressor, sd.NonGreedyObliqueTreeClassifier,
    sd.NonGreedyObliqueTreeRegressor, sd.TreeEnsembleLayerClassifier,
    sd.TreeEnsembleLayerRegressor, sd.ConvexPolytopeTreeClassifier,
    sd.ConvexPolytopeTreeRegressor,
]
#: One of each family (and the forest): the slower checks.
FAMILIES = [sd.DGTClassifier, sd.DGTForestClassifier, sd.LatentTreeClassifier,
            sd.NonGreedyObliqueTreeClassifier, sd.TreeEnsembleLayerRegressor,
            sd.ConvexPolytopeTreeClassifier]


def _make(cls, **params):
    names = cls().get_params()
    fast = {k: v for k, v in dict(max_iter=2, max_depth=2, n_estimators=2,
                                   random_state=0).items() if k in names}
    return cls(**{**fast, **params})


def _fit(est, X, y, **kw):
    return _quiet(est.fit, X, y, **kw)


def _output(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


def _numeric(n=90, seed=0):
    """``(frame, float array, y_class, y_reg)``: a float, an Int64 (3 values:
    "auto" gives it indicators), a boolean and a numpy bool column."""
    rng = np.random.RandomState(seed)
    a, k = rng.randn(n), rng.randint(0, 3, n)
    frame = pd.DataFrame({"a": pd.array(a, dtype="Float64"), "k": pd.array(k, dtype="Int64"),
                          "f": pd.array(a > 0.3, dtype="boolean"), "b": rng.rand(n) > 0.5})
    X = np.c_[a, k, a > 0.3, frame["b"]].astype(np.float64)
    return frame, X, ((a > 0) ^ (k == 1)).astype(int), a + k


def _colours(n=90, seed=0):
    """``(frame, y)``: a float column and a category column of strings."""
    rng = np.random.RandomState(seed)
    a = rng.randn(n)
    colour = np.array(["red", "green", "blue"])[np.arange(n) % 3]
    frame = pd.DataFrame({"a": a, "colour": pd.Categorical(colour)})
    return frame, ((colour == "red") ^ (a > 0)).astype(int)


# ------------------------------------------------- 1. nullable and bool dtypes
@pytest.mark.parametrize("cls", SUPERVISED)
def test_nullable_columns_fit_as_their_float_equivalent(cls):
    frame, X, y_class, y_reg = _numeric()
    y = y_class if is_classifier(cls()) else y_reg
    est, ref = _fit(_make(cls), frame, y), _fit(_make(cls), X, y)
    assert list(est.feature_names_in_) == ["a", "k", "f", "b"]
    np.testing.assert_array_equal(_output(est, frame), _output(ref, X))
    if hasattr(ref, "is_categorical_"):
        assert est.is_categorical_.tolist() == ref.is_categorical_.tolist() == [
            False, True, False, False]


@pytest.mark.parametrize("dtype", ["Int64", "Float64", "boolean"])
@pytest.mark.parametrize("cls", FAMILIES)
def test_pd_na_in_a_nullable_column_is_refused_as_nan(cls, dtype):
    frame, _, y_class, y_reg = _numeric()
    y = y_class if is_classifier(cls()) else y_reg
    bad = frame.copy()
    column = {"Int64": "k", "Float64": "a", "boolean": "f"}[dtype]
    bad[column] = bad[column].astype(dtype)
    bad.loc[3, column] = pd.NA
    with pytest.raises(ValueError, match="Input X contains NaN"):
        _fit(_make(cls), bad, y)
    est = _fit(_make(cls), frame, y)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.predict(bad)


def test_pyarrow_backed_columns_fit_as_numpy():
    pytest.importorskip("pyarrow")
    frame, X, y, _ = _numeric()
    arrow = pd.DataFrame({"a": pd.array(X[:, 0], dtype="double[pyarrow]"),
                          "k": pd.array(X[:, 1].astype(int), dtype="int64[pyarrow]"),
                          "f": pd.array(X[:, 2] > 0, dtype="bool[pyarrow]"),
                          "b": X[:, 3]})
    est, ref = _fit(_make(sd.DGTClassifier), arrow, y), _fit(_make(sd.DGTClassifier), X, y)
    np.testing.assert_array_equal(est.predict_proba(arrow), ref.predict_proba(X))
    arrow.loc[2, "a"] = None
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.predict(arrow)
    # a category column of pyarrow strings is coded as one of Python strings
    colours, y = _colours()
    as_arrow = colours.assign(colour=colours.colour.astype("string[pyarrow]").astype("category"))
    est = _fit(_make(sd.ConvexPolytopeTreeClassifier), as_arrow, y)
    ref = _fit(_make(sd.ConvexPolytopeTreeClassifier), colours, y)
    np.testing.assert_array_equal(est.predict_proba(as_arrow), ref.predict_proba(colours))
    with pytest.raises(ValueError, match="'colour' of X holds strings"):
        _fit(_make(sd.DGTClassifier), colours.assign(
            colour=colours.colour.astype("string[pyarrow]")), y)


# ------------------------------------------------------------------ 2. targets
@pytest.mark.parametrize("cls", FAMILIES)
def test_targets_of_pandas_dtypes(cls):
    frame, X, y_class, y_reg = _numeric()
    if is_classifier(cls()):
        labels = np.array(["no", "yes"])[y_class]
        for y, ref_y in [(pd.Series(labels, dtype="string"), labels),
                         (pd.Series(labels, dtype="category"), labels),
                         (pd.Series(y_class, dtype="Int64"), y_class)]:
            est, ref = _fit(_make(cls), frame, y), _fit(_make(cls), X, ref_y)
            np.testing.assert_array_equal(est.classes_, ref.classes_)
            np.testing.assert_array_equal(est.predict(frame), ref.predict(X))
    else:
        est = _fit(_make(cls), frame, pd.Series(y_reg, dtype="Float64"))
        np.testing.assert_array_equal(est.predict(frame), _fit(_make(cls), X, y_reg).predict(X))


@pytest.mark.parametrize("cls", SUPERVISED)
def test_a_missing_label_is_refused_as_nan(cls):
    # pd.NA among strings raised "TypeError: boolean value of NA is
    # ambiguous", None among strings "'<' not supported between instances
    # of 'NoneType' and 'str'" (scikit-learn's own trees raise the same).
    frame, _, y_class, y_reg = _numeric()
    if is_classifier(cls()):
        labels = np.array(["no", "yes"])[y_class]
        bad = [pd.Series(labels, dtype="string"), pd.Series(labels, dtype="category"),
               pd.Series(y_class, dtype="Int64"), labels.astype(object), list(labels)]
    else:
        bad = [pd.Series(y_reg, dtype="Float64"), y_reg.astype(object)]
    for y in bad:
        y[3] = None
        with pytest.raises(ValueError, match="Input y contains NaN"):
            _fit(_make(cls), frame, y)


# ---------------------------------------------------------- 3. category columns
@pytest.mark.parametrize("cls", FAMILIES)
def test_category_columns_unseen_reordered_and_as_an_object_array(cls):
    frame, y = _colours()
    if not is_classifier(cls()):
        y = frame.a.to_numpy() + (frame.colour == "red")
    est = _fit(_make(cls), frame, y)
    coded = frame.assign(colour=frame.colour.cat.codes.astype(float))  # blue, green, red
    ref = _fit(_make(cls), coded, y)
    np.testing.assert_array_equal(_output(est, frame), _output(ref, coded))
    reordered = frame.assign(colour=frame.colour.cat.reorder_categories(
        ["red", "blue", "green"]))
    np.testing.assert_array_equal(_output(est, reordered), _output(est, frame))
    unseen = frame.head(4).assign(colour=pd.Categorical(["purple", "red", "blue", "x"]))
    np.testing.assert_array_equal(_output(est, unseen), _output(ref, coded.head(4).assign(
        colour=[-1.0, 2.0, 0.0, -1.0])))
    # df.to_numpy() of the training frame (object, strings): the same codes
    # (scikit-learn's warning that X has no feature names); it raised
    # "could not convert string to float: 'red'"
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        np.testing.assert_array_equal(est.predict(frame.to_numpy()), est.predict(frame))
    for value in (None, np.nan, pd.NA):  # pd.NA was coded as an unseen category
        missing = frame.to_numpy()[:3]
        missing[1, 1] = value
        with pytest.raises(ValueError, match="NaN in the category column 1"):
            _quiet(est.predict, missing)


def test_a_text_category_column_where_the_fit_had_numbers_is_named():
    # Fitted on the codes (an array, or int-named columns in another order),
    # predicting on the text column raised "could not convert string to
    # float: 'red'".
    frame, y = _colours()
    codes = frame.assign(colour=frame.colour.cat.codes.astype(float))
    est = _fit(_make(sd.DGTClassifier), codes.to_numpy(), y)
    with pytest.raises(ValueError, match="'colour' of X is a category column of non-numeric"):
        _quiet(est.predict, frame)
    by_int = frame.set_axis([0, 1], axis=1)  # int names: scikit-learn checks no names
    est = _fit(_make(sd.DGTClassifier), by_int, y)
    with pytest.raises(ValueError, match="Column 1 of X is a category column"):
        est.predict(by_int[[1, 0]])
    np.testing.assert_array_equal(est.predict(by_int), est.predict(frame.set_axis([0, 1],
                                                                                  axis=1)))


def test_numeric_category_columns_take_their_values():
    frame, y = _colours()
    numeric = frame.assign(colour=pd.Categorical(frame.colour.cat.codes * 10))
    est = _fit(_make(sd.DGTClassifier), numeric, y)
    assert est.categories_[1].tolist() == [0.0, 10.0, 20.0]
    values = numeric.assign(colour=numeric.colour.astype(float))
    np.testing.assert_array_equal(est.predict_proba(numeric),
                                  _fit(_make(sd.DGTClassifier), values, y).predict_proba(values))


def test_the_clusterer_names_a_column_it_cannot_read():
    # It codes no column: text and dates raised numpy's "could not convert
    # string to float" or DType promotion error (as KMeans does).
    frame, _ = _colours(40)
    with pytest.raises(ValueError, match="'colour' has non-numeric categories"):
        _quiet(_make(sd.LatentTreeClusterer).fit, frame)
    with pytest.raises(ValueError, match="'colour' of X holds strings .*: encode it first"):
        _quiet(_make(sd.LatentTreeClusterer).fit, frame.assign(colour=frame.colour.astype(str)))
    with pytest.raises(ValueError, match="'colour' of X holds dates"):
        _quiet(_make(sd.LatentTreeClusterer).fit, frame.assign(
            colour=pd.date_range("2020-01-01", periods=40)))


# ----------------------------------------------- 4. names, exports, no mutation
@pytest.mark.parametrize("cls", SUPERVISED)
def test_the_users_frame_is_not_modified(cls):
    frame, X, y_class, y_reg = _numeric()
    frame["colour"] = _colours()[0]["colour"]
    before, dtypes = frame.copy(), frame.dtypes.copy()
    est = _fit(_make(cls), frame, y_class if is_classifier(cls()) else y_reg)
    _output(est, frame)
    if hasattr(est, "apply"):
        est.apply(frame)
    pd.testing.assert_frame_equal(frame, before)
    pd.testing.assert_series_equal(frame.dtypes, dtypes)


def test_feature_names_reach_the_exports():
    pytest.importorskip("onnx")
    frame, X, y, _ = _numeric()
    est = _fit(_make(sd.DGTClassifier, max_depth=3, max_iter=20), frame, y)
    assert est.is_categorical_.tolist() == [False, True, False, False]
    text = sd.export_text(est)
    assert "feature_" not in text
    assert any(name in text for name in ["a", "[k==0]", "[k==1]", "[k==2]", "f", "b"])
    model = sd.to_onnx(est, frame.head(3))
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString())
    label, proba = session.run(None, {"X": X})
    np.testing.assert_allclose(proba, est.predict_proba(frame), atol=1e-6)


# ------------------------------------------------------------------- 5. polars
def _polars_colours(pl, dtype=None):
    frame, y = _colours()
    colour = pl.Series("colour", frame.colour.astype(str).to_numpy(),
                       dtype=pl.Categorical if dtype is None else dtype)
    return pl.DataFrame({"a": frame.a.to_numpy()}).with_columns(colour), frame, y


@pytest.mark.parametrize("cls", SUPERVISED + [sd.LatentTreeClusterer])
def test_polars_frames_and_series(cls):
    pl = pytest.importorskip("polars")
    _, X, y_class, y_reg = _numeric()
    frame = pl.DataFrame(X, schema=["a", "k", "f", "b"])
    y = y_class if is_classifier(cls()) else y_reg
    est = _quiet(_make(cls).fit, frame, pl.Series("y", y))
    ref = _quiet(_make(cls).fit, X, y)
    assert list(est.feature_names_in_) == ["a", "k", "f", "b"]
    assert est.n_features_in_ == 4
    np.testing.assert_array_equal(est.predict(frame), ref.predict(X))
    for other in (frame.select(["k", "a", "f", "b"]), frame.rename({"a": "z"})):
        with pytest.raises(ValueError, match="feature names should match"):
            est.predict(other)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        est.predict(X)


def test_polars_categorical_and_enum_columns_are_coded():
    # numpy's "could not convert string to float: 'blue'" (scikit-learn's
    # trees raise it too; a pandas category column was coded already).
    pl = pytest.importorskip("polars")
    frame, pandas_frame, y = _polars_colours(pl)
    est = _fit(_make(sd.DGTClassifier), frame, y)
    ref = _fit(_make(sd.DGTClassifier), pandas_frame, y)
    assert est.is_categorical_.tolist() == [False, True]
    np.testing.assert_array_equal(est.predict_proba(frame), ref.predict_proba(pandas_frame))
    strings = frame.with_columns(pl.col("colour").cast(pl.String))
    np.testing.assert_array_equal(est.predict(strings), est.predict(frame))
    unseen = frame.head(3).with_columns(pl.Series("colour", ["purple", "red", "blue"],
                                                  dtype=pl.Categorical))
    np.testing.assert_array_equal(est.predict_proba(unseen), ref.predict_proba(
        pandas_frame.head(3).assign(colour=pd.Categorical(["purple", "red", "blue"]))))
    with pytest.raises(ValueError, match="NaN in the category column 'colour'"):
        est.predict(unseen.with_columns(pl.Series("colour", [None, "red", "blue"],
                                                  dtype=pl.Categorical)))
    # an Enum codes its values in its declared order, as a pandas category
    # column with those categories
    order = ["red", "green", "blue"]
    enum, _, _ = _polars_colours(pl, pl.Enum(order))
    est = _fit(_make(sd.ConvexPolytopeTreeClassifier), enum, y)
    ordered = pandas_frame.assign(colour=pandas_frame.colour.cat.reorder_categories(order))
    ref = _fit(_make(sd.ConvexPolytopeTreeClassifier), ordered, y)
    np.testing.assert_array_equal(est.predict_proba(enum), ref.predict_proba(ordered))
    with pytest.raises(ValueError, match="ONNX graph takes numbers only"):
        sd.to_onnx(est, enum.head(2))
    with pytest.raises(ValueError, match="'colour' has non-numeric categories"):
        _quiet(_make(sd.LatentTreeClusterer).fit, enum)


def test_polars_text_dates_and_nulls_are_named():
    pl = pytest.importorskip("polars")
    frame, _, y = _polars_colours(pl, pl.String)
    with pytest.raises(ValueError, match="'colour' of X holds strings .* polars Categorical"):
        _fit(_make(sd.DGTClassifier), frame, y)
    dates = frame.with_columns(pl.Series("colour", np.arange(len(y)).astype("datetime64[D]")))
    with pytest.raises(ValueError, match="'colour' of X holds dates"):
        _fit(_make(sd.DGTClassifier), dates, y)
    nulls = frame.with_columns(pl.Series("colour", [None] + [1.0] * (len(y) - 1)))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        _fit(_make(sd.DGTClassifier), nulls, y)
    with pytest.raises(ValueError, match="Input y contains NaN"):
        _fit(_make(sd.DGTClassifier), nulls.with_columns(pl.lit(1.0).alias("colour")),
             pl.Series([None] + ["p"] * (len(y) - 1)))


def test_a_bandit_learning_online_codes_polars_categories():
    pl = pytest.importorskip("polars")
    frame, pandas_frame, y = _polars_colours(pl)
    est = sd.DGTBanditClassifier(classes=[0, 1], random_state=0)
    actions, propensities = est.sample_actions(frame, random_state=0)
    est.update(frame, actions, (actions != y).astype(float), propensities)
    ref = sd.DGTBanditClassifier(classes=[0, 1], random_state=0)
    actions, propensities = ref.sample_actions(pandas_frame, random_state=0)
    ref.update(pandas_frame, actions, (actions != y).astype(float), propensities)
    np.testing.assert_array_equal(est.predict_proba(frame), ref.predict_proba(pandas_frame))


def test_polars_frames_are_not_modified():
    pl = pytest.importorskip("polars")
    frame, _, y = _polars_colours(pl)
    before = frame.clone()
    est = _fit(_make(sd.DGTClassifier), frame, y)
    est.predict(frame)
    assert frame.equals(before) and frame.schema == before.schema
