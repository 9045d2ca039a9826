"""ONNX export of scikit-learn Pipelines ending in an estimator of the package:
``to_onnx(pipeline, X_sample)`` converts the steps before the last with
skl2onnx and joins them to the last step's graph. onnxruntime reproduces the
Pipeline's predict / predict_proba for every supervised estimator, after a
scaler and after a ColumnTransformer with a OneHotEncoder on mixed columns.

Tolerances. With float64 input skl2onnx's steps compute in float64, like
scikit-learn's, and the last step's graph is the single-estimator export:
labels equal, probabilities and values to 1e-6 (``tests/test_onnx.py``;
measured: 0 for the hard trees, below 1e-14 for LatentTree and TEL). With
float32 input the steps compute in float32 (skl2onnx's ``Scaler``) while
scikit-learn's float32 ``StandardScaler`` computes in float64 and rounds:
the transformed features differ by a rounding of float32 (relative 6e-8),
and the smooth models' outputs by that times their slope (measured 1.3e-7
relative), hence rtol 1e-5. A hard split can send a row that close to it
the other way (measured: 4 of 150 vehicle rows share a value 6e-8 from a
split of a forest member), so the hard trees are compared, in float32, with
their own predict on skl2onnx's features.
"""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (FunctionTransformer, KBinsDiscretizer, OneHotEncoder,
                                   PolynomialFeatures, PowerTransformer, SplineTransformer,
                                   StandardScaler)

from sklearn_difftrees import to_onnx
from sklearn_difftrees._core import onnx_pipeline

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")
pd = pytest.importorskip("pandas")

from test_onnx import CASES  # noqa: E402  (every supervised estimator, small budgets)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def _feeds(X):
    """onnxruntime's inputs: ``X`` for an array, one (n, 1) column per input
    for a DataFrame (strings as object arrays)."""
    if hasattr(X, "columns"):
        return {c: X[[c]].to_numpy() for c in X.columns}
    return {"X": X}


def _fit(pipeline, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pipeline.fit(X, y)


def _assert_matches(pipeline, model, X, *, rtol=0.0, atol=1e-6):
    out = _run(model, _feeds(X))
    if is_classifier(pipeline):
        assert list(out) == ["label", "probabilities"]
        np.testing.assert_array_equal(out["label"], pipeline.predict(X))
        np.testing.assert_allclose(out["probabilities"], pipeline.predict_proba(X),
                                   rtol=rtol, atol=atol)
    else:
        assert list(out) == ["variable"]
        assert out["variable"].shape == pipeline.predict(X).shape
        np.testing.assert_allclose(out["variable"], pipeline.predict(X), rtol=rtol, atol=atol)


@pytest.fixture(scope="module")
def numeric(bundled):
    """vehicle (4 classes, string labels) and abalone (regression), float64."""
    Xc, yc = bundled("vehicle", n_max=500)
    Xr, yr = bundled("abalone", n_max=500)
    names = np.array(["bus", "opel", "saab", "van"], dtype=object)
    return {"clf": (Xc, names[np.searchsorted(np.unique(yc), yc)]), "reg": (Xr, yr)}


@pytest.fixture(scope="module")
def mixed(bundled):
    """abalone as a DataFrame of mixed columns: sex as strings, a length band
    as integers, the measurements as float64; targets: rings (regression) and
    an age class of strings (classification)."""
    X, rings = bundled("abalone", n_max=500)
    frame = pd.DataFrame(X[:, 3:], columns=["length", "diameter", "height", "whole",
                                            "shucked", "viscera", "shell"])
    frame.insert(0, "sex", np.array(["F", "I", "M"], dtype=object)[np.argmax(X[:, :3], axis=1)])
    frame.insert(1, "band", np.digitize(X[:, 3], [0.4, 0.55]).astype(np.int64))
    age = np.array(["young", "adult", "old"], dtype=object)[np.digitize(rings, [8, 11])]
    return frame, {"clf": age, "reg": rings}


def _column_transformer():
    return ColumnTransformer([
        ("num", StandardScaler(), ["length", "diameter", "height", "whole", "shucked"]),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "band"]),
    ], remainder="passthrough")  # viscera, shell as they are


