"""ONNX graph of a fitted LatentTree: the numpy forward pass of ``predict``
(split scores, node rewards ``q`` of Lemma 1, the pruned traversal ``z``, the
head) in ONNX operators, built with the core's pieces."""

import numpy as np
from sklearn.base import is_classifier

from .._core.onnx_graph import classifier_outputs, regressor_output

__all__ = ["latent_tree_graph"]


def latent_tree_graph(graph, est):
    g = graph
    tree = est.tree_
    depth = tree.max_depth
    low, high = est._input_bounds()  # predict's clip (INPUT_CLIP)
    x = g.op("Max", [g.op("Min", [g.x, g.const(high)]), g.const(low)], "x_clipped")
    s = g.linear(tree.weights, tree.bias, "split_score", x=x)
    if est.split == "elu":
        s = g.elu(s)
    # q: root 1, then per level min(parent path, -s) left / min(parent path, s) right.
    levels = [g.op("Cast", [g.zeros_int64()], to=g.onnx.TensorProto.DOUBLE)]
    levels[0] = g.op("Add", [levels[0], g.const(np.array(1.0))], "q_root")
    path = None
    for d in range(depth):
        lo, hi = 2**d - 1, 2 ** (d + 1) - 1
        sd = g.op("Slice", [s, g.ints(lo), g.ints(hi), g.ints(1)])
        child = g.interleave(g.op("Neg", [sd]), sd, (2 ** (d + 1),))
        if path is not None:
            child = g.op("Min", [g.interleave(path, path, (2 ** (d + 1),)), child])
        path = child
        levels.append(child)
    q = levels[0] if depth == 0 else g.op("Concat", levels, "q", axis=1)
    z = g.op("Min", [
        g.op("Max", [g.op("Add", [q, g.const(np.array(0.5))]), g.const(np.array(0.0))]),
        g.const(np.asarray(est.pruning_values_, dtype=np.float64), "pruning"),
    ], "z")
    if est.head_input == "concat":
        xs = g.op("Div", [
            g.op("Sub", [x, g.const(np.asarray(est._feature_mean, dtype=np.float64))]),
            g.const(np.asarray(est._feature_scale, dtype=np.float64)),
        ])
        h = g.op("Concat", [xs, z], axis=1)
    else:
        h = z
    last = len(est._head_params) - 1
    for k, (W, b) in enumerate(est._head_params):
        h = g.linear(W, b, "head", x=h)
        if k < last:
            h = g.elu(h)
    if is_classifier(est):
        proba = g.softmax(h)
        classifier_outputs(g, est, proba)
    else:
        out = g.op("Add", [
            g.op("Mul", [h, g.const(np.asarray(est._output_scale, dtype=np.float64))]),
            g.const(np.asarray(est._target_mean, dtype=np.float64)),
        ])
        regressor_output(g, est, out)
