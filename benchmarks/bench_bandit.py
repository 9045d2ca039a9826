"""DGT-Bandit vs baselines under bandit feedback (the DGT paper's Figures 2-3, Table 6).

Classification (satimage, letter): learning curves of held-out accuracy vs
bandit queries over one pass of a stream of training rows, for
``DGTBanditClassifier`` (defaults of Appendix C.3.2: depth 6, L = 1,
exploration 0.3, RMSprop, lr 1e-3, accumulation over 4 rounds; and lr 1e-2)
against the epsilon-greedy linear contextual bandit
(``sklearn_difftrees.bandit.EpsilonGreedyLinearBandit``, epsilon 0.5 and step
0.01, the paper's tuned VW values). Loss = 0-1 loss of the played class.

Regression (abalone, 197_cpu_act): targets min-max scaled to [0, 1] on the
training part (as in the paper); ``DGTBanditRegressor`` with two-point
feedback (eq. 10, delta 0.5, squared loss) for ``--passes`` passes over the
training rows, against online linear regression with the same estimator and
against supervised ``DGTRegressor`` (defaults). RMSE in original target units.

Every run: seeded 70/30 train/test split (stratified for classification),
one torch thread. Every learner standardizes its inputs with the
statistics of the (unlabelled) stream contexts (``simulate(init_contexts=...)``).
Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_bandit.py --out benchmarks/results/bandit.md \
        --plot docs/img/bandit_curves.png

Smoke run (< 60 s, bundled data only)::

    python benchmarks/bench_bandit.py --smoke
"""

import argparse
import json
import sys

import numpy as np

from _common import Timer, environment_line, markdown_table, single_thread, write_out
from _data import add_data_dir_argument, load, source_of, use_data_dir

CLASSIFICATION = ["satimage", "letter"]
REGRESSION = ["abalone", "197_cpu_act"]


def split(X, y, seed, stratify):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.3, random_state=seed,
                            stratify=y if stratify else None)


def run_classification(name, args, seed):
    from sklearn.preprocessing import LabelEncoder

    from sklearn_difftrees import DGTBanditClassifier
    from sklearn_difftrees.bandit import EpsilonGreedyLinearBandit, simulate

    X, y = load(name, smoke=args.smoke)
    y = LabelEncoder().fit_transform(y)
    X_tr, X_te, y_tr, y_te = split(X, y, seed, True)
    rng = np.random.RandomState(seed)
    n = min(args.rounds, X_tr.shape[0])
    rows = rng.permutation(X_tr.shape[0])[:n]
    X_s, y_s = X_tr[rows], y_tr[rows]
    if X_te.shape[0] > args.eval_rows:
        keep = rng.choice(X_te.shape[0], args.eval_rows, replace=False)
        X_te, y_te = X_te[keep], y_te[keep]
    classes = np.unique(y)
    learners = {
        "DGT-Bandit (lr 1e-3)": DGTBanditClassifier(classes=classes, random_state=seed),
        "DGT-Bandit (lr 1e-2)": DGTBanditClassifier(classes=classes, learning_rate=1e-2,
                                                    random_state=seed),
        "eps-greedy linear": EpsilonGreedyLinearBandit(classes, random_state=seed),
    }
    out = {}
    for label, learner in learners.items():
        with Timer() as t:
            rec = simulate(learner, X_s, y_s, X_eval=X_te, y_eval=y_te,
                           eval_every=args.eval_every, batch_size=4, random_state=seed,
                           name=label, init_contexts=X_s)
        out[label] = dict(rounds=rec.rounds, scores=rec.scores, mean_loss=rec.mean_loss,
                          seconds=t.seconds)
        print(f"  {name} seed {seed} {label}: acc {100 * rec.final_score:.2f}% "
              f"({t.seconds:.1f}s)", flush=True)
    return out