@pytest.mark.parametrize("name", list(CASES))
def test_scaler_pipeline(name, numeric):
    cls, params = CASES[name]
    X, y = numeric["clf" if is_classifier(cls()) else "reg"]
    pipe = _fit(make_pipeline(StandardScaler(), cls(**params)), X[:350], y[:350])
    model = to_onnx(pipe, X[:2])
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["X"]
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    _assert_matches(pipe, model, X[350:])


@pytest.mark.parametrize("name", list(CASES))
def test_column_transformer_pipeline(name, mixed):
    cls, params = CASES[name]
    frame, targets = mixed
    y = targets["clf" if is_classifier(cls()) else "reg"]
    pipe = _fit(make_pipeline(_column_transformer(), cls(**params)), frame[:350], y[:350])
    model = to_onnx(pipe, frame[:2])
    inputs = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    assert list(inputs) == list(frame.columns)  # one input per column, typed after it
    assert (inputs["sex"], inputs["band"], inputs["length"]) == (
        onnx.TensorProto.STRING, onnx.TensorProto.INT64, onnx.TensorProto.DOUBLE)
    _assert_matches(pipe, model, frame[350:])
    if is_classifier(pipe):  # the labels are the classes' strings
        assert model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.STRING


@pytest.mark.parametrize("name", ["LatentTreeRegressor", "TreeEnsembleLayerClassifier",
                                  "DGTClassifier", "DGTForestClassifier"])
def test_float32_input(name, numeric):
    """float32 input: skl2onnx's steps compute in float32 (module docstring).
    Their features agree with scikit-learn's to float32 rounding; the last
    step's graph reproduces its predict on those features as in float64; the
    smooth models agree with the Pipeline itself to rtol 1e-5."""
    cls, params = CASES[name]
    X, y = numeric["clf" if is_classifier(cls()) else "reg"]
    X32 = X.astype(np.float32)
    pipe = _fit(make_pipeline(StandardScaler(), cls(**params)), X32[:350], y[:350])
    model = to_onnx(pipe, X32[:2])
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    (features,) = _run(skl2onnx.to_onnx(pipe[:-1], X32[:2], target_opset=17),
                       {"X": X32[350:]}).values()
    assert features.dtype == np.float32
    np.testing.assert_allclose(features, pipe[:-1].transform(X32[350:]), rtol=1e-6, atol=1e-6)
    out, last = _run(model, {"X": X32[350:]}), pipe[-1]
    if is_classifier(last):
        np.testing.assert_array_equal(out["label"], last.predict(features))
        np.testing.assert_allclose(out["probabilities"], last.predict_proba(features), atol=1e-6)
    else:
        np.testing.assert_allclose(out["variable"], last.predict(features), atol=1e-6)
    if name.startswith(("LatentTree", "TreeEnsembleLayer")):  # smooth in the features
        _assert_matches(pipe, model, X32[350:], rtol=1e-5, atol=1e-5)


def test_nested_and_passthrough_steps(numeric):
    X, y = numeric["reg"]
    est = CASES["NonGreedyObliqueTreeRegressor"]
    inner = Pipeline([("skip", "passthrough"), ("tree", est[0](**est[1]))])
    pipe = _fit(Pipeline([("scale", StandardScaler()), ("model", inner)]), X[:350], y[:350])
    _assert_matches(pipe, to_onnx(pipe, X[:2]), X[350:])
    only = _fit(Pipeline([("skip", None), ("tree", est[0](**est[1]))]), X[:350], y[:350])
    _assert_matches(only, to_onnx(only, X[:2]), X[350:])  # nothing for skl2onnx


