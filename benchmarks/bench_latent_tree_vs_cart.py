"""LatentTree (defaults) vs depth-tuned CART and default DGT, plus glass clustering.

For every dataset and each of ``--splits`` seeded 70/30 train/test splits
(stratified for classification):

* LatentTree: ``LatentTreeClassifier`` / ``LatentTreeRegressor`` with
  defaults, only ``random_state`` set (to the split seed);
* DGT: ``DGTClassifier`` / ``DGTRegressor`` with defaults;
* CART: ``DecisionTree{Classifier,Regressor}`` with ``max_depth`` tuned by
  ``GridSearchCV`` over 2..12 (cv=3).

Reports test accuracy % (classification) or RMSE (regression), mean ± std
over splits, fit times, and LatentTree's active-node fraction and pruned-tree
leaves. Then Section 4.2 of the paper: ``LatentTreeClusterer`` regressing RI
and Na from the other glass features (depth 4), dendrogram purity on a 20%
test part (paper: 0.468), next to CART-free references (one cluster; a
depth-4 ``DecisionTreeRegressor`` on the same self-supervised task).

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_latent_tree_vs_cart.py --out benchmarks/results/latent_tree_vs_cart.md

Smoke run (< 60 s, bundled data)::

    python benchmarks/bench_latent_tree_vs_cart.py --smoke
"""

import argparse
import sys
import warnings

import numpy as np

from _common import Timer, environment_line, markdown_table, single_thread, write_out
from _data import add_data_dir_argument, available, load, task_of, use_data_dir

DATASETS = [
    "breast_cancer_wisconsin", "pima", "crx", "vehicle", "ecoli", "spambase",
    "abalone", "197_cpu_act",
]
SMOKE_DATASETS = ["pima", "abalone"]
SMOKE_MAX_ROWS = 600


def rmse(y, pred):
    return float(np.sqrt(np.mean((np.asarray(y, float) - pred) ** 2)))


def fmt(v, task):
    return f"{100 * v:.2f}" if task == "classification" else f"{v:.3f}"


def run_split(X, y, task, seed, smoke):
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from sklearn_difftrees import (
        DGTClassifier, DGTRegressor, LatentTreeClassifier, LatentTreeRegressor,
    )

    clf = task == "classification"
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=y if clf else None
    )

    def score(est):
        pred = est.predict(Xte)
        return float(np.mean(pred == yte)) if clf else rmse(yte, pred)

    extra = {"max_iter": 10} if smoke else {}
    out = {"seed": seed}
    lt = (LatentTreeClassifier if clf else LatentTreeRegressor)(random_state=seed, **extra)
    with Timer() as t:
        lt.fit(Xtr, ytr)
    out.update(lt=score(lt), lt_fit_s=t.seconds, lt_epochs=int(lt.n_iter_),
               lt_active=float(lt.active_fraction_), lt_leaves=int(lt.get_n_leaves()))
    dgt = (DGTClassifier if clf else DGTRegressor)(random_state=seed, **extra)
    with Timer() as t:
        dgt.fit(Xtr, ytr)
    out.update(dgt=score(dgt), dgt_fit_s=t.seconds)
    cart = GridSearchCV(
        (DecisionTreeClassifier if clf else DecisionTreeRegressor)(random_state=seed),
        {"max_depth": list(range(2, 13))}, cv=3,
        scoring="accuracy" if clf else "neg_mean_squared_error",
    )
    with Timer() as t:
        cart.fit(Xtr, ytr)
    out.update(cart=score(cart), cart_fit_s=t.seconds)
    return out


