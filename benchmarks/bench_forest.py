"""DGT forests vs scikit-learn's RandomForest, HistGradientBoosting and AdaBoost.

For every dataset and each of its seeded 70/30 train/test splits (stratified
for classification), five models are fitted with their defaults, only
``random_state`` (= split seed) and ``n_jobs`` set:

* DGT forest: ``DGTForestClassifier`` / ``DGTForestRegressor`` (30 DGT trees,
  bootstrap), ``n_jobs=2`` (one torch thread per worker);
* RF: ``RandomForest{Classifier,Regressor}`` (100 trees), ``n_jobs=2``;
* HGB: ``HistGradientBoosting{Classifier,Regressor}`` (100 iterations, early
  stopping "auto", i.e. on above 10,000 training rows; OpenMP threads = cores);
* AdaBoost: ``AdaBoost{Classifier,Regressor}`` (50 stumps / 50 depth-3 trees);
* XGBoost: ``XGB{Classifier,Regressor}`` with ``n_jobs=2``, only if ``import
  xgboost`` works (it is not a dependency and is not installed for this).

Reports mean ± std (over splits) test accuracy in % (classification) or test
RMSE (regression), mean fit time, and model size as total nodes (and leaves)
summed over all trees of the ensemble:

* DGT forest: active nodes of every member (``tree_.node_count``: nodes that
  training data reach; an active internal node may have one active child);
  each internal node is an oblique split with ``p`` weights;
* RF / AdaBoost: ``tree_.node_count`` of every tree (axis-aligned splits);
* HGB: ``nodes.shape[0]`` of every predictor (one tree per iteration, and per
  class for multiclass);
* XGBoost: lines of the booster's text dump (one per node).

Beside abalone and 197_cpu_act (comp-activ) the paper's Table 4 is shown
(DGT-Forest / XGBoost / AdaBoost test RMSE; its boosting ensembles use about
1000 trees with tuned depth, its splits differ from the ones here).

Default splits: 3, except 1 for the regression sets above 5000 rows
(197_cpu_act, 537_houses), and 537_houses is subsampled to 8000 rows (seeded,
before splitting), to keep the full run near half an hour on 2 cores;
``--splits N`` sets one number for every set, ``--max-rows N`` caps every set
at N rows instead (0: no cap).

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_forest.py --out benchmarks/results/forest.md \
        --json benchmarks/results/forest.json

Smoke run (< 60 s, bundled sets)::

    python benchmarks/bench_forest.py --smoke
"""

import argparse
import sys

import numpy as np

from _common import (
    Timer,
    dgt_defaults,
    environment_line,
    markdown_table,
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
    "abalone",
    "197_cpu_act",
    "satimage",
    "segmentation",
    "spambase",
    "vehicle",
    "pima",
    "breast_cancer_wisconsin",
    "537_houses",
]
SMOKE_DATASETS = ["pima", "197_cpu_act"]
SMOKE_MAX_ROWS = 1500
SMOKE_DGT = {"n_estimators": 4, "max_iter": 10}
#: Regression sets above this many rows get 1 split by default (time budget).
LARGE_REGRESSION_ROWS = 5000
#: Default row caps (seeded subsample before splitting; time budget).
DEFAULT_MAX_ROWS = {"537_houses": 8000}
N_JOBS = 2

#: Paper Table 4 (test RMSE, 10 seeds; XGBoost / AdaBoost with ~1000 trees).
PAPER = {
    "abalone": {"DGT-Forest": "2.08 ± 0.00", "XGBoost": "2.20", "AdaBoost": "2.15"},
    "197_cpu_act": {"DGT-Forest": "2.63 ± 0.08", "XGBoost": "2.57", "AdaBoost": "2.56"},
}


def have_xgboost():
    try:
        import xgboost  # noqa: F401
    except Exception:  # ImportError, or a broken install
        return False
    return True


def model_names():
    return ["DGT forest", "RF", "HGB", "AdaBoost"] + (["XGBoost"] if have_xgboost() else [])


