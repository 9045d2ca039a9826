"""Check the release artifacts as a user deploys them (run by ``bash dev.sh dist-check``).

    python .ci/dist_check.py train DIR   # training venv: fit, save models + expected outputs
    python .ci/dist_check.py serve DIR   # serving venv (installed wheel, no torch): load, compare
    python .ci/dist_check.py smoke       # any install without torch (cibuildwheel's test)

``train`` fits one small model per estimator family on bundled data and
writes, per model, its pickle, its skops file and the predictions (and
probabilities) it makes on held-out rows. ``serve`` runs where torch is not installed: it checks
that the package imported is the installed one (not a checkout), loads every
model from its pickle and from its skops file (trusting
``sklearn_difftrees.io.trusted_types()`` only), predicts, and requires the outputs to be identical to the training
venv's; fitting a torch-trained estimator must raise the ImportError that
names the ``torch`` extra, and NonGreedy must train. Exits non-zero on any
failure.
"""

import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: name -> (constructor, kwargs, task). Small budgets: this checks the
#: artifacts, not the models.
_TREE = dict(max_depth=3, max_iter=5, random_state=0)
MODELS = {
    "DGTClassifier": ("DGTClassifier", dict(_TREE, hidden_width=16), "clf"),
    "DGTRegressor": ("DGTRegressor", dict(_TREE, hidden_width=16), "reg"),
    "DGTForestClassifier": ("DGTForestClassifier", dict(_TREE, hidden_width=16, n_estimators=3), "clf"),
    "DGTBanditClassifier": ("DGTBanditClassifier", dict(max_depth=3, random_state=0), "clf"),
    "LatentTreeClassifier": ("LatentTreeClassifier", _TREE, "clf"),
    "LatentTreeRegressor": ("LatentTreeRegressor", _TREE, "reg"),
    "NonGreedyObliqueTreeClassifier": ("NonGreedyObliqueTreeClassifier", _TREE, "clf"),
    "TreeEnsembleLayerClassifier": (
        "TreeEnsembleLayerClassifier", dict(n_trees=5, max_depth=3, max_iter=5, random_state=0), "clf"
    ),
    "TreeEnsembleLayerRegressor": (
        "TreeEnsembleLayerRegressor", dict(n_trees=5, max_depth=3, max_iter=5, random_state=0), "reg"
    ),
    "ConvexPolytopeTreeClassifier": (
        "ConvexPolytopeTreeClassifier", dict(max_depth=2, max_facets=3, max_iter=5, random_state=0), "clf"
    ),
}


def _data(task):
    from sklearn_difftrees.datasets import load_dataset

    name = "breast_cancer_wisconsin" if task == "clf" else "abalone"
    X, y = load_dataset(name, return_X_y=True)
    rng = np.random.RandomState(0)
    idx = rng.permutation(X.shape[0])[:600]
    return X[idx[:400]], y[idx[:400]], X[idx[400:]]


def _outputs(est, X):
    out = {"predict": est.predict(X)}
    if hasattr(est, "predict_proba"):
        out["predict_proba"] = est.predict_proba(X)
    return out


def train(directory):
    import sklearn_difftrees as sd

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, (cls, params, task) in MODELS.items():
        X, y, X_test = _data(task)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = getattr(sd, cls)(**params).fit(X, y)
        (directory / f"{name}.pkl").write_bytes(pickle.dumps(est))
        import skops.io as sio  # the test extra has it

        sio.dump(est, directory / f"{name}.skops")
        np.save(directory / f"{name}.X.npy", X_test)
        for method, values in _outputs(est, X_test).items():
            np.save(directory / f"{name}.{method}.npy", values, allow_pickle=True)
    print(f"train: {len(MODELS)} models written to {directory}")


def _check_no_torch_and_installed():
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("serve: torch is importable; the serving venv must not have it")
    import sklearn_difftrees

    where = Path(sklearn_difftrees.__file__).resolve()
    if "site-packages" not in where.parts:
        raise SystemExit(f"serve: imported sklearn_difftrees from {where}, not an installed copy")
    return sklearn_difftrees


def _check_training_needs_the_extra(sd):
    X, y, _ = _data("clf")
    try:
        sd.DGTClassifier(max_iter=1).fit(X, y)
    except ImportError as exc:
        msg = str(exc)
        for needle in ('sklearn-difftrees[torch]', "download.pytorch.org/whl/cpu"):
            if needle not in msg:
                raise SystemExit(f"serve: the ImportError does not mention {needle!r}: {msg}")
    else:
        raise SystemExit("serve: DGTClassifier.fit worked without torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = sd.NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=3, random_state=0).fit(X, y)
    if clf.score(X, y) < 0.8:
        raise SystemExit("serve: NonGreedy trained without torch scores below 0.8")


def serve(directory):
    directory = Path(directory)
    sd = _check_no_torch_and_installed()
    failures = []
    import skops.io as sio  # installed with the wheel's "skops" extra

    from sklearn_difftrees.io import trusted_types

    def load(name, fmt):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # same version: no InconsistentVersionWarning
            if fmt == "pkl":
                return pickle.loads((directory / f"{name}.pkl").read_bytes())
            return sio.load(directory / f"{name}.skops", trusted=trusted_types())

    for name in MODELS:
        X = np.load(directory / f"{name}.X.npy")
        for fmt in ("pkl", "skops"):
            est = load(name, fmt)
            for method, values in _outputs(est, X).items():
                expected = np.load(directory / f"{name}.{method}.npy", allow_pickle=True)
                if values.dtype != expected.dtype or not np.array_equal(values, expected):
                    failures.append(f"{name}.{method} ({fmt})")
    _check_training_needs_the_extra(sd)
    if any(m == "torch" or m.startswith("torch.") for m in sys.modules):
        failures.append("torch was imported")
    if failures:
        raise SystemExit("serve: outputs differ: " + ", ".join(failures))
    print(f"serve: {len(MODELS)} models (pickle and skops) load and predict identically without torch "
          f"(sklearn_difftrees {sd.__version__} from {Path(sd.__file__).parent})")


def smoke():
    """Import, train NonGreedy (no torch needed), pickle round trip, predict."""
    import sklearn_difftrees as sd

    X, y, X_test = _data("clf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = sd.NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=3, random_state=0).fit(X, y)
    copy = pickle.loads(pickle.dumps(est))
    assert np.array_equal(copy.predict_proba(X_test), est.predict_proba(X_test))
    assert est.score(X, y) > 0.8
    print(f"smoke: sklearn_difftrees {sd.__version__} OK")


if __name__ == "__main__":
    t0 = time.perf_counter()
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "train" and len(sys.argv) == 3:
        train(sys.argv[2])
    elif mode == "serve" and len(sys.argv) == 3:
        serve(sys.argv[2])
    elif mode == "smoke":
        smoke()
    else:
        raise SystemExit(__doc__)
    print(f"{mode}: {time.perf_counter() - t0:.1f} s")
