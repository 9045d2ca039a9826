"""Small real datasets bundled with the package (PMLB copies).

>>> from sklearn_difftrees.datasets import load_dataset
>>> X, y = load_dataset("pima", return_X_y=True)
>>> X.shape
(768, 8)
"""

import gzip
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["DATASETS", "load_dataset"]

#: name -> (task, description). Attribution in ``data/README.md``.
DATASETS = {
    "breast_cancer_wisconsin": ("binary", "Breast cancer Wisconsin (diagnostic), 569 x 30"),
    "pima": ("binary", "Pima Indians diabetes, 768 x 8"),
    "crx": ("binary", "Credit approval, 690 x 15"),
    "spambase": ("binary", "Spambase, 4601 x 57"),
    "mushroom": ("binary", "Mushroom, 8124 x 22"),
    "ecoli": ("multiclass", "E. coli protein localization, 327 x 7, 5 classes"),
    "vehicle": ("multiclass", "Vehicle silhouettes, 846 x 18, 4 classes"),
    "yeast": ("multiclass", "Yeast protein localization, 1479 x 8, 9 classes"),
    "segmentation": ("multiclass", "Image segmentation, 2310 x 19, 7 classes"),
    "dna": ("multiclass", "DNA splice junctions, 3186 x 180, 3 classes"),
    "satimage": ("multiclass", "Landsat satellite, 6435 x 36, 6 classes"),
    "letter": ("multiclass", "Letter recognition, 20000 x 16, 26 classes"),
    "197_cpu_act": ("regression", "Computer activity (cpu_act), 8192 x 21"),
    "537_houses": ("regression", "California housing, 20640 x 8"),
    "abalone": ("regression", "Abalone (UCI), 4177 x 10, target = rings"),
    "glass": ("multiclass", "Glass identification (UCI), 214 x 9, 6 classes"),
}


def load_dataset(name, *, return_X_y=False, as_frame=False):
    """Load one of the bundled datasets.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.
    as_frame : bool, default=False
        Return ``X`` as a pandas DataFrame with the features' names as
        columns and ``y`` as a Series named ``"target"`` (needs pandas).
        Estimators fitted on it record the names in ``feature_names_in_``,
        and the exports print them.

    Returns
    -------
    data : Bunch or tuple
        A Bunch with ``data``, ``target``, ``feature_names``, ``task``,
        ``DESCR`` (and ``frame`` with ``as_frame``); or ``(X, y)``. Class
        labels are kept as in the source (integers, not always
        ``0..K-1``); regression targets are float.
    """
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {sorted(DATASETS)}.")
    path = resources.files(__package__) / "data" / f"{name}.tsv.gz"
    with path.open("rb") as raw, gzip.open(raw, "rt") as f:
        header = f.readline().rstrip("\n").split("\t")
        table = np.loadtxt(f, delimiter="\t", ndmin=2)
    t = header.index("target")
    X = np.delete(table, t, axis=1)
    y = table[:, t]
    task, descr = DATASETS[name]
    if task != "regression":
        y = y.astype(np.int64)
    names = [h for i, h in enumerate(header) if i != t]
    frame = None
    if as_frame:
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("as_frame=True requires pandas: pip install pandas.") from exc
        X = pd.DataFrame(X, columns=names)
        y = pd.Series(y, name="target")
        frame = pd.concat([X, y], axis=1)
    if return_X_y:
        return X, y
    bunch = Bunch(data=X, target=y, feature_names=names, task=task, DESCR=descr)
    if frame is not None:
        bunch.frame = frame
    return bunch