def rmse(y, pred):
    return float(np.sqrt(np.mean((np.asarray(y, float) - pred) ** 2)))


def fmt_metric(v, task, like=None):
    """Accuracy in %, or RMSE (0 decimals when ``like``, default ``v``, is >= 100)."""
    if task == "classification":
        return f"{100 * v:.2f}"
    return f"{v:.0f}" if abs(v if like is None else like) >= 100 else f"{v:.3f}"


# ----------------------------------------------------------------- model sizes
def _sklearn_tree_size(trees):
    return (sum(int(t.tree_.node_count) for t in trees),
            sum(int(t.tree_.n_leaves) for t in trees), len(trees))


def size_of(name, model):
    """(total nodes, total leaves, number of trees) of a fitted ensemble."""
    if name == "DGT forest":
        members = model.estimators_
        return (sum(int(m.tree_.node_count) for m in members),
                sum(int(m.get_n_leaves()) for m in members), len(members))
    if name in ("RF", "AdaBoost"):
        return _sklearn_tree_size(model.estimators_)
    if name == "HGB":
        preds = [p for it in model._predictors for p in it]
        return (sum(int(p.nodes.shape[0]) for p in preds),
                sum(int(p.nodes["is_leaf"].sum()) for p in preds), len(preds))
    if name == "XGBoost":
        dump = model.get_booster().get_dump()
        lines = [ln for tree in dump for ln in tree.splitlines() if ln.strip()]
        return len(lines), sum("leaf=" in ln for ln in lines), len(dump)
    raise ValueError(name)


def make_model(name, clf, seed, smoke):
    from sklearn import ensemble

    from sklearn_difftrees import DGTForestClassifier, DGTForestRegressor

    if name == "DGT forest":
        params = {"random_state": seed, "n_jobs": N_JOBS}
        if smoke:
            params.update(SMOKE_DGT)
        return (DGTForestClassifier if clf else DGTForestRegressor)(**params)
    if name == "RF":
        cls = ensemble.RandomForestClassifier if clf else ensemble.RandomForestRegressor
        return cls(random_state=seed, n_jobs=N_JOBS)
    if name == "HGB":
        cls = (ensemble.HistGradientBoostingClassifier if clf
               else ensemble.HistGradientBoostingRegressor)
        return cls(random_state=seed)
    if name == "AdaBoost":
        cls = ensemble.AdaBoostClassifier if clf else ensemble.AdaBoostRegressor
        return cls(random_state=seed)
    if name == "XGBoost":
        import xgboost

        cls = xgboost.XGBClassifier if clf else xgboost.XGBRegressor
        return cls(random_state=seed, n_jobs=N_JOBS)
    raise ValueError(name)


def run_split(X, y, task, seed, smoke, names):
    from sklearn.model_selection import train_test_split

    clf = task == "classification"
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=y if clf else None
    )
    out = {"seed": seed}
    for name in names:
        model = make_model(name, clf, seed, smoke)
        with Timer() as t:
            model.fit(Xtr, ytr)
        pred = model.predict(Xte)
        nodes, leaves, trees = size_of(name, model)
        out[name] = {
            "score": float(np.mean(pred == yte)) if clf else rmse(yte, pred),
            "fit_s": t.seconds,
            "nodes": nodes,
            "leaves": leaves,
            "trees": trees,
        }
        if name == "DGT forest":
            out[name]["epochs_mean"] = float(np.mean(model.n_iter_))
    return out


def max_rows(name, args):
    """Row cap of ``name`` (None: all rows)."""
    if args.smoke:
        return SMOKE_MAX_ROWS
    if args.max_rows is not None:
        return args.max_rows or None
    return DEFAULT_MAX_ROWS.get(name)


def default_splits(task, n_rows, args):
    if args.splits is not None:
        return args.splits
    if args.smoke:
        return 1
    return 1 if task == "regression" and n_rows > LARGE_REGRESSION_ROWS else 3


