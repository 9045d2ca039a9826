"""Dataset access for the benchmark scripts.

The full benchmarks read the development datasets in ``../shared/datasets``
(relative to the repository root, i.e. next to the checkout; see
``shared/datasets/README.md`` there). Every file is a gzip-compressed,
tab-separated table with one header line; the label is the column named
``target`` (selected by name: it is not always the last column).

When ``../shared/datasets`` is absent (a fresh clone, CI), the full runs skip
with a message and exit code 0, and the ``--smoke`` runs fall back to the
copies bundled with the package (``sklearn_difftrees.datasets.load_dataset``).

The directory can be overridden with the environment variable
``SKLEARN_DIFFTREES_SHARED_DATASETS``.

Run ``python benchmarks/_data.py`` to list what is available.
"""

import gzip
import os
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(
    os.environ.get(
        "SKLEARN_DIFFTREES_SHARED_DATASETS", REPO_ROOT.parent / "shared" / "datasets"
    )
)

#: The 17 development sets, in the order of shared/datasets/README.md.
CLASSIFICATION = [
    "breast_cancer_wisconsin",
    "pima",
    "crx",
    "spambase",
    "twonorm",
    "mushroom",
    "ecoli",
    "glass",
    "vehicle",
    "yeast",
    "segmentation",
    "dna",
    "satimage",
    "letter",
]
REGRESSION = ["abalone", "197_cpu_act", "537_houses"]
ALL_DATASETS = CLASSIFICATION + REGRESSION


def task_of(name):
    """``"classification"`` or ``"regression"``."""
    if name in REGRESSION:
        return "regression"
    if name in CLASSIFICATION:
        return "classification"
    raise ValueError(f"Unknown dataset {name!r}; choose from {ALL_DATASETS}.")


def shared_available():
    """Whether the shared dataset directory exists."""
    return SHARED_DIR.is_dir()


def available_datasets():
    """Names of the ``*.tsv.gz`` files in the shared directory ([] when absent)."""
    if not shared_available():
        return []
    return sorted(p.name[: -len(".tsv.gz")] for p in SHARED_DIR.glob("*.tsv.gz"))


def bundled_datasets():
    """Names of the datasets bundled with the package ([] if it has none)."""
    try:
        from sklearn_difftrees.datasets import DATASETS
    except ImportError:
        return []
    return sorted(DATASETS)


def _read_tsv_gz(path):
    with gzip.open(path, "rt") as f:
        header = f.readline().rstrip("\n").split("\t")
        table = np.loadtxt(f, delimiter="\t", ndmin=2)
    t = header.index("target")
    return np.delete(table, t, axis=1), table[:, t]


def load_shared(name):
    """``X, y`` of ``../shared/datasets/<name>.tsv.gz``.

    Classification labels are returned as int64 as they are in the file (not
    necessarily ``0..K-1``; label-encode them before use), regression targets
    as float64.
    """
    path = SHARED_DIR / f"{name}.tsv.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (shared datasets: {SHARED_DIR}).")
    X, y = _read_tsv_gz(path)
    if name in CLASSIFICATION:
        y = y.astype(np.int64)
    return X, y


def load(name, smoke=False):
    """``X, y`` from the shared directory; in smoke mode the bundled copy if needed."""
    if (SHARED_DIR / f"{name}.tsv.gz").is_file():
        return load_shared(name)
    if smoke and name in bundled_datasets():
        from sklearn_difftrees.datasets import load_dataset

        return load_dataset(name, return_X_y=True)
    raise FileNotFoundError(
        f"Dataset {name!r} is neither in {SHARED_DIR} nor (smoke mode) bundled."
    )


def source_of(name):
    """Where :func:`load` reads ``name`` from, for the reports."""
    if (SHARED_DIR / f"{name}.tsv.gz").is_file():
        return "shared"
    return "bundled"


def require_shared_or_skip(smoke, script):
    """Exit 0 with a message when a full run has no shared datasets."""
    if smoke or shared_available():
        return
    print(
        f"{script}: SKIPPED: shared datasets not found at {SHARED_DIR} "
        "(set SKLEARN_DIFFTREES_SHARED_DATASETS, or run with --smoke to use the "
        "copies bundled with the package)."
    )
    sys.exit(0)


def main():
    if not shared_available():
        print(f"Shared datasets: not found at {SHARED_DIR} (skipping).")
    else:
        names = available_datasets()
        print(f"Shared datasets in {SHARED_DIR} ({len(names)}):")
        for name in names:
            X, y = load_shared(name)
            extra = (
                f"{len(np.unique(y))} classes"
                if name in CLASSIFICATION
                else f"target in [{y.min():g}, {y.max():g}]"
            )
            print(f"  {name:25s} {X.shape[0]:6d} x {X.shape[1]:3d}  {extra}")
    print(f"Bundled with the package: {', '.join(bundled_datasets()) or 'none'}")


if __name__ == "__main__":
    main()
