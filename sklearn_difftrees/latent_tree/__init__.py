"""LatentTree: pruned binary trees learned by argmin differentiation.

Zantedeschi, Kusner and Niculae (2021), "Learning Binary Decision Trees by
Argmin Differentiation". Estimators: :class:`LatentTreeClassifier`,
:class:`LatentTreeRegressor`, :class:`LatentTreeClusterer`. The torch layer
``LatentTreeLayer`` lives in ``_module`` (imported lazily by the package, so
that importing this subpackage does not import torch).
"""

from ._classes import LatentTreeClassifier, LatentTreeRegressor
from ._cluster import LatentTreeClusterer

__all__ = ["LatentTreeClassifier", "LatentTreeClusterer", "LatentTreeRegressor"]
