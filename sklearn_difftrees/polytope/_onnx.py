"""ONNX graph of a fitted ConvexPolytopeTree: noisy-OR polytope scores
``s_i(x) = sum_k r_k softplus(beta_k . x + b_k)`` of every internal node, then
the hard walk (right iff ``s_i(x) - threshold_i > 0``) that stops at the
first node that does not split."""

import numpy as np
from sklearn.base import is_classifier

from .._core.onnx_graph import classifier_outputs, regressor_output

__all__ = ["polytope_graph"]


def _softplus(g, z):
    """``log(1 + e^z)`` without overflow, as the routing kernel computes it:
    ``z + log(1 + e^-z)`` for ``z > 0``, ``log(1 + e^z)`` otherwise."""
    one = g.const(np.array(1.0))
    neg_abs = g.op("Neg", [g.op("Abs", [z])])
    tail = g.op("Log", [g.op("Add", [one, g.op("Exp", [neg_abs])])])
    return g.op("Add", [g.op("Relu", [z]), tail], "softplus")


def polytope_graph(graph, est):
    g = graph
    tree = est.tree_
    n_int = tree.is_split.shape[0]
    node = g.zeros_int64("node")  # (n, 1) heap index
    if n_int and tree.is_split.any():
        n_facets = tree.facet_weight.shape[0]
        owner = np.zeros((n_facets, n_int))  # facet k -> its node, weighted by r_k
        for i in range(n_int):
            owner[tree.facet_ptr[i] : tree.facet_ptr[i + 1], i] = 1.0
        facets = _softplus(g, g.linear(tree.facet_coef, tree.facet_intercept, "facet"))
        weighted = g.op("Mul", [facets, g.const(np.asarray(tree.facet_weight, np.float64))])
        # Each node sums its own facets, as the kernel does: in the product
        # with ``owner`` an infinite or NaN facet of one node would make every
        # node's score NaN (0 * inf), so infinite facets enter capped (the
        # decision is the same) and a node with a NaN facet gets a NaN score.
        owner_c = g.const(owner, "owner")
        nan = g.op("IsNaN", [weighted])
        capped = g.op("Where", [nan, g.const(np.array(0.0)),
                                g.op("Min", [weighted, g.const(np.array(1e300))])])
        has_nan = g.op("Greater", [
            g.op("MatMul", [g.op("Cast", [nan], to=g.onnx.TensorProto.DOUBLE), owner_c]),
            g.const(np.array(0.0))])
        scores = g.op("Where", [has_nan, g.const(np.array(np.nan)),
                                g.op("MatMul", [capped, owner_c])], "node_score")
        threshold = g.const(np.where(tree.is_split.astype(bool), tree.threshold, 0.0), "thr")
        splits = g.const(tree.is_split.astype(bool), "is_split")
        last = g.const(np.array(n_int - 1, dtype=np.int64))
        zero = g.const(np.array(0.0))
        one = g.const(np.array(1, dtype=np.int64))
        two = g.const(np.array(2, dtype=np.int64))
        for _ in range(tree.max_depth):
            at = g.op("Min", [node, last])  # leaves (>= n_int) never split
            margin = g.op("Sub", [g.op("GatherElements", [scores, at], axis=1),
                                  g.op("Gather", [threshold, at], axis=0)])
            right = g.op("Cast", [g.op("Greater", [margin, zero])], to=g.onnx.TensorProto.INT64)
            child = g.op("Add", [g.op("Add", [g.op("Mul", [node, two]), one]), right])
            splitting = g.op("And", [g.op("Less", [node, g.const(np.array(n_int, dtype=np.int64))]),
                                     g.op("Gather", [splits, at], axis=0)])
            node = g.op("Where", [splitting, child, node])
    node = g.op("Squeeze", [node, g.ints(1)], "leaf")
    value = g.op("Gather", [g.const(np.asarray(tree.value, np.float64), "value"), node], axis=0)
    if is_classifier(est):
        node_class = np.argmax(tree.value, axis=1).astype(np.int64)
        index = g.op("Gather", [g.const(node_class, "node_class"), node], axis=0)
        classifier_outputs(g, est, value, index)
    else:
        regressor_output(g, est, value)
