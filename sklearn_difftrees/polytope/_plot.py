"""Decision regions of a 2-D convex polytope tree (the paper's Figure 1)."""

from numbers import Integral

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, validate_params

__all__ = ["plot_polytope_regions"]


@validate_params(
    {
        "estimator": [object],
        "X": ["array-like"],
        "y": ["array-like", None],
        "resolution": [Interval(Integral, 10, None, closed="left")],
        "ax": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def plot_polytope_regions(estimator, X, y=None, *, resolution=200, ax=None):
    """Draw the prediction regions and the polytope boundaries of a 2-D model.

    The background shows the prediction (the probability of the last class
    for a binary classifier, the predicted class otherwise, the predicted
    value for a regressor) on a grid covering ``X``; every split adds the
    contour ``sum_k r_k softplus(beta_k . x + b_k) = tau`` of its polytope,
    drawn only where samples actually reach that node.

    Parameters
    ----------
    estimator : ConvexPolytopeTreeClassifier or ConvexPolytopeTreeRegressor
        Fitted on two features.
    X : array-like of shape (n_samples, 2)
        Points that set the plotted window (and are scattered).
    y : array-like of shape (n_samples,), default=None
        Colours of the scattered points (not drawn when ``None``).
    resolution : int, default=200
        Grid points per axis.
    ax : matplotlib Axes, default=None
        Axes to draw into; the current axes when ``None``.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn into.
    """
    check_is_fitted(estimator, "tree_")
    tree = estimator.tree_
    if tree.n_features != 2:
        raise ValueError(
            f"plot_polytope_regions needs a model fitted on 2 features; got {tree.n_features}."
        )
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_polytope_regions requires matplotlib: pip install 'sklearn-difftrees[plot]'."
        ) from exc
    X = np.asarray(X, dtype=np.float64)
    ax = plt.gca() if ax is None else ax
    pad = 0.05 * (X.max(0) - X.min(0) + 1e-12)
    gx = np.linspace(X[:, 0].min() - pad[0], X[:, 0].max() + pad[0], resolution)
    gy = np.linspace(X[:, 1].min() - pad[1], X[:, 1].max() + pad[1], resolution)
    xx, yy = np.meshgrid(gx, gy)
    grid = np.column_stack([xx.ravel(), yy.ravel()])
    if is_classifier(estimator):
        if len(estimator.classes_) == 2:
            z = tree.predict(grid)[:, 1]
        else:
            z = np.argmax(tree.predict(grid), axis=1).astype(float)
    else:
        z = tree.predict(grid)[:, 0]
    ax.contourf(xx, yy, z.reshape(xx.shape), levels=20, cmap="RdBu_r", alpha=0.6)
    path = tree.decision_path(grid)
    for v in np.flatnonzero(tree.is_split):
        reached = np.asarray(path[:, v].todense()).ravel() > 0
        s = np.where(reached, tree.scores(grid, v) - tree.threshold[v], np.nan)
        if np.isfinite(s).any():
            ax.contour(xx, yy, s.reshape(xx.shape), levels=[0.0], colors="k", linewidths=1.5)
    if y is not None:
        ax.scatter(X[:, 0], X[:, 1], c=np.asarray(y), s=6, cmap="RdBu_r", edgecolors="none")
    ax.set_xlim(gx[0], gx[-1])
    ax.set_ylim(gy[0], gy[-1])
    return ax
