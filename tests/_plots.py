"""Helpers of the drawing tests (tests/test_export.py, tests/test_plot_tree.py):
a hand-made oblique tree of any depth, and the drawn boxes and their overlaps."""

import numpy as np

from sklearn_difftrees import DGTClassifier, ObliqueTree


def _hand_made(depth, n_features=6, n=4000, zero_nodes=(), seed=0):
    """A fitted DGTClassifier holding a random complete oblique tree.

    Nodes in ``zero_nodes`` get zero weights and bias (``0 <= 0``: every
    sample goes left, as NonGreedy's pruned nodes).
    """
    rng = np.random.RandomState(seed)
    X = rng.randn(n, n_features)
    n_int = 2**depth - 1
    W = rng.randn(n_int, n_features)
    b = rng.randn(n_int) * 0.3
    for node in zero_nodes:
        W[node], b[node] = 0.0, 0.0
    V = rng.dirichlet(np.ones(3), size=2**depth)
    est = DGTClassifier(max_depth=depth)
    est.tree_ = ObliqueTree(W, b, V).finalize(X)
    est.classes_ = np.array([0, 1, 2])
    est.n_classes_ = 3
    est.n_outputs_ = 1
    est.n_features_in_ = n_features
    est._feature_scale = np.ones(n_features)
    return est


def _boxes(texts):
    fig = texts[0].figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ext = [t.get_bbox_patch().get_window_extent(renderer) for t in texts]
    return np.array([[e.x0, e.y0, e.x1, e.y1] for e in ext])


def _overlaps(boxes):
    pairs = []
    for i in range(len(boxes)):
        o = boxes[i + 1:]
        hit = ((o[:, 0] < boxes[i, 2]) & (boxes[i, 0] < o[:, 2])
               & (o[:, 1] < boxes[i, 3]) & (boxes[i, 1] < o[:, 3]))
        pairs += [(i, i + 1 + j) for j in np.flatnonzero(hit)]
    return pairs
