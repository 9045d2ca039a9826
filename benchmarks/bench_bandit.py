"""DGT-Bandit vs baselines under bandit feedback (the DGT paper's Figures 2-3, Table 6).

Classification (every multi-class set bundled with the package: letter,
satimage, segmentation, vehicle, yeast, ecoli, dna, glass): held-out
accuracy of the greedy policy after ONE pass over a stream of training rows
(at most ``--rounds``), for ``DGTBanditClassifier`` with its defaults
(per-action logistic models + counted leaf corrections, principal-direction
split initialization, depth 8, lr 1e-3) and in the paper's
mode (``leaf_estimator="gradient", split_init="random"``: Appendix C.3.2,
depth 6, L = 1, exploration 0.3, RMSprop lr 1e-3), against two
epsilon-greedy linear contextual bandits: the project's
``sklearn_difftrees.bandit.EpsilonGreedyLinearBandit`` (one linear cost
regressor per action, epsilon 0.5, step 0.01: the paper's tuned VW values)
and an epsilon-greedy logistic bandit (one logistic reward model per action,
epsilon 0.3, SGD step 0.05, defined here). Loss = 0-1 loss of the played
class. ``--n-jobs`` runs (dataset, seed, learner) jobs in parallel.

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

CLASSIFICATION = ["letter", "satimage", "segmentation", "vehicle", "yeast", "ecoli", "dna",
                  "glass"]
BEGIN_KEY = "bench_bandit"


class EpsilonGreedyLogisticBandit:
    """Epsilon-greedy bandit with one logistic reward model per action.

    ``P(reward | x, k) = sigmoid(w_k . [z, 1])`` on contexts ``z``
    standardized with the first call's statistics; plays the action of
    largest predicted reward with probability ``1 - epsilon`` and a uniform
    one otherwise; after each round, one SGD step of the log-loss on the
    played action's model (no importance weight).
    """

    def __init__(self, classes, epsilon=0.3, learning_rate=0.05, random_state=0):
        self.classes_ = np.unique(np.asarray(classes))
        self.epsilon = epsilon
        self.learning_rate = learning_rate
        self._rng = np.random.RandomState(random_state)

    def _z(self, X):
        X = np.asarray(X, dtype=float)
        if not hasattr(self, "coef_"):
            self._mean, self._scale = X.mean(0), X.std(0)
            self._scale[self._scale == 0] = 1.0
            self.coef_ = np.zeros((self.classes_.size, X.shape[1] + 1))
        return np.c_[(X - self._mean) / self._scale, np.ones(X.shape[0])]

    def predict(self, X):
        return self.classes_[np.argmax(self._z(X) @ self.coef_.T, axis=1)]

    def sample_actions(self, X, random_state=None):
        Z = self._z(X)
        K = self.classes_.size
        greedy = np.argmax(Z @ self.coef_.T, axis=1)
        explore = self._rng.random_sample(Z.shape[0]) < self.epsilon
        idx = np.where(explore, self._rng.randint(K, size=Z.shape[0]), greedy)
        p = np.where(idx == greedy, 1 - self.epsilon + self.epsilon / K, self.epsilon / K)
        return self.classes_[idx], p

    def update(self, X, actions, losses, propensities):
        Z = self._z(X)
        for z, k, loss in zip(Z, np.searchsorted(self.classes_, actions), losses):
            s = 1.0 / (1.0 + np.exp(-z @ self.coef_[k]))
            self.coef_[k] -= self.learning_rate * (s - (1.0 - loss)) * z
        return self
REGRESSION = ["abalone", "197_cpu_act"]


def split(X, y, seed, stratify):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.3, random_state=seed,
                            stratify=y if stratify else None)


def run_classification(name, args, seed):
    from sklearn.preprocessing import LabelEncoder

    from sklearn_difftrees import DGTBanditClassifier
    from sklearn_difftrees.bandit import EpsilonGreedyLinearBandit, simulate

    X, y = load(name, smoke=True)
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
        "DGT-Bandit (defaults)": DGTBanditClassifier(classes=classes, random_state=seed),
        "DGT-Bandit (paper mode)": DGTBanditClassifier(
            classes=classes, leaf_estimator="gradient", split_init="random", max_depth=6,
            random_state=seed),
        "eps-greedy linear (eps 0.5)": EpsilonGreedyLinearBandit(classes, random_state=seed),
        "eps-greedy logistic (eps 0.3)": EpsilonGreedyLogisticBandit(classes,
                                                                     random_state=seed),
    }
    if args.only:
        learners = {args.only: learners[args.only]}
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

    X, y = load(name, smoke=True)
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
    command = "python benchmarks/bench_bandit.py " + " ".join(
        a for a in sys.argv[1:] if a) if sys.argv[0].endswith("bench_bandit.py") else ""
    lines = [f"Environment: {env}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    names = [n for n in CLASSIFICATION if n in results]
    if names:
        lines += [f"Classification: one pass over the training split of each seeded 70/30 "
                  f"split (at most {args.rounds} rows), batch of 4 rounds, {args.seeds} "
                  "seed(s); held-out accuracy (%) of the greedy policy at the end of the "
                  "stream, mean ± sd over the seeds.", ""]
        labels = [lab for lab in CLASSIFICATION_LEARNERS if lab in results[names[0]][0]]
        rows, means = [], {lab: [] for lab in labels}
        wins = {lab: 0 for lab in labels[2:]}
        for name in names:
            runs = results[name]
            row = [name, runs[0][labels[0]]["rounds"][-1]]
            for lab in labels:
                acc = [100 * r[lab]["scores"][-1] for r in runs]
                means[lab].append(np.mean(acc))
                row.append(f"{np.mean(acc):.1f} ± {np.std(acc):.1f}")
            for lab in wins:
                wins[lab] += means[labels[0]][-1] > means[lab][-1]
            rows.append(row)
        rows.append(["mean", ""] + [f"{np.mean(means[lab]):.1f}" for lab in labels])
        lines.append(markdown_table(["dataset", "rounds", *labels], rows,
                                    ["l", "r"] + ["r"] * len(labels)))
        lines.append("")
        lines.append("DGT-Bandit (defaults) has the higher mean accuracy than "
                     + ", ".join(f"{lab} on {w} of {len(names)} sets" for lab, w in wins.items())
                     + ".")
        seconds = {lab: np.mean([r[lab]["seconds"] for n in names for r in results[n]])
                   for lab in labels}
        lines.append("Mean time per stream (s): "
                     + ", ".join(f"{lab} {sec:.1f}" for lab, sec in seconds.items()) + ".")
    if not any(n in results for n in REGRESSION):
        return "\n".join(lines)
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


def _job(kind, name, args, seed):
    single_thread()
    use_data_dir(args.data_dir)  # a worker process does not share the parent's setting
    if kind == "classification":
        return run_classification(name, args, seed)
    return run_regression(name, args, seed)


CLASSIFICATION_LEARNERS = ["DGT-Bandit (defaults)", "DGT-Bandit (paper mode)",
                           "eps-greedy linear (eps 0.5)", "eps-greedy logistic (eps 0.3)"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true", help="tiny run on bundled data (< 60 s)")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7000, help="stream length (rows, at most)")
    parser.add_argument("--passes", type=int, default=3, help="regression passes")
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--eval-rows", type=int, default=2000)
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="parallel (dataset, seed, learner) jobs, one torch thread each")
    parser.add_argument("--out", help="markdown report path")
    parser.add_argument("--markdown", nargs="+", metavar="DOC",
                        help="rewrite the '<!-- bench_bandit:begin' ... '<!-- bench_bandit:end -->' "
                             "block of these documents (docs/benchmarks.md docs/bandit.md)")
    parser.add_argument("--json", help="raw results path")
    parser.add_argument("--plot", help="learning-curve PNG path")
    parser.add_argument("--datasets", nargs="+", default=CLASSIFICATION + REGRESSION,
                        choices=CLASSIFICATION + REGRESSION, help="subset to run")
    args = parser.parse_args(argv)
    args.only = None
    if args.smoke:
        args.rounds, args.passes, args.eval_every, args.eval_rows = 600, 1, 200, 500
        args.datasets = [d for d in args.datasets if d in ("satimage", "abalone")]
    use_data_dir(args.data_dir)
    single_thread()
    env = environment_line()
    from joblib import Parallel, delayed

    jobs, keys = [], []
    for name in args.datasets:
        try:
            load(name, smoke=True)
        except FileNotFoundError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        print(f"{name} ({source_of(name)})", flush=True)
        kind = "classification" if name in CLASSIFICATION else "regression"
        for seed in range(args.seeds):
            for label in CLASSIFICATION_LEARNERS if kind == "classification" else [None]:
                job_args = argparse.Namespace(**{**vars(args), "only": label})
                jobs.append(delayed(_job)(kind, name, job_args, seed))
                keys.append((name, seed))
    results = {}
    for (name, seed), out in zip(keys, Parallel(n_jobs=args.n_jobs)(jobs)):
        runs = results.setdefault(name, [])
        while len(runs) <= seed:
            runs.append({})
        runs[seed].update(out)
    text = render(results, args, env)
    print(text)
    write_out(args.out, text)
    for doc in args.markdown or []:
        from sklearn_difftrees._provenance import replace_marked_section

        replace_marked_section(doc, BEGIN_KEY, text)
        print(f"wrote the tables into {doc}")
    if args.json:
        write_out(args.json, json.dumps(results, indent=1))
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
