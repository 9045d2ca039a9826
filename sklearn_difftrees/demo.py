"""Demo: default DGT vs depth-tuned CART on bundled real data.

Run with ``python -m sklearn_difftrees.demo`` (``bash dev.sh demo`` from a
clone). Each dataset gets one seeded 70/30 split; CART's depth is tuned by
3-fold cross-validation over 2..12 on the training part, DGT runs with its
default parameters. The table shows the test score (accuracy, or RMSE for
regression), fit time, leaves reached by training data, and depth.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, mean_squared_error
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from . import DGTClassifier, DGTRegressor
from .datasets import DATASETS, load_dataset

DEFAULT_SETS = ["breast_cancer_wisconsin", "pima", "vehicle", "segmentation", "197_cpu_act"]


def _run(name, seed):
    X, y = load_dataset(name, return_X_y=True)
    regression = DATASETS[name][0] == "regression"
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=None if regression else y
    )
    if regression:
        cart = GridSearchCV(DecisionTreeRegressor(random_state=seed), {"max_depth": range(2, 13)}, cv=3)
        dgt = DGTRegressor(random_state=seed)

        def score(m):
            return float(np.sqrt(mean_squared_error(y_te, m.predict(X_te))))

    else:
        cart = GridSearchCV(DecisionTreeClassifier(random_state=seed), {"max_depth": range(2, 13)}, cv=3)
        dgt = DGTClassifier(random_state=seed)

        def score(m):
            return float(accuracy_score(y_te, m.predict(X_te)))

    rows = []
    for label, model in (("CART (depth tuned)", cart), ("DGT (defaults)", dgt)):
        tic = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X_tr, y_tr)
        fit_time = time.perf_counter() - tic
        fitted = model.best_estimator_ if hasattr(model, "best_estimator_") else model
        rows.append(
            (name, label, "RMSE" if regression else "accuracy", score(model), fit_time,
             fitted.get_n_leaves(), fitted.get_depth())
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_SETS, choices=sorted(DATASETS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    header = f"{'dataset':<24} {'model':<19} {'metric':<8} {'score':>8} {'fit [s]':>8} {'leaves':>7} {'depth':>6}"
    print(header)
    print("-" * len(header))
    for name in args.datasets:
        for row in _run(name, args.seed):
            print(f"{row[0]:<24} {row[1]:<19} {row[2]:<8} {row[3]:>8.4f} {row[4]:>8.2f} {row[5]:>7d} {row[6]:>6d}", flush=True)
    print("\nscore: test accuracy (higher is better) or RMSE (lower is better) on a 70/30 split.")


if __name__ == "__main__":
    main()
