"""Peak training memory of the default estimators (docs/reliability.md).

Every case runs in a fresh Python process (so that peaks do not mix): it
imports the package and torch, records the peak resident set size (RSS),
then fits one epoch (``max_iter=1``, no early-stopping patience involved) on
synthetic data (``make_classification``, seed 0) and records the peak RSS
again. The difference is what training adds to a process that has imported
everything; the absolute peak includes the imports.

Cases: every family's default classifier on 10,000 x 20, and the
TreeEnsembleLayer at depth 12 (20 trees) with ``gamma=0.5`` on 10,000 x 20
and with the default ``gamma=2.0`` on 2,000 x 20. ``--heavy`` adds TEL depth 12
with the default gamma on 10,000 x 20 (minutes: hundreds of leaves per tree
are reachable at initialization).

    python benchmarks/bench_memory.py --markdown docs/reliability.md

(``--markdown FILE`` replaces the block between the ``bench_memory`` markers;
``--smoke`` runs two small cases.)
"""

import argparse
import json
import os
import subprocess
import sys
import time

from _common import environment_line, markdown_table, write_out

_CHILD = r"""
import json, resource, sys, time
import numpy as np
import torch
torch.set_num_threads(1)
from sklearn.datasets import make_classification
import sklearn_difftrees as sd

name, n, params = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
X, y = make_classification(n_samples=n, n_features=20, n_informative=10, n_classes=3,
                            random_state=0)
X = X.astype(np.float64)
est = getattr(sd, name)(max_iter=1, random_state=0, **params)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tic = time.perf_counter()
import warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    est.fit(X, y)
sec = time.perf_counter() - tic
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(dict(base_kib=base, peak_kib=peak, seconds=sec)))
"""

CASES = [
    ("DGTClassifier", 10_000, {}),
    ("LatentTreeClassifier", 10_000, {}),
    ("NonGreedyObliqueTreeClassifier", 10_000, {}),
    ("ConvexPolytopeTreeClassifier", 10_000, {}),
    ("TreeEnsembleLayerClassifier", 10_000, {}),
    ("TreeEnsembleLayerClassifier", 10_000, {"max_depth": 12, "gamma": 0.5}),
    ("TreeEnsembleLayerClassifier", 2_000, {"max_depth": 12}),
]
HEAVY = [("TreeEnsembleLayerClassifier", 10_000, {"max_depth": 12})]
SMOKE = [("DGTClassifier", 1_000, {}), ("TreeEnsembleLayerClassifier", 1_000, {})]


def run_case(name, n, params):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _CHILD, name, str(n), json.dumps(params)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{name} {params} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--heavy", action="store_true", help="add TEL depth 12, gamma 2, 10k rows")
    parser.add_argument("--out")
    parser.add_argument("--markdown", help="replace the bench_memory block of this file")
    args = parser.parse_args()
    cases = SMOKE if args.smoke else CASES + (HEAVY if args.heavy else [])
    rows = []
    start = time.perf_counter()
    for name, n, params in cases:
        r = run_case(name, n, params)
        extra = ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"
        rows.append([name, extra, f"{n:,} x 20", f"{r['base_kib'] / 1024:.0f}",
                     f"{r['peak_kib'] / 1024:.0f}",
                     f"{(r['peak_kib'] - r['base_kib']) / 1024:.0f}", f"{r['seconds']:.1f}"])
        print(markdown_table(HEADERS, rows[-1:], ALIGN), flush=True)
    text = "\n".join([
        "Peak resident memory (MiB) of one training epoch (`max_iter=1`) in a fresh process, "
        "3 classes, one torch thread" + (" (smoke)" if args.smoke else "") + "; wall time "
        f"{(time.perf_counter() - start) / 60:.1f} min.",
        environment_line(),
        "",
        markdown_table(HEADERS, rows, ALIGN),
    ])
    print()
    print(text)
    write_out(args.out, text)
    if args.markdown:
        from sklearn_difftrees._provenance import replace_marked_section

        replace_marked_section(args.markdown, "bench_memory", text)


HEADERS = ["estimator", "parameters", "data", "after imports", "peak", "training adds",
           "epoch (s)"]
ALIGN = ["l", "l", "r", "r", "r", "r", "r"]

if __name__ == "__main__":
    main()
