"""Every family with DEFAULT parameters on every dataset at hand, beside tuned CART, RF and HGB.

The protocol of a new user who never tunes: for every dataset and each seed
``s`` of ``--seeds``, one ``train_test_split(X, y, test_size=0.3,
random_state=s, stratify=y)`` (no stratification for regression), raw
features, and every estimator with its default parameters and
``random_state=s``:

* the families: DGT, LatentTree, NonGreedy (NonGreedyObliqueTree), TEL
  (TreeEnsembleLayer), CPT (ConvexPolytopeTree), DGTForest, and
  DGTBandit (``DGTBanditClassifier().fit``: one simulated bandit pass over
  the training rows, labels seen only through the 0-1 loss of the played
  action; classification only);
* the references: CART = ``GridSearchCV(DecisionTree*(random_state=0),
  {"max_depth": range(2, 13)}, cv=3)``, RF = ``RandomForest*(n_estimators=200)``,
  HGB = ``HistGradientBoosting*()``, and EpsGreedy = the project's epsilon-greedy
  linear contextual bandit (``sklearn_difftrees.bandit``) over the same
  one-pass stream (the bandit's baseline; classification only).

Printed: per dataset the mean ± sd over the seeds of test accuracy (%) or
test RMSE; per model its wins / losses against tuned CART (on the per-set
means), its mean rank among all models run, its mean fit time; and every
split whose model is flagged

* ``COLLAPSE``: training accuracy below a depth-2 CART's (regression:
  training RMSE above a depth-2 CART's) -- the optimizer did not even find
  what two greedy levels find;
* ``CONSTANT``: one predicted class on the test part (regression: zero
  variance of the test predictions);
* ``BAD``: test accuracy below 0.9 x tuned CART's on the same split
  (regression: RMSE above 1.1 x CART's).

Data: the sets bundled with the package by default
(``sklearn_difftrees.datasets``); ``--data-dir DIR`` adds (and takes
precedence for) every ``DIR/<name>.tsv.gz`` (e.g. ``../shared/datasets``).

Jobs are (dataset, seed, model) triples run with joblib over ``--n-jobs``
processes, torch and every BLAS/OpenMP pool with one thread per job.

    python benchmarks/bench_defaults.py --data-dir ../shared/datasets --n-jobs 16 \\
        --markdown docs/benchmarks.md          # regenerates the docs section
    python benchmarks/bench_defaults.py --smoke  # CI-sized (bundled data, tiny fits)

A full run of every model on every set takes hours on a 2-core laptop. It
can be run in parts (``--models``/``--datasets``, each with ``--json``,
CART included in each part, which it always is) and the parts rendered as
one report with ``--merge part1.json part2.json ...`` (no fitting; a later
file's result replaces an earlier one's for the same dataset, seed and
model). The report then lists every part's command, machine and code
version.

``--fit-times BEFORE.json AFTER.json`` compares the fit times of two runs
(e.g. an older version of the package and the current one, run side by side
on the same machine, one job each): per set and model, the mean fit seconds
per split before and after and their ratio, and over all sets the sums and
the median ratio. The tuned CART's column shows whether the two runs saw
the same load.
"""

import argparse
import ast
import functools
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from _common import environment_line, markdown_table, write_out  # noqa: E402
from sklearn_difftrees._provenance import replace_marked_section  # noqa: E402
from _data import REGRESSION as KNOWN_REGRESSION, _read_tsv_gz  # noqa: E402

#: family name -> (classifier class, regressor class) in sklearn_difftrees.
FAMILIES = {
    "DGT": ("DGTClassifier", "DGTRegressor"),
    "LatentTree": ("LatentTreeClassifier", "LatentTreeRegressor"),
    "NonGreedy": ("NonGreedyObliqueTreeClassifier", "NonGreedyObliqueTreeRegressor"),
    "TEL": ("TreeEnsembleLayerClassifier", "TreeEnsembleLayerRegressor"),
    "CPT": ("ConvexPolytopeTreeClassifier", "ConvexPolytopeTreeRegressor"),
    "DGTForest": ("DGTForestClassifier", "DGTForestRegressor"),
    "DGTBandit": ("DGTBanditClassifier", None),
}
REFERENCES = ["CART", "RF", "HGB", "EpsGreedy"]
ALL_MODELS = list(FAMILIES) + REFERENCES
#: Models that only exist for classification.
CLASSIFICATION_ONLY = {"DGTBandit", "EpsGreedy"}

