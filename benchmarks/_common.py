"""Small helpers shared by the benchmark scripts (tables, environment, output)."""

import functools
import platform
import sys
import time

import numpy as np


def single_thread():
    """One torch thread (the benchmark machines run other work beside)."""
    import torch

    torch.set_num_threads(1)
    return torch


def markdown_table(headers, rows, align=None):
    """A GitHub-flavoured markdown table (``align``: one of "l"/"r" per column)."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    align = align or ["l"] + ["r"] * (len(headers) - 1)

    def fmt(cells):
        out = []
        for c, w, a in zip(cells, widths, align):
            out.append(c.ljust(w) if a == "l" else c.rjust(w))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(
        ("-" * (w + 1) + ":") if a == "r" else (":" + "-" * (w + 1))
        for w, a in zip(widths, align)
    ) + "|"
    return "\n".join([fmt(headers), sep, *(fmt(r) for r in rows)])


def mean_std(values, fmt="{:.2f}"):
    values = np.asarray(values, dtype=float)
    return f"{fmt.format(values.mean())} ± {fmt.format(values.std())}"


@functools.lru_cache(maxsize=None)
def package_state():
    """Git commit of the checkout, and a hash of any uncommitted package change.

    The package may be edited between runs; this pins which code a table
    came from (``<commit>`` or ``<commit>+dirty:<hash of the diff>``).
    """
    import hashlib
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.strip()
        diff = subprocess.run(["git", "diff", "HEAD", "--", "sklearn_difftrees", "cython_src"],
                              cwd=root, capture_output=True, check=True).stdout
        untracked = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "--",
             "sklearn_difftrees", "cython_src"],
            cwd=root, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return "unknown: not a git checkout"
    h = hashlib.sha1(diff)
    for name in sorted(untracked):
        h.update(name.encode())
        h.update((root / name).read_bytes())
    if not diff and not untracked:
        return head
    return f"{head}+dirty:{h.hexdigest()[:8]}"


@functools.lru_cache(maxsize=None)
def dgt_defaults():
    """The DGT defaults that differ between the two estimators or matter here."""
    from sklearn_difftrees import DGTClassifier, DGTRegressor

    c, r = DGTClassifier().get_params(), DGTRegressor().get_params()
    keys = ["max_depth", "n_layers", "hidden_width", "max_iter", "n_iter_no_change", "refit_leaves"]
    parts = []
    for k in keys:
        if k not in c:
            continue
        if c[k] == r.get(k):
            parts.append(f"{k}={c[k]}")
        else:
            parts.append(f"{k}={c[k]} (clf) / {r.get(k)} (reg)")
    return "DGT defaults: " + ", ".join(parts)


@functools.lru_cache(maxsize=None)
def environment_line():
    """One line describing the software stack, for the reports.

    Cached: computed once per process (call it when the run starts), so that a
    package edited while a long run goes on does not relabel its results.
    """
    import sklearn
    import torch

    import sklearn_difftrees
    from sklearn_difftrees._provenance import machine_line

    return (
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, torch {torch.__version__} "
        f"(threads={torch.get_num_threads()}), sklearn_difftrees "
        f"{sklearn_difftrees.__version__} (code {package_state()}), {machine_line()}"
    )


def write_out(path, text):
    """Write ``text`` (plus a newline) to ``path``, creating its directory."""
    if not path:
        return
    from pathlib import Path

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


def run_datasets(names, run_one, render, args, task_of):
    """Run ``run_one(name)`` per dataset, keeping partial tables on disk.

    One failing dataset is recorded (with its traceback printed) and does not
    lose the run; the exit status is 1 if any failed.
    """
    import json
    import traceback

    results = []
    for i, name in enumerate(names):
        print(f"[{i + 1}/{len(names)}] {name}", flush=True)
        try:
            results.append(run_one(name))
        except Exception as exc:  # keep going: one failure must not lose the run
            traceback.print_exc()
            results.append({"name": name, "task": task_of(name),
                            "error": f"{type(exc).__name__}: {exc}"})
        write_out(args.out, render(results, args, len(names), final=False))
        if args.json:
            write_out(args.json, json.dumps(results, indent=1))

    text = render(results, args, len(names), final=True)
    print()
    print(text)
    write_out(args.out, text)
    return 1 if any("error" in r for r in results) else 0


def fit_on_splits(X, y, seeds, make_models, label=""):
    """The defaults protocol on one generated table: for every seed, a
    stratified 70/30 split (``bench_defaults.split``) and a fit of every
    model of ``make_models(seed)`` (a dict ``key -> estimator``). Returns
    ``{key: {"test": [...], "train": [...], "seconds": [...]}}`` (accuracy %)."""
    from bench_defaults import split

    out = {}
    for seed in seeds:
        X_tr, X_te, y_tr, y_te = split(X, y, "classification", seed)
        for key, est in make_models(seed).items():
            with Timer() as t:
                est.fit(X_tr, y_tr)
            rec = out.setdefault(key, {"test": [], "train": [], "seconds": []})
            rec["test"].append(100 * est.score(X_te, y_te))
            rec["train"].append(100 * est.score(X_tr, y_tr))
            rec["seconds"].append(t.seconds)
            print(f"{label}seed {seed} {key}: {rec['test'][-1]:.2f}%", flush=True)
    return out


def publish(script, argv, env, parts, markdown=None, key=None):
    """Print the report (environment, command, then ``parts``) and, with
    ``markdown``, write it between the ``key`` markers of that file."""
    args = " ".join(sys.argv[1:]) if argv is None else " ".join(argv)
    text = "\n\n".join([f"Environment: {env}",
                        f"Command: `{f'python benchmarks/{script} {args}'.strip()}`", *parts])
    print(text)
    if markdown:
        from sklearn_difftrees._provenance import replace_marked_section

        replace_marked_section(markdown, key, text)
        print(f"wrote the table into {markdown}")
    return text


def table_args(doc, argv, smoke_help):
    """Command line of a script that generates its table: ``--seeds``,
    ``--smoke`` (CI-sized) and ``--markdown FILE`` (write between markers)."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help=smoke_help)
    parser.add_argument("--markdown", help="write the table between the markers of this file")
    return parser.parse_args(argv)
