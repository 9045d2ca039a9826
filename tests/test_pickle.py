"""Fitted estimators unpickle and predict in a process where torch cannot be imported."""

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression

# -- method imports (one line per family) --
from sklearn_difftrees import LatentTreeClassifier, LatentTreeClusterer, LatentTreeRegressor
from sklearn_difftrees import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor
from sklearn_difftrees import NonGreedyObliqueTreeClassifier, NonGreedyObliqueTreeRegressor
from sklearn_difftrees import TreeEnsembleLayerClassifier, TreeEnsembleLayerRegressor
from sklearn_difftrees import (
    DGTBanditClassifier,
    DGTBanditRegressor,
    DGTClassifier,
    DGTForestClassifier,
    DGTForestRegressor,
    DGTRegressor,
)

# A meta-path finder that makes ``import torch`` (and any ``torch.*``) fail,
# as on a machine where torch is not installed.
BLOCK_TORCH = textwrap.dedent(
    """
    import sys

    class _BlockTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError(f"torch is blocked in this process ({name})")
            return None

    sys.meta_path.insert(0, _BlockTorch())
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("the torch blocker does not work")
    """
)


def _run_child(code, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(BLOCK_TORCH + textwrap.dedent(code))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"child failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


#: Constructor parameters per class (forests: a few members are enough;
#: bandit learners: a few simulated passes, and they keep their online state).
_TREE_PARAMS = dict(max_depth=3, max_iter=5, hidden_width=8, random_state=0)
PARAMS = {
    DGTClassifier: _TREE_PARAMS,
    DGTRegressor: _TREE_PARAMS,
    DGTForestClassifier: dict(_TREE_PARAMS, n_estimators=3),
    DGTForestRegressor: dict(_TREE_PARAMS, n_estimators=3),
    DGTBanditClassifier: dict(max_depth=3, n_passes=2, random_state=0),
    DGTBanditRegressor: dict(max_depth=3, n_passes=2, feedback="two_point", random_state=0),
    # -- latent_tree pickle params --
    LatentTreeClassifier: dict(max_depth=3, max_iter=5, random_state=0),
    LatentTreeRegressor: dict(max_depth=3, max_iter=5, random_state=0),
    LatentTreeClusterer: dict(max_depth=3, max_iter=5, random_state=0),
    # -- non_greedy pickle params --
    NonGreedyObliqueTreeClassifier: dict(max_depth=3, max_iter=5, random_state=0),
    NonGreedyObliqueTreeRegressor: dict(max_depth=3, max_iter=5, random_state=0),
    # -- tel pickle params --
    TreeEnsembleLayerClassifier: dict(n_trees=3, max_depth=2, max_iter=3, random_state=0),
    TreeEnsembleLayerRegressor: dict(n_trees=3, max_depth=2, max_iter=3, random_state=0),
    # -- polytope pickle params --
    ConvexPolytopeTreeClassifier: dict(max_depth=2, max_facets=3, max_iter=3, random_state=0),
    ConvexPolytopeTreeRegressor: dict(max_depth=2, max_facets=3, max_iter=3, random_state=0),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", list(PARAMS))
def test_unpickle_and_predict_without_torch(cls, tmp_path):
    if is_classifier(cls()):
        X, y = make_classification(200, 5, n_informative=3, n_classes=3, random_state=0)
        y = np.array(["a", "b", "c"])[y]  # object labels survive too
    else:
        X, y = make_regression(200, 5, random_state=0)
    est = cls(**PARAMS[cls]).fit(X, y)
    X_test = np.random.RandomState(1).normal(size=(50, 5))
    expected = est.predict(X_test)
    proba = est.predict_proba(X_test) if is_classifier(cls()) else None

    model_file = tmp_path / "model.pkl"
    with open(model_file, "wb") as f:
        pickle.dump(est, f)
    np.save(tmp_path / "X_test.npy", X_test)

    _run_child(
        f"""
        import pickle
        import numpy as np
        with open({str(model_file)!r}, "rb") as f:
            est = pickle.load(f)
        X = np.load({str(tmp_path / "X_test.npy")!r})
        np.save({str(tmp_path / "pred.npy")!r}, est.predict(X))
        if hasattr(est, "predict_proba"):
            np.save({str(tmp_path / "proba.npy")!r}, est.predict_proba(X))
        if hasattr(est, "apply"):  # the hard trees (TEL's soft trees have no leaf index)
            est.apply(X)
            est.decision_path(X)
            est.feature_importances_
        from sklearn_difftrees import export_text
        for tree in getattr(est, "estimators_", [est]):  # a forest's members
            export_text(tree)
        assert "torch" not in sys.modules, sorted(m for m in sys.modules if "torch" in m)
        assert not any(m.startswith("torch.") for m in sys.modules)
        print("OK")
        """,
        tmp_path,
    )
    pred = np.load(tmp_path / "pred.npy", allow_pickle=True)
    assert pred.dtype == expected.dtype
    np.testing.assert_array_equal(pred, expected)
    if proba is not None:
        np.testing.assert_array_equal(np.load(tmp_path / "proba.npy"), proba)


def test_import_package_does_not_import_torch(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        import sklearn_difftrees
        from sklearn_difftrees import DGTClassifier, DGTRegressor, ObliqueTree, export_text
        from sklearn_difftrees import DGTForestClassifier, DGTForestRegressor
        from sklearn_difftrees.datasets import load_dataset
        DGTClassifier(max_depth=2).get_params()
        DGTForestClassifier(max_depth=2).get_params()
        print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    # And it also works where torch cannot be imported at all.
    _run_child("import sklearn_difftrees\nprint('OK')\n", tmp_path)


#: Every estimator that trains with torch: (import name, constructor kwargs, fit call).
_TORCH_TRAINED = [
    "DGTClassifier", "DGTRegressor", "DGTForestClassifier", "DGTForestRegressor",
    "DGTBanditClassifier", "DGTBanditRegressor", "LatentTreeClassifier",
    "LatentTreeRegressor", "LatentTreeClusterer", "TreeEnsembleLayerClassifier",
    "TreeEnsembleLayerRegressor", "ConvexPolytopeTreeClassifier",
    "ConvexPolytopeTreeRegressor",
]


def test_fit_without_torch_fails_clearly(tmp_path):
    """Without torch, every torch-trained fit (and the torch layers) raises one
    ImportError naming the extra and PyTorch's CPU-only index; NonGreedy trains."""
    _run_child(
        f"""
        import numpy as np
        import sklearn_difftrees as sd
        X = np.random.RandomState(0).normal(size=(20, 3))
        y = np.arange(20) % 2

        def check(what, call):
            try:
                call()
            except ImportError as exc:
                msg = str(exc)
                assert exc.name == "torch", (what, exc.name)
                assert 'pip install "sklearn-difftrees[torch]"' in msg, (what, msg)
                assert "https://download.pytorch.org/whl/cpu" in msg, (what, msg)
                assert what.split(".")[0] in msg, (what, msg)
            else:
                raise SystemExit(f"{{what}} succeeded without torch")

        for name in {_TORCH_TRAINED!r}:
            cls = getattr(sd, name)
            est = cls(max_depth=1, max_iter=1) if "Bandit" not in name else cls(max_depth=1)
            check(name + ".fit", lambda: est.fit(X, y))
        check("DGTBanditClassifier.sample_actions",
              lambda: sd.DGTBanditClassifier(max_depth=1, classes=[0, 1]).sample_actions(X))
        check("TreeEnsembleLayer", lambda: sd.TreeEnsembleLayer)
        check("LatentTreeLayer", lambda: sd.LatentTreeLayer)
        # NonGreedy trains without torch.
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sd.NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=2).fit(X, y).predict(X)
        assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules)
        print("OK")
        """,
        tmp_path,
    )
