"""Default-fit budget: time of a default DGT fit on 10,000 x 20, one thread.

Also measures the over-parameterization width behind ``hidden_width="auto"``'s
cap of 256 (the paper's Table 12 uses 1008 at depth 6): fit time, epochs and
held-out score for widths 64, 256 ("auto") and 1008 with ``n_layers=3`` (the
default ``n_layers=1`` has no hidden layer, so the width is unused there). Synthetic data
(``make_classification`` / ``make_regression``), so it needs no datasets.

    python benchmarks/bench_default_budget.py --out benchmarks/results/budget.md
    python benchmarks/bench_default_budget.py --smoke
"""

import argparse
import time
import warnings

from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from _common import environment_line, markdown_table, single_thread, write_out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2,000 rows, defaults only")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    single_thread()
    from sklearn_difftrees import DGTClassifier, DGTRegressor

    n = 2_000 if args.smoke else 10_000
    configs = [{}] if args.smoke else [
        {}, *({"n_layers": 3, "hidden_width": w} for w in (64, "auto", 1008))]
    data = {
        "classification": make_classification(
            n_samples=n, n_features=20, n_informative=10, n_classes=3, random_state=0
        ),
        "regression": make_regression(n_samples=n, n_features=20, n_informative=10, noise=10.0,
                                      random_state=0),
    }
    rows = []
    for task, (X, y) in data.items():
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
        cls = DGTClassifier if task == "classification" else DGTRegressor
        for config in configs:
            est = cls(random_state=0, **config)
            tic = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est.fit(X_tr, y_tr)
            fit = time.perf_counter() - tic
            hidden = est._hidden_sizes()
            label = (f"n_layers={est.n_layers}, width {est.hidden_width}"
                     + (f" (={hidden[0]})" if est.hidden_width == "auto" else "")
                     if hidden else f"n_layers={est.n_layers} (no hidden layer)")
            rows.append([task, est.max_depth_, label, f"{fit:.1f}", est.n_iter_,
                         f"{fit / est.n_iter_:.3f}", f"{est.score(X_te, y_te):.4f}"])
            print(" | ".join(map(str, rows[-1])), flush=True)
    table = markdown_table(
        ["task", "depth", "layers", "fit s", "epochs", "s / epoch", "test score"], rows)
    text = (f"Default DGT fit on {int(n * 0.8)} x 20 (synthetic), one torch thread; "
            f"score = accuracy / R^2.\n{environment_line()}\n\n{table}")
    print()
    print(text)
    write_out(args.out, text)


if __name__ == "__main__":
    main()