#: Parameter overrides of the --smoke run (applied where the estimator has them).
SMOKE_PARAMS = {"max_iter": 4, "growth_max_iter": 2, "n_estimators": 3, "n_trees": 4}
SMOKE_DATASETS = ["pima", "ecoli", "197_cpu_act"]
SMOKE_MAX_ROWS = 400
#: Relative cost of one fit per training row (for scheduling the big jobs first).
COST = {"DGTForest": 30, "DGT": 2, "CPT": 3, "TEL": 2, "LatentTree": 2, "NonGreedy": 2,
        "DGTBandit": 0.5, "CART": 0.3, "RF": 1, "HGB": 0.5, "EpsGreedy": 0.5}

#: Key of the generated section's markers in ``--markdown FILE``:
#: ``<!-- bench_defaults:begin ... -->`` / ``<!-- bench_defaults:end -->``.
MARKER_KEY = "bench_defaults"
#: Key of the compact table of ``--choosing FILE``.
CHOOSING_KEY = "bench_defaults_choosing"
#: The two sets whose accuracy and fit time the compact table shows.
CHOOSING_SETS = ("vehicle", "satimage")


# -- data --------------------------------------------------------------------------------

def dataset_paths(data_dir):
    """name -> path of every available set (``data_dir`` first, then bundled)."""
    from importlib import resources

    paths = {}
    bundled = resources.files("sklearn_difftrees.datasets") / "data"
    for p in sorted(Path(str(bundled)).glob("*.tsv.gz")):
        paths[p.name[: -len(".tsv.gz")]] = str(p)
    if data_dir:
        for p in sorted(Path(data_dir).glob("*.tsv.gz")):
            paths[p.name[: -len(".tsv.gz")]] = str(p)
    return paths


def task_of(name, y):
    """Regression for the known regression sets and non-integer targets."""
    if name in KNOWN_REGRESSION:
        return "regression"
    try:
        from sklearn_difftrees.datasets import DATASETS

        if name in DATASETS:
            return "regression" if DATASETS[name][0] == "regression" else "classification"
    except ImportError:
        pass
    integral = np.all(np.asarray(y) == np.round(y))
    return "classification" if integral and np.unique(y).size <= 100 else "regression"


@functools.lru_cache(maxsize=4)
def load(path, name, smoke):
    X, y = _read_tsv_gz(path)
    task = task_of(name, y)
    if task == "classification":
        y = np.unique(y, return_inverse=True)[1]
    if smoke and X.shape[0] > SMOKE_MAX_ROWS:
        keep = np.random.RandomState(0).choice(X.shape[0], SMOKE_MAX_ROWS, replace=False)
        X, y = X[keep], y[keep]
        if task == "classification":  # drop classes too rare to stratify
            counts = np.bincount(y)
            ok = counts[y] >= 2
            X, y = X[ok], np.unique(y[ok], return_inverse=True)[1]
    return X, y, task


def split(X, y, task, seed):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.3, random_state=seed,
                            stratify=y if task == "classification" else None)


# -- one job ---------------------------------------------------------------------------

def parse_overrides(items):
    """``["DGT.init=cart", ...]`` -> ``{"DGT": {"init": "cart"}}`` (values as Python literals
    where they parse, else strings)."""
    out = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        model, dot, param = key.partition(".")
        if not (sep and dot and model in FAMILIES and param):
            raise ValueError(f"--set expects FAMILY.param=value with FAMILY in "
                             f"{list(FAMILIES)}, got {item!r}")
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        out.setdefault(model, {})[param] = value
    return out


