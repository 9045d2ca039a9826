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

    python benchmarks/bench_tel_speed.py --out benchmarks/results/tel_speed.md

Smoke run (< 60 s, bundled data)::

    python benchmarks/bench_tel_speed.py --smoke
"""

import argparse
import time

import numpy as np

from _common import environment_line, markdown_table, single_thread, write_out
from _data import add_data_dir_argument, load, source_of, use_data_dir


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_dir_argument(parser)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--datasets", default="pima,spambase")
    parser.add_argument("--depths", default="2,3,4,5,6,7,8,9,10")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    use_data_dir(args.data_dir)
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


if __name__ == "__main__":
    main()
