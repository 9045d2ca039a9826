"""Demo: our estimators with default parameters vs depth-tuned CART on bundled real data.

Run with ``python -m sklearn_difftrees.demo`` (``bash dev.sh demo`` from a
clone); ``--readme README.md`` also rewrites the README's demo table, with
the CPU model and date of the run. Each dataset gets one seeded 70/30 split; CART's depth is tuned by
3-fold cross-validation over 2..12 on the training part, every estimator of
this package runs with its default parameters (the DGT forest beside
scikit-learn's RandomForest of 200 trees). The table shows the test
score (accuracy, or RMSE for regression), fit time, the number of leaves
(reached by training data; summed over the trees of an ensemble, a DGT
forest's below its members' leaves) and depth.
``--models`` picks a subset of the families.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, mean_squared_error
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import sklearn_difftrees

from .datasets import DATASETS, load_dataset

DEFAULT_SETS = ["breast_cancer_wisconsin", "pima", "vehicle", "segmentation", "197_cpu_act"]

#: family -> (classifier name, regressor name) in ``sklearn_difftrees``.
FAMILIES = {
    "DGT": ("DGTClassifier", "DGTRegressor"),
    "LatentTree": ("LatentTreeClassifier", "LatentTreeRegressor"),
    "NonGreedy": ("NonGreedyObliqueTreeClassifier", "NonGreedyObliqueTreeRegressor"),
    "TEL": ("TreeEnsembleLayerClassifier", "TreeEnsembleLayerRegressor"),
    "ConvexPolytope": ("ConvexPolytopeTreeClassifier", "ConvexPolytopeTreeRegressor"),
    "DGTForest": ("DGTForestClassifier", "DGTForestRegressor"),
}
AVAILABLE = [f for f, names in FAMILIES.items() if names[0] in sklearn_difftrees.__all__]


def _size(model):
    """``(leaves, depth)`` of a fitted tree, or summed over an ensemble's trees."""
    if hasattr(model, "subtree_depth_"):  # a DGT forest: members, then their subtrees
        members = [_size(m) for m in model.estimators_]
        if model.subtrees_ is None:
            return sum(s[0] for s in members), max(s[1] for s in members)
        return (sum(sub.n_leaves for sub in model.subtrees_),
                model.max_depth_ + model.subtree_depth_)
    if hasattr(model, "get_n_leaves"):
        return model.get_n_leaves(), model.get_depth()
    trees = getattr(model, "estimators_", None) or getattr(model, "trees_", None)
    if trees:
        sizes = [_size(t) for t in trees]
        return sum(s[0] for s in sizes), max(s[1] for s in sizes)
    # Soft-tree ensembles (TEL): every leaf of every tree.
    n_trees, n_leaves = model.leaf_values_.shape[:2]
    return n_trees * n_leaves, model.max_depth


def _run(name, seed, families):
    X, y = load_dataset(name, return_X_y=True)
    regression = DATASETS[name][0] == "regression"
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=None if regression else y
    )
    if regression:
        cart = GridSearchCV(DecisionTreeRegressor(random_state=seed), {"max_depth": range(2, 13)}, cv=3)

        def score(m):
            return float(np.sqrt(mean_squared_error(y_te, m.predict(X_te))))

    else:
        cart = GridSearchCV(DecisionTreeClassifier(random_state=seed), {"max_depth": range(2, 13)}, cv=3)

        def score(m):
            return float(accuracy_score(y_te, m.predict(X_te)))

    models = [("CART (depth tuned)", cart)]
    for family in families:
        cls = getattr(sklearn_difftrees, FAMILIES[family][int(regression)])
        models.append((family, cls(random_state=seed)))
    if "DGTForest" in families:  # the forest's reference, as in docs/benchmarks.md
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        rf = RandomForestRegressor if regression else RandomForestClassifier
        models.append(("RandomForest (200)", rf(n_estimators=200, random_state=seed)))
    rows = []
    for label, model in models:
        tic = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X_tr, y_tr)
        fit_time = time.perf_counter() - tic
        fitted = model.best_estimator_ if hasattr(model, "best_estimator_") else model
        rows.append(
            (name, label, "RMSE" if regression else "accuracy", score(model), fit_time,
             *_size(fitted))
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_SETS, choices=sorted(DATASETS))
    parser.add_argument("--models", nargs="+", default=AVAILABLE, choices=AVAILABLE)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--readme", metavar="PATH",
        help="also write the table, with the CPU model and date, between the "
             "'<!-- demo:begin' / '<!-- demo:end -->' markers of PATH (README.md)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    header = f"{'dataset':<24} {'model':<19} {'metric':<8} {'score':>8} {'fit [s]':>8} {'leaves':>7} {'depth':>6}"
    lines = [header, "-" * len(header)]
    print("\n".join(lines))
    for name in args.datasets:
        for row in _run(name, args.seed, args.models):
            lines.append(f"{row[0]:<24} {row[1]:<19} {row[2]:<8} {row[3]:>8.4f} {row[4]:>8.2f} {row[5]:>7d} {row[6]:>6d}")
            print(lines[-1], flush=True)
    print("\nscore: test accuracy (higher is better) or RMSE (lower is better) on a 70/30 split;"
          "\nevery model except CART runs with its default parameters.")
    if args.readme:
        import torch

        from ._provenance import machine_line, replace_marked_section

        command = "python -m sklearn_difftrees.demo" + "".join(
            f" {flag} {' '.join(map(str, value))}" for flag, value, default in [
                ("--datasets", args.datasets, DEFAULT_SETS),
                ("--models", args.models, AVAILABLE),
                ("--seed", [args.seed], [0]),
            ] if list(value) != list(default))
        block = (
            f"Output of `{command}` (written by its `--readme` option), "
            f"{machine_line()}, torch {torch.__version__} with "
            f"{torch.get_num_threads()} thread(s) (the forest's; single models train on one), "
            f"{time.perf_counter() - start:.0f} s in all "
            f"(leaves of TEL are all leaves of its soft trees, of which a sample reaches only "
            f"a few; a DGT forest's are those of its members' subtrees, its depth a member's "
            f"plus its subtrees'):\n\n```\n" + "\n".join(lines) + "\n```"
        )
        replace_marked_section(args.readme, "demo", block)
        print(f"\nwrote the table into {args.readme}")


if __name__ == "__main__":
    main()
