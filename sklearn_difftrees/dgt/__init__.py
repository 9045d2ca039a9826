"""DGT: Dense Gradient Trees (quantized gradient descent, TMLR 2022)."""

from ._bandit import DGTBanditClassifier, DGTBanditRegressor
from ._classes import DGTClassifier, DGTRegressor
from ._forest import DGTForest, DGTForestClassifier, DGTForestRegressor

__all__ = [
    "DGTBanditClassifier",
    "DGTBanditRegressor",
    "DGTClassifier",
    "DGTForest",
    "DGTForestClassifier",
    "DGTForestRegressor",
    "DGTRegressor",
]
