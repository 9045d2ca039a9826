"""The shared core every method stands on (see docs/design.md).

* :mod:`.topology` — complete binary trees in heap order, path matrices;
* :mod:`.tree` — the fitted :class:`ObliqueTree` and its compiled routing, and
  the :class:`~.tree.FittedTree` protocol a method's own tree follows;
* :mod:`.validation` — input checks, weights, scaling, validation splits;
* :mod:`.base` — estimator base classes and task mixins;
* :mod:`._trainer` — the torch training loop (imported only inside ``fit``),
  and :mod:`._batched_trainer`, the same loop for several models at once;
* :mod:`.export` — ``export_text``, ``plot_tree`` and ``export_graphviz``
  over one tree view (:mod:`._tree_view`; rendered by :mod:`._render` and
  :mod:`._tree_plot`), found through the estimator's or the tree's
  ``_tree_view`` hook; :mod:`.training_plot` — ``plot_training_history``;
* :mod:`.greedy` — greedy (CART) starts embedded in a complete tree, and
  depths chosen by cross-validating CART;
* :mod:`._progress` — the progress display of every long fit (``verbose``).

The core knows no method: no module here imports a method subpackage.
"""

from .tree import ObliqueTree

__all__ = ["ObliqueTree"]
