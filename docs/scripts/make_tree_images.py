"""Draw the tree pictures of the user guides (``docs/img/plot_tree_*.png``).

Reproducible from a fresh clone (bundled data, fixed seeds, default
parameters except the depth)::

    python docs/scripts/make_tree_images.py            # writes docs/img/
    python docs/scripts/make_tree_images.py --out /tmp # elsewhere

* a depth-8 ``DGTClassifier`` on ``segmentation`` (7 classes, 19 named
  features), drawn whole;
* a depth-8 ``NonGreedyObliqueTreeClassifier`` (other parameters default) on
  ``vehicle``.

Both are fitted on a 70/30 stratified split (``random_state=0``) of the data
loaded as a DataFrame, so the splits print the features' names. Pass-through
nodes are hidden and every box is placed without overlap (``plot_tree``).
"""

import argparse
import os
import sys
import time
import warnings

import matplotlib

matplotlib.use("Agg")

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from sklearn_difftrees import (  # noqa: E402
    DGTClassifier,
    NonGreedyObliqueTreeClassifier,
    plot_tree,
)
from sklearn_difftrees.datasets import load_dataset  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _fit(name, model):
    X, y = load_dataset(name, return_X_y=True, as_frame=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_tr, y_tr)
    print(f"{type(model).__name__} on {name}: test accuracy {model.score(X_te, y_te):.3f}, "
          f"{model.get_n_leaves()} leaves, depth {model.get_depth()}, "
          f"fit {time.perf_counter() - tic:.1f} s")
    return model


def _save(model, path, dpi):
    texts = plot_tree(model, filled=True)
    fig = texts[0].figure
    fig.savefig(path, dpi=dpi)
    w, h = fig.get_size_inches()
    print(f"  {path}: {len(texts)} boxes, {w:.0f} x {h:.0f} in at {dpi} dpi")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(HERE, "..", "img"))
    parser.add_argument("--dpi", type=int, default=80)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    dgt = _fit("segmentation", DGTClassifier(max_depth=8, random_state=0))
    _save(dgt, os.path.join(args.out, "plot_tree_dgt_depth8.png"), args.dpi)
    ng = _fit("vehicle", NonGreedyObliqueTreeClassifier(max_depth=8, random_state=0))
    _save(ng, os.path.join(args.out, "plot_tree_non_greedy.png"), args.dpi)
    return 0


if __name__ == "__main__":
    sys.exit(main())
