"""DGT: Dense Gradient Trees (quantized gradient descent, TMLR 2022)."""

from ._classes import DGTClassifier, DGTRegressor

__all__ = ["DGTClassifier", "DGTRegressor"]