def make_model(model, task, seed, n_classes, smoke, overrides=None):
    clf = task == "classification"
    if model in FAMILIES:
        import sklearn_difftrees

        name = FAMILIES[model][0 if clf else 1]
        est = getattr(sklearn_difftrees, name)(random_state=seed)
        if smoke:
            params = est.get_params()
            est.set_params(**{k: v for k, v in SMOKE_PARAMS.items() if k in params})
        if overrides and model in overrides:
            est.set_params(**overrides[model])
        return est
    if model == "CART":
        from sklearn.model_selection import GridSearchCV
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        base = (DecisionTreeClassifier if clf else DecisionTreeRegressor)(random_state=0)
        return GridSearchCV(base, {"max_depth": list(range(2, 13))}, cv=3)
    if model == "RF":
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        return (RandomForestClassifier if clf else RandomForestRegressor)(
            n_estimators=20 if smoke else 200, random_state=seed, n_jobs=1)
    if model == "HGB":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        return (HistGradientBoostingClassifier if clf else HistGradientBoostingRegressor)(
            random_state=seed)
    if model == "EpsGreedy":
        from sklearn_difftrees.bandit import EpsilonGreedyLinearBandit

        return EpsilonGreedyLinearBandit(np.arange(n_classes), random_state=seed)
    raise ValueError(f"unknown model {model!r}")


def _fit(model, est, X, y, seed):
    if model == "EpsGreedy":  # one simulated pass, as DGTBanditClassifier.fit does
        from sklearn_difftrees.bandit import simulate

        order = np.random.RandomState(seed).permutation(X.shape[0])
        simulate(est, X[order], y[order], eval_every=X.shape[0], batch_size=4,
                 random_state=seed, init_contexts=X)
    else:
        est.fit(X, y)
    return est


def run_job(path, name, seed, model, smoke, overrides=None):
    """Fit one model on one split; scores, flags' raw material, fit time."""
    from threadpoolctl import threadpool_limits

    import torch

    torch.set_num_threads(1)
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    X, y, task = load(path, name, smoke)
    clf = task == "classification"
    Xtr, Xte, ytr, yte = split(X, y, task, seed)
    out = {"dataset": name, "seed": seed, "model": model, "task": task,
           "shape": f"{X.shape[0]} × {X.shape[1]}"}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = make_model(model, task, seed, int(y.max()) + 1 if clf else 0, smoke, overrides)
        t0 = time.perf_counter()
        try:
            _fit(model, est, Xtr, ytr, seed)
        except Exception as exc:  # one failing fit must not lose the run
            out["error"] = f"{type(exc).__name__}: {exc}"[:300]
            return out
        out["fit_s"] = time.perf_counter() - t0
        p_tr, p_te = est.predict(Xtr), est.predict(Xte)
        stump = (DecisionTreeClassifier if clf else DecisionTreeRegressor)(
            max_depth=2, random_state=0).fit(Xtr, ytr)
        s_tr = stump.predict(Xtr)
    if clf:
        out["test"] = float(np.mean(p_te == yte))
        out["train"] = float(np.mean(p_tr == ytr))
        out["depth2_train"] = float(np.mean(s_tr == ytr))
        out["constant"] = bool(np.unique(p_te).size == 1 and np.unique(yte).size > 1)
    else:
        def rmse(a, b):
            return float(np.sqrt(np.mean((np.asarray(a, float) - b) ** 2)))

        out["test"] = rmse(p_te, yte)
        out["train"] = rmse(p_tr, ytr)
        out["depth2_train"] = rmse(s_tr, ytr)
        out["constant"] = bool(np.ptp(p_te) <= 1e-12 * (1.0 + np.abs(p_te).max()))
    return out


# -- aggregation -----------------------------------------------------------------------

def better(a, b, task):
    return a > b if task == "classification" else a < b


