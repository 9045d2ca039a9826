"""ONNX graph of a fitted TEL ensemble: every soft tree evaluated densely
(the smooth-step is a clipped cubic), probabilities of reaching each leaf
multiplied down the levels, leaf vectors summed over the trees."""

import numpy as np
from sklearn.base import is_classifier

from .._core.onnx_graph import classifier_outputs, regressor_output

__all__ = ["tel_graph"]


def _smooth_step(g, t, gamma):
    """0 for t <= -gamma/2, 1 for t >= gamma/2, the paper's cubic in between
    (as ``tel._kernels.smooth_step``)."""
    h = 0.5 * gamma
    cube = g.op("Mul", [g.op("Mul", [t, t]), t])
    inner = g.op("Add", [
        g.op("Add", [
            g.op("Mul", [g.const(np.array(-2.0 / gamma**3)), cube]),
            g.op("Mul", [g.const(np.array(1.5 / gamma)), t]),
        ]),
        g.const(np.array(0.5)),
    ])
    upper = g.op("Where", [g.op("GreaterOrEqual", [t, g.const(np.array(h))]),
                           g.const(np.array(1.0)), inner])
    return g.op("Where", [g.op("LessOrEqual", [t, g.const(np.array(-h))]),
                          g.const(np.array(0.0)), upper], "p_right")


def tel_graph(graph, est):
    g = graph
    W, b, O = est.weights_, est.biases_, est.leaf_values_
    n_trees, n_int, p = W.shape
    n_leaves, n_out = O.shape[1], O.shape[2]
    depth = int(round(np.log2(n_leaves)))
    scores = g.linear(W.reshape(n_trees * n_int, p), b.reshape(-1), "node_score")
    s = _smooth_step(g, g.op("Reshape", [scores, g.ints(-1, n_trees, n_int)]), float(est.gamma))
    one = g.const(np.array(1.0))
    # prob: (n, n_trees, 2**d) probability of reaching each node of level d.
    prob = g.op("Add", [g.op("Mul", [
        g.op("Slice", [s, g.ints(0), g.ints(1), g.ints(2)]), g.const(np.array(0.0))]), one])
    for d in range(depth):
        sd = g.op("Slice", [s, g.ints(2**d - 1), g.ints(2 ** (d + 1) - 1), g.ints(2)])
        left = g.op("Mul", [prob, g.op("Sub", [one, sd])])
        right = g.op("Mul", [prob, sd])
        prob = g.interleave(left, right, (n_trees, 2 ** (d + 1)))
    flat = g.op("Reshape", [prob, g.ints(-1, n_trees * n_leaves)])
    table = g.const(np.ascontiguousarray(O.reshape(n_trees * n_leaves, n_out), dtype=np.float64))
    out = g.op("Add", [g.op("MatMul", [flat, table]),
                       g.const(np.asarray(est.intercept_, dtype=np.float64))], "raw_output")
    if is_classifier(est):
        index = g.op("ArgMax", [out], axis=1, keepdims=0, select_last_index=0)
        classifier_outputs(g, est, g.softmax(out), index)
    else:
        regressor_output(g, est, out)
