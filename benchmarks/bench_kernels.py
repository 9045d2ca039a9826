"""Compiled training kernels: the baseline build against the FMA build.

DGT's float32 route backward (``cython_src/_dgt.pyx``) and
ConvexPolytopeTree's float32 conditional passes (``cython_src/_polytope.pyx``)
are compiled twice on x86-64 (GCC / Clang, not macOS): for the baseline
x86-64 and for processors with fused multiply-add; the import picks the FMA
build where the processor has it (``docs/design.md``, "Two builds of the hot
training loops"). This script times both side by side in one run, one
thread, minimum of ``--reps`` repetitions after a warm-up:

* DGT's route backward on random node scores (704 rows: the default batch at
  100,000 training rows), depth 8 with 3 / 7 / 26 outputs and depth 6 with
  3, in microseconds per row;
* ConvexPolytopeTree's conditional forward (recording, as in training) and
  backward of 1,024 rows through complete trees of depth 6 and 8, 10 facets,
  50 features, with decisive random splits (two steep active facets per
  node, so that rows reach few nodes, as after training; the table gives how
  many), in milliseconds per pass.

Where the processor has no FMA (or the platform builds the baseline only) the
FMA column is empty.

    python benchmarks/bench_kernels.py --markdown docs/benchmarks.md
    python benchmarks/bench_kernels.py --smoke
"""

import argparse
import time

import numpy as np
from _common import environment_line, markdown_table, publish, single_thread

ROUTE_CASES = [(8, 3), (8, 7), (8, 26), (6, 3)]
ROUTE_ROWS = 704
POLYTOPE_DEPTHS = [6, 8]
POLYTOPE_ROWS, FACETS, FEATURES = 1024, 10, 50


def best(fn, reps):
    """Minimum time of ``fn()`` over ``reps`` runs after one warm-up, seconds."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def route_case(depth, k, rows, rng):
    """A closure running DGT's route backward on random float32 inputs."""
    from sklearn_difftrees._kernels._dgt import _route_backward

    m, n_leaves = 2**depth - 1, 2**depth
    a = rng.normal(size=(1, rows, m)).astype(np.float32)
    scale = np.full((1, rows), 0.8, np.float32)
    leaf_t = rng.normal(size=(1, k, n_leaves)).astype(np.float32)
    grad = rng.normal(size=(1, rows, k)).astype(np.float32)
    out = np.empty_like(a)
    work = np.empty((1, 3 * n_leaves + 16), np.float32)
    return lambda: _route_backward(a, scale, leaf_t, grad, out, work, depth, 1)


def polytope_case(depth, rows, rng):
    """Closures running the polytope forward (recording) and backward, and the
    mean number of nodes a row reaches."""
    from sklearn_difftrees.polytope._kernels import (child_table, polytope_backward,
                                                     polytope_forward)
    from sklearn_difftrees.polytope._training import PolytopeTreeModule

    nodes = list(range(2**depth - 1))
    module = PolytopeTreeModule(nodes, FEATURES, FACETS)
    child = child_table(module.split_nodes, module.leaves)
    n_leaves = len(module.leaves)
    # Two active facets per node (the others weigh 1e-9, as facets a trained
    # tree no longer uses), steep and each above 0 for about 30% of the rows:
    # most rows leave a node with probability below 1e-6 one way.
    steep = 200.0
    X = rng.normal(size=(rows, FEATURES)).astype(np.float32)
    beta = (steep / np.sqrt(FEATURES) * rng.normal(size=(len(nodes), FACETS, FEATURES))
            ).astype(np.float32)
    bias = np.full((len(nodes), FACETS), -0.5 * steep, np.float32)
    r = np.full((len(nodes), FACETS), 1e-9, np.float32)
    r[:, :2] = 1.0
    _, rec = polytope_forward(X, beta, bias, r, child, n_leaves, eps=1e-6, record=True)
    capacity, pool = 2 * int(rec.length.max()), []
    grad = rng.normal(size=(rows, n_leaves)).astype(np.float32)
    state = {}

    def forward():
        state["rec"] = polytope_forward(X, beta, bias, r, child, n_leaves, eps=1e-6,
                                        record=True, capacity=capacity, pool=pool)[1]

    def backward():
        polytope_backward(X, r, child, grad, state["rec"], FEATURES)

    forward()
    return forward, backward, float(rec.length.mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a few repetitions, small")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--markdown", default=None,
                        help="write the table between the bench_kernels markers of FILE")
    args = parser.parse_args(argv)
    single_thread()
    env = environment_line()
    from sklearn_difftrees._kernels import _dgt, _polytope

    reps = args.reps or (2 if args.smoke else 30)
    route_rows = 64 if args.smoke else ROUTE_ROWS
    poly_rows = 128 if args.smoke else POLYTOPE_ROWS
    builds = [("baseline", False)] + ([("FMA", True)] if _dgt.FMA and _polytope.FMA else [])
    rng = np.random.default_rng(0)
    cases = [(f"DGT route backward, depth {d}, {k} outputs", "us per row",
              route_case(d, k, route_rows, rng), 1e6 / route_rows)
             for d, k in (ROUTE_CASES[:1] if args.smoke else ROUTE_CASES)]
    for depth in POLYTOPE_DEPTHS[:1] if args.smoke else POLYTOPE_DEPTHS:
        forward, backward, reached = polytope_case(depth, poly_rows, rng)
        label = f"polytope {{}}, depth {depth} ({reached:.1f} nodes reached per row)"
        cases.append((label.format("forward"), f"ms per {poly_rows} rows", forward, 1e3))
        cases.append((label.format("backward"), f"ms per {poly_rows} rows", backward, 1e3))
    rows = []
    try:
        for name, unit, fn, factor in cases:
            times = {}
            for build, on in builds:
                _dgt._use_fma(on)
                _polytope._use_fma(on)
                times[build] = factor * best(fn, reps)
            line = [name, unit, f"{times['baseline']:.3f}"]
            if "FMA" in times:
                line += [f"{times['FMA']:.3f}", f"{times['baseline'] / times['FMA']:.2f}x"]
            else:
                line += ["", ""]
            rows.append(line)
            print("  " + " | ".join(line), flush=True)
    finally:
        _dgt._use_fma(True)
        _polytope._use_fma(True)
    table = markdown_table(["kernel", "unit", "baseline build", "FMA build",
                            "baseline / FMA"], rows)
    publish("bench_kernels.py", argv, env, [table], markdown=args.markdown, key="bench_kernels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