def run_regression(name, args, seed):
    from sklearn_difftrees import DGTBanditRegressor, DGTRegressor
    from sklearn_difftrees.bandit import OnlineLinearRegressionBandit, simulate

    X, y = load(name, smoke=args.smoke)
    X_tr, X_te, y_tr, y_te = split(X, y, seed, False)
    rng = np.random.RandomState(seed)
    n = min(args.rounds, X_tr.shape[0])
    rows = rng.permutation(X_tr.shape[0])[:n]
    X_tr, y_tr = X_tr[rows], y_tr[rows]
    lo, hi = y_tr.min(), y_tr.max()
    scale = hi - lo
    s_tr = (y_tr - lo) / scale

    def rmse(pred_scaled):
        return float(np.sqrt(np.mean((pred_scaled * scale + lo - y_te) ** 2)))

    out = {}
    with Timer() as t:
        sup = DGTRegressor(random_state=seed).fit(X_tr, s_tr)
    out["supervised DGT"] = dict(rmse=rmse(sup.predict(X_te)), seconds=t.seconds)
    with Timer() as t:
        band = DGTBanditRegressor(feedback="two_point", n_passes=args.passes,
                                  random_state=seed).fit(X_tr, s_tr)
    out["DGT-Bandit two-point"] = dict(rmse=rmse(band.predict(X_te)), seconds=t.seconds)
    with Timer() as t:
        lin = OnlineLinearRegressionBandit(feedback="two_point", random_state=seed)
        simulate(lin, X_tr, s_tr, n_rounds=args.passes * n, eval_every=args.passes * n,
                 random_state=seed, init_contexts=X_tr)
    out["linear two-point"] = dict(rmse=rmse(lin.predict(X_te)), seconds=t.seconds)
    for label, r in out.items():
        print(f"  {name} seed {seed} {label}: RMSE {r['rmse']:.4f} ({r['seconds']:.1f}s)",
              flush=True)
    return out


def render(results, args, env):
    lines = [f"Environment: {env}", "",
             f"Classification: one pass over {args.rounds} training rows (fewer if the "
             f"set is smaller), batch of 4 rounds, {args.seeds} seed(s); held-out "
             "accuracy (%) of the greedy policy at the end of the stream.", ""]
    rows = []
    for name in CLASSIFICATION:
        if name not in results:
            continue
        runs = results[name]
        for label in runs[0]:
            acc = [100 * r[label]["scores"][-1] for r in runs]
            sec = [r[label]["seconds"] for r in runs]
            rows.append([name, label, runs[0][label]["rounds"][-1],
                         f"{np.mean(acc):.2f} ± {np.std(acc):.2f}", f"{np.mean(sec):.1f}"])
    if rows:
        lines.append(markdown_table(["dataset", "learner", "queries", "accuracy %", "time s"],
                                    rows, ["l", "l", "r", "r", "r"]))
    lines += ["", f"Regression: targets min-max scaled to [0, 1] for learning, RMSE in "
              f"original units; bandit learners make {args.passes} passes over up to "
              f"{args.rounds} training rows (2 loss queries per round).", ""]
    rows = []
    for name in REGRESSION:
        if name not in results:
            continue
        runs = results[name]
        sup = np.mean([r["supervised DGT"]["rmse"] for r in runs])
        for label in runs[0]:
            v = [r[label]["rmse"] for r in runs]
            rows.append([name, label, f"{np.mean(v):.4f} ± {np.std(v):.4f}",
                         f"{np.mean(v) / sup:.3f}",
                         f"{np.mean([r[label]['seconds'] for r in runs]):.1f}"])
    if rows:
        lines.append(markdown_table(["dataset", "learner", "RMSE", "vs supervised", "time s"],
                                    rows, ["l", "l", "r", "r", "r"]))
    return "\n".join(lines)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in CLASSIFICATION if n in results]
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        runs = results[name]
        for label in runs[0]:
            q = runs[0][label]["rounds"]
            acc = 100 * np.mean([r[label]["scores"] for r in runs], axis=0)
            ax.plot(q, acc, label=label)
        ax.set_title(name)
        ax.set_xlabel("bandit queries")
        ax.set_ylabel("held-out accuracy %")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true", help="tiny run on bundled data (< 60 s)")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5000, help="stream length (rows)")
    parser.add_argument("--passes", type=int, default=3, help="regression passes")
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--eval-rows", type=int, default=2000)
    parser.add_argument("--out", help="markdown report path")
    parser.add_argument("--json", help="raw results path")
    parser.add_argument("--plot", help="learning-curve PNG path")
    parser.add_argument("--datasets", nargs="+", default=CLASSIFICATION + REGRESSION,
                        choices=CLASSIFICATION + REGRESSION, help="subset to run")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.passes, args.eval_every, args.eval_rows = 600, 1, 200, 500
    use_data_dir(args.data_dir)
    single_thread()
    env = environment_line()
    results = {}
    for name in args.datasets:
        try:
            load(name, smoke=args.smoke)
        except FileNotFoundError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        print(f"{name} ({source_of(name)})", flush=True)
        run = run_classification if name in CLASSIFICATION else run_regression
        results[name] = [run(name, args, seed) for seed in range(args.seeds)]
    text = render(results, args, env)
    print(text)
    write_out(args.out, text)
    if args.json:
        write_out(args.json, json.dumps(results, indent=1))
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
