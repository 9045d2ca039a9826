"""Metrics for the hierarchies learned by the package's trees."""

import numpy as np
from scipy import sparse

from ._compat import validate_params

__all__ = ["dendrogram_purity"]


def _children_of(obj, n_nodes):
    """(left, right) child arrays (-1 for none) of a fitted tree's nodes."""
    tree = getattr(obj, "tree_", obj)
    if hasattr(tree, "children_left"):  # scikit-learn's Tree
        return np.asarray(tree.children_left), np.asarray(tree.children_right)
    # Heap order (every tree of this package): children of i are 2i+1, 2i+2.
    idx = np.arange(n_nodes)
    left = np.where(2 * idx + 1 < n_nodes, 2 * idx + 1, -1)
    right = np.where(2 * idx + 2 < n_nodes, 2 * idx + 2, -1)
    return left, right


@validate_params(
    {"tree": [object], "X": ["array-like"], "y": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def dendrogram_purity(tree, X, y):
    """Dendrogram purity of the hierarchy a fitted tree induces on ``(X, y)``.

    Following Heller & Ghahramani (2005) and Monath et al. (2019): for every
    pair of samples of the same class, take the smallest tree node containing
    both (their least common ancestor; two samples ending in the same node
    have that node) and the fraction of the samples below it that share the
    pair's class; the purity is the mean of that fraction over all such
    pairs. 1 means every class lives in its own subtree.

    Parameters
    ----------
    tree : fitted estimator or tree
        Anything with ``decision_path(X)`` returning the (n_samples, n_nodes)
        node indicator: the trees of this package (heap-ordered nodes, e.g.
        :class:`~sklearn_difftrees.LatentTreeClusterer`, whose paths stop at
        pruned nodes) or scikit-learn's fitted decision trees.
    X : array-like of shape (n_samples, n_features)
        Samples to place in the tree.
    y : array-like of shape (n_samples,)
        Ground-truth classes.

    Returns
    -------
    purity : float
        Dendrogram purity in [0, 1] (``nan`` when no class has two samples).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from sklearn_difftrees.metrics import dendrogram_purity
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]])
    >>> y = np.array([0, 0, 1, 1])
    >>> tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    >>> float(dendrogram_purity(tree, X, y))
    1.0
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    path = tree.decision_path(X) if hasattr(tree, "decision_path") else None
    if not (sparse.issparse(path) or isinstance(path, np.ndarray)):
        raise TypeError(
            "dendrogram_purity needs one tree whose decision_path(X) returns the "
            f"(n_samples, n_nodes) node indicator; got {type(tree).__name__} (for a "
            "forest, pass one of its estimators_)."
        )
    path = sparse.csr_matrix(path)
    n, n_nodes = path.shape
    if y.shape[0] != n:
        raise ValueError(f"X and y have inconsistent lengths: {n} and {y.shape[0]}.")
    _, y_enc = np.unique(y, return_inverse=True)
    onehot = sparse.csr_matrix(
        (np.ones(n), (np.arange(n), y_enc)), shape=(n, int(y_enc.max()) + 1)
    )
    counts = np.asarray((path.T @ onehot).todense(), dtype=np.float64)  # (nodes, classes)
    left, right = _children_of(tree, n_nodes)
    pairs = counts * (counts - 1) / 2
    below = np.zeros_like(pairs)
    for child in (left, right):
        has = child >= 0
        below[has] += pairs[child[has]]
    lca_pairs = pairs - below  # same-class pairs whose LCA is each node
    size = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        purity = np.where(size > 0, counts / size, 0.0)
    root_pairs = np.bincount(y_enc).astype(float)
    total = float((root_pairs * (root_pairs - 1) / 2).sum())
    if total == 0:
        return float("nan")
    return float((lca_pairs * purity).sum() / total)
