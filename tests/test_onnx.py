"""ONNX export: onnxruntime reproduces predict / predict_proba of every
supervised estimator on bundled data (labels exactly, probabilities and
values to 1e-6)."""

import sys
import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier

import sklearn_difftrees as sd
from sklearn_difftrees import to_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

_TREE = dict(max_depth=3, max_iter=5, random_state=0)
#: Every supervised estimator, small budgets (the export, not the fit, is tested).
CASES = {
    "DGTClassifier": (sd.DGTClassifier, dict(_TREE, hidden_width=16)),
    "DGTRegressor": (sd.DGTRegressor, dict(_TREE, hidden_width=16)),
    "DGTForestClassifier": (sd.DGTForestClassifier, dict(_TREE, hidden_width=8, n_estimators=3)),
    "DGTForestRegressor": (sd.DGTForestRegressor, dict(_TREE, hidden_width=8, n_estimators=3)),
    "DGTBanditClassifier": (sd.DGTBanditClassifier, dict(max_depth=3, n_passes=2, random_state=0)),
    "DGTBanditRegressor": (sd.DGTBanditRegressor, dict(max_depth=3, n_passes=2, random_state=0)),
    "LatentTreeClassifier": (sd.LatentTreeClassifier, _TREE),
    "LatentTreeClassifier-elu-mlp": (
        sd.LatentTreeClassifier, dict(_TREE, split="elu", head="mlp", head_input="concat")
    ),
    "LatentTreeRegressor": (sd.LatentTreeRegressor, _TREE),
    "NonGreedyObliqueTreeClassifier": (sd.NonGreedyObliqueTreeClassifier, _TREE),
    "NonGreedyObliqueTreeRegressor": (sd.NonGreedyObliqueTreeRegressor, _TREE),
    "TreeEnsembleLayerClassifier": (
        sd.TreeEnsembleLayerClassifier, dict(n_trees=4, max_depth=3, max_iter=5, random_state=0)
    ),
    "TreeEnsembleLayerRegressor": (
        sd.TreeEnsembleLayerRegressor, dict(n_trees=4, max_depth=3, max_iter=5, random_state=0)
    ),
    "ConvexPolytopeTreeClassifier": (
        sd.ConvexPolytopeTreeClassifier, dict(max_depth=3, max_facets=3, max_iter=5, random_state=0)
    ),
    "ConvexPolytopeTreeRegressor": (
        sd.ConvexPolytopeTreeRegressor, dict(max_depth=3, max_facets=3, max_iter=5, random_state=0)
    ),
}


def _run(model, X):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"X": X})))


@pytest.fixture(scope="module")
def datasets(bundled):
    """Bundled real data: vehicle (4 classes, string labels), abalone (regression)."""
    Xc, yc = bundled("vehicle", n_max=500)
    Xr, yr = bundled("abalone", n_max=500)
    return {"clf": (Xc, np.array(["bus", "opel", "saab", "van"], dtype=object)[
        np.searchsorted(np.unique(yc), yc)]), "reg": (Xr, yr)}


def _fit(name, datasets):
    cls, params = CASES[name]
    X, y = datasets["clf" if is_classifier(cls()) else "reg"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**params).fit(X[:350], y[:350]), X[350:]


@pytest.mark.parametrize("name", list(CASES))
def test_onnxruntime_matches_predict(name, datasets):
    est, X_test = _fit(name, datasets)
    model = to_onnx(est, X_test[:2])
    onnx.checker.check_model(model, full_check=True)
    out = _run(model, X_test)
    if is_classifier(est):
        assert sorted(out) == ["label", "probabilities"]
        np.testing.assert_array_equal(out["label"], est.predict(X_test))
        np.testing.assert_allclose(out["probabilities"], est.predict_proba(X_test),
                                   rtol=0, atol=1e-6)
    else:
        assert sorted(out) == ["variable"]
        np.testing.assert_allclose(out["variable"], est.predict(X_test), rtol=1e-6, atol=1e-6)
        assert out["variable"].shape == est.predict(X_test).shape