def test_nested_pipeline_with_passthrough_before_the_last_step(numeric):
    X, y = numeric["reg"]
    est = CASES["NonGreedyObliqueTreeRegressor"]
    pipe = _fit(make_pipeline(make_pipeline(StandardScaler(), "passthrough"),
                              est[0](**est[1])), X[:350], y[:350])
    _assert_matches(pipe, to_onnx(pipe, X[:2]), X[350:])


def test_inputs_keep_the_column_names_skl2onnx_would_change(mixed):
    """skl2onnx names an input after its column with characters other than
    letters, digits and "_" replaced; the exported model keeps the column's
    own name, so that one input per column fed by name works."""
    frame, targets = mixed
    odd = frame.rename(columns={"length": "length (mm)", "band": "2-band", "sex": "sex.code"})
    ct = ColumnTransformer([
        ("num", StandardScaler(), ["length (mm)", "diameter", "height"]),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["sex.code", "2-band"]),
    ], remainder="passthrough")
    est = CASES["NonGreedyObliqueTreeClassifier"]
    pipe = _fit(make_pipeline(ct, est[0](**est[1])), odd, targets["clf"])
    model = to_onnx(pipe, odd[:2])
    assert [i.name for i in model.graph.input] == list(odd.columns)
    _assert_matches(pipe, model, odd)


def test_errors(numeric, mixed, monkeypatch):
    X, y = numeric["clf"]
    ours = CASES["NonGreedyObliqueTreeClassifier"]
    foreign = _fit(make_pipeline(StandardScaler(), LogisticRegression()), X, y)
    with pytest.raises(TypeError, match=r"last step.*'logisticregression' \(LogisticRegression\)"
                                        r".*skl2onnx\.to_onnx"):
        to_onnx(foreign, X[:2])
    for step in (FunctionTransformer(np.abs), SplineTransformer(),
                 ColumnTransformer([("spline", SplineTransformer(), [0])], remainder="drop")):
        pipe = _fit(make_pipeline(step, ours[0](**ours[1])), X, y)
        with pytest.raises(TypeError, match=rf"cannot convert step '{pipe.steps[0][0]}'"
                                            r" \(\w+\) of the Pipeline") as info:
            to_onnx(pipe, X[:2])
        assert "float32" not in str(info.value)  # float32 fails as well: no such hint
    with pytest.raises(NotFittedError):
        to_onnx(make_pipeline(StandardScaler(), ours[0](**ours[1])), X[:2])
    fitted = _fit(make_pipeline(StandardScaler(), ours[0](**ours[1])), X, y)
    fitted.steps[0] = ("standardscaler", StandardScaler())  # a step refitted away
    with pytest.raises(NotFittedError, match="Step 'standardscaler' of the Pipeline"):
        to_onnx(fitted, X[:2])
    unnamed = pd.DataFrame(X)  # integer column names: one input per column impossible
    pipe = _fit(make_pipeline(StandardScaler(), ours[0](**ours[1])), unnamed, y)
    with pytest.raises(ValueError, match=r"not all strings(.|\n)*to_numpy\(\)"):
        to_onnx(pipe, unnamed[:2])
    _assert_matches(pipe, to_onnx(pipe, unnamed[:2].to_numpy()), X)
    pipe = _fit(make_pipeline(StandardScaler(), ours[0](**ours[1])), X, y)
    with pytest.raises(ValueError, match="columns"):
        to_onnx(pipe, X[:2, :3])
    frame, targets = mixed
    labelled = frame.rename(columns={"shell": "label"})
    pipe = _fit(make_pipeline(_column_transformer(), ours[0](**ours[1])), labelled, targets["clf"])
    with pytest.raises(ValueError, match="input 'label' has the name of an output"):
        to_onnx(pipe, labelled[:2])
    with pytest.raises(ValueError, match="columns"):
        to_onnx(pipe, frame[:2])  # not the columns it was fitted on
    monkeypatch.setitem(sys.modules, "skl2onnx", None)  # as if skl2onnx were not installed
    with pytest.raises(ImportError, match=r"Pipeline needs 'skl2onnx'.*sklearn-difftrees\[onnx\]"):
        to_onnx(pipe, labelled[:2])


