"""Test accuracy vs depth: CART, the non-greedy start, the non-greedy tree (paper, Figure 2).

For each dataset (satimage, letter, segmentation) and depth, on seeded 70/30
stratified train/test splits:

* CART: ``DecisionTreeClassifier(criterion="entropy", max_depth=d)`` on the
  whole training part (the paper's axis-aligned baseline at that depth);
* start: the tree SGD starts from inside ``NonGreedyObliqueTreeClassifier``
  (``init_tree_``: the greedy CO2 tree grown from axis-aligned splits, on the
  90% of the training part left after the validation split);
* CART start: the same estimator with ``co2_iter=0`` (SGD starts from CART
  itself): its ``init_tree_`` and its result;
* non-greedy: ``NonGreedyObliqueTreeClassifier(max_depth=d)``, other
  parameters at their defaults (``nu=10``, fast inference, CO2 on).

Also reports the non-greedy tree's active leaves and fit time.

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_non_greedy_depth.py --out benchmarks/results/non_greedy_depth.md

Smoke run (< 60 s, bundled copies, subsampled)::

    python benchmarks/bench_non_greedy_depth.py --smoke
"""

import argparse
import time
import warnings

import numpy as np
from _common import environment_line, markdown_table, write_out
from _data import add_data_dir_argument, load, use_data_dir


def run(name, depths, n_splits, smoke):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import LabelEncoder
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_difftrees import NonGreedyObliqueTreeClassifier

    X, y = load(name, smoke=smoke)
    y = LabelEncoder().fit_transform(y)
    if smoke and len(y) > 1000:
        keep = np.random.RandomState(0).choice(len(y), 1000, replace=False)
        X, y = X[keep], y[keep]
    rows = []
    for d in depths:
        res = {k: [] for k in ("cart", "start", "ng", "cstart", "cng", "leaves", "s")}
        for seed in range(n_splits):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed,
                                                  stratify=y)
            cart = DecisionTreeClassifier(criterion="entropy", max_depth=d, random_state=seed)
            res["cart"].append(cart.fit(Xtr, ytr).score(Xte, yte))
            kw = dict(max_depth=d, random_state=seed)
            if smoke:
                kw["max_iter"] = 5
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tic = time.perf_counter()
                ng = NonGreedyObliqueTreeClassifier(**kw).fit(Xtr, ytr)
                res["s"].append(time.perf_counter() - tic)
                cng = NonGreedyObliqueTreeClassifier(co2_iter=0, **kw).fit(Xtr, ytr)
            for est, k0, k1 in ((ng, "start", "ng"), (cng, "cstart", "cng")):
                start = est.classes_[est.init_tree_.predict(Xte).argmax(axis=1)]
                res[k0].append(np.mean(start == yte))
                res[k1].append(est.score(Xte, yte))
            res["leaves"].append(ng.n_active_leaves_)
        m = {k: float(np.mean(v)) for k, v in res.items()}
        rows.append([name, d, f"{100 * m['cart']:.2f}", f"{100 * m['start']:.2f}",
                     f"{100 * m['ng']:.2f}", f"{100 * (m['ng'] - m['start']):+.2f}",
                     f"{100 * m['cstart']:.2f}", f"{100 * m['cng']:.2f}",
                     f"{m['leaves']:.0f}", f"{m['s']:.1f}"])
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir_argument(ap)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--datasets", default="satimage,letter,segmentation")
    args = ap.parse_args()
    use_data_dir(args.data_dir)
    env = environment_line()
    if args.smoke:
        names, depths, n_splits = ["segmentation"], [4, 6], 1
    else:
        names, depths, n_splits = args.datasets.split(","), [6, 8, 10, 12, 14], args.splits
    rows = []
    for name in names:
        rows += run(name, depths, n_splits, args.smoke)
    headers = ["dataset", "depth", "CART", "start (CO2)", "non-greedy", "NG − start",
               "CART start", "NG from CART", "NG active leaves", "NG fit s"]
    text = "\n".join([
        f"Test accuracy (%) vs depth, mean of {n_splits} seeded 70/30 splits.",
        "",
        markdown_table(headers, rows),
        "",
        env,
    ])
    print(text)
    if args.out:
        write_out(args.out, text)


if __name__ == "__main__":
    main()
