"""The shared core every method stands on (see docs/design.md).

* :mod:`.topology` — complete binary trees in heap order, path matrices;
* :mod:`.tree` — the fitted :class:`ObliqueTree` and its compiled routing, and
  the :class:`~.tree.FittedTree` protocol a method's own tree follows;
* :mod:`.validation` — input checks, weights, scaling, validation splits;
* :mod:`.base` — estimator base classes and task mixins;
* :mod:`._trainer` — the torch training loop (imported only inside ``fit``);
* :mod:`.export` — ``export_text`` and ``plot_tree`` (dispatching on the
  tree's rendering hooks) and ``draw_tree``, the layout of every plot.

The core knows no method: no module here imports a method subpackage.
"""

from .tree import ObliqueTree

__all__ = ["ObliqueTree"]
