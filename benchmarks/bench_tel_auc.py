"""Default TEL vs HistGradientBoosting and CART: test AUC (paper Table 3, Fig. 4).

Part ``auc``: for the ten PMLB sets of the paper's Table 3 (twonorm only with
``--data-dir``: it is not bundled), and each of ``--splits`` seeded random 70/30 splits
(stratified; the paper uses 15):

* TEL: ``TreeEnsembleLayerClassifier`` with its defaults (``random_state`` =
  split seed);
* GBDT: ``HistGradientBoostingClassifier`` with its defaults;
* CART: ``DecisionTreeClassifier`` with ``max_depth`` tuned over 2..12 by 3-fold
  cross-validated AUC on the training part.

Test AUC: binary, the positive class (the larger label); multiclass, the
one-vs-rest macro average. The paper's numbers are *tuned* TEL (50 Hyperopt
rounds per split); the target is the default TEL >= paper - 0.01.

Part ``curve`` (paper Fig. 4, "number of trees needed"): mean test AUC vs the
number of trees for TEL (``n_trees`` in 1..50, other defaults) and for
HistGradientBoosting (``max_iter`` = number of trees, 1..500, early stopping
off), over ``--curve-splits`` splits of pima, spambase and crx.

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_tel_auc.py --splits 15 --out benchmarks/results/tel_auc.md

Smoke run (< 60 s, bundled data)::

    python benchmarks/bench_tel_auc.py --smoke
"""

import argparse
import time
import warnings

import numpy as np

from _common import environment_line, markdown_table, single_thread, write_out
from _data import add_data_dir_argument, available, load, source_of, use_data_dir

#: Paper Table 3 (tuned TEL test AUC, mean of 15 splits).
PAPER_AUC = {
    "breast_cancer_wisconsin": 0.995,
    "pima": 0.831,
    "crx": 0.911,
    "spambase": 0.986,
    "twonorm": 0.998,
    "ecoli": 0.97,
    "vehicle": 0.953,
    "yeast": 0.861,
    "dna": 0.993,
    "satimage": 0.99,
}
CURVE_SETS = ["pima", "spambase", "crx"]
TEL_TREES = [1, 2, 5, 10, 20, 50]
GBDT_TREES = [1, 2, 5, 10, 20, 50, 100, 200, 500]


def auc(y, proba):
    from sklearn.metrics import roc_auc_score

    if proba.shape[1] == 2:
        return roc_auc_score(y, proba[:, 1])
    return roc_auc_score(y, proba, multi_class="ovr", average="macro")


def _data(name, smoke, max_rows):
    X, y = load(name, smoke=smoke)
    _, y = np.unique(y, return_inverse=True)
    if max_rows is not None and X.shape[0] > max_rows:
        idx = np.random.RandomState(0).choice(X.shape[0], max_rows, replace=False)
        X, y = X[idx], y[idx]
    return X, y


def _split(X, y, seed):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


def run_auc(name, splits, smoke, max_rows):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_difftrees import TreeEnsembleLayerClassifier

    X, y = _data(name, smoke, max_rows)
    res = {"tel": [], "gbdt": [], "cart": [], "time": [], "leaves": [], "iter": []}
    scoring = "roc_auc" if np.unique(y).size == 2 else "roc_auc_ovr"
    for seed in range(splits):
        Xtr, Xte, ytr, yte = _split(X, y, seed)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tel = TreeEnsembleLayerClassifier(random_state=seed).fit(Xtr, ytr)
        res["time"].append(time.perf_counter() - t0)
        res["tel"].append(auc(yte, tel.predict_proba(Xte)))
        res["leaves"].append(tel.n_reachable_leaves_)
        res["iter"].append(tel.n_iter_)
        gb = HistGradientBoostingClassifier(random_state=seed).fit(Xtr, ytr)
        res["gbdt"].append(auc(yte, gb.predict_proba(Xte)))
        cart = GridSearchCV(DecisionTreeClassifier(random_state=seed),
                            {"max_depth": list(range(2, 13))}, cv=3, scoring=scoring)
        res["cart"].append(auc(yte, cart.fit(Xtr, ytr).predict_proba(Xte)))
        print(f"  {name} split {seed}: TEL {res['tel'][-1]:.4f}  GBDT {res['gbdt'][-1]:.4f}"
              f"  CART {res['cart'][-1]:.4f}  ({res['time'][-1]:.1f}s)", flush=True)
    return res


