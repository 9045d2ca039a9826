"""Default ConvexPolytopeTree vs depth-tuned CART and default DGT.

For every dataset and each of ``--splits`` seeded 70/30 train/test splits
(stratified for classification):

* CPT: ``ConvexPolytopeTree{Classifier,Regressor}`` with defaults
  (``max_depth="auto"``), only ``random_state`` set;
* CART: ``DecisionTree{Classifier,Regressor}``, ``max_depth`` tuned by
  ``GridSearchCV`` over 1..12 (cv=3);
* DGT: ``DGT{Classifier,Regressor}`` with defaults.

Reports test accuracy in % (classification) or RMSE (regression), leaves,
depth and fit time of each; then, side by side in the same run, the time of
the compiled polytope router (``tree_.apply``) against a vectorized numpy
walk of the same tree on the test rows (identical leaves are asserted).

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_polytope.py --out benchmarks/results/polytope.md

Smoke run (< 60 s, bundled data)::

    python benchmarks/bench_polytope.py --smoke
"""

import argparse
import sys

import numpy as np

from _common import (
    Timer,
    environment_line,
    markdown_table,
    mean_std,
    run_datasets,
    single_thread,
)
from _data import (
    ALL_DATASETS,
    add_data_dir_argument,
    available,
    load,
    source_of,
    task_of,
    use_data_dir,
)

DEFAULT_DATASETS = [
    "breast_cancer_wisconsin", "pima", "crx", "ecoli", "vehicle", "yeast", "segmentation",
    "satimage", "letter", "abalone", "197_cpu_act", "537_houses",
]
SMOKE_DATASETS = ["breast_cancer_wisconsin", "ecoli", "abalone"]
SMOKE_MAX_ROWS = 800


def _numpy_apply(tree, X):
    """Level-by-level vectorized walk (the reference the kernel is timed against)."""
    node = np.zeros(X.shape[0], dtype=np.int64)
    active = np.ones(X.shape[0], dtype=bool)
    while True:
        at = np.flatnonzero(active)
        at = at[(node[at] < tree.n_internal)]
        at = at[tree.is_split[node[at]].astype(bool)]
        if not at.size:
            return node
        for v in np.unique(node[at]):
            rows = at[node[at] == v]
            lo, hi = tree.facet_ptr[v], tree.facet_ptr[v + 1]
            z = X[rows] @ tree.facet_coef[lo:hi].T + tree.facet_intercept[lo:hi]
            s = np.logaddexp(0.0, z) @ tree.facet_weight[lo:hi]
            node[rows] = np.where(s - tree.threshold[v] > 0, 2 * v + 2, 2 * v + 1)


