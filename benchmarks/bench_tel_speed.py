"""TEL training time vs depth: conditional smooth-step vs dense soft trees (paper Fig. 3).

For every depth in ``--depths`` (default 2..10) and dataset, trains three
ensembles of 10 trees on the same standardized data, same initialization,
same mini-batches, for ``--epochs`` real epochs (default 50) of Adam
(batch size 256, learning rate 0.1, as in the paper's timing experiment),
with gamma = 1 (the slowest value of the paper's tuning range):

* ``conditional``: :class:`TreeEnsembleLayer` with the compiled conditional
  forward/backward passes (smooth-step);
* ``dense smooth-step``: the same layer with ``backend="dense"`` (every node,
  vectorized torch);
* ``dense logistic``: the classical soft tree, every node, with the paper's
  rescaled logistic ``1 / (1 + exp(-6 t))``.

Reports CPU seconds of the (single-threaded: one torch thread, one OpenMP
thread) training process, measured with ``time.process_time`` so that other
work on the machine does not inflate them, the speed-up ratios measured side
by side in this run, and
the mean number of reachable leaves per sample and tree of the conditional
model (averaged over all training batches; 2**depth is the dense count).

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_tel_speed.py --markdown docs/benchmarks.md

Smoke run (< 60 s, bundled data)::

    python benchmarks/bench_tel_speed.py --smoke

``--crossover`` measures instead where ``backend="auto"`` should switch: for
a grid of ``in_features`` x depth x gamma (random standardized batches of 128
rows, 20 trees, 3 outputs, the initial model), the CPU milliseconds of one
forward + backward pass of each backend (best of 3 repeats), the reachable
leaves, the backend the layer's cost model
(:func:`sklearn_difftrees.tel._layer.backend_costs`) picks, how much slower
that pick is than the faster backend, and the cost model refitted to this
run's grid (relative least squares), to compare with the coefficients in the
code::

    python benchmarks/bench_tel_speed.py --crossover --markdown docs/benchmarks.md

(``--markdown FILE`` replaces the block between the ``tel_speed`` markers, or
with ``--crossover`` the ``tel_crossover`` ones.)
"""

import argparse
import time

import numpy as np

from _common import environment_line, markdown_table, single_thread, write_out
from _data import add_data_dir_argument, load, source_of, use_data_dir

from sklearn_difftrees._provenance import replace_marked_section


