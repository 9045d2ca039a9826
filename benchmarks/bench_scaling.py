"""Training time where users wait: forests, rows, NonGreedy inference, TEL backends.

Everything is measured side by side in one run on one core: one torch
thread, and the BLAS / OpenMP pools of the scikit-learn models
(HistGradientBoosting's OpenMP) limited to one thread with ``threadpoolctl``,
as in ``bench_defaults.py``, so that every model gets the same core and only
the ratios matter (the machines these runs share are loaded; absolute
seconds move from run to run). ``--threads N`` gives every model N threads
instead (torch and the pools), as a user's machine of N cores would; its
blocks in ``--markdown`` are marked ``bench_scaling_<section>_<N>threads``.

1. **Forest vs single tree.** On a bundled set and three seeded 70/30
   stratified splits (random_state = split seed): the fit time and test
   accuracy of one DGT tree at the forest's member settings
   (``DGTForestClassifier()._make_member``: its greedy start, which it often
   keeps, so it can stop at once), of the default ``DGTClassifier`` (what a
   user fits instead of the forest), of the default 30-tree
   ``DGTForestClassifier`` (members trained together, batched; ``n_jobs=1``),
   and, with ``--independent``, of the same forest trained member by member
   (every member's own ``fit`` with the seed and bootstrap weights the forest
   draws: the training before batching), and the forest's time against one
   such member fit (the independent forest's time / ``n_estimators``).
   ``--device cuda`` trains the forest and the single trees on the GPU (the
   members' greedy starts, floors and subtrees are computed on the CPU).
2. **Fit time against rows.** Default fit time of every family for
   ``n`` rows of a synthetic 3-class problem with 50 features
   (``make_classification`` of ``n`` + ``--test-rows`` rows, the last ones
   held out), beside scikit-learn's HistGradientBoosting and CART (default
   ``DecisionTreeClassifier``), as multiples of HistGradientBoosting's time
   in the same run, with every model's test accuracy. ``--sizes`` (default
   10000,100000,1000000; ``--smoke``: 2000).
3. **NonGreedy inference.** Whole default fit with ``max_depth=12``,
   ``inference="fast"`` vs ``"exact"`` (same data as 2, ``--ng-rows`` rows).
4. **TEL backends.** ``TreeEnsembleLayerClassifier`` with 10 trees of depth
   10, ``gamma=1``, 20 epochs: fit time with ``backend="conditional"`` vs
   ``"dense"`` and ``"auto"`` (``--tel-rows`` rows).

Usage::

    python benchmarks/bench_scaling.py --smoke
    python benchmarks/bench_scaling.py --sizes 10000,100000 --independent \\
        --out benchmarks/results/scaling.md --markdown docs/benchmarks.md

``--markdown FILE`` replaces, for every section run, the block between the
``bench_scaling_<section>`` markers of FILE (docs/benchmarks.md:
``bench_scaling_forest``, ``bench_scaling_rows``, ``bench_scaling_ratios``)
by that section's report, which names the command, the CPU (``lscpu``) and
the date; sections not run keep their block.
"""

import argparse
import contextlib
import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Timer, environment_line, markdown_table, single_thread, write_out  # noqa: E402
from _data import add_data_dir_argument, load, use_data_dir  # noqa: E402

from sklearn_difftrees._provenance import replace_marked_section  # noqa: E402

_MAX_INT = np.iinfo(np.int32).max


def _split(X, y, seed):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)


def _as_member(tree):
    """``tree`` (a forest's ``_make_member``) fitted as the forest fits its
    members: without the single tree's out-of-fold cross-check, which a
    single ``fit`` runs after training (``_check_fitted_model``) and the
    forest's batched members do not (three more fits on small tables)."""
    tree._check_fitted_model = lambda plan: None
    return tree


def _independent_forest(forest, X, y):
    """The forest's members fitted one by one (their own ``fit``, as members:
    :func:`_as_member`), with the seeds and bootstrap weights ``forest.fit``
    draws; returns mean proba."""
    from sklearn.preprocessing import LabelEncoder

    from sklearn_difftrees.dgt._bagging import _bootstrap_counts

    codes = LabelEncoder().fit_transform(y)
    rng = np.random.RandomState(forest.random_state)
    member_seeds = rng.randint(_MAX_INT, size=forest.n_estimators)
    sample_seeds = rng.randint(_MAX_INT, size=forest.n_estimators)
    n = len(y)
    members = []
    for i in range(forest.n_estimators):
        w = _bootstrap_counts(sample_seeds[i], np.arange(n), n, n)
        member = _as_member(forest._make_member(int(member_seeds[i])))
        members.append(member.fit(X, codes, sample_weight=w))
    return members