def flags_of(r, cart):
    """Flags of one (dataset, seed, model) result; ``cart``: tuned CART's result."""
    if "error" in r:
        return ["ERROR"]
    clf = r["task"] == "classification"
    f = []
    # Worse beyond float rounding: a model that returns the depth-2 CART itself
    # (a greedy floor) scores it up to the last bits.
    tol = 1e-9 * abs(r["depth2_train"])
    if ((r["train"] < r["depth2_train"] - tol) if clf
            else (r["train"] > r["depth2_train"] + tol)):
        f.append("COLLAPSE")
    if r["constant"]:
        f.append("CONSTANT")
    if cart is not None and "test" in cart and r["model"] != "CART":
        if (r["test"] < 0.9 * cart["test"]) if clf else (r["test"] > 1.1 * cart["test"]):
            f.append("BAD")
    return f


def aggregate(results, models):
    """Per (dataset, model): mean/sd of the test metric, fit time, flagged splits."""
    by = {}
    for r in results:
        by.setdefault(r["dataset"], {}).setdefault(r["model"], []).append(r)
    sets = {}
    for name, per_model in by.items():
        task = next(iter(per_model.values()))[0]["task"]
        carts = {r["seed"]: r for r in per_model.get("CART", [])}
        row = {"task": task, "models": {}}
        for model in models:
            runs = sorted(per_model.get(model, []), key=lambda r: r["seed"])
            if not runs:
                continue
            ok = [r for r in runs if "error" not in r]
            flags = [(r["seed"], flags_of(r, carts.get(r["seed"]))) for r in runs]
            row["models"][model] = {
                "test": [r["test"] for r in ok],
                "fit_s": [r["fit_s"] for r in ok],
                "n_err": len(runs) - len(ok),
                "flags": [(s, f) for s, f in flags if f],
                "runs": runs,
            }
        sets[name] = row
    return sets


def summary_rows(sets, models, task):
    rows = []
    names = [n for n, s in sets.items() if s["task"] == task]
    ranks = {m: [] for m in models}
    for n in names:
        ms = {m: np.mean(v["test"]) for m, v in sets[n]["models"].items() if v["test"]}
        order = sorted(ms, key=lambda m: -ms[m] if task == "classification" else ms[m])
        # average ranks for ties
        vals = [ms[m] for m in order]
        for m in order:
            tied = [i for i, v in enumerate(vals) if v == ms[m]]
            ranks[m].append(1 + np.mean(tied))
    for m in models:
        entries = [sets[n]["models"][m] for n in names if m in sets[n]["models"]]
        if not entries:
            continue
        wins = losses = 0
        for n in names:
            e, c = sets[n]["models"].get(m), sets[n]["models"].get("CART")
            if m == "CART" or not e or not c or not e["test"] or not c["test"]:
                continue
            a, b = np.mean(e["test"]), np.mean(c["test"])
            wins += better(a, b, task)
            losses += better(b, a, task)
        count = {k: 0 for k in ("COLLAPSE", "CONSTANT", "BAD", "ERROR")}
        for e in entries:
            for _, f in e["flags"]:
                for k in f:
                    count[k] += 1
        n_splits = sum(len(e["runs"]) for e in entries)
        fit = [t for e in entries for t in e["fit_s"]]
        rows.append([
            m,
            "—" if m == "CART" else f"{wins} / {losses}",
            f"{np.mean(ranks[m]):.2f}" if ranks[m] else "",
            f"{np.mean(fit):.2f}" if fit else "",
            f"{np.max(fit):.1f}" if fit else "",
            str(count["COLLAPSE"]), str(count["CONSTANT"]),
            "—" if m == "CART" else str(count["BAD"]),
            str(count["ERROR"]), str(n_splits),
        ])
    return rows


