"""Fast vs exact loss-augmented inference as the tree deepens (paper, Figure 4).

For each depth (6 -> 18 by 2, on ``letter``), the tree starts from CART
(entropy) at that depth, converted to the complete heap-order tree, and the
same fixed set of mini-batches (``--batches`` x 128 rows, one pass) is run
through the real training step (``non_greedy._train.sgd``: compiled
loss-augmented inference, sparse split gradient, leaf gradient, momentum,
projection) once with ``inference="fast"`` and once with ``"exact"``, side by
side in one process. The time of one step is also split into the compiled
inference alone (``loss_augmented_inference`` on the same batches). The
per-fit setup (allocating the 2^D-row buffers) is excluded: the step time
is the epoch's own clock (``epoch_seconds`` of the training record). Times
are the best of ``--repeats``. Per-epoch times on the full training set are
the per-batch times multiplied by the number of batches of an epoch
(``ceil(0.9 n / 128)``, the default validation split held out).

Full run (on the bundled sets; ``--data-dir DIR`` adds others, e.g. twonorm)::

    python benchmarks/bench_non_greedy_lai.py --out benchmarks/results/non_greedy_lai.md

Smoke run (< 60 s, bundled ``letter``)::

    python benchmarks/bench_non_greedy_lai.py --smoke
"""

import argparse
import math
import time
import warnings

import numpy as np
from _common import environment_line, markdown_table, write_out
from _data import add_data_dir_argument, load, use_data_dir

BATCH = 128


def run_depth(Z, y, depth, n_batches, repeats):
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_difftrees.non_greedy._lai import loss_augmented_inference
    from sklearn_difftrees._core.embedding import cart_to_complete
    from sklearn_difftrees.non_greedy._train import leaf_targets, sgd

    nu = 10.0
    cart = DecisionTreeClassifier(criterion="entropy", max_depth=depth, random_state=0)
    cart.fit(Z, y)
    W0, b0, leaf_node = cart_to_complete(cart, depth, Z.shape[1], nu)
    K = int(y.max()) + 1
    theta_cart, _ = leaf_targets(cart.apply(Z), y, np.ones(len(y)), cart.tree_.node_count,
                                 "log", K)
    theta0 = theta_cart[leaf_node]
    rows = np.random.RandomState(depth).choice(len(y), n_batches * BATCH, replace=False)
    Zs, ys, ws = Z[rows], y[rows], np.ones(rows.size)
    out = {}
    for inference in ("fast", "exact"):
        step, lai = [], []
        for _ in range(repeats):
            # One pass over the batches; the epoch's own clock (inside sgd)
            # excludes the per-fit setup (buffers of size 2^D).
            W, b, theta = W0.copy(), b0.copy(), theta0.copy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rec = sgd(Zs, ys, ws, W, b, theta, loss="log", nu=nu, inference=inference,
                          stable=False, learning_rate=0.1, momentum=0.9, max_iter=1,
                          batch_size=BATCH, n_iter_no_change=10, tol=1e-4,
                          rng=np.random.RandomState(0))
            step.append(rec.epoch_seconds[0] / n_batches)
            tic = time.perf_counter()
            for i in range(n_batches):
                sl = slice(i * BATCH, (i + 1) * BATCH)
                loss_augmented_inference(Zs[sl], W0, b0, theta0, ys[sl], loss="log",
                                         inference=inference)
            lai.append((time.perf_counter() - tic) / n_batches)
        out[inference] = (min(step), min(lai))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir_argument(ap)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--batches", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    use_data_dir(args.data_dir)
    from sklearn.preprocessing import LabelEncoder, StandardScaler

    X, y = load("letter", smoke=args.smoke)
    y = LabelEncoder().fit_transform(y)
    Z = StandardScaler().fit_transform(X)
    depths = [6, 10] if args.smoke else [6, 8, 10, 12, 14, 16, 18]
    n_batches = 4 if args.smoke else args.batches
    repeats = 1 if args.smoke else args.repeats
    per_epoch = math.ceil(0.9 * len(y) / BATCH)  # default 10% validation split
    rows = []
    for depth in depths:
        r = run_depth(Z, y, depth, n_batches, repeats)
        (fs, fl), (es, el) = r["fast"], r["exact"]
        rows.append([
            depth, 2**depth - 1,
            f"{1e3 * fs:.2f}", f"{1e3 * es:.2f}", f"{es / fs:.1f}×",
            f"{1e3 * fl:.2f}", f"{1e3 * el:.2f}", f"{el / fl:.1f}×",
            f"{fs * per_epoch:.2f}", f"{es * per_epoch:.2f}",
        ])
        print(f"depth {depth}: step fast {1e3 * fs:.2f} ms, exact {1e3 * es:.2f} ms "
              f"({es / fs:.1f}x); inference fast {1e3 * fl:.2f} ms, exact {1e3 * el:.2f} ms "
              f"({el / fl:.1f}x)", flush=True)
    headers = ["depth", "split nodes", "step fast ms", "step exact ms", "step exact/fast",
               "LAI fast ms", "LAI exact ms", "LAI exact/fast",
               "epoch fast s", "epoch exact s"]
    text = "\n".join([
        f"Fast vs exact loss-augmented inference on letter ({len(y)} rows, "
        f"{X.shape[1]} features, 26 classes); {n_batches} mini-batches of {BATCH} per depth, "
        f"best of {repeats}; per-batch times; epoch = {per_epoch} batches.",
        "",
        markdown_table(headers, rows),
        "",
        environment_line(),
    ])
    print(text)
    if args.out:
        write_out(args.out, text)


if __name__ == "__main__":
    main()
