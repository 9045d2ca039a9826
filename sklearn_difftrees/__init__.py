"""scikit-learn compatible, non-greedy, gradient-trained decision trees.

Fitted estimators predict with compiled kernels and numpy only: importing
this package, unpickling a fitted model and predicting never import torch.
"""

from ._core.export import export_text, plot_tree
from ._core.tree import ObliqueTree
from .dgt import (
    DGTBanditClassifier,
    DGTBanditRegressor,
    DGTClassifier,
    DGTForest,
    DGTForestClassifier,
    DGTForestRegressor,
    DGTRegressor,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "DGTBanditClassifier",
    "DGTBanditRegressor",
    "DGTClassifier",
    "DGTForest",
    "DGTForestClassifier",
    "DGTForestRegressor",
    "DGTRegressor",
    "ObliqueTree",
    "export_text",
    "plot_tree",
]