def choosing_table(sets, models, provenance):
    """One row per model: classification rank and wins against CART over every
    set, and accuracy / fit time on :data:`CHOOSING_SETS`."""
    summary = {r[0]: r for r in summary_rows(sets, models, "classification")}
    n_sets = sum(s["task"] == "classification" for s in sets.values())
    rows = []
    for m in models:
        if m not in summary:
            continue
        row = [m, summary[m][2], summary[m][1]]
        for n in CHOOSING_SETS:
            e = sets.get(n, {"models": {}})["models"].get(m)
            if e is None or not e["test"]:
                row += ["", ""]
                continue
            v = 100 * np.asarray(e["test"])
            row += [f"{v.mean():.1f} ± {v.std():.1f}", f"{np.mean(e['fit_s']):.1f}"]
        rows.append(row)
    head = ["model", f"mean rank ({n_sets} sets)", "vs CART W / L"]
    for n in CHOOSING_SETS:
        head += [f"{n} accuracy %", f"{n} fit s"]
    return "\n".join([
        f"Default parameters, 3 seeded 70/30 splits; written by `bench_defaults.py "
        f"--choosing` ({provenance}).", "", markdown_table(head, rows)])


def fmt(v, task, ref=None):
    """A score as the tables print it; ``ref`` (a mean, for its sd) sets the scale,
    so that a target of order 1e-4 keeps its digits."""
    if task == "classification":
        return f"{100 * v:.2f}"
    r = abs(v if ref is None else ref)
    if r >= 100:
        return f"{v:.0f}"
    return f"{v:.3f}" if r >= 0.1 or r == 0 else f"{v:.3e}"


