"""Decision regions of a convex polytope tree on a 2-D slice (the paper's Figure 1)."""

from numbers import Integral

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, validate_params
from .._core.categorical import expand_indicators, indicator_spec
from ._tree import PolytopeTree

__all__ = ["plot_polytope_regions"]


def _slice_values(estimator, values, p):
    """Values of all ``p`` features on the slice (drawn ones overwritten later)."""
    base = getattr(estimator, "_feature_median", None)  # of the indicators too: cut off
    base = np.zeros(p) if base is None else np.array(base[:p], dtype=np.float64)
    if values is None:
        return base
    if isinstance(values, dict):
        names = list(getattr(estimator, "feature_names_in_", []))
        for key, v in values.items():
            j = names.index(key) if isinstance(key, str) and key in names else key
            if not isinstance(j, Integral) or not 0 <= j < p:
                raise ValueError(f"values: unknown feature {key!r}.")
            base[j] = float(v)
        return base
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (p,):
        raise ValueError(f"values must have {p} entries (one per feature); got {values.shape}.")
    return values.copy()


@validate_params(
    {
        "estimator": [object],
        "X": ["array-like"],
        "y": ["array-like", None],
        "features": ["array-like", None],
        "values": ["array-like", dict, None],
        "resolution": [Interval(Integral, 10, None, closed="left")],
        "ax": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def plot_polytope_regions(estimator, X, y=None, *, features=None, values=None, resolution=200,
                          ax=None):
    """Draw the prediction regions and the polytope boundaries on a 2-D slice.

    The background shows the prediction (the probability of the last class
    for a binary classifier, the predicted class otherwise, the predicted
    value for a regressor) on a grid over two features; every split adds the
    contour ``sum_k r_k softplus(beta_k . x + b_k) = tau`` of its polytope,
    drawn only where grid points actually reach that node. A model with more
    than two features is drawn on the slice where the other features are
    held at ``values`` (by default their training medians).

    Parameters
    ----------
    estimator : ConvexPolytopeTreeClassifier or ConvexPolytopeTreeRegressor
        A fitted model.
    X : array-like of shape (n_samples, n_features) or (n_samples, 2)
        Points that set the plotted window and are scattered: all the
        model's features, or only the two drawn ones.
    y : array-like of shape (n_samples,), default=None
        Colours of the scattered points (not drawn when ``None``).
    features : pair of int or str, default=None
        The two features on the axes (indices, or names when the model was
        fitted on a DataFrame); ``None`` means ``(0, 1)``.
    values : array-like of shape (n_features,) or dict, default=None
        Values of the features that are not drawn: one per feature, or
        ``{feature: value}`` for some of them (the others at their training
        medians). ``None``: all at their training medians.
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
    if not isinstance(tree, PolytopeTree):
        raise TypeError(
            "plot_polytope_regions draws the polytopes of a fitted ConvexPolytopeTreeClassifier "
            f"or ConvexPolytopeTreeRegressor; got {type(estimator).__name__}. For other "
            "trees use plot_tree, or sklearn.inspection.DecisionBoundaryDisplay for regions."
        )
    p = estimator.n_features_in_  # the indicator columns follow from the features
    names = [str(f) for f in getattr(estimator, "feature_names_in_", [])] or [
        f"feature_{j}" for j in range(p)
    ]
    pair = (0, 1) if features is None else tuple(features)
    if len(pair) != 2:
        raise ValueError(f"features must name 2 features; got {features!r}.")
    pair = tuple(names.index(f) if isinstance(f, str) and f in names else f for f in pair)
    if p < 2:
        raise ValueError(f"plot_polytope_regions needs a model of at least 2 features; got {p}.")
    if not all(isinstance(j, Integral) and 0 <= j < p for j in pair) or pair[0] == pair[1]:
        raise ValueError(
            f"features must be 2 different features among the model's {p}; got {features!r}."
        )
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_polytope_regions requires matplotlib: pip install 'sklearn-difftrees[plot]'."
        ) from exc
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] not in (2, p):
        raise ValueError(
            f"X must have the model's {p} features or the 2 drawn ones; got shape {X.shape}."
        )
    X2 = X if X.shape[1] == 2 else X[:, list(pair)]
    base = _slice_values(estimator, values, p)
    ax = plt.gca() if ax is None else ax
    pad = 0.05 * (X2.max(0) - X2.min(0) + 1e-12)
    gx = np.linspace(X2[:, 0].min() - pad[0], X2[:, 0].max() + pad[0], resolution)
    gy = np.linspace(X2[:, 1].min() - pad[1], X2[:, 1].max() + pad[1], resolution)
    xx, yy = np.meshgrid(gx, gy)
    grid = np.tile(base, (xx.size, 1))
    grid[:, pair[0]] = xx.ravel()
    grid[:, pair[1]] = yy.ravel()
    grid = expand_indicators(grid, indicator_spec(estimator))
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
        if np.isfinite(s).any() and np.nanmin(s) < 0 < np.nanmax(s):
            ax.contour(xx, yy, s.reshape(xx.shape), levels=[0.0], colors="k", linewidths=1.5)
    if y is not None:
        y = np.asarray(y)
        if is_classifier(estimator):  # colours of the class codes, as the background
            y = np.searchsorted(estimator.classes_, y)
            norm = dict(vmin=0, vmax=len(estimator.classes_) - 1)
        else:
            norm = dict(vmin=np.nanmin(z), vmax=np.nanmax(z))
        ax.scatter(X2[:, 0], X2[:, 1], c=y, s=6, cmap="RdBu_r", edgecolors="none", **norm)
    ax.set_xlim(gx[0], gx[-1])
    ax.set_ylim(gy[0], gy[-1])
    ax.set_xlabel(names[pair[0]])
    ax.set_ylabel(names[pair[1]])
    if p > 2:
        ax.set_title("other features at " + ("their training medians" if values is None
                                             else "the given values"), fontsize="small")
    return ax
