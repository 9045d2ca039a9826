"""ONNX graphs of the DGT estimators: a single tree (DGT, DGT-Bandit) is the
core's hard oblique tree; a forest sums its members' leaf outputs (or, with
``subtrees_``, the values their rows reach below those leaves) in member
order and divides by their number, as ``predict_proba`` / ``predict`` do."""

import numpy as np
from sklearn.base import is_classifier

from .._core.onnx_graph import (
    axis_subtree_outputs,
    classifier_outputs,
    leaf_outputs,
    oblique_leaves,
    regressor_output,
)

__all__ = ["forest_graph"]


def forest_graph(graph, forest):
    g = graph
    classifier = is_classifier(forest)
    total = None
    for k, member in enumerate(forest.estimators_):
        tree = member.tree_
        leaves = oblique_leaves(g, tree.weights, tree.bias, tree.max_depth)
        if forest._subtrees() is not None:  # values in the forest's columns already
            out = axis_subtree_outputs(g, leaves, forest.subtrees_[k])
        else:  # a classifier member's classes are codes into the forest's classes_
            out = leaf_outputs(g, leaves, forest._leaf_table(member, tree.value))
        total = out if total is None else g.op("Add", [total, out])
    mean = g.op("Div", [total, g.const(np.array(float(len(forest.estimators_))))], "mean")
    if classifier:
        classifier_outputs(g, forest, mean)
    else:
        regressor_output(g, forest, mean)