def render(sets, models, shapes, header):
    lines = [header, ""]
    for task, metric in (("classification", "test accuracy %"), ("regression", "test RMSE")):
        names = [n for n in sets if sets[n]["task"] == task]
        if not names:
            continue
        cols = [m for m in models if any(m in sets[n]["models"] for n in names)]
        rows = []
        for n in names:
            row = [n, shapes[n]]
            for m in cols:
                e = sets[n]["models"].get(m)
                if e is None or not e["test"]:
                    row.append("error" if e else "")
                    continue
                v = np.asarray(e["test"])
                mark = "!" if e["flags"] else ""
                row.append(f"{fmt(v.mean(), task)} ± {fmt(v.std(), task, v.mean())}{mark}")
            rows.append(row)
        lines += [f"**{task.capitalize()}**: {metric}, mean ± sd over the seeds "
                  "(`!`: a split of that cell is flagged, see below).", "",
                  markdown_table(["dataset", "n × p"] + cols, rows), ""]
        srows = summary_rows(sets, cols, task)
        lines += [f"Summary ({task}, {len(names)} sets): wins / losses of the per-set mean "
                  "against tuned CART, mean rank among the models above (1 = best), fit time "
                  "per split, and flagged splits.", "",
                  markdown_table(["model", "vs CART W / L", "mean rank", "fit s (mean)",
                                  "fit s (max)", "COLLAPSE", "CONSTANT", "BAD", "errors",
                                  "splits"], srows), ""]
    flagged = []
    for n, s in sets.items():
        for m, e in s["models"].items():
            for r in e["runs"]:
                seed_flags = dict(e["flags"]).get(r["seed"])
                if not seed_flags:
                    continue
                cart = next((c for c in s["models"].get("CART", {"runs": []})["runs"]
                             if c["seed"] == r["seed"]), None)
                task = s["task"]
                if "error" in r:
                    detail = r["error"]
                else:
                    detail = (f"test {fmt(r['test'], task)} (CART "
                              f"{fmt(cart['test'], task) if cart and 'test' in cart else '?'}), "
                              f"train {fmt(r['train'], task)} (depth-2 CART "
                              f"{fmt(r['depth2_train'], task)})")
                flagged.append([n, str(r["seed"]), m, " ".join(seed_flags), detail])
    lines += [f"Flagged splits ({len(flagged)}): COLLAPSE = training score worse than a "
              "depth-2 CART's, CONSTANT = one predicted class / constant prediction, "
              "BAD = test accuracy < 0.9 × tuned CART's (RMSE > 1.1 × CART's).", ""]
    if flagged:
        lines.append(markdown_table(["dataset", "seed", "model", "flags", "detail"], flagged,
                                    ["l", "r", "l", "l", "l"]))
    else:
        lines.append("None.")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None,
                        help="directory of extra <name>.tsv.gz sets (e.g. ../shared/datasets)")
    parser.add_argument("--datasets", nargs="+", default=None, metavar="NAME")
    parser.add_argument("--models", nargs="+", default=None, metavar="MODEL",
                        help=f"subset of {' '.join(ALL_MODELS)} (CART is always run)")
    parser.add_argument("--seeds", type=int, default=None, help="number of splits (default 3)")
    parser.add_argument("--n-jobs", type=int, default=1, help="joblib processes")
    parser.add_argument("--smoke", action="store_true",
                        help=f"tiny CI run: {', '.join(SMOKE_DATASETS)}, <= {SMOKE_MAX_ROWS} "
                        "rows, 1 seed, a few epochs")
    parser.add_argument("--set", nargs="+", default=None, metavar="FAMILY.param=value",
                        dest="overrides",
                        help="change a family's parameter for a study, e.g. DGT.init=cart "
                        "(the report's command line shows it; the tables are then not "
                        "the defaults)")
    parser.add_argument("--markdown", default=None, metavar="FILE",
                        help="write the tables between the bench_defaults markers of FILE "
                        "(docs/benchmarks.md has them)")
    parser.add_argument("--marker", default=MARKER_KEY, metavar="KEY",
                        help="the markers of --markdown's section (default: %(default)s; "
                        "e.g. bench_defaults_extra for the sets of extra_sets.py)")
    parser.add_argument("--out", default=None, help="write the report to this file")
    parser.add_argument("--json", default=None, help="write the raw per-split results here")
    parser.add_argument("--choosing", default=None, metavar="FILE",
                        help="also write the compact per-model table between the "
                        "bench_defaults_choosing markers of FILE (docs/choosing.md has them)")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="render the results of earlier --json runs as one report "
                        "(no fitting)")
    parser.add_argument("--fit-times", nargs=2, default=None, metavar=("BEFORE", "AFTER"),
                        help="compare the fit times of two --json runs, e.g. two versions "
                        "of the package run side by side (no fitting)")
    args = parser.parse_args(argv)
    try:
        overrides = parse_overrides(args.overrides)
    except ValueError as exc:
        parser.error(str(exc))
    if args.merge:
        return merge(args)
    if args.fit_times:
        return fit_times(args)

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # inherited by the joblib workers
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(BENCH_DIR), os.environ.get("PYTHONPATH", "")) if p)
    seeds = args.seeds if args.seeds is not None else (1 if args.smoke else 3)
    paths = dataset_paths(args.data_dir)
    names = args.datasets or (SMOKE_DATASETS if args.smoke else sorted(paths))
    unknown = [n for n in names if n not in paths]
    if unknown:
        parser.error(f"unknown dataset(s) {unknown}; available: {sorted(paths)}")
    models = args.models or ALL_MODELS
    bad = [m for m in models if m not in ALL_MODELS]
    if bad:
        parser.error(f"unknown model(s) {bad}; choose from {ALL_MODELS}")
    if "CART" not in models:
        models = models + ["CART"]
    models = [m for m in ALL_MODELS if m in models]
    env = environment_line()

    shapes, jobs = {}, []
    for n in names:
        X, y, task = load(paths[n], n, args.smoke)
        shapes[n] = f"{X.shape[0]} × {X.shape[1]}"
        for m in models:
            if task == "regression" and m in CLASSIFICATION_ONLY:
                continue
            for s in range(seeds):
                jobs.append((COST[m] * X.shape[0] * max(X.shape[1], 8), (paths[n], n, s, m)))
    jobs.sort(key=lambda j: -j[0])  # biggest first: better load balance
    print(f"{len(jobs)} jobs ({len(names)} sets x {seeds} seeds x {len(models)} models) "
          f"on {args.n_jobs} process(es)", flush=True)

    from joblib import Parallel, delayed

    # The workers import this file as a module (BENCH_DIR is on their
    # PYTHONPATH): its functions then pickle by reference, not by value.
    import importlib

    job_fn = importlib.import_module("bench_defaults").run_job
    t0 = time.perf_counter()
    results = []
    for r in Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")(
            delayed(job_fn)(*j[1], args.smoke, overrides) for j in jobs):
        results.append(r)
        status = r.get("error") or f"test {fmt(r['test'], r['task'])}, {r['fit_s']:.1f} s"
        print(f"[{len(results)}/{len(jobs)}] {r['dataset']} seed {r['seed']} {r['model']}: "
              f"{status}", flush=True)
        if args.json:  # kept up to date, so that an interrupted run keeps its results
            write_out(args.json, json.dumps(results, indent=1))
    wall = time.perf_counter() - t0
    order = {n: i for i, n in enumerate(names)}
    results.sort(key=lambda r: (order[r["dataset"]], r["seed"], models.index(r["model"])))

    sets = aggregate(results, models)
    sets = {n: sets[n] for n in names if n in sets}
    # The command that reproduces the tables (output paths left out).
    shown, skip = [], False
    for a in (argv if argv is not None else sys.argv[1:]):
        if skip:
            skip = False
        elif a in ("--json", "--out", "--markdown"):
            skip = True
        elif not a.startswith(("--json=", "--out=", "--markdown=")):
            shown.append(os.path.relpath(a) if a.startswith("/") else a)
    cmd = "python benchmarks/bench_defaults.py " + " ".join(shown)
    header = (
        ("Default parameters" if not overrides else
         "Default parameters except " + ", ".join(
             f"`{m}.{k}={v!r}`" for m, ps in overrides.items() for k, v in ps.items()))
        + f", `random_state` = split seed, {seeds} seeded 70/30 split(s) "
        "(stratified for classification), raw features. CART = depth-tuned "
        "(GridSearchCV max_depth 2..12, cv=3), RF = 200 trees, HGB = defaults, EpsGreedy = "
        "the epsilon-greedy linear bandit over the same one-pass stream as DGTBandit.\n\n"
        f"{args.n_jobs} job(s) in parallel, one thread each; wall time {wall / 60:.1f} min. "
        f"{env}.\n\n"
        f"Command: `{cmd.strip()}`"
    )
    text = render(sets, models, shapes, header)
    print()
    print(text)
    write_out(args.out, text)
    meta = {"command": cmd.strip(), "environment": env, "n_jobs": args.n_jobs,
            "wall_min": round(wall / 60, 1), "seeds": seeds}
    if args.json:
        write_out(args.json, json.dumps({"meta": meta, "results": results}, indent=1))
    if args.markdown:
        replace_marked_section(args.markdown, args.marker, text)
    if args.choosing:
        replace_marked_section(args.choosing, CHOOSING_KEY,
                               choosing_table(sets, models, f"{cmd.strip()}; {env}"))
    return 1 if any("error" in r for r in results) else 0


