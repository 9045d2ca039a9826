"""Write nine more tables, none of which the defaults were chosen on, as
``<name>.tsv.gz`` files for ``bench_defaults.py --data-dir``.

Four come with scikit-learn (no download): ``digits`` (1,797 x 64, 10
classes), ``wine`` (178 x 13, 3 classes), ``iris`` (150 x 4, 3 classes) and
``diabetes`` (442 x 10, regression). Five are generated with fixed seeds:

* ``checker``: a 4 x 4 checkerboard over two of six uniform features (3,000
  rows, 2 classes): no single greedy split of any node gains, a deep CART
  carves the cells (interactions);
* ``imbal3``: ``make_classification`` with 3 classes of 90 / 6 / 4 %, 6
  informative and 8 redundant of 25 features, 2% flipped labels (3,000 rows);
* ``friedman1``: ``make_friedman1`` (4,000 x 10, noise 1, regression);
* ``lognorm``: 12 lognormal levels ``exp(2 g)``, ``g`` standard normal
  (5,000 rows, 2 classes: ``g_0 > 0.3`` XOR ``g_1 + g_2 > 0``): thresholds
  on features whose standard deviation is set by their tail;
* ``wide``: ``make_classification`` with 8 informative of 200 features
  (400 rows, 2 classes): an oblique split over every feature fits any few
  hundred rows, axis-aligned splits on the informative ones generalize.

    python benchmarks/extra_sets.py /tmp/extra
    python benchmarks/bench_defaults.py --data-dir /tmp/extra \\
        --datasets digits wine iris diabetes imbal3 friedman1 checker lognorm wide \\
        --n-jobs 2

The files have one column per feature (``x0``, ``x1``, ...) and the label in
the column ``target``, as the bundled sets.
"""

import argparse
import gzip
from pathlib import Path

import numpy as np

__all__ = ["extra_sets", "main"]


def extra_sets():
    """``{name: (X, y)}`` of the nine tables (deterministic)."""
    from sklearn import datasets

    sets = {name: getattr(datasets, f"load_{name}")(return_X_y=True)
            for name in ("digits", "wine", "iris", "diabetes")}
    sets["imbal3"] = datasets.make_classification(
        3000, 25, n_informative=6, n_redundant=8, n_classes=3, weights=[0.9, 0.06, 0.04],
        flip_y=0.02, random_state=7)
    sets["friedman1"] = datasets.make_friedman1(4000, 10, noise=1.0, random_state=7)
    X = np.random.RandomState(7).uniform(-1, 1, (3000, 6))
    sets["checker"] = X, ((np.floor(X[:, 0] * 2) + np.floor(X[:, 1] * 2)) % 2).astype(int)
    G = np.random.RandomState(11).normal(size=(5000, 12))
    sets["lognorm"] = np.exp(2 * G), ((G[:, 0] > 0.3) ^ (G[:, 1] + G[:, 2] > 0)).astype(int)
    sets["wide"] = datasets.make_classification(400, 200, n_informative=8, n_redundant=0,
                                                random_state=3)
    return sets


def _write(path, X, y):
    with gzip.open(path, "wt") as f:
        f.write("\t".join([f"x{i}" for i in range(X.shape[1])] + ["target"]) + "\n")
        for row, t in zip(X, y):
            f.write("\t".join(repr(float(v)) for v in row) + "\t" + repr(float(t)) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="directory for the <name>.tsv.gz files")
    args = parser.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, (X, y) in extra_sets().items():
        _write(out / f"{name}.tsv.gz", np.asarray(X, dtype=np.float64), np.asarray(y))
        print(f"{out / name}.tsv.gz: {X.shape[0]} x {X.shape[1]}")


if __name__ == "__main__":
    main()
