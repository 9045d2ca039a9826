"""ConvexPolytopeTree: noisy-OR polytope splits with gamma-process shrinkage (NeurIPS 2021)."""

from ._classes import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor
from ._plot import plot_polytope_regions

#: The issue's name for the classifier.
ConvexPolytopeTree = ConvexPolytopeTreeClassifier

__all__ = [
    "ConvexPolytopeTree",
    "ConvexPolytopeTreeClassifier",
    "ConvexPolytopeTreeRegressor",
    "plot_polytope_regions",
]
