"""Where a DGT tree's training starts: the greedy (CART) start of
``init="cart"``, which is also the second start of ``init="auto"`` (the
default of the single trees; the core's :mod:`~sklearn_difftrees._core.starts`
trains both side by side and keeps one, docs/dgt.md, "Two starts").
"""

__all__ = ["CART_ROW_NORM", "cart_start"]

#: Norm of every embedded CART row ``[w, b]`` of the greedy start
#: (:func:`~sklearn_difftrees._core.embedding.cart_to_complete`). Node scores
#: ``a = c (z_f - t)`` with ``c <= 1``: the rows within about one standard
#: deviation of a threshold fall inside the straight-through window
#: ``|a| <= 1`` and carry gradient.
CART_ROW_NORM = 1.0


def cart_start(est, module, Z, Y, w, seed, max_features=None):
    """Set ``module`` (in place) to the CART grown on ``(Z, Y, w)``.

    A CART of depth ``est.max_depth_`` (entropy / squared error), grown on
    at most :data:`~sklearn_difftrees._core.batching.MAX_EPOCH_ROWS` of the
    rows under ``batch_size="auto"`` (a seeded subsample, as NonGreedy's
    start and the greedy floors; a CART of depth 8 on 900,000 rows × 50 took
    most of a minute; from :data:`~sklearn_difftrees._core.greedy.BINNED_MIN_ROWS`
    rows grown on their binned codes, level by level by the compiled
    :func:`~sklearn_difftrees._core.greedy.level_cart` unless an int
    ``max_features`` draws features), is embedded into the complete tree
    (axis-aligned rows of norm :data:`CART_ROW_NORM`;
    shallower CART leaves become pass-through nodes whose rows are zero);
    with ``n_layers > 1`` the last layer is solved so that the product of the
    layers is that embedding. Every reached leaf starts at the closed-form
    minimizer of the training loss of its rows (as ``refit_leaves``), so the
    module starts as the CART it came from. ``max_features`` (an int, the
    forests' members) is the CART's: the features drawn at each split.
    """
    import numpy as np
    import torch
    from sklearn.base import is_classifier

    from .._core.batching import MAX_EPOCH_ROWS
    from .._core.greedy import auto_bins, fit_cart, level_cart, row_subsample
    from .._core.embedding import cart_to_complete, set_axis_rows
    from ._module import hard_leaf

    depth = est.max_depth_
    grow = (row_subsample(Z.shape[0], MAX_EPOCH_ROWS, seed) if est.batch_size == "auto"
            else slice(None))
    bins = auto_bins(Z[grow])  # many rows: grown on their codes
    Zg = Z[grow] if bins is None else bins.transform(Z[grow])
    if bins is not None and max_features is None:  # the compiled level growth
        feature, threshold = level_cart(Zg, Y[grow], w[grow], depth=depth,
                                        classification=is_classifier(est), bins=bins)
        W, b = np.zeros((feature.size, Z.shape[1])), np.zeros(feature.size)
        split = np.flatnonzero(feature >= 0)
        set_axis_rows(W, b, split, feature[split], threshold[split], CART_ROW_NORM)
    else:
        cart = fit_cart(Zg, Y[grow], w[grow], depth=depth, classification=is_classifier(est),
                        seed=seed, bins=bins, max_features=max_features)
        W, b, _ = cart_to_complete(cart, depth, Z.shape[1], CART_ROW_NORM)
    layers = module.layers
    with torch.no_grad():
        last = layers[-1]
        if len(layers) > 1:  # W = W_L H, b = W_L b_H + b_L with H = W_(L-1)...W_1
            H = layers[0].weight.double()
            bH = layers[0].bias.double()
            for layer in layers[1:-1]:
                H = layer.weight.double() @ H
                bH = layer.weight.double() @ bH + layer.bias.double()
            WL = torch.as_tensor(W) @ torch.linalg.pinv(H)
            b = torch.as_tensor(b) - WL @ bH
            W = WL
        last.weight.copy_(torch.as_tensor(W))
        last.bias.copy_(torch.as_tensor(b))
        leaf = hard_leaf(module.node_scores(torch.as_tensor(Z)), depth).numpy()
        theta = est._refit_leaf_params(leaf, Y, w, module.leaf.double().numpy())
        module.leaf.copy_(torch.as_tensor(theta))
