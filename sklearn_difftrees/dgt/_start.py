"""Where a DGT tree's training starts: the greedy (CART) start of
``init="cart"`` and the two starts of ``init="auto"``, helpers of the
estimators' ``_init_module`` and ``_train``.

``init="auto"`` (the single trees' default) trains the tree twice on the same
rows, with the same validation rows, batch order and schedule: once from the
paper's random start and once from the greedy start. Both trained trees are
scored row by row on the validation rows (cross-entropy, or squared error of
the standardized targets), and the greedy-start tree is kept only when its
advantage is clearly above noise: the core's paired statistic
(:func:`~sklearn_difftrees._core.selection.paired_advantage`) above
:data:`AUTO_INIT_Z`. Small validation parts therefore keep the random start,
whose trees generalize better there (docs/dgt.md, "Two starts").
"""

import math
import warnings

__all__ = ["AUTO_INIT_Z", "CART_ROW_NORM", "cart_start", "train_starts"]

#: Norm of every embedded CART row ``[w, b]`` of the greedy start
#: (:func:`~sklearn_difftrees._core.greedy.cart_to_complete`). Node scores
#: ``a = c (z_f - t)`` with ``c <= 1``: the rows within about one standard
#: deviation of a threshold fall inside the straight-through window
#: ``|a| <= 1`` and carry gradient.
CART_ROW_NORM = 1.0
#: One-sided threshold of the paired statistic above which ``init="auto"``
#: keeps the tree trained from the greedy start (a false switch about 2% of
#: the time when the two trees are equally good; there is one alternative,
#: where ConvexPolytopeTree weighs up to two with 3).
AUTO_INIT_Z = 2.0


def cart_start(est, module, Z, Y, w, seed):
    """Set ``module`` (in place) to the CART grown on ``(Z, Y, w)``.

    A CART of depth ``est.max_depth_`` (entropy / squared error), grown on
    at most :data:`~sklearn_difftrees._core.batching.MAX_EPOCH_ROWS` of the
    rows under ``batch_size="auto"`` (a seeded subsample, as NonGreedy's
    start and the greedy floors; a CART of depth 8 on 900,000 rows × 50 took
    most of a minute), is embedded into the complete tree (axis-aligned rows of norm :data:`CART_ROW_NORM`;
    shallower CART leaves become pass-through nodes whose rows are zero);
    with ``n_layers > 1`` the last layer is solved so that the product of the
    layers is that embedding. Every reached leaf starts at the closed-form
    minimizer of the training loss of its rows (as ``refit_leaves``), so the
    module starts as the CART it came from.
    """
    import torch
    from sklearn.base import is_classifier

    from .._core.batching import MAX_EPOCH_ROWS
    from .._core.greedy import cart_to_complete, fit_cart, row_subsample
    from ._module import hard_leaf

    depth = est.max_depth_
    grow = (row_subsample(Z.shape[0], MAX_EPOCH_ROWS, seed) if est.batch_size == "auto"
            else slice(None))
    cart = fit_cart(Z[grow], Y[grow], w[grow], depth=depth,
                    classification=is_classifier(est), seed=seed)
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


def _recorded(run):
    """``(history, warnings, error)`` of ``run()``: its warnings recorded (so
    that only the kept run's reach the user) and a divergence caught."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return run(), caught, None
        except FloatingPointError as exc:
            return None, caught, exc


def train_starts(est, plan, warm, greedy_rows=None):
    """Train ``plan`` as ``est.init`` asks; set ``est.init_``; return the history.

    ``"random"`` / ``"cart"`` (and a ``warm_start`` continuation, which keeps
    the ``init_`` of the fit it continues) train ``plan.module`` once. Under
    ``"auto"`` the random start (``plan.module``) is trained, then a module
    built with the same seed and set to the greedy start grown on
    ``greedy_rows`` (the training rows ``(Z, Y, w)`` that ``init="cart"``
    grows it on), kept as the early-stopping candidate of epoch 0; the latter
    replaces ``plan.module`` when the paired statistic of its validation
    losses exceeds :data:`AUTO_INIT_Z`. Only the kept run's warnings are
    shown; a run that diverges leaves the other (both: its error is raised).
    The random start is trained alone without validation rows
    (``early_stopping=False``) and when they are too few for the statistic
    to reach the threshold (``z <= sqrt(n)``: ``n <= AUTO_INIT_Z**2``).
    """
    from .._core._trainer import row_losses, seeded, train
    from .._core.selection import paired_advantage

    kw = plan.train_kwargs
    val = kw["validation_data"]
    wv = None if val is None else val[2].double().cpu().numpy()
    if (warm or est.init != "auto" or val is None
            or (AUTO_INIT_Z > 0 and wv.sum() ** 2 <= AUTO_INIT_Z**2 * (wv**2).sum())):
        history = train(plan.module, est._loss_fn, plan.train_data, **kw)
        if not warm:
            est.init_ = "cart" if est.init == "cart" else "random"
        return history
    random = _recorded(lambda: train(plan.module, est._loss_fn, plan.train_data, **kw))
    Z, Y, w = greedy_rows
    with seeded(kw["seed"]):
        module = est._build_module(Z.shape[1], plan.module.leaf.shape[1])
    cart_start(est, module, Z, Y, w, kw["seed"])
    module.to(plan.device)
    greedy = _recorded(lambda: train(module, est._loss_fn, plan.train_data,
                                     **{**kw, "keep_start": True}))
    if random[2] is not None or greedy[2] is not None:
        if random[2] is not None and greedy[2] is not None:
            raise random[2]
        z = math.inf if random[2] is not None else -math.inf
    else:
        _, z = paired_advantage(row_losses(plan.module, est._loss_fn, val[0], val[1]),
                                row_losses(module, est._loss_fn, val[0], val[1]), wv)
    est.init_ = "cart" if z > AUTO_INIT_Z else "random"
    history, caught, _ = greedy if est.init_ == "cart" else random
    for record in caught:
        warnings.warn_explicit(record.message, record.category, record.filename,
                               record.lineno)
    if est.verbose >= 2:  # with the per-epoch lines
        print(f"{type(est).__name__}: init='auto' kept the {est.init_} start "
              f"(paired statistic {z:.2f}, threshold {AUTO_INIT_Z})")
    if est.init_ == "cart":
        plan.module = module
    return history
