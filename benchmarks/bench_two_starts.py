"""The two starts of ``init="auto"`` (DGT, LatentTree, TEL): which start each
split keeps, what the choice changes, and what it costs.

For every family with an ``init`` parameter, on every set at hand (the
bundled ones, ``--data-dir`` for more) and on the generated thyroid-like
table of ``bench_heavy_tails.py``, with the protocol of ``bench_defaults.py``
(seeded 70/30 splits, stratified for classification, ``random_state`` =
split seed, raw features): the default fit (``init="auto"``) beside
``init="random"`` (the paper's start alone), one after the other in the same
job. Per split it records both test scores (accuracy %, or RMSE), the start
``init="auto"`` kept (``init_``), the paired statistic of its final
comparison (``_core/selection.paired_advantage``, the greedy start kept
above 2) or of the check that abandoned the greedy run (at most 0; checks
every ``max_iter / 20`` epochs, ``_core/starts.AUTO_CHECKS``), the statistic of every check before, and the
two fit times (their ratio is the cost of the second start).

    python benchmarks/bench_two_starts.py --data-dir ../shared/datasets --n-jobs 2 \\
        --markdown docs/benchmarks.md
    python benchmarks/bench_two_starts.py --smoke   # CI-sized (< 1 minute)
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment_line, markdown_table, publish, single_thread  # noqa: E402
from bench_defaults import dataset_paths, load, split  # noqa: E402

MARKER_KEY = "bench_two_starts"
FAMILIES = ("DGT", "LatentTree", "TEL")
THYROID = "thyroid-like"
#: Sets (and row cap) of ``--smoke``.
SMOKE_SETS, SMOKE_ROWS = ("pima", "197_cpu_act"), 400


def _estimator(family, task, init, seed, smoke):
    import sklearn_difftrees as sd

    cls = {
        ("DGT", "classification"): sd.DGTClassifier,
        ("DGT", "regression"): sd.DGTRegressor,
        ("LatentTree", "classification"): sd.LatentTreeClassifier,
        ("LatentTree", "regression"): sd.LatentTreeRegressor,
        ("TEL", "classification"): sd.TreeEnsembleLayerClassifier,
        ("TEL", "regression"): sd.TreeEnsembleLayerRegressor,
    }[family, task]
    params = dict(init=init, random_state=seed)
    if smoke:
        params["max_iter"] = 4
    return cls(**params)


def _data(name, path, smoke):
    if name == THYROID:
        from bench_heavy_tails import thyroid_like

        X, y = thyroid_like(1500 if smoke else 7200)
        return X, y, "classification"
    X, y, task = load(path, name, smoke)
    return X, y, task


def run_job(family, name, path, seed, smoke):
    """Both fits of one split; returns a record (see the module)."""
    import warnings

    from sklearn_difftrees._core import selection, starts

    single_thread()
    X, y, task = _data(name, path, smoke)
    X_tr, X_te, y_tr, y_te = split(X, y, task, seed)
    with warnings.catch_warnings():  # imports and first calls out of the timed fits
        warnings.simplefilter("ignore")
        warm = _estimator(family, task, "auto", seed, True).set_params(max_iter=1)
        warm.fit(X_tr[:100], y_tr[:100])
    record = dict(family=family, dataset=name, seed=seed, task=task)
    statistics, abandoned = [], []
    real_advantage, real_finish = selection.paired_advantage, starts._Start.finish

    def advantage(*args, **kwargs):
        out = real_advantage(*args, **kwargs)
        statistics.append(out[1])
        return out

    def finish(self, note=None):
        if note:
            abandoned.append(True)
        return real_finish(self, note=note)

    for init in ("random", "auto"):
        est = _estimator(family, task, init, seed, smoke)
        selection.paired_advantage, starts._Start.finish = advantage, finish
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tic = time.perf_counter()
                est.fit(X_tr, y_tr)
                seconds = time.perf_counter() - tic
        finally:
            selection.paired_advantage, starts._Start.finish = real_advantage, real_finish
        if task == "classification":
            score = 100 * est.score(X_te, y_te)
        else:
            score = float(np.sqrt(np.mean((est.predict(X_te) - y_te) ** 2)))
        record[init] = dict(score=score, seconds=seconds, init_=est.init_)
    record["statistics"] = statistics  # checks, then the final comparison (if not abandoned)
    record["abandoned"] = bool(abandoned)
    return record


def _family_table(records, family):
    rows, changed, kept, dropped, better, worse = [], 0, 0, 0, 0, 0
    t_random = t_auto = 0.0
    names = sorted({r["dataset"] for r in records}, key=lambda n: (n != THYROID, n))
    for name in names:
        recs = sorted((r for r in records if r["dataset"] == name), key=lambda r: r["seed"])
        reg = recs[0]["task"] == "regression"
        fmt = "{:.3f}" if reg else "{:.2f}"
        rand = [r["random"]["score"] for r in recs]
        auto = [r["auto"]["score"] for r in recs]
        per_split = []
        for r in recs:
            kept += r["auto"]["init_"] == "cart"
            dropped += r["abandoned"]
            diff = r["auto"]["score"] - r["random"]["score"]
            changed += diff != 0
            better += (diff < 0) if reg else (diff > 0)
            worse += (diff > 0) if reg else (diff < 0)
            t_random += r["random"]["seconds"]
            t_auto += r["auto"]["seconds"]
            z = r["statistics"][-1] if r["statistics"] else float("nan")
            mark = "C" if r["auto"]["init_"] == "cart" else ("a" if r["abandoned"] else "r")
            per_split.append(f"{mark} {z:.1f}")
        ratio = sum(r["auto"]["seconds"] for r in recs) / max(
            sum(r["random"]["seconds"] for r in recs), 1e-9)
        rows.append([name, ("RMSE " if reg else "") + fmt.format(np.mean(rand)),
                     fmt.format(np.mean(auto)), ", ".join(per_split), f"{ratio:.2f}"])
    n = len(records)
    summary = (f"{n} splits; the greedy start kept on {kept}, its run abandoned "
               f"on {dropped}; the test score changed on {changed} ({better} better, "
               f"{worse} worse); fit time {t_auto:.1f} s against {t_random:.1f} s for the "
               f"random start alone ({t_auto / max(t_random, 1e-9):.2f}x).")
    table = markdown_table(["set", 'init="random"', 'init="auto"',
                            "per split: start kept, statistic", "time auto / random"], rows)
    return f"**{family}.** {summary}\n\n{table}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None, help="directory of extra <name>.tsv.gz sets")
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="pima and 197_cpu_act, "
                        f"<= {SMOKE_ROWS} rows, one split, 4 epochs")
    parser.add_argument("--markdown", help="write the tables between the markers of this file")
    args = parser.parse_args(argv)
    from joblib import Parallel, delayed

    single_thread()
    env = environment_line()
    paths = dataset_paths(args.data_dir)
    names = list(SMOKE_SETS) if args.smoke else (args.datasets or [THYROID, *paths])
    seeds = range(1 if args.smoke else args.seeds)
    jobs = [(f, n, paths.get(n), s) for f in args.families for n in names for s in seeds]
    tic = time.perf_counter()
    records = Parallel(n_jobs=args.n_jobs, verbose=5)(
        delayed(run_job)(f, n, p, s, args.smoke) for f, n, p, s in jobs)
    minutes = (time.perf_counter() - tic) / 60
    parts = [
        f"{len(seeds)} seeded 70/30 split(s) per set (stratified for classification), "
        f"`random_state` = split seed, default parameters but `init`; {args.n_jobs} job(s), "
        f"one torch thread each, wall time {minutes:.1f} min. Test accuracy % (RMSE for "
        "regression), mean over the splits. Per split: the start `init=\"auto\"` kept (`C` "
        "the greedy one, `r` the random one after both runs ended, `a` the random one after "
        "the greedy run was abandoned) and the paired statistic that decided (greedy start "
        "kept above 2, abandoned at or below 0).",
        *[_family_table([r for r in records if r["family"] == f], f) for f in args.families],
    ]
    publish("bench_two_starts.py", argv, env, parts, args.markdown, MARKER_KEY)


if __name__ == "__main__":
    main()