def forest_section(args):
    from sklearn.preprocessing import LabelEncoder

    from sklearn_difftrees import DGTClassifier, DGTForestClassifier

    X, y = load(args.dataset)
    y = LabelEncoder().fit_transform(y)
    n_est = 5 if args.smoke else args.n_estimators
    extra = dict(max_iter=10) if args.smoke else {}
    extra["device"] = args.device  # the forest, its members and the single trees
    rows = []
    # Warm-up (torch import, first allocations) outside the timings.
    DGTForestClassifier(n_estimators=2, max_iter=2, random_state=0,
                        device=args.device).fit(X[:200], y[:200])
    for seed in args.seeds:
        X_tr, X_te, y_tr, y_te = _split(X, y, seed)
        forest = DGTForestClassifier(n_estimators=n_est, random_state=seed, n_jobs=1, **extra)
        single = _as_member(forest._make_member(seed))
        with Timer() as t_single:
            single.fit(X_tr, y_tr)
        default = DGTClassifier(random_state=seed, **extra)
        with Timer() as t_default:
            default.fit(X_tr, y_tr)
        with Timer() as t_forest:
            forest.fit(X_tr, y_tr)
        row = {"seed": seed, "single_s": t_single.seconds, "forest_s": t_forest.seconds,
               "default_s": t_default.seconds,
               "single_acc": single.score(X_te, y_te), "forest_acc": forest.score(X_te, y_te),
               "default_acc": default.score(X_te, y_te),
               "epochs": float(np.mean(forest.n_iter_))}
        if args.independent:
            with Timer() as t_ind:
                members = _independent_forest(forest, X_tr, y_tr)
            proba = np.mean([m.predict_proba(X_te) for m in members], axis=0)
            row.update(independent_s=t_ind.seconds,
                       independent_acc=float(np.mean(proba.argmax(1) == y_te)))
        print(f"  forest seed {seed}: {row}", flush=True)
        rows.append(row)
    headers = ["split", "single tree (s)", "default DGTClassifier (s)",
               f"forest, {n_est} trees, batched (s)", "forest / single", "forest / default",
               "single acc", "default acc", "forest acc"]
    if args.independent:
        # A member fitted alone is one single-tree fit at the forest's settings
        # (its own bootstrap sample and seed): the forest against their mean.
        headers += ["forest, independent (s)", "independent acc", "forest / one member"]
    table = []
    for r in rows:
        line = [r["seed"], f"{r['single_s']:.1f}", f"{r['default_s']:.1f}",
                f"{r['forest_s']:.1f}", f"{r['forest_s'] / r['single_s']:.2f}x",
                f"{r['forest_s'] / r['default_s']:.2f}x", f"{100 * r['single_acc']:.2f}",
                f"{100 * r['default_acc']:.2f}", f"{100 * r['forest_acc']:.2f}"]
        if args.independent:
            line += [f"{r['independent_s']:.1f}", f"{100 * r['independent_acc']:.2f}",
                     f"{r['forest_s'] * n_est / r['independent_s']:.2f}x"]
        table.append(line)
    mean = ["mean"] + [f"{np.mean([r[k] for r in rows]):.1f}"
                       for k in ("single_s", "default_s", "forest_s")]
    mean += [f"{np.mean([r['forest_s'] / r[k] for r in rows]):.2f}x"
             for k in ("single_s", "default_s")]
    mean += [f"{100 * np.mean([r[k] for r in rows]):.2f}"
             for k in ("single_acc", "default_acc", "forest_acc")]
    if args.independent:
        mean += [f"{np.mean([r['independent_s'] for r in rows]):.1f}",
                 f"{100 * np.mean([r['independent_acc'] for r in rows]):.2f}",
                 f"{np.mean([r['forest_s'] * n_est / r['independent_s'] for r in rows]):.2f}x"]
    table.append(mean)
    shape = f"{X.shape[0]} x {X.shape[1]}"
    where = "" if args.device == "cpu" else f", device={args.device!r}"
    return (f"### Forest vs single tree ({args.dataset}, {shape}, 70/30 splits, test accuracy "
            f"%{where})"
            f"\n\n{markdown_table(headers, table)}\n")


