"""scikit-learn compatible, non-greedy, gradient-trained decision trees.

Fitted estimators predict with compiled kernels and numpy only: importing
this package, unpickling a fitted model and predicting never import torch.
The public torch layers (``nn.Module`` subclasses) are listed in
``_LAZY_TORCH_EXPORTS`` and imported on first access, so ``import
sklearn_difftrees`` stays torch-free.
"""

import importlib as _importlib

from ._core.export import export_graphviz, export_text, plot_tree
from ._core.onnx_graph import to_onnx
from ._core.optional import require_torch as _require_torch
from ._core.training_plot import plot_training_history
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

# -- latent_tree exports --
from .latent_tree import LatentTreeClassifier, LatentTreeClusterer, LatentTreeRegressor
# -- non_greedy exports --
from .non_greedy import (
    NonGreedyObliqueTree,
    NonGreedyObliqueTreeClassifier,
    NonGreedyObliqueTreeRegressor,
)
# -- tel exports --
from .tel import TreeEnsembleLayerClassifier, TreeEnsembleLayerRegressor
# -- polytope exports --
from .polytope import (
    ConvexPolytopeTree,
    ConvexPolytopeTreeClassifier,
    ConvexPolytopeTreeRegressor,
    plot_polytope_regions,
)

from ._version import __version__

#: Public torch modules: name -> submodule that defines it (imported lazily).
_LAZY_TORCH_EXPORTS = {
    # -- lazy torch exports --
    "LatentTreeLayer": ".latent_tree._module",
    "TreeEnsembleLayer": ".tel._layer",
}

__all__ = [
    "DGTBanditClassifier",
    "DGTBanditRegressor",
    "DGTClassifier",
    "DGTForest",
    "DGTForestClassifier",
    "DGTForestRegressor",
    "DGTRegressor",
    "ObliqueTree",
    "export_graphviz",
    "export_text",
    "plot_training_history",
    "plot_tree",
    "to_onnx",
    # -- latent_tree __all__ --
    "LatentTreeClassifier",
    "LatentTreeClusterer",
    "LatentTreeRegressor",
    # -- non_greedy __all__ --
    "NonGreedyObliqueTree",
    "NonGreedyObliqueTreeClassifier",
    "NonGreedyObliqueTreeRegressor",
    # -- tel __all__ --
    "TreeEnsembleLayerClassifier",
    "TreeEnsembleLayerRegressor",
    # -- polytope __all__ --
    "ConvexPolytopeTree",
    "ConvexPolytopeTreeClassifier",
    "ConvexPolytopeTreeRegressor",
    "plot_polytope_regions",
] + sorted(_LAZY_TORCH_EXPORTS)


def __getattr__(name):
    if name in _LAZY_TORCH_EXPORTS:
        _require_torch(f"sklearn_difftrees.{name} (a torch nn.Module)")
        module = _importlib.import_module(_LAZY_TORCH_EXPORTS[name], __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_TORCH_EXPORTS))