def _read_results(path):
    """``(meta, results)`` of a ``--json`` file (a bare list: an interrupted run)."""
    data = json.loads(Path(path).read_text())
    if isinstance(data, list):
        return {"command": f"(partial results of {Path(path).name})"}, data
    return data["meta"], data["results"]


def merge(args):
    """Render the results of several ``--json`` runs as one report."""
    runs, by_key = [], {}
    for path in args.merge:
        meta, results = _read_results(path)
        runs.append(meta)
        for r in results:
            by_key[(r["dataset"], r["seed"], r["model"])] = r
    results = list(by_key.values())
    models = [m for m in ALL_MODELS if any(r["model"] == m for r in results)]
    names = sorted({r["dataset"] for r in results})
    if args.datasets:
        names = [n for n in args.datasets if n in names]
    shapes = {}
    for r in results:
        if "shape" in r:
            shapes[r["dataset"]] = r["shape"]
    missing = [n for n in names if n not in shapes]
    if missing:  # results of a version that did not record shapes
        paths = dataset_paths(args.data_dir)
        for n in missing:
            X, _, _ = load(paths[n], n, False)
            shapes[n] = f"{X.shape[0]} × {X.shape[1]}"
    results.sort(key=lambda r: (names.index(r["dataset"]) if r["dataset"] in names else -1,
                                r["seed"], models.index(r["model"])))
    sets = aggregate([r for r in results if r["dataset"] in names], models)
    sets = {n: sets[n] for n in names if n in sets}
    seeds = sorted({r["seed"] for r in results})
    parts = "\n".join(
        f"- `{m.get('command', '?')}`: {m.get('n_jobs', '?')} job(s), wall time "
        f"{m.get('wall_min', '?')} min; {m.get('environment', 'environment not recorded')}."
        for m in runs)
    header = (
        "Default parameters (a run's `--set` in its command below changes them), "
        f"`random_state` = split seed, {len(seeds)} seeded 70/30 split(s) "
        "(stratified for classification), raw features. CART = depth-tuned "
        "(GridSearchCV max_depth 2..12, cv=3), RF = 200 trees, HGB = defaults, EpsGreedy = "
        "the epsilon-greedy linear bandit over the same one-pass stream as DGTBandit.\n\n"
        f"Merged from {len(runs)} run(s) (`--merge`), one thread per job; fit times are "
        "comparable within a run only:\n\n" + parts
    )
    text = render(sets, models, shapes, header)
    print(text)
    write_out(args.out, text)
    if args.markdown:
        replace_marked_section(args.markdown, args.marker, text)
    if args.choosing:
        where = "; ".join(m.get("environment", "?").rsplit(", ", 1)[0] for m in runs[:1])
        replace_marked_section(args.choosing, CHOOSING_KEY, choosing_table(
            sets, models, f"{len(runs)} merged runs of bench_defaults.py, e.g. {where}"))
    return 0


