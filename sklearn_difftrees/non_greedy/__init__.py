"""Non-greedy oblique trees (Norouzi et al., NeurIPS 2015)."""

from ._classes import (
    NonGreedyObliqueTree,
    NonGreedyObliqueTreeClassifier,
    NonGreedyObliqueTreeRegressor,
)

__all__ = [
    "NonGreedyObliqueTree",
    "NonGreedyObliqueTreeClassifier",
    "NonGreedyObliqueTreeRegressor",
]
