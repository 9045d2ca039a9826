"""Predict time of a depth-8 oblique tree vs scikit-learn's depth-8 CART.

Both models are fitted on letter (20000 x 16, 26 classes): ours is
``DGTClassifier(max_depth=8, max_iter=3)`` (the accuracy does not matter
here, only the routing cost of a complete depth-8 oblique tree: 8 dot products
of length 16 per row), sklearn's is ``DecisionTreeClassifier(max_depth=8)``
(8 threshold comparisons per row). ``--model random`` builds an
``ObliqueTree`` with random weights instead of fitting DGT.

Timed on letter tiled to ``--rows`` rows (default 200000), with one thread
(``torch.set_num_threads(1)`` and ``threadpoolctl.threadpool_limits(1)``),
median of ``--repeats`` (default 7) calls after one warm-up call, for float64
and float32 input:

* ours ``estimator.predict`` (input validation, routing, leaf lookup, argmax,
  class mapping) and ``estimator.tree_.apply`` (the compiled routing kernel
  only);
* sklearn ``DecisionTreeClassifier.predict`` and ``.apply``.

Target: ours predict <= 2x sklearn predict.

    python benchmarks/bench_predict.py --out benchmarks/results/predict.md
    python benchmarks/bench_predict.py --smoke
"""

import argparse
import statistics
import sys
import time

import numpy as np

from _common import environment_line, markdown_table, single_thread, write_out
from _data import add_data_dir_argument, load, source_of, use_data_dir


def median_time(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def build_models(X, y, model, depth):
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_difftrees import DGTClassifier, ObliqueTree

    sk = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y)
    if model == "fit":
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        with warnings.catch_warnings():  # 3 epochs on purpose: only the routing cost matters
            warnings.simplefilter("ignore", ConvergenceWarning)
            ours = DGTClassifier(max_depth=depth, max_iter=3, random_state=0).fit(X, y)
        tree = ours.tree_
    else:
        rng = np.random.RandomState(0)
        n_int, n_leaves = 2**depth - 1, 2**depth
        w = rng.randn(n_int, X.shape[1])
        tree = ObliqueTree(w / X.std(0), -w @ (X.mean(0) / X.std(0)),
                           rng.dirichlet(np.ones(26), n_leaves))
        tree.finalize(X)
        ours = None
    return ours, tree, sk


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny run for CI: 20000 rows, 3 repeats, 1 training epoch")
    parser.add_argument("--rows", type=int, default=None, help="default 200000 (20000 smoke)")
    parser.add_argument("--repeats", type=int, default=None, help="default 7 (3 smoke)")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--model", choices=["fit", "random"], default="fit",
                        help="fit DGT on letter (default) or use a random ObliqueTree")
    parser.add_argument("--out", default=None, help="write the markdown table here")
    args = parser.parse_args(argv)

    use_data_dir(args.data_dir)
    single_thread()
    environment_line()  # pin the code state and date at the start of the run
    from threadpoolctl import threadpool_limits

    rows = args.rows or (20_000 if args.smoke else 200_000)
    repeats = args.repeats or (3 if args.smoke else 7)

    X, y = load("letter", smoke=args.smoke)
    with threadpool_limits(1):
        ours, tree, sk = build_models(X, y, args.model, args.depth)
        reps = -(-rows // X.shape[0])
        X64 = np.ascontiguousarray(np.tile(X, (reps, 1))[:rows], dtype=np.float64)
        X32 = X64.astype(np.float32)

        results = {}
        for label, Xt in [("float64", X64), ("float32", X32)]:
            r = {}
            if ours is not None:
                r["ours_predict"] = median_time(lambda: ours.predict(Xt), repeats)
            else:
                leaf_class = np.argmax(tree.value, axis=1)  # what predict does, unvalidated
                r["ours_predict"] = median_time(
                    lambda: leaf_class[tree.apply(Xt) - tree.n_internal], repeats)
            r["ours_apply"] = median_time(lambda: tree.apply(Xt), repeats)
            r["sk_predict"] = median_time(lambda: sk.predict(Xt), repeats)
            r["sk_apply"] = median_time(lambda: sk.apply(Xt), repeats)
            results[label] = r
            print(f"  {label}: " + ", ".join(f"{k} {1e3 * v:.1f} ms" for k, v in r.items()),
                  flush=True)

        agree = None
        if ours is not None:
            agree = float(np.mean(ours.predict(X64[:20000]) == ours.predict(X32[:20000])))

    headers = ["input", "ours predict ms", "ours tree_.apply ms", "sklearn predict ms",
               "sklearn apply ms", "ours/sklearn predict", "ours apply/sklearn predict",
               "ours/sklearn apply"]
    table_rows = []
    for label, r in results.items():
        table_rows.append([
            label,
            f"{1e3 * r['ours_predict']:.1f}",
            f"{1e3 * r['ours_apply']:.1f}",
            f"{1e3 * r['sk_predict']:.1f}",
            f"{1e3 * r['sk_apply']:.1f}",
            f"{r['ours_predict'] / r['sk_predict']:.2f}x",
            f"{r['ours_apply'] / r['sk_predict']:.2f}x",
            f"{r['ours_apply'] / r['sk_apply']:.2f}x",
        ])
    worst = max(r["ours_predict"] / r["sk_predict"] for r in results.values())
    model = (f"DGTClassifier(max_depth={args.depth}, max_iter=3) fitted on letter"
             if ours is not None else f"random depth-{args.depth} ObliqueTree")
    head = (
        f"Predict time, {rows} rows (letter, {source_of('letter')} copy, p={X.shape[1]}, "
        f"tiled), 1 thread, median of {repeats}. Ours: {model} "
        f"({tree.n_leaves} active leaves); sklearn: DecisionTreeClassifier(max_depth="
        f"{args.depth}) ({sk.get_n_leaves()} leaves, depth {sk.get_depth()}).\n"
        f"{environment_line()}\n"
    )
    foot = (f"Worst ours/sklearn predict ratio: {worst:.2f}x (target <= 2x: "
            f"{'met' if worst <= 2 else 'NOT met'}).")
    if agree is not None:
        foot += f" float32 vs float64 input: same predicted class on {100 * agree:.2f}% of rows."
    text = head + "\n" + markdown_table(headers, table_rows) + "\n\n" + foot
    print()
    print(text)
    write_out(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