@pytest.mark.parametrize("name", ["DGTClassifier", "LatentTreeRegressor",
                                  "TreeEnsembleLayerClassifier", "ConvexPolytopeTreeClassifier"])
def test_float32_input(name, datasets):
    """A float32 sample gives a float32 input, cast to float64 inside the graph,
    exactly as the kernels accumulate float32 rows in float64."""
    est, X_test = _fit(name, datasets)
    X32 = X_test.astype(np.float32)
    model = to_onnx(est, X32[:2])
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    out = _run(model, X32)
    if is_classifier(est):
        np.testing.assert_array_equal(out["label"], est.predict(X32))
    else:
        np.testing.assert_allclose(out["variable"], est.predict(X32), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cls", [sd.DGTRegressor, sd.LatentTreeRegressor,
                                 sd.TreeEnsembleLayerRegressor, sd.ConvexPolytopeTreeRegressor])
def test_multi_output_regression(cls, datasets):
    X, y = datasets["reg"]
    Y = np.column_stack([y, X[:, 0] * 2.0])
    params = dict(max_depth=2, max_iter=3, random_state=0)
    if cls is sd.TreeEnsembleLayerRegressor:
        params["n_trees"] = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(**params).fit(X[:300], Y[:300])
    out = _run(to_onnx(est, X[:2]), X[300:])["variable"]
    assert out.shape == (X.shape[0] - 300, 2)
    np.testing.assert_allclose(out, est.predict(X[300:]), rtol=1e-6, atol=1e-6)


def test_integer_labels_and_a_depth_zero_tree():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] > 0, 7, 3)
    clf = sd.NonGreedyObliqueTreeClassifier(max_depth=1, max_iter=3, random_state=0).fit(X, y)
    out = _run(to_onnx(clf, X[:1]), X)
    assert out["label"].dtype == np.int64
    np.testing.assert_array_equal(out["label"], clf.predict(X))
    clf = sd.NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3, random_state=0)
    clf.fit(X, X[:, 1] > 0)  # boolean labels stay boolean
    out = _run(to_onnx(clf, X[:1]), X)
    assert out["label"].dtype == bool
    np.testing.assert_array_equal(out["label"], clf.predict(X))
    tree = sd.ObliqueTree(np.zeros((0, 3)), np.zeros(0), [[0.25, 0.75]])
    from sklearn_difftrees._core.onnx_graph import OnnxGraph, leaf_outputs, oblique_leaves

    g = OnnxGraph(3, np.float64, "stump")
    g.output(leaf_outputs(g, oblique_leaves(g, tree.weights, tree.bias, 0), tree.value),
             "value", np.zeros((1, 2)))
    np.testing.assert_array_equal(_run(g.model(), X)["value"], np.tile([0.25, 0.75], (120, 1)))


def test_errors(datasets, monkeypatch):
    X, _ = datasets["reg"]
    clu = sd.LatentTreeClusterer(max_depth=2, max_iter=2, random_state=0).fit(X[:100])
    with pytest.raises(TypeError, match="no ONNX export"):
        to_onnx(clu, X[:2])
    est, X_test = _fit("NonGreedyObliqueTreeRegressor", datasets)
    with pytest.raises(ValueError, match="columns"):
        to_onnx(est, X_test[:, :3])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        to_onnx(sd.DGTClassifier(), X_test)
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if onnx were not installed
    with pytest.raises(ImportError, match=r'sklearn-difftrees\[onnx\]'):
        to_onnx(est, X_test[:2])


@pytest.mark.parametrize("cls", [sd.NonGreedyObliqueTreeClassifier, sd.ConvexPolytopeTreeClassifier])
def test_default_parameters(cls, datasets):
    """Defaults (max_depth="auto": trees of data-chosen depth) export too."""
    X, y = datasets["clf"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(random_state=0).fit(X[:350], y[:350])
    out = _run(to_onnx(est, X[:2]), X[350:])
    np.testing.assert_array_equal(out["label"], est.predict(X[350:]))
    np.testing.assert_allclose(out["probabilities"], est.predict_proba(X[350:]), atol=1e-6)