def run_dataset(name, args, names):
    from sklearn.preprocessing import LabelEncoder

    task = task_of(name)
    X, y = load(name, smoke=args.smoke)
    if task == "classification":
        y = LabelEncoder().fit_transform(y)
    n_full = int(X.shape[0])
    cap = max_rows(name, args)
    if cap and X.shape[0] > cap:
        keep = np.random.RandomState(0).choice(X.shape[0], cap, replace=False)
        X, y = X[keep], y[keep]
    n_splits = default_splits(task, X.shape[0], args)
    splits = []
    for seed in range(n_splits):
        res = run_split(X, y, task, seed, args.smoke, names)
        splits.append(res)
        print(f"  {name} split {seed}: " + " | ".join(
            f"{m} {fmt_metric(res[m]['score'], task)} ({res[m]['fit_s']:.1f} s, "
            f"{res[m]['nodes']} nodes)" for m in names), flush=True)
    return {
        "name": name,
        "task": task,
        "n": int(X.shape[0]),
        "n_full": n_full,
        "p": int(X.shape[1]),
        "n_classes": int(len(np.unique(y))) if task == "classification" else None,
        "source": source_of(name),
        "models": names,
        "splits": splits,
    }


# ------------------------------------------------------------------ rendering
def _values(r, model, key):
    return np.array([s[model][key] for s in r["splits"]], dtype=float)


def best_model(r):
    means = {m: _values(r, m, "score").mean() for m in r["models"]}
    pick = max if r["task"] == "classification" else min
    return pick(means, key=means.get)


def score_table(results, names):
    headers = (["dataset", "n × p", "splits", "metric"] + names
               + ["best", "paper DGT-Forest / XGBoost / AdaBoost"])
    rows = []
    for r in results:
        if "error" in r:
            rows.append([r["name"], "", "", "error: " + r["error"]] + [""] * (len(names) + 2))
            continue
        task = r["task"]
        metric = "acc %" if task == "classification" else "RMSE"
        if r["n_classes"]:
            metric += f" ({r['n_classes']} cl.)"
        cells = []
        for m in names:
            if m not in r["models"]:
                cells.append("")
                continue
            v = _values(r, m, "score")
            cells.append(f"{fmt_metric(v.mean(), task)} ± "
                         f"{fmt_metric(v.std(), task, like=v.mean())}")
        paper = PAPER.get(r["name"])
        paper_cell = (" / ".join(paper[k] for k in ("DGT-Forest", "XGBoost", "AdaBoost"))
                      if paper else "")
        n = f"{r['n']}" + (f" of {r['n_full']}" if r.get("n_full", r["n"]) > r["n"] else "")
        rows.append([r["name"], f"{n} × {r['p']}", str(len(r["splits"])), metric,
                     *cells, best_model(r), paper_cell])
    align = ["l", "r", "r", "l"] + ["r"] * len(names) + ["l", "r"]
    return markdown_table(headers, rows, align)


def size_table(results, names):
    headers = (["dataset"] + [f"{m} nodes (leaves)" for m in names]
               + [f"{m} fit s" for m in names])
    rows = []
    for r in results:
        if "error" in r:
            continue
        size_cells, time_cells = [], []
        for m in names:
            if m not in r["models"]:
                size_cells.append("")
                time_cells.append("")
                continue
            nodes = _values(r, m, "nodes").mean()
            leaves = _values(r, m, "leaves").mean()
            size_cells.append(f"{nodes:,.0f} ({leaves:,.0f})")
            time_cells.append(f"{_values(r, m, 'fit_s').mean():.1f}")
        rows.append([r["name"], *size_cells, *time_cells])
    return markdown_table(headers, rows)