def _train(module, X, y, epochs, batch_size, seed, stats=None):
    import torch

    opt = torch.optim.Adam(module.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(seed)
    n = X.shape[0]
    leaves = []
    t0 = time.process_time()
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = perm[start : start + batch_size]
            loss = torch.nn.functional.cross_entropy(module(X[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if stats is not None:
                leaves.append(module.n_reachable_leaves)
    return time.process_time() - t0, (float(np.mean(leaves)) if leaves else float("nan"))


def run(name, depths, epochs, seed, max_rows):
    torch = single_thread()
    from sklearn_difftrees import TreeEnsembleLayer
    from sklearn_difftrees.tel._layer import tree_ensemble_dense

    class _Logistic(torch.nn.Module):
        def __init__(self, layer):
            super().__init__()
            self.weight, self.bias, self.leaf = layer.weight, layer.bias, layer.leaf
            self.gamma = layer.gamma

        def forward(self, x):
            return tree_ensemble_dense(x, self.weight, self.bias, self.leaf, self.gamma,
                                       activation="logistic")

    X, y = load(name, smoke=max_rows is not None)
    if max_rows is not None and X.shape[0] > max_rows:
        idx = np.random.RandomState(0).choice(X.shape[0], max_rows, replace=False)
        X, y = X[idx], y[idx]
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    _, y = np.unique(y, return_inverse=True)
    Xt = torch.tensor(X, dtype=torch.float32)
    yt = torch.tensor(y)
    k = int(y.max()) + 1
    rows = []
    for depth in depths:
        torch.manual_seed(seed)
        base = TreeEnsembleLayer(X.shape[1], k, n_trees=10, depth=depth, gamma=1.0)
        state = {kk: v.clone() for kk, v in base.state_dict().items()}
        times = {}
        for label in ("conditional", "dense smooth-step", "dense logistic"):
            layer = TreeEnsembleLayer(X.shape[1], k, n_trees=10, depth=depth, gamma=1.0,
                                      backend="dense" if label != "conditional" else
                                      "conditional")
            layer.load_state_dict(state)
            module = _Logistic(layer) if label == "dense logistic" else layer
            sec, leaves = _train(module, Xt, yt, epochs, 256, seed,
                                 stats=True if label == "conditional" else None)
            times[label] = sec
            if label == "conditional":
                reach = leaves
        rows.append([
            name, depth, f"{reach:.2f}", 2**depth,
            f"{times['conditional']:.2f}", f"{times['dense smooth-step']:.2f}",
            f"{times['dense logistic']:.2f}",
            f"{times['dense logistic'] / times['conditional']:.1f}x",
            f"{times['dense smooth-step'] / times['conditional']:.1f}x",
        ])
        print(markdown_table(HEADERS, rows[-1:]), flush=True)
    return rows


HEADERS = ["dataset", "depth", "reachable leaves / tree", "leaves", "conditional (CPU s)",
           "dense smooth-step (CPU s)", "dense logistic (CPU s)", "logistic / conditional",
           "dense / conditional (smooth-step)"]


def crossover(features, depths, gammas, reps):
    """Grid of one-pass times of both backends beside the cost model's pick."""
    torch = single_thread()
    from sklearn_difftrees.tel._layer import TreeEnsembleLayer, backend_costs

    n_rows, n_trees, k = 128, 20, 3
    rows, fit_rows = [], []
    for p in features:
        rng = np.random.RandomState(0)
        X = torch.tensor(rng.randn(n_rows, p), dtype=torch.float32)
        y = torch.tensor(rng.randint(0, k, n_rows))
        for depth in depths:
            for gamma in gammas:
                ms = {}
                for backend in ("dense", "conditional"):
                    torch.manual_seed(0)
                    layer = TreeEnsembleLayer(p, k, n_trees=n_trees, depth=depth, gamma=gamma,
                                              backend=backend)

                    def step():
                        loss = torch.nn.functional.cross_entropy(layer(X), y)
                        loss.backward()

                    step()
                    n_rep = max(reps, int(400 / 2**depth))
                    best = np.inf
                    for _ in range(3):
                        t0 = time.process_time()
                        for _ in range(n_rep):
                            step()
                        best = min(best, (time.process_time() - t0) / n_rep * 1e3)
                    ms[backend] = best
                    if backend == "conditional":
                        leaves = layer.n_reachable_leaves
                dense_pred, cond_pred = backend_costs(n_rows, n_trees, depth, p, leaves)
                pick = "dense" if dense_pred < cond_pred else "conditional"
                fastest = min(ms.values())
                fit_rows.append((p, depth, leaves, ms["dense"], ms["conditional"]))
                rows.append([
                    p, depth, gamma, f"{leaves:.1f}", 2**depth, f"{ms['conditional']:.2f}",
                    f"{ms['dense']:.2f}", f"{ms['dense'] / ms['conditional']:.2f}", pick,
                    f"{ms[pick] / fastest:.2f}x", f"{ms['conditional'] / fastest:.2f}x",
                ])
                print(markdown_table(CROSS_HEADERS, rows[-1:]), flush=True)
    return rows, _refit(fit_rows)


def _refit(fit_rows):
    """The cost model's coefficients, refitted to this run (relative least squares)."""
    p, d, leaves, dense, cond = (np.array(c, dtype=float) for c in zip(*fit_rows))
    r = leaves + d
    A = np.c_[np.ones_like(p), r, r * p, 2.0**d * p]
    c = np.linalg.lstsq(A / cond[:, None], np.ones_like(cond), rcond=None)[0]
    B = np.c_[np.ones_like(p), 2.0**d, 2.0**d * p]
    e = np.linalg.lstsq(B / dense[:, None], np.ones_like(dense), rcond=None)[0]
    return ("refitted: conditional (" + ", ".join(f"{v:.3g}" for v in c) + "), dense ("
            + ", ".join(f"{v:.3g}" for v in e) + ")")


CROSS_HEADERS = ["in_features", "depth", "gamma", "reachable leaves / tree", "leaves",
                 "conditional (ms)", "dense (ms)", "dense / conditional", "auto picks",
                 "auto / fastest", "conditional / fastest"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--datasets", default="pima,spambase")
    parser.add_argument("--depths", default="2,3,4,5,6,7,8,9,10")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--crossover", action="store_true",
                        help="time both backends over in_features x depth x gamma instead")
    parser.add_argument("--out")
    parser.add_argument("--markdown", help="replace the tel_speed block of this file (with "
                        "--crossover: the tel_crossover block)")
    args = parser.parse_args()
    use_data_dir(args.data_dir)
    if args.crossover:
        small = args.smoke
        features = [5, 50] if small else [5, 20, 50, 100, 200]
        depths = [2, 4] if small else [2, 4, 6, 8]
        gammas = [0.3, 20.0] if small else [0.3, 2.0, 20.0]
        rows, refit = crossover(features, depths, gammas, reps=1 if small else 3)
        slow = max(float(r[9][:-1]) for r in rows)
        slow_cond = max(float(r[10][:-1]) for r in rows)
        text = "\n".join([
            "TEL backends, one forward + backward pass of 128 rows, 20 trees, 3 outputs "
            f"(initial model){' (smoke)' if small else ''}", environment_line(), "",
            markdown_table(CROSS_HEADERS, rows), "",
            f"auto's pick is at most {slow:.2f}x the faster backend on this grid (always "
            f"conditional: up to {slow_cond:.2f}x); {refit}.",
        ])
        print()
        print(text)
        write_out(args.out, text)
        if args.markdown:
            replace_marked_section(args.markdown, "tel_crossover", text)
        return
    if args.smoke:
        datasets, depths, epochs, max_rows = ["pima"], [2, 4, 6], 3, 500
    else:
        datasets = args.datasets.split(",")
        depths = [int(d) for d in args.depths.split(",")]
        epochs, max_rows = args.epochs, None
    single_thread()
    env = environment_line()
    rows = []
    for name in datasets:
        rows += run(name, depths, epochs, args.seed, max_rows)
    text = "\n".join([
        f"TEL training time vs depth ({'smoke: ' if args.smoke else ''}{epochs} epochs, "
        f"10 trees, gamma=1, Adam lr=0.1, batch 256; data: "
        + ", ".join(f"{d} ({source_of(d)})" for d in datasets) + ")",
        f"{env}",
        "",
        markdown_table(HEADERS, rows),
    ])
    print()
    print(text)
    write_out(args.out, text)
    if args.markdown:
        replace_marked_section(args.markdown, "tel_speed", text)


if __name__ == "__main__":
    main()