def _families():
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.tree import DecisionTreeClassifier

    import sklearn_difftrees as sd

    return {
        "HistGradientBoosting": lambda: HistGradientBoostingClassifier(random_state=0),
        "CART": lambda: DecisionTreeClassifier(random_state=0),
        "DGT": lambda: sd.DGTClassifier(random_state=0),
        "LatentTree": lambda: sd.LatentTreeClassifier(random_state=0),
        "NonGreedy": lambda: sd.NonGreedyObliqueTreeClassifier(random_state=0),
        "TEL": lambda: sd.TreeEnsembleLayerClassifier(random_state=0),
        "ConvexPolytopeTree": lambda: sd.ConvexPolytopeTreeClassifier(random_state=0),
        "DGTForest": lambda: sd.DGTForestClassifier(random_state=0, n_jobs=1),
    }


def _synthetic(n, seed=0, n_features=50):
    from sklearn.datasets import make_classification

    return make_classification(n, n_features, n_informative=min(20, n_features // 2),
                               n_classes=3, random_state=seed)


def rows_section(args, progress=None):
    """Section 2; ``progress(text)``, if given, gets the table of the fits done so far
    after every fit (a run cut short, e.g. on a lent device, still leaves a table)."""
    families = _families()
    names = [f for f in families if f in args.families or f in ("HistGradientBoosting",)]
    times, accs = {}, {}
    for n in args.sizes:
        X, y = _synthetic(n + args.test_rows)
        X, X_te, y, y_te = X[:n], X[n:], y[:n], y[n:]
        for name in names:
            model = families[name]()
            if "device" in model.get_params():
                model.set_params(device=args.device)
            with Timer() as t:
                model.fit(X, y)
            times[(name, n)] = t.seconds
            accs[(name, n)] = model.score(X_te, y_te)
            print(f"  rows {n}: {name} {t.seconds:.1f} s, test acc {accs[(name, n)]:.4f}",
                  flush=True)
            if progress is not None:
                progress(_rows_report(args, names, times, accs))
    return _rows_report(args, names, times, accs)


def _rows_report(args, names, times, accs):
    """The rows table of the fits in ``times``; a fit not (yet) run shows "-"."""

    def cell(name, n, fmt, scale=1.0, per_hgb=False):
        if (name, n) not in times or (per_hgb and ("HistGradientBoosting", n) not in times):
            return "-"
        value = (accs if fmt == "acc" else times)[(name, n)] * scale
        if per_hgb:
            value /= times[("HistGradientBoosting", n)]
        return f"{value:.1f}"

    headers = ["family"] + [f"n = {n:,} (s)" for n in args.sizes] + [
        f"x HGB at {n:,}" for n in args.sizes] + [f"acc % at {n:,}" for n in args.sizes]
    table = [[name] + [cell(name, n, "s") for n in args.sizes]
             + [cell(name, n, "s", per_hgb=True) for n in args.sizes]
             + [cell(name, n, "acc", 100.0) for n in args.sizes] for name in names]
    first, last = args.sizes[0], args.sizes[-1]
    grown = [name for name in names if (name, first) in times and (name, last) in times]
    note = ""
    if len(args.sizes) > 1 and grown:
        growth = ", ".join(f"{name} {times[(name, last)] / times[(name, first)]:.1f}x"
                           for name in grown)
        note = (f"Fit time at {last:,} rows / at {first:,} rows "
                f"({last // first}x the rows): {growth}.\n")
    missing = [name for name in names if any((name, n) not in times for n in args.sizes)]
    if missing:
        note += f"Not (or not fully) run: {', '.join(missing)} (\"-\").\n"
    where = "" if args.device == "cpu" else f", torch-trained families on device={args.device!r}"
    return ("### Default fit time against rows (synthetic, 50 features, 3 classes, "
            f"{args.test_rows:,} held-out rows{where})\n\n"
            + markdown_table(headers, table) + "\n\n" + note)


@contextlib.contextmanager
def _memory_limit(value):
    """Set ``SKLEARN_DIFFTREES_MAX_MEMORY`` for the block, then restore it."""
    from sklearn_difftrees._core._memory import ENV_VAR

    old = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[ENV_VAR]
        else:
            os.environ[ENV_VAR] = old


def ratios_section(args):
    import sklearn_difftrees as sd

    lines = ["### NonGreedy inference and TEL backends (whole fits)", ""]
    table = []
    X, y = _synthetic(args.ng_rows, seed=1)
    t = {}
    for inference in ("exact", "fast"):
        with Timer() as timer:
            sd.NonGreedyObliqueTreeClassifier(max_depth=12, inference=inference,
                                              random_state=0).fit(X, y)
        t[inference] = timer.seconds
        print(f"  NonGreedy depth 12 {inference}: {timer.seconds:.1f} s", flush=True)
    table.append([f"NonGreedy, max_depth=12, {args.ng_rows:,} rows", "exact / fast",
                  f"{t['exact']:.1f} / {t['fast']:.1f}", f"{t['exact'] / t['fast']:.1f}x"])
    # 20 features, the setting of issue 15. The dense backend's memory
    # estimate assumes validation chunks of 8192 rows (4.4 GiB here, above the
    # default limit of docs/reliability.md); these runs are far smaller, so the
    # documented override lifts the limit for this comparison only.
    X, y = _synthetic(args.tel_rows, seed=2, n_features=20)
    t = {}
    for backend in ("dense", "conditional", "auto"):
        with Timer() as timer, _memory_limit("none"):
            sd.TreeEnsembleLayerClassifier(n_trees=10, max_depth=10, gamma=1.0, max_iter=20,
                                           early_stopping=False, backend=backend,
                                           device="cpu", random_state=0).fit(X, y)
        t[backend] = timer.seconds
        print(f"  TEL depth 10 {backend}: {timer.seconds:.1f} s", flush=True)
    table.append([f"TEL, 10 trees, depth 10, gamma 1, 20 epochs, {args.tel_rows:,} x 20",
                  "dense / conditional (auto)",
                  f"{t['dense']:.1f} / {t['conditional']:.1f} ({t['auto']:.1f})",
                  f"{t['dense'] / t['conditional']:.1f}x"])
    lines.append(markdown_table(["fit", "compared", "seconds", "ratio"], table,
                                align=["l", "l", "r", "r"]))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, < 2 minutes")
    parser.add_argument("--dataset", default="segmentation", help="bundled set of section 1")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--n-estimators", type=int, default=30)
    parser.add_argument("--independent", action="store_true",
                        help="also train the forest member by member (slow: ~20 single fits)")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--families", default=",".join(_families()))
    parser.add_argument("--test-rows", type=int, default=20000,
                        help="held-out rows of the rows section")
    parser.add_argument("--ng-rows", type=int, default=10000)
    parser.add_argument("--tel-rows", type=int, default=4000)
    parser.add_argument("--sections", default="forest,rows,ratios")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="device of the torch-trained families in the rows section "
                        "and of the forest and single trees of the forest section; their "
                        "blocks are then marked bench_scaling_<section>_cuda")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads and BLAS / OpenMP pool size of every model "
                        "(default 1); with another value the blocks are marked "
                        "bench_scaling_<section>_<N>threads")
    parser.add_argument("--out", help="write the markdown report here")
    parser.add_argument("--markdown", help="replace the bench_scaling block of this file")
    add_data_dir_argument(parser)
    args = parser.parse_args(argv)
    use_data_dir(args.data_dir)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.families = args.families.split(",")
    if args.smoke:
        args.seeds, args.sizes = args.seeds[:1], [2000]
        args.ng_rows, args.tel_rows, args.test_rows = 1000, 1000, 1000
    single_thread().set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=Warning, module="sklearn_difftrees")
    from sklearn.exceptions import ConvergenceWarning

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    env = environment_line()
    shown, skip = [], False  # the command without its output paths
    for a in argv if argv is not None else sys.argv[1:]:
        if not skip and not a.startswith(("--out", "--markdown")):
            shown.append(a)
        skip = a in ("--out", "--markdown")
    command = "python benchmarks/bench_scaling.py " + " ".join(shown)
    pools = "1 thread" if args.threads == 1 else f"{args.threads} threads"
    produced = (f"Produced by `{command.strip()}`; {env}; BLAS / OpenMP pools limited to "
                f"{pools} (threadpoolctl).\n")
    runs = {"forest": forest_section, "rows": rows_section, "ratios": ratios_section}
    texts = {}
    from threadpoolctl import threadpool_limits

    suffix = "" if args.device == "cpu" else f"_{args.device}"
    suffix += "" if args.threads == 1 else f"_{args.threads}threads"

    def write_rows(block):  # the rows table so far, after every fit
        if args.markdown:
            replace_marked_section(args.markdown, f"bench_scaling_rows{suffix}",
                                   produced + "\n" + block)

    with threadpool_limits(args.threads):  # HistGradientBoosting's OpenMP on as many
        for section in args.sections.split(","):
            report = (rows_section(args, write_rows) if section == "rows"
                      else runs[section](args))
            texts[section] = produced + "\n" + report
    text = "\n".join(texts.values())
    print(text)
    write_out(args.out, text)
    if args.markdown:
        for section, block in texts.items():
            replace_marked_section(args.markdown, f"bench_scaling_{section}{suffix}", block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