@pytest.mark.parametrize("step", [PolynomialFeatures(), PowerTransformer(),
                                  KBinsDiscretizer(n_bins=3, encode="ordinal")],
                         ids=lambda s: type(s).__name__)
def test_float64_failures_suggest_float32_where_it_converts(step, numeric):
    """skl2onnx 1.19/1.20 convert these steps in float32 only (docs/deploy.md):
    in float64 the error suggests float32, which was tried; the float32
    sample exports, and the model runs."""
    X, y = numeric["clf"]
    cls, params = CASES["NonGreedyObliqueTreeClassifier"]
    pipe = _fit(make_pipeline(step, cls(**params)), X[:350], y[:350])
    try:
        to_onnx(pipe, X[:2])
    except TypeError as exc:  # a later skl2onnx may convert it in float64
        assert f"cannot convert step '{pipe.steps[0][0]}'" in str(exc)
        assert "From an X_sample in float32 (X_sample.astype(np.float32)) the steps " \
               "convert and run in onnxruntime" in str(exc)
    X32 = X.astype(np.float32)
    out = _run(to_onnx(pipe, X32[:2]), {"X": X32[350:]})
    assert out["probabilities"].shape == (len(X) - 350, len(pipe.classes_))


def _with_gaps(X):
    X = X.copy()
    X[::7, 0] = np.nan
    X[3::11, 2] = np.nan
    return X


def test_model_onnxruntime_cannot_load_is_refused(numeric, monkeypatch):
    """SimpleImputer converts in float64 into ONNX-ML's Imputer, which
    onnxruntime implements for float32 only: the export loads the model in
    onnxruntime and refuses it (it exported silently, failing when served).
    The float32 sample, which the error suggests, exports a model that runs.
    Without onnxruntime there is no check."""
    X, y = numeric["clf"]
    X = _with_gaps(X)
    cls, params = CASES["NonGreedyObliqueTreeClassifier"]
    pipe = _fit(make_pipeline(SimpleImputer(), StandardScaler(), cls(**params)),
                X[:350], y[:350])
    with pytest.raises(TypeError, match=r"onnxruntime \S+ cannot load the exported Pipeline "
                                        r"\(creating the session failed; skl2onnx's conversion "
                                        r"of the steps up to step 'simpleimputer' "
                                        r"\(SimpleImputer\) fails already\): "
                                        r".*NOT_IMPLEMENTED.*Imputer"
                                        r".*From an X_sample in float32") as info:
        to_onnx(pipe, X[:5])
    assert info.value.__cause__ is not None  # onnxruntime's exception
    X32 = X.astype(np.float32)
    out = _run(to_onnx(pipe, X32[:5]), {"X": X32[350:]})
    np.testing.assert_allclose(out["probabilities"].sum(axis=1), 1.0, atol=1e-6)
    assert np.mean(out["label"] == pipe.predict(X32[350:])) > 0.95  # float32 steps
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    unchecked = to_onnx(pipe, X[:5])  # exports as before: no check without onnxruntime
    monkeypatch.undo()
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        _run(unchecked, {"X": X[350:]})


