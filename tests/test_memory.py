"""Peak memory of default fits on a 10,000 x 20 table, measured in a child process.

``tracemalloc`` does not see torch's allocator, so each fit runs in a fresh
Python process and reports its peak resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) minus the peak after the
imports. One epoch each: this tests memory, not accuracy. The bounds are
generous (several times what was measured, see docs/reliability.md) but
meaningful: before the conditional TEL statistics, TEL at depth 12 with 20
trees needed about 5 GiB.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

resource = pytest.importorskip("resource")  # POSIX only

CHILD = textwrap.dedent(
    """
    import json, resource, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np, torch
    torch.set_num_threads(1)
    import sklearn_difftrees as sd
    name, params = sys.argv[1], json.loads(sys.argv[2])
    rng = np.random.RandomState(0)
    X = rng.randn(10000, 20)
    if name.endswith("Regressor"):
        y = X[:, 0] + X[:, 1] ** 2
    else:
        y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    getattr(sd, name)(**params).fit(X, y)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"base_kib": base, "peak_kib": peak}))
    """
)

MiB = 1024  # ru_maxrss is in KiB on Linux

CASES = [
    # (estimator, parameters, bound on the fit's peak above the imports)
    ("DGTClassifier", {"max_iter": 1}, 400 * MiB),
    ("LatentTreeClassifier", {"max_iter": 1}, 400 * MiB),
    ("NonGreedyObliqueTreeClassifier", {"max_iter": 1}, 400 * MiB),
    ("TreeEnsembleLayerClassifier", {"max_iter": 1}, 400 * MiB),
    ("ConvexPolytopeTreeClassifier", {"max_iter": 1, "growth_max_iter": 1}, 400 * MiB),
    ("DGTBanditClassifier", {"n_passes": 1}, 400 * MiB),
    # Depth 12, 20 trees: the statistics follow the reached nodes. gamma=0.5
    # keeps the one epoch short (fewer fractional nodes); the dense
    # statistics it replaces did not depend on gamma (~5 GiB).
    ("TreeEnsembleLayerClassifier",
     {"max_iter": 1, "max_depth": 12, "n_trees": 20, "gamma": 0.5}, 700 * MiB),
]


@pytest.mark.parametrize("name, params, bound", CASES,
                         ids=[f"{c[0]}-{len(c[1])}" for c in CASES])
def test_peak_memory_of_default_fit(name, params, bound):
    params = {**params, "random_state": 0}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, name, json.dumps(params)],
        capture_output=True, text=True, timeout=900, env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    used = rec["peak_kib"] - rec["base_kib"]
    assert used < bound, f"{name} {params}: {used / MiB:.0f} MiB above the imports"