def run_dataset(name, splits, smoke):
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.preprocessing import LabelEncoder
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from sklearn_difftrees import (
        ConvexPolytopeTreeClassifier,
        ConvexPolytopeTreeRegressor,
        DGTClassifier,
        DGTRegressor,
    )

    X, y = load(name, smoke)
    task = task_of(name)
    clf = task == "classification"
    if clf:
        y = LabelEncoder().fit_transform(y)
    if smoke and X.shape[0] > SMOKE_MAX_ROWS:
        keep = np.random.RandomState(0).choice(X.shape[0], SMOKE_MAX_ROWS, replace=False)
        X, y = X[keep], y[keep]
    out = {"name": name, "task": task, "n": int(X.shape[0]), "p": int(X.shape[1]),
           "source": source_of(name), "cpt": [], "cart": [], "dgt": [], "router": []}
    for seed in range(splits):
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.3, random_state=seed, stratify=y if clf else None)

        def metric(est):
            pred = est.predict(X_te)
            if clf:
                return 100.0 * float(np.mean(pred == y_te))
            return float(np.sqrt(np.mean((pred - y_te) ** 2)))

        extra = dict(max_iter=20) if smoke else {}
        cpt_cls = ConvexPolytopeTreeClassifier if clf else ConvexPolytopeTreeRegressor
        with Timer() as t:
            cpt = cpt_cls(random_state=seed, **extra).fit(X_tr, y_tr)
        out["cpt"].append(dict(score=metric(cpt), leaves=int(cpt.get_n_leaves()),
                               depth=int(cpt.get_depth()), time=t.seconds,
                               facets=float(np.mean(cpt.n_facets_[cpt.tree_.is_split > 0]))
                               if cpt.tree_.is_split.any() else 0.0))
        cart_cls = DecisionTreeClassifier if clf else DecisionTreeRegressor
        with Timer() as t:
            cart = GridSearchCV(cart_cls(random_state=seed),
                                {"max_depth": list(range(1, 13))}, cv=3).fit(X_tr, y_tr)
        best = cart.best_estimator_
        out["cart"].append(dict(score=metric(cart), leaves=int(best.get_n_leaves()),
                                depth=int(best.get_depth()), time=t.seconds))
        dgt_cls = DGTClassifier if clf else DGTRegressor
        with Timer() as t:
            dgt = dgt_cls(random_state=seed, **extra).fit(X_tr, y_tr)
        out["dgt"].append(dict(score=metric(dgt), leaves=int(dgt.get_n_leaves()),
                               depth=int(dgt.get_depth()), time=t.seconds))
        # Router: compiled kernel vs numpy walk on the same (tiled) test rows.
        Xr = np.ascontiguousarray(np.tile(X_te, (max(1, 20000 // X_te.shape[0]), 1)),
                                  dtype=np.float64)
        tree = cpt.tree_
        with Timer() as tk:
            leaves = tree.apply(Xr)
        with Timer() as tn:
            ref = _numpy_apply(tree, Xr)
        assert np.array_equal(leaves, ref)
        out["router"].append(dict(rows=int(Xr.shape[0]), kernel=tk.seconds, numpy=tn.seconds))
    return out


def render(results, args, n_total, final):
    rows_c, rows_r, rows_k = [], [], []
    wins = total = 0
    for r in results:
        if "error" in r:
            continue
        cpt, cart, dgt = r["cpt"], r["cart"], r["dgt"]

        def col(runs, key, fmt="{:.1f}"):
            return mean_std([x[key] for x in runs], fmt)

        fmt = "{:.1f}" if r["task"] == "classification" else "{:.3f}"
        row = [f"{r['name']} ({r['n']}×{r['p']})", col(cpt, "score", fmt),
               col(cpt, "leaves", "{:.0f}"), col(cpt, "depth", "{:.0f}"),
               col(cpt, "facets", "{:.1f}"), col(cpt, "time"),
               col(cart, "score", fmt), col(cart, "leaves", "{:.0f}"),
               col(cart, "depth", "{:.0f}"), col(dgt, "score", fmt),
               col(dgt, "leaves", "{:.0f}"), col(dgt, "time")]
        if r["task"] == "classification":
            rows_c.append(row)
            total += 1
            c_score = np.mean([x["score"] for x in cpt])
            c_leaves = np.mean([x["leaves"] for x in cpt])
            if (c_score >= np.mean([x["score"] for x in cart])
                    and c_leaves < np.mean([x["leaves"] for x in cart])):
                wins += 1
        else:
            rows_r.append(row)
        k = r["router"]
        rows_k.append([r["name"], str(k[0]["rows"]), col(cpt, "leaves", "{:.0f}"),
                       f"{1e3 * np.mean([x['kernel'] for x in k]):.1f}",
                       f"{1e3 * np.mean([x['numpy'] for x in k]):.1f}",
                       f"{np.mean([x['numpy'] / x['kernel'] for x in k]):.1f}×"])
    head = ["dataset", "CPT", "leaves", "depth", "facets/split", "fit s",
            "CART", "leaves", "depth", "DGT", "leaves", "fit s"]
    text = [f"# ConvexPolytopeTree vs CART and DGT ({len(results)}/{n_total} datasets"
            f"{'' if final else ', partial'}, {args.splits} split(s){', SMOKE' if args.smoke else ''})",
            environment_line(), ""]
    if rows_c:
        text += ["Classification: test accuracy (%).", "", markdown_table(head, rows_c), "",
                 f"CPT at least as accurate as CART with fewer leaves on {wins}/{total} sets.", ""]
    if rows_r:
        text += ["Regression: test RMSE.", "", markdown_table(head, rows_r), ""]
    text += ["Router: compiled `tree_.apply` vs vectorized numpy walk (same leaves).", "",
             markdown_table(["dataset", "rows", "leaves", "kernel ms", "numpy ms", "ratio"], rows_k)]
    return "\n".join(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny CI run: 3 bundled sets, <= 800 rows, 1 split, 20 refinement epochs")
    parser.add_argument("--datasets", nargs="+", default=None, metavar="NAME",
                        help=f"subset of: {' '.join(ALL_DATASETS)}")
    parser.add_argument("--splits", type=int, default=None, help="seeded splits (default 3; 1 smoke)")
    parser.add_argument("--out", default=None, help="write the markdown report here")
    parser.add_argument("--json", default=None, help="write raw results here")
    args = parser.parse_args(argv)

    use_data_dir(args.data_dir)
    single_thread()
    environment_line()
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    if args.splits is None:
        args.splits = 1 if args.smoke else 3
    names = args.datasets or available(
        SMOKE_DATASETS if args.smoke else DEFAULT_DATASETS, "bench_polytope")
    for name in names:
        task_of(name)
    return run_datasets(names, lambda n: run_dataset(n, args.splits, args.smoke), render, args,
                        task_of)


if __name__ == "__main__":
    sys.exit(main())
