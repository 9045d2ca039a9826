"""LatentTree's ``max_depth="auto"``: the default depth, deepened where a
greedy tree clearly beats it.

A LatentTree predicts through a linear head on ``[x, z]``, so a shallow tree
(the paper tunes depths 2 to 6; :data:`AUTO_DEPTH` here) already fits smooth
and linear targets well, and deeper complete trees fit small sets worse
(measured on 24 tables, docs/latent_tree.md, "Depth"). Where the target
hinges on interactions of many thresholds (a checkerboard), the depth-4 tree
cannot express it and stays near chance, while a deep greedy tree carves it.

After the default depth is trained, :func:`deepen` grows the CART a user
would tune (depth chosen by 3-fold cross-validation on the training rows,
the core's :func:`~sklearn_difftrees._core.greedy.tuned_depth`) and scores
both on the validation rows (0 / 1 errors, squared error of the standardized
target). Only where the CART is clearly better (the paired statistic of the
core's :func:`~sklearn_difftrees._core.selection.paired_advantage` above
:data:`DEEPEN_Z`) and deeper, a tree of the CART's depth (at most
:data:`AUTO_MAX_DEPTH`) is trained from that depth's greedy start (the
embedded CART, an early-stopping candidate) and kept when its validation
loss is lower. Elsewhere the fit is the depth-4 one, at the cost of the
CART's cross-validation (at most ``GREEDY_MAX_ROWS`` rows).
"""

import numpy as np
from sklearn.base import is_classifier

from .._core._warn import held, reissue, warn

__all__ = ["AUTO_DEPTH", "AUTO_MAX_DEPTH", "DEEPEN_Z", "deepen"]

#: Depth of ``max_depth="auto"`` (the former fixed default).
AUTO_DEPTH = 4
#: Deepest tree ``max_depth="auto"`` trains (255 split nodes): the cost of a
#: step grows with the nodes, and a greedy tree deeper than this is matched
#: by the linear head on what remains.
AUTO_MAX_DEPTH = 8
#: How clearly the depth-tuned CART must beat the depth-:data:`AUTO_DEPTH`
#: tree on the validation rows for a deeper tree to be trained (for 0 / 1
#: errors, the sign test's ``(wins - losses) / sqrt(wins + losses)``); the
#: threshold of ConvexPolytopeTree's validation choice.
DEEPEN_Z = 3.0


def _val_losses(classification, pred, Yv):
    """0 / 1 errors (``pred``: class codes) or squared errors of the
    standardized target, mean over the outputs."""
    if classification:
        return (pred != Yv).astype(np.float64)
    return ((pred.reshape(Yv.shape) - Yv) ** 2).mean(axis=1)


def deepen(est, plan, history):
    """Train a deeper tree where the depth-tuned CART clearly wins (see the
    module); return the history of the model left in ``plan.module``, with
    ``est.max_depth_`` (and ``est.init_`` ``"cart"`` when the deeper one is
    kept) set."""
    from .._core._memory import MemoryLimitError, models_held
    from .._core._trainer import eval_outputs, row_losses, seeded, train
    from .._core.greedy import fit_cart, tuned_depth
    from .._core.selection import paired_advantage
    from ._start import cart_start

    kw = plan.train_kwargs
    if kw["validation_data"] is None or plan.start_rows is None:
        return history
    classification = is_classifier(est)
    Z, Y, w = plan.start_rows
    tuned, rows = tuned_depth(Z, Y, w, classification=classification, seed=kw["seed"])
    depth = min(tuned, AUTO_MAX_DEPTH)
    if depth <= est.max_depth_:
        return history
    Zv_t, Yv_t, wv_t = kw["validation_data"]
    Zv = Zv_t.cpu().double().numpy()
    Yv, wv = Yv_t.cpu().numpy(), wv_t.cpu().double().numpy()
    cart = fit_cart(Z[rows], Y[rows], w[rows], depth=tuned, classification=classification,
                    seed=kw["seed"])
    outputs = eval_outputs(plan.module, Zv_t)  # the depth-4 tree's, once
    out = outputs.double().cpu().numpy()
    mine = out.argmax(axis=1) if classification else out
    _, z = paired_advantage(_val_losses(classification, mine, Yv),
                            _val_losses(classification, cart.predict(Zv), Yv), wv)
    if z <= DEEPEN_Z:
        return history
    shallow = est.max_depth_
    est.max_depth_ = depth
    try:  # the deeper tree is trained beside the kept one
        with models_held(2):
            with seeded(kw["seed"]):
                module = est._build_module(Z.shape[1], plan.module.head[-1].out_features,
                                           plan.device)
            cart_start(est, module, Z, Y, w, kw["seed"])
            module.to(plan.device)
            with held() as kept:  # shown if kept
                deep_history = train(module, est._loss_fn, plan.train_data, **{
                    **kw, "keep_start": True, "name": f"{kw['name']} (depth {depth})"})
    except (MemoryLimitError, FloatingPointError) as exc:  # optional: the shallow fit stays
        est.max_depth_ = shallow
        why = ("does not fit the memory limit" if isinstance(exc, MemoryLimitError)
               else "diverged")
        warn(f"max_depth='auto': a depth-{tuned} CART fits the validation rows "
             f"clearly better than the depth-{shallow} tree, but a depth-{depth} "
             f"tree {why}: {exc} The depth-{shallow} tree is returned.",
             UserWarning)
        return history
    rows_lost = (est._loss_fn(outputs, Yv_t).double().cpu().numpy(),
                 row_losses(module, est._loss_fn, Zv_t, Yv_t))
    lost = [float(np.average(r, weights=wv)) for r in rows_lost]
    if est.verbose >= 2:
        print(f"{type(est).__name__}: max_depth='auto': a depth-{tuned} CART beat the "
              f"depth-{shallow} tree on the validation rows (paired statistic {z:.2f}); "
              f"validation loss depth {shallow} {lost[0]:.4f}, depth {depth} {lost[1]:.4f}")
    if lost[1] >= lost[0]:
        est.max_depth_ = shallow
        return history
    reissue(kept)
    plan.module = module
    est.init_ = "cart"
    return deep_history
