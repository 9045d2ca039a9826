"""Draw the tree pictures of the user guides (``docs/img/plot_tree_*.png``).

Reproducible from a fresh clone (bundled data, fixed seeds, default
parameters except the depth)::

    python docs/scripts/make_tree_images.py            # writes docs/img/
    python docs/scripts/make_tree_images.py --out /tmp # elsewhere

* a depth-8 ``DGTClassifier`` on ``segmentation`` (7 classes, 19 named
  features), drawn as ``plot_tree(clf, filled=True)`` draws it (the levels
  that fit its figure of at most 40 x 25 inches, the subtrees below as
  ``(...)``), saved at the dpi that makes its text at least 10 pixels high;
* a depth-8 ``NonGreedyObliqueTreeClassifier`` (other parameters default) on
  ``vehicle``, drawn whole into the axes of a 90 x 8 inch figure (what the
  default figure, at most 40 x 25 inches, cannot hold at a legible font).

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

import matplotlib.pyplot as plt  # noqa: E402
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


def _save(model, path, dpi, figsize=None):
    """``plot_tree(model, filled=True)`` saved to ``path``: in the figure it
    makes (at most 40 x 25 inches, the levels that fit), or drawn whole into
    the axes of a ``figsize`` figure (the font shrinks to fit)."""
    ax = None if figsize is None else plt.figure(figsize=figsize).add_axes([0, 0, 1, 1])
    texts = plot_tree(model, filled=True, ax=ax)
    fig = texts[0].figure
    fs = texts[0].get_fontsize()
    dpi = max(dpi, round(10 * 72 / fs))  # the text at least 10 pixels high
    fig.savefig(path, dpi=dpi)
    w, h = fig.get_size_inches()
    print(f"  {path}: {len(texts)} boxes ({sum(t.get_text() == '(...)' for t in texts)} cut), "
          f"{w:.0f} x {h:.1f} in, font {fs:.1f} pt, at {dpi} dpi")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(HERE, "..", "img"))
    parser.add_argument("--dpi", type=int, default=80)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    dgt = _fit("segmentation", DGTClassifier(max_depth=8, random_state=0))
    _save(dgt, os.path.join(args.out, "plot_tree_dgt_depth8.png"), args.dpi)
    ng = _fit("vehicle", NonGreedyObliqueTreeClassifier(max_depth=8, random_state=0))
    # Every shown node of the 50-leaf tree: a wide figure of the script's own.
    _save(ng, os.path.join(args.out, "plot_tree_non_greedy.png"), args.dpi, figsize=(90, 8))
    return 0


if __name__ == "__main__":
    sys.exit(main())
