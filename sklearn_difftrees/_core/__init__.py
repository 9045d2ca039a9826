"""The shared core every method stands on (see docs/design.md).

* :mod:`.topology` — complete binary trees in heap order, path matrices;
* :mod:`.tree` — the fitted :class:`ObliqueTree` and its compiled routing;
* :mod:`.validation` — input checks, weights, scaling, validation splits;
* :mod:`.base` — estimator base classes and task mixins;
* :mod:`._trainer` — the torch training loop (imported only inside ``fit``);
* :mod:`.export` — ``export_text`` and ``plot_tree``.
"""

from .tree import ObliqueTree

__all__ = ["ObliqueTree"]