def run_curve(name, splits, smoke, max_rows):
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sklearn_difftrees import TreeEnsembleLayerClassifier

    X, y = _data(name, smoke, max_rows)
    tel = {m: [] for m in TEL_TREES}
    gbdt = {m: [] for m in GBDT_TREES}
    for seed in range(splits):
        Xtr, Xte, ytr, yte = _split(X, y, seed)
        for m in TEL_TREES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = TreeEnsembleLayerClassifier(n_trees=m, random_state=seed).fit(Xtr, ytr)
            tel[m].append(auc(yte, est.predict_proba(Xte)))
        for m in GBDT_TREES:
            est = HistGradientBoostingClassifier(max_iter=m, early_stopping=False,
                                                 random_state=seed).fit(Xtr, ytr)
            gbdt[m].append(auc(yte, est.predict_proba(Xte)))
        print(f"  curve {name} split {seed} done", flush=True)
    return tel, gbdt


def ms(v):
    v = np.asarray(v)
    return f"{v.mean():.4f} ± {v.std():.4f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--splits", type=int, default=15)
    parser.add_argument("--curve-splits", type=int, default=5)
    parser.add_argument("--datasets", default=",".join(PAPER_AUC))
    parser.add_argument("--parts", default="auc,curve")
    parser.add_argument("--out")
    args = parser.parse_args()
    use_data_dir(args.data_dir)
    single_thread()
    env = environment_line()
    if args.smoke:
        datasets, splits, curve_sets, curve_splits, max_rows = (
            ["pima", "ecoli"], 1, ["pima"], 1, 400)
        TEL_TREES[:] = [1, 5]
        GBDT_TREES[:] = [1, 10]
    else:
        datasets, splits = available(args.datasets.split(","), "bench_tel_auc"), args.splits
        curve_sets, curve_splits, max_rows = CURVE_SETS, args.curve_splits, None
    parts = args.parts.split(",")
    from sklearn_difftrees import TreeEnsembleLayerClassifier

    d = TreeEnsembleLayerClassifier().get_params()
    defaults = ", ".join(f"{k}={d[k]}" for k in
                         ("n_trees", "max_depth", "gamma", "learning_rate", "batch_size",
                          "max_iter", "n_iter_no_change"))
    runs = []
    if "auc" in parts:
        runs.append(f"AUC table: {splits} splits")
    if "curve" in parts:
        runs.append(f"trees needed: {curve_splits} splits")
    out = [f"TEL test AUC ({'smoke; ' if args.smoke else ''}{'; '.join(runs)}; random 70/30 "
           f"stratified splits; TEL defaults: {defaults})", env, ""]
    if "auc" in parts:
        rows, n_pass = [], 0
        for name in datasets:
            print(f"[auc] {name}", flush=True)
            r = run_auc(name, splits, args.smoke, max_rows)
            paper = PAPER_AUC[name]
            ok = np.mean(r["tel"]) >= paper - 0.01
            n_pass += ok
            rows.append([f"{name} ({source_of(name)})", ms(r["tel"]), f"{paper:.3f}",
                         "yes" if ok else "no", ms(r["gbdt"]), ms(r["cart"]),
                         f"{np.mean(r['leaves']):.2f}", f"{np.mean(r['iter']):.0f}",
                         f"{np.mean(r['time']):.1f}"])
            write_out(args.out, "\n".join(out + [markdown_table(AUC_HEADERS, rows)]))
        out += [markdown_table(AUC_HEADERS, rows), "",
                f"Default TEL >= paper's tuned AUC - 0.01 on {n_pass} of {len(rows)} sets.", ""]
    if "curve" in parts:
        for name in curve_sets:
            print(f"[curve] {name}", flush=True)
            tel, gbdt = run_curve(name, curve_splits, args.smoke, max_rows)
            out += [f"Trees needed, {name} ({source_of(name)}, {curve_splits} splits): "
                    "mean test AUC ± std vs number of trees", "",
                    markdown_table(["model"] + [str(m) for m in TEL_TREES],
                                   [["TEL"] + [ms(tel[m]) for m in TEL_TREES]]), "",
                    markdown_table(["model"] + [str(m) for m in GBDT_TREES],
                                   [["HistGBDT"] + [ms(gbdt[m]) for m in GBDT_TREES]]), ""]
            write_out(args.out, "\n".join(out))
    text = "\n".join(out)
    print()
    print(text)
    write_out(args.out, text)


AUC_HEADERS = ["dataset", "TEL (default)", "paper TEL (tuned)", ">= paper - 0.01",
               "HistGBDT (default)", "CART (tuned depth)", "reachable leaves / tree",
               "epochs", "TEL fit (s)"]


if __name__ == "__main__":
    main()