def glass_clustering(seeds, smoke):
    from sklearn.model_selection import train_test_split
    from sklearn.tree import DecisionTreeRegressor

    from sklearn_difftrees import LatentTreeClusterer
    from sklearn_difftrees.metrics import dendrogram_purity

    X, y = load("glass", smoke=True)
    rows = []
    for seed in seeds:
        Xtr, Xte, _, yte = train_test_split(X, y, test_size=0.2, random_state=seed)
        km = LatentTreeClusterer(
            target_features=[0, 1], max_depth=4, random_state=seed,
            **({"max_iter": 10} if smoke else {}),
        ).fit(Xtr)
        cart = DecisionTreeRegressor(max_depth=4, random_state=seed).fit(Xtr[:, 2:], Xtr[:, :2])

        class _Rest:  # CART on the non-target columns, as a tree for the metric
            def decision_path(self, Z):
                return cart.decision_path(Z[:, 2:])

        _Rest.tree_ = cart.tree_
        _, counts = np.unique(yte, return_counts=True)
        pairs = counts * (counts - 1) / 2
        rows.append({
            "seed": seed,
            "lt": dendrogram_purity(km, Xte, yte),
            "cart": dendrogram_purity(_Rest(), Xte, yte),
            "one": float((pairs * counts / counts.sum()).sum() / pairs.sum()),
            "clusters": km.n_clusters_,
        })
        print(f"  glass seed {seed}: DP {rows[-1]['lt']:.3f} ({km.n_clusters_} clusters), "
              f"CART {rows[-1]['cart']:.3f}", flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--splits", type=int, default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    use_data_dir(args.data_dir)
    single_thread()
    env = environment_line()
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import LabelEncoder

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    n_splits = args.splits or (1 if args.smoke else 3)
    names = args.datasets or available(
        SMOKE_DATASETS if args.smoke else DATASETS, "bench_latent_tree_vs_cart")
    rows = []
    for name in names:
        task = task_of(name)
        X, y = load(name, smoke=args.smoke)
        if task == "classification":
            y = LabelEncoder().fit_transform(y)
        if args.smoke and X.shape[0] > SMOKE_MAX_ROWS:
            keep = np.random.RandomState(0).choice(X.shape[0], SMOKE_MAX_ROWS, replace=False)
            X, y = X[keep], y[keep]
        res = [run_split(X, y, task, seed, args.smoke) for seed in range(n_splits)]

        def ms(key):
            v = np.array([r[key] for r in res])
            return f"{fmt(v.mean(), task)} ± {fmt(v.std(), task)}"

        def mean(key, f="{:.1f}"):
            return f.format(np.mean([r[key] for r in res]))

        rows.append([
            name, f"{X.shape[0]} × {X.shape[1]}", "acc %" if task == "classification" else "RMSE",
            ms("lt"), ms("dgt"), ms("cart"), mean("lt_fit_s"), mean("dgt_fit_s"),
            mean("cart_fit_s", "{:.2f}"), mean("lt_epochs", "{:.0f}"), mean("lt_active", "{:.2f}"),
            mean("lt_leaves", "{:.0f}"),
        ])
        print(" | ".join(rows[-1]), flush=True)
    table = markdown_table(
        ["dataset", "n × p", "metric", "LatentTree", "DGT", "CART (tuned)", "LT fit s",
         "DGT fit s", "CART fit s", "LT epochs", "LT active", "LT leaves"],
        rows, ["l", "r", "l"] + ["r"] * 9,
    )
    glass = glass_clustering(range(1 if args.smoke else 4), args.smoke)
    g = lambda k: f"{np.mean([r[k] for r in glass]):.3f} ± {np.std([r[k] for r in glass]):.3f}"
    text = "\n".join([
        f"LatentTree (defaults) vs DGT (defaults) vs CART (max_depth tuned 2..12, cv=3); "
        f"{n_splits} seeded 70/30 split(s); test accuracy % or RMSE, mean ± std"
        + (" [SMOKE: 10 epochs, subsampled]" if args.smoke else ""),
        "",
        table,
        "",
        f"Glass hierarchical clustering (regress RI and Na, depth 4, {len(glass)} seeds, "
        f"80/20 split, test dendrogram purity): LatentTreeClusterer {g('lt')}; "
        f"depth-4 CART regressor on the same task {g('cart')}; one cluster {g('one')}; "
        f"paper 0.468 ± 0.028.",
        "",
        env,
    ])
    print()
    print(text)
    write_out(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
