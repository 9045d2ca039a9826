"""DGT: Dense Gradient Trees (quantized gradient descent, TMLR 2022)."""

from ._classes import DGTClassifier, DGTRegressor
from ._forest import DGTForest, DGTForestClassifier, DGTForestRegressor

__all__ = [
    "DGTClassifier",
    "DGTForest",
    "DGTForestClassifier",
    "DGTForestRegressor",
    "DGTRegressor",
]