def summary(results):
    done = [r for r in results if "error" not in r and "DGT forest" in r["models"]]
    if not done:
        return ""
    lines = []
    for other in ("RF", "HGB", "AdaBoost", "XGBoost"):
        counted = [r for r in done if other in r["models"]]
        if not counted:
            continue
        wins = 0
        for r in counted:
            d = _values(r, "DGT forest", "score").mean()
            o = _values(r, other, "score").mean()
            wins += d > o if r["task"] == "classification" else d < o
        lines.append(f"{other} {wins}/{len(counted)}")
    best = sum(best_model(r) == "DGT forest" for r in done)
    return (f"DGT forest better than (mean score, per set): {', '.join(lines)}; "
            f"best of all models on {best} of {len(done)} sets.")


def render(results, args, total, final):
    names = model_names()
    status = "" if final else f" — PARTIAL: {len(results)}/{total} datasets done"
    splits = (f"{args.splits} seeded 70/30 split(s) per set" if args.splits is not None
              else "seeded 70/30 splits (3; 1 for regression sets above "
                   f"{LARGE_REGRESSION_ROWS} rows)")
    smoke = (f"SMOKE: <= {SMOKE_MAX_ROWS} rows, DGT forest {SMOKE_DGT}. "
             if args.smoke else "")
    if args.smoke:
        caps = ""
    elif args.max_rows is not None:
        caps = f"; every set capped at {args.max_rows} rows" if args.max_rows else ""
    else:
        caps = "; " + ", ".join(f"{k} subsampled to {v} rows"
                                for k, v in DEFAULT_MAX_ROWS.items())
    head = (
        f"{smoke}DGT forest (defaults: 30 trees, n_jobs={N_JOBS}) vs RandomForest "
        f"(100 trees, n_jobs={N_JOBS}), HistGradientBoosting and AdaBoost (defaults)"
        + (", XGBoost (defaults, n_jobs=2)" if "XGBoost" in names else
           "; XGBoost not installed")
        + f"; {splits}{caps}; test accuracy % or RMSE, mean ± std{status}.\n"
        f"{dgt_defaults()}.\n{environment_line()}\n"
    )
    return (head + "\n" + score_table(results, names) + "\n\n" + summary(results)
            + "\n\nModel size (total nodes and leaves over all trees, mean over splits) "
            "and fit time (s, mean over splits):\n\n" + size_table(results, names))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true",
                        help=f"tiny run for CI: {' '.join(SMOKE_DATASETS)}, 1 split, "
                             f"<= {SMOKE_MAX_ROWS} rows, DGT forest {SMOKE_DGT}")
    parser.add_argument("--datasets", nargs="+", default=None, metavar="NAME",
                        help=f"subset of: {' '.join(ALL_DATASETS)} "
                             f"(default: {' '.join(DEFAULT_DATASETS)})")
    parser.add_argument("--splits", type=int, default=None,
                        help="seeded splits per set (default 3, 1 for regression sets "
                             f"above {LARGE_REGRESSION_ROWS} rows; 1 with --smoke)")
    parser.add_argument("--max-rows", type=int, default=None,
                        help="cap every set at this many rows (seeded subsample before "
                             "splitting; 0: no cap; default: "
                             + ", ".join(f"{k} {v}" for k, v in DEFAULT_MAX_ROWS.items())
                             + ", others uncapped)")
    parser.add_argument("--out", default=None, help="write the markdown tables here "
                        "(rewritten after every dataset while the run goes on)")
    parser.add_argument("--json", default=None, help="write per-split raw results here")
    args = parser.parse_args(argv)

    use_data_dir(args.data_dir)
    single_thread()
    dgt_defaults()
    environment_line()  # pin the code state and date at the start of the run
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    # Smoke fits stop on max_iter by design; full-run members may also warn.
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    names = args.datasets or available(
        SMOKE_DATASETS if args.smoke else DEFAULT_DATASETS, "bench_forest")
    for name in names:
        task_of(name)  # fail early on typos
    models = model_names()
    print(f"models: {', '.join(models)}", flush=True)
    return run_datasets(names, lambda name: run_dataset(name, args, models), render, args,
                        task_of)


if __name__ == "__main__":
    sys.exit(main())