def test_model_onnxruntime_cannot_load_from_a_dataframe(mixed):
    """The same for a DataFrame: the hint casts its float64 columns only (an
    int64 column stays an int64 input)."""
    frame, targets = mixed
    frame = frame.copy()
    frame.loc[::9, "length"] = np.nan
    ct = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["length", "diameter"]),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "band"]),
    ], remainder="drop")
    cls, params = CASES["NonGreedyObliqueTreeRegressor"]
    pipe = _fit(make_pipeline(ct, cls(**params)), frame, targets["reg"])
    with pytest.raises(TypeError, match=r"cannot load the exported Pipeline(.|\n)*"
                                        r"From an X_sample in float32 \(its float64 columns "
                                        r"cast to float32\)"):
        to_onnx(pipe, frame[:5])
    cast = frame.astype({c: np.float32 for c in frame.columns if frame[c].dtype == np.float64})
    model = to_onnx(pipe, cast[:5])
    assert {i.name: i.type.tensor_type.elem_type for i in model.graph.input}["band"] == (
        onnx.TensorProto.INT64)
    out = _run(model, _feeds(cast))
    np.testing.assert_allclose(out["variable"], pipe.predict(cast), rtol=1e-4, atol=1e-3)


def test_rows_onnxruntime_cannot_run(mixed, numeric, monkeypatch):
    """Rows the Pipeline itself cannot predict (an unknown category) give a
    ValueError about the rows; a model that loads but does not run on rows the
    Pipeline predicts, a TypeError that says so (no float32 hint where
    float32 fails too)."""
    frame, targets = mixed
    ct = ColumnTransformer([("num", StandardScaler(), ["length"]),
                            ("cat", OneHotEncoder(sparse_output=False), ["sex"])])
    cls, params = CASES["NonGreedyObliqueTreeClassifier"]
    pipe = _fit(make_pipeline(ct, cls(**params)), frame, targets["clf"])
    unknown = frame[:3].copy()
    unknown.loc[0, "sex"] = "X"
    with pytest.raises(ValueError, match=r"The Pipeline cannot predict the first 3 rows of "
                                         r"X_sample \(ValueError: Found unknown categories"
                                         r".*Unknown Category"):
        to_onnx(pipe, unknown)
    X, y = numeric["clf"]
    pipe = _fit(make_pipeline(StandardScaler(), cls(**params)), X, y)

    def broken(sess, X_sample):
        raise RuntimeError("cannot run this")

    monkeypatch.setattr(onnx_pipeline, "_run_head", broken)
    with pytest.raises(TypeError, match=r"cannot run the exported Pipeline on the first 2 "
                                        r"rows of X_sample \(skl2onnx's conversion of the steps "
                                        r"up to step 'standardscaler' \(StandardScaler\) "
                                        r"fails already\): cannot run this\.$"):
        to_onnx(pipe, X[:2])


def test_serving_needs_neither_torch_nor_the_package(mixed, tmp_path):
    """The exported file runs in onnxruntime in a process where torch,
    sklearn_difftrees, skl2onnx and scikit-learn cannot be imported."""
    frame, targets = mixed
    cls, params = CASES["DGTClassifier"]
    pipe = _fit(make_pipeline(_column_transformer(), cls(**params)), frame, targets["clf"])
    onnx.save(to_onnx(pipe, frame[:2]), tmp_path / "model.onnx")
    np.savez(tmp_path / "data.npz", proba=pipe.predict_proba(frame),
             label=pipe.predict(frame).astype(str), **{c: v for c, v in _feeds(frame).items()})
    script = tmp_path / "serve.py"
    script.write_text(textwrap.dedent(f"""
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "sklearn_difftrees", "skl2onnx", "sklearn"):
                    raise ImportError(name + " is blocked")

        sys.meta_path.insert(0, Block())
        import numpy as np
        import onnxruntime as ort

        data = np.load({str(tmp_path / "data.npz")!r}, allow_pickle=True)
        sess = ort.InferenceSession({str(tmp_path / "model.onnx")!r},
                                    providers=["CPUExecutionProvider"])
        label, proba = sess.run(None, {{i.name: data[i.name] for i in sess.get_inputs()}})
        assert (label.astype(str) == data["label"]).all()
        assert np.abs(proba - data["proba"]).max() <= 1e-6
        assert not any(m.split(".")[0] in ("torch", "sklearn_difftrees") for m in sys.modules)
        print("served")
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "served" in proc.stdout
