"""Safe persistence with `skops <https://skops.readthedocs.io>`_.

A pickle runs whatever code its author put in it; load pickles only from
sources you trust. ``skops.io`` stores an estimator in a format that loads
only the types the caller allows. :func:`trusted_types` lists exactly the
types of sklearn_difftrees that a fitted estimator of this package stores
(the estimators and their fitted trees); numpy arrays, scikit-learn and
builtin types are trusted by skops itself::

    import skops.io as sio
    from sklearn_difftrees.io import trusted_types

    sio.dump(model, "model.skops")
    model = sio.load("model.skops", trusted=trusted_types())

Loading needs ``skops`` (the ``skops`` extra: ``pip install
"sklearn-difftrees[skops]"``) but not torch, like unpickling. Before
trusting a file from elsewhere, compare ``skops.io.get_untrusted_types(
file=...)`` with :func:`trusted_types`: a file that asks for any other type
is not a plain sklearn_difftrees model. See ``docs/deploy.md``.
"""

from . import bandit as _bandit
from ._core.subtrees import AxisSubtrees
from ._core.tree import ObliqueTree
from .polytope._tree import PolytopeTree

__all__ = ["trusted_types"]


def _qualified(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def trusted_types():
    """List the types of sklearn_difftrees to pass as ``trusted`` to ``skops.io.load``.

    Returns
    -------
    types : list of str
        Sorted fully qualified names of every public estimator class
        (including the bandit baselines of :mod:`sklearn_difftrees.bandit`)
        and of the fitted structures they hold (:class:`ObliqueTree`, the
        ConvexPolytopeTree's ``PolytopeTree``, the DGT forests'
        ``AxisSubtrees``). Nothing outside this package.

    Examples
    --------
    >>> from sklearn_difftrees.io import trusted_types
    >>> "sklearn_difftrees._core.tree.ObliqueTree" in trusted_types()
    True
    """
    from sklearn.base import BaseEstimator

    import sklearn_difftrees

    classes = {AxisSubtrees, ObliqueTree, PolytopeTree}
    for name in sklearn_difftrees.__all__:
        if name in sklearn_difftrees._LAZY_TORCH_EXPORTS:  # torch modules are never stored
            continue
        obj = getattr(sklearn_difftrees, name)
        if isinstance(obj, type) and issubclass(obj, BaseEstimator):
            classes.add(obj)
    for name in _bandit.__all__:
        obj = getattr(_bandit, name)
        if isinstance(obj, type) and issubclass(obj, BaseEstimator):
            classes.add(obj)
    return sorted(_qualified(c) for c in classes)
