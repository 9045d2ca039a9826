"""Tree Ensemble Layer (Hazimeh et al., ICML 2020): smooth-step soft-tree ensembles.

``TreeEnsembleLayer`` (the torch module) lives in ``_layer`` and is exported
lazily by the package so that importing it does not import torch.
"""

from ._classes import TreeEnsembleLayerClassifier, TreeEnsembleLayerRegressor

__all__ = ["TreeEnsembleLayerClassifier", "TreeEnsembleLayerRegressor"]
