"""Default non-greedy trees vs their starts and vs CART on the classification sets.

For every classification dataset and each of ``--splits`` seeded 70/30
stratified train/test splits:

* NG: ``NonGreedyObliqueTreeClassifier()`` with defaults (``random_state`` =
  split seed), and its starting tree ``init_tree_`` (the CO2 tree);
* NG from CART: the same with ``co2_iter=0``, and its start (CART at depth 8,
  grown on the 90% left after the validation split);
* CART (tuned): ``DecisionTreeClassifier(criterion="entropy")`` with
  ``max_depth`` tuned by ``GridSearchCV`` over 2..12 (cv=3).

Reports test accuracy (%) averaged over the splits, and counts on how many
sets SGD beats its start (ties excluded).

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_non_greedy_vs_cart.py --out benchmarks/results/non_greedy_vs_cart.md

Smoke run (< 60 s, bundled copies, subsampled)::

    python benchmarks/bench_non_greedy_vs_cart.py --smoke
"""

import argparse
import time
import warnings

import numpy as np
from _common import environment_line, markdown_table, write_out
from _data import CLASSIFICATION, add_data_dir_argument, available, load, use_data_dir


def run(name, n_splits, smoke):
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.preprocessing import LabelEncoder
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_difftrees import NonGreedyObliqueTreeClassifier

    X, y = load(name, smoke=smoke)
    y = LabelEncoder().fit_transform(y)
    if smoke and len(y) > 600:
        keep = np.random.RandomState(0).choice(len(y), 600, replace=False)
        X, y = X[keep], y[keep]
    res = {k: [] for k in ("ng", "start", "cng", "cstart", "cart", "s")}
    for seed in range(n_splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed,
                                              stratify=y)
        kw = dict(random_state=seed)
        if smoke:
            kw.update(max_iter=5, max_depth=4)
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
        cart = GridSearchCV(DecisionTreeClassifier(criterion="entropy", random_state=seed),
                            {"max_depth": list(range(2, 13))}, cv=3)
        res["cart"].append(cart.fit(Xtr, ytr).score(Xte, yte))
    return {k: float(np.mean(v)) for k, v in res.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir_argument(ap)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--splits", type=int, default=2)
    args = ap.parse_args()
    use_data_dir(args.data_dir)
    env = environment_line()
    names = (["pima", "ecoli"] if args.smoke
             else available(CLASSIFICATION, "bench_non_greedy_vs_cart"))
    n_splits = 1 if args.smoke else args.splits
    rows, wins, wins_c, n = [], 0, 0, 0
    for name in names:
        m = run(name, n_splits, args.smoke)
        d, dc = m["ng"] - m["start"], m["cng"] - m["cstart"]
        n += 1
        wins += d > 1e-9
        wins_c += dc > 1e-9
        rows.append([name, f"{100 * m['cart']:.2f}", f"{100 * m['start']:.2f}",
                     f"{100 * m['ng']:.2f}", f"{100 * d:+.2f}", f"{100 * m['cstart']:.2f}",
                     f"{100 * m['cng']:.2f}", f"{100 * dc:+.2f}", f"{m['s']:.1f}"])
        print(" | ".join(rows[-1]), flush=True)
    headers = ["dataset", "CART (tuned)", "start (CO2)", "NG", "NG − start", "start (CART)",
               "NG from CART", "− start", "NG fit s"]
    text = "\n".join([
        f"Test accuracy (%), mean of {n_splits} seeded 70/30 splits. SGD beats its start on "
        f"{wins}/{n} sets from the CO2 start and {wins_c}/{n} from the CART start.",
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