def fit_times(args):
    """Render ``--fit-times BEFORE AFTER``: mean fit seconds per split of every
    model and set in both runs, and their ratio."""
    (meta_b, before), (meta_a, after) = map(_read_results, args.fit_times)

    def per_cell(results):
        cells = {}
        for r in results:
            if "error" not in r:
                cells.setdefault((r["dataset"], r["model"]), []).append(r["fit_s"])
        return cells

    b, a = per_cell(before), per_cell(after)
    keys = sorted(set(b) & set(a))
    models = [m for m in ALL_MODELS if any(k[1] == m for k in keys)]
    names = sorted({k[0] for k in keys})
    if args.datasets:
        names = [n for n in args.datasets if n in names]
    rows, ratios, sums = [], {m: [] for m in models}, {m: [0.0, 0.0] for m in models}
    for n in names:
        row = [n]
        for m in models:
            if (n, m) not in b:
                row.append("")
                continue
            tb, ta = float(np.mean(b[n, m])), float(np.mean(a[n, m]))
            ratios[m].append(ta / tb)
            sums[m][0] += tb
            sums[m][1] += ta
            row.append(f"{tb:.2f} → {ta:.2f} ({ta / tb:.1f}×)")
        rows.append(row)
    rows.append(["**all sets**"] + [
        f"{sums[m][0]:.1f} → {sums[m][1]:.1f} ({sums[m][1] / sums[m][0]:.2f}×)" for m in models])
    rows.append(["median / largest ratio"] + [
        f"{np.median(ratios[m]):.2f}× / {max(ratios[m]):.1f}×" for m in models])
    runs = "\n".join(
        f"- {label}: `{m.get('command', '?')}`: {m.get('n_jobs', '?')} job(s), wall time "
        f"{m.get('wall_min', '?')} min; {m.get('environment', 'environment not recorded')}."
        for label, m in (("before", meta_b), ("after", meta_a)))
    text = (
        "Mean fit seconds per split of every default estimator, before → after "
        "(ratio), on the same seeded 70/30 splits; **all sets**: the sums of the "
        "per-set means. Compare within this table only: the two runs went side by "
        "side on the same machine.\n\n" + runs + "\n\n"
        + markdown_table(["dataset"] + models, rows, ["l"] + ["r"] * len(models))
    )
    print(text)
    write_out(args.out, text)
    if args.markdown:
        replace_marked_section(args.markdown, args.marker, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

