"""Dataset access for the benchmark scripts.

Every script runs on the datasets **bundled with the package**
(``sklearn_difftrees.datasets``: 16 real tables), so a fresh clone runs them
all, full runs included. ``--data-dir DIR`` adds every ``DIR/<name>.tsv.gz``
(e.g. the development sets in ``../shared/datasets``: ``twonorm`` and full
copies of the others); a set found there takes precedence over the bundled
copy. The environment variable ``SKLEARN_DIFFTREES_DATA_DIR`` sets the same
directory when ``--data-dir`` is not given.

Every file is a gzip-compressed, tab-separated table with one header line;
the label is the column named ``target`` (selected by name: it is not always
the last column).

A script's default list of sets may name sets that are neither bundled nor
in the data directory (``twonorm``): those are skipped with a message. A set
asked for by name (``--datasets``) that is unavailable is an error.

Run ``python benchmarks/_data.py [--data-dir DIR]`` to list what is available.
"""

import argparse
import gzip
import os
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent

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

#: The extra directory (``--data-dir``); ``None``: bundled sets only.
DATA_DIR = os.environ.get("SKLEARN_DIFFTREES_DATA_DIR") or None


def add_data_dir_argument(parser):
    """Add ``--data-dir DIR`` to a script's argument parser."""
    parser.add_argument(
        "--data-dir", default=DATA_DIR, metavar="DIR",
        help="directory of extra <name>.tsv.gz sets (e.g. ../shared/datasets), used "
             "before the copies bundled with the package; default: bundled sets only "
             "(or $SKLEARN_DIFFTREES_DATA_DIR)",
    )
    return parser


def use_data_dir(path):
    """Read extra sets from ``path`` (``None``: bundled sets only)."""
    global DATA_DIR
    if path is not None and not Path(path).is_dir():
        raise SystemExit(f"--data-dir {path}: no such directory.")
    DATA_DIR = None if path is None else str(path)
    return DATA_DIR


def task_of(name):
    """``"classification"`` or ``"regression"``."""
    if name in REGRESSION:
        return "regression"
    if name in CLASSIFICATION:
        return "classification"
    from sklearn_difftrees.datasets import DATASETS

    if name in DATASETS:
        return "regression" if DATASETS[name][0] == "regression" else "classification"
    raise ValueError(f"Unknown dataset {name!r}; choose from {ALL_DATASETS}.")


def bundled_datasets():
    """Names of the datasets bundled with the package."""
    from sklearn_difftrees.datasets import DATASETS

    return sorted(DATASETS)


def _dir_path(name):
    if DATA_DIR is None:
        return None
    path = Path(DATA_DIR) / f"{name}.tsv.gz"
    return path if path.is_file() else None


def is_available(name):
    """Whether ``name`` is in the data directory or bundled."""
    return _dir_path(name) is not None or name in bundled_datasets()


def available(names, script=None):
    """The names of ``names`` that can be loaded; says which are skipped."""
    keep = [n for n in names if is_available(n)]
    skipped = [n for n in names if n not in keep]
    if skipped:
        where = f" nor in {DATA_DIR}" if DATA_DIR else " (add them with --data-dir DIR)"
        print(f"{script or 'benchmark'}: skipping {', '.join(skipped)}: not bundled{where}.",
              flush=True)
    return keep


def _read_tsv_gz(path):
    with gzip.open(path, "rt") as f:
        header = f.readline().rstrip("\n").split("\t")
        table = np.loadtxt(f, delimiter="\t", ndmin=2)
    t = header.index("target")
    return np.delete(table, t, axis=1), table[:, t]


def load(name, smoke=False):
    """``X, y`` of ``name``: from the data directory if there, else the bundled copy.

    Classification labels are returned as int64 as they are in the file (not
    necessarily ``0..K-1``; label-encode them before use), regression targets
    as float64. ``smoke`` is accepted for the scripts' convenience and does
    not change where the data come from.
    """
    path = _dir_path(name)
    if path is not None:
        X, y = _read_tsv_gz(path)
        return X, (y.astype(np.int64) if task_of(name) == "classification" else y)
    if name in bundled_datasets():
        from sklearn_difftrees.datasets import load_dataset

        return load_dataset(name, return_X_y=True)
    where = f" nor in {DATA_DIR}" if DATA_DIR else " (pass --data-dir DIR)"
    raise FileNotFoundError(f"Dataset {name!r} is not bundled with the package{where}.")


def source_of(name):
    """Where :func:`load` reads ``name`` from, for the reports."""
    return "data-dir" if _dir_path(name) is not None else "bundled"


def main(argv=None):
    parser = add_data_dir_argument(argparse.ArgumentParser(description="List the datasets."))
    use_data_dir(parser.parse_args(argv).data_dir)
    names = sorted(set(bundled_datasets()) | {
        p.name[: -len(".tsv.gz")] for p in Path(DATA_DIR or ".").glob("*.tsv.gz")
    } if DATA_DIR else set(bundled_datasets()))
    print(f"Datasets ({'bundled + ' + DATA_DIR if DATA_DIR else 'bundled only'}):")
    for name in names:
        X, y = load(name)
        extra = (f"{len(np.unique(y))} classes" if task_of(name) == "classification"
                 else f"target in [{y.min():g}, {y.max():g}]")
        print(f"  {name:25s} {X.shape[0]:6d} x {X.shape[1]:3d}  {extra}  ({source_of(name)})")


if __name__ == "__main__":
    main()
