"""TEL's ``feature_importances_`` against what the predictions rely on.

On generated tables where only some features matter, for each start of the
ensemble (``init="random"``, the same with ``alpha_splits=1e-3``,
``init="cart"``, the default ``"auto"``; ``greedy_floor=False``, so that the
trained ensemble is what is measured), the mean over seeds of the
importances, the share of the informative features, and the same share of
scikit-learn's ``permutation_importance`` on the training rows (what the
predictions rely on). ``unscaled`` is the other families' formula applied
to TEL's arrays as they are (``|w_j| * std_j`` times the node's share of
the training rows, without the split's shares and divided weight): on
heavy-tailed features, whose greedy-start splits TEL sharpens per feature,
it ranks them by their scale (``docs/tel.md``, "Feature importances").

    python benchmarks/bench_tel_importances.py           # six seeds, about a minute
    python benchmarks/bench_tel_importances.py --smoke   # CI-sized
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification, make_friedman1
from sklearn.inspection import permutation_importance

from sklearn_difftrees import TreeEnsembleLayerClassifier, TreeEnsembleLayerRegressor
from sklearn_difftrees._core.categorical import input_importances, term_spread

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment_line, markdown_table, single_thread  # noqa: E402

STARTS = {
    "random": dict(init="random"),
    "random, alpha_splits=1e-3": dict(init="random", alpha_splits=1e-3),
    "cart": dict(init="cart"),
    "auto (default)": dict(),
}


def tables(n):
    """``(name, X, y, informative, estimator class)`` of every table."""
    X, y = make_friedman1(n, 10, random_state=0)
    yield "friedman1 (x0-x4 of 10)", X, y, [0, 1, 2, 3, 4], TreeEnsembleLayerRegressor
    X, y = make_classification(n, 8, n_informative=3, n_redundant=0, shuffle=False,
                               random_state=0)
    yield "make_classification (x0-x2 of 8)", X, y, [0, 1, 2], TreeEnsembleLayerClassifier
    rng = np.random.RandomState(0)
    X = np.column_stack([np.exp(2 * rng.randn(2 * n)), rng.randn(2 * n),
                         np.exp(2 * rng.randn(2 * n)), rng.randn(2 * n, 3)])
    y = ((X[:, 0] > 3) ^ (X[:, 1] > 0)).astype(int)  # x0, x2 lognormal
    yield "lognormal x0 XOR normal x1 (x0-x1 of 6)", X, y, [0, 1], TreeEnsembleLayerClassifier


def unscaled(est):
    n_int = est.weights_.shape[1]
    mass = est._node_mass[:, :n_int].ravel()
    return input_importances(est, mass @ term_spread(est, est.weights_.reshape(mass.size, -1)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--rows", type=int, default=600)
    parser.add_argument("--smoke", action="store_true", help="two seeds, 200 rows")
    args = parser.parse_args()
    seeds, rows = (2, 200) if args.smoke else (args.seeds, args.rows)
    single_thread()
    warnings.simplefilter("ignore")  # ConvergenceWarning: not what is measured
    print(environment_line())
    print(f"Command: python benchmarks/bench_tel_importances.py {' '.join(sys.argv[1:])}")
    print("Cells: mean importances over the seeds (each normalized), then the range over "
          "the seeds of the informative features' share.")
    for name, X, y, informative, cls in tables(rows):
        out = []
        for start, params in STARTS.items():
            got = {"importances": [], "unscaled": [], "permutation": []}
            kept = []
            for seed in range(seeds):
                est = cls(greedy_floor=False, random_state=seed, **params).fit(X, y)
                kept.append(est.init_)
                got["importances"].append(est.feature_importances_)
                got["unscaled"].append(unscaled(est))
                perm = permutation_importance(est, X, y, n_repeats=3, random_state=0)
                got["permutation"].append(np.clip(perm.importances_mean, 0, None))
            cells = [start, ", ".join(sorted(set(kept)))]
            for values in got.values():
                v = np.array(values)
                v = v / v.sum(axis=1, keepdims=True)
                share = v[:, informative].sum(axis=1)
                cells.append(" ".join(f"{x:.3f}" for x in v.mean(0))
                             + f" ({share.min():.2f}-{share.max():.2f})")
            out.append(cells)
        print(f"\n{name}, {X.shape[0]} rows, seeds 0-{seeds - 1}\n")
        print(markdown_table(["start", "kept", "feature_importances_", "unscaled",
                              "permutation"], out, align=["l"] * 5))


if __name__ == "__main__":
    main()
