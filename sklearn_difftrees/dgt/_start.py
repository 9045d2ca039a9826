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

The two runs are stepped side by side, an epoch each in turn. At the end of
every cycle of the learning-rate schedule (every ``ceil(max_iter / 4)``
epochs) the best trees so far are compared with the same statistic, and the
greedy start's run is abandoned where it is not ahead at all (statistic at
most :data:`AUTO_DROP_Z`): its advantage shrinks as the random start catches
up, and was never seen to climb from there above :data:`AUTO_INIT_Z`, so the
random start would be kept anyway, and the rest of that run is saved.
"""

import math
import warnings

__all__ = ["AUTO_DROP_Z", "AUTO_INIT_Z", "CART_ROW_NORM", "cart_start", "train_starts"]

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
#: At the end of a cycle of the schedule, ``init="auto"`` abandons the greedy
#: start's run when the paired statistic of its best tree so far against the
#: random start's is at most this (it is not ahead).
AUTO_DROP_Z = 0.0


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


class _Start:
    """One start's :class:`~sklearn_difftrees._core._trainer.TrainingRun`,
    stepped with its warnings recorded (so that only the kept run's reach the
    user) and a divergence caught (``error``)."""

    def __init__(self, make_run):
        self.caught, self.error, self.history = [], None, None
        self.run = self._call(make_run)

    @property
    def active(self):
        return self.run is not None and self.history is None and self.error is None

    def _call(self, fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = fn()
            except FloatingPointError as exc:
                self.error, result = exc, None
        self.caught.extend(caught)
        return result

    def step(self):
        """One epoch (nothing once the run ended); finish the run when it stops."""
        if self.active and not self._call(self.run.step) and self.error is None:
            self.history = self._call(self.run.finish)


def train_starts(est, plan, warm, greedy_rows=None):
    """Train ``plan`` as ``est.init`` asks; set ``est.init_``; return the history.

    ``"random"`` / ``"cart"`` (and a ``warm_start`` continuation, which keeps
    the ``init_`` of the fit it continues) train ``plan.module`` once. Under
    ``"auto"`` the random start (``plan.module``) is trained side by side
    with a module built with the same seed and set to the greedy start grown
    on ``greedy_rows`` (the training rows ``(Z, Y, w)`` that ``init="cart"``
    grows it on), kept as the early-stopping candidate of epoch 0; the latter
    replaces ``plan.module`` when the paired statistic of its validation
    losses exceeds :data:`AUTO_INIT_Z`, and its run is abandoned at the end
    of a cycle where the statistic of the best trees so far is at most
    :data:`AUTO_DROP_Z`. Each run is the one ``init="random"`` /
    ``init="cart"`` trains, epoch for epoch. Only the kept run's warnings are
    shown; a run that diverges leaves the other (both: its error is raised).
    The random start is trained alone without validation rows
    (``early_stopping=False``) and when they are too few for the statistic
    to reach the threshold (``z <= sqrt(n)``: ``n <= AUTO_INIT_Z**2``).
    """
    from .._core._trainer import TrainingRun, row_losses, seeded, train
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
    Z, Y, w = greedy_rows
    with seeded(kw["seed"]):
        module = est._build_module(Z.shape[1], plan.module.leaf.shape[1])
    cart_start(est, module, Z, Y, w, kw["seed"])
    module.to(plan.device)
    random = _Start(lambda: TrainingRun(plan.module, est._loss_fn, plan.train_data, **kw))
    greedy = _Start(lambda: TrainingRun(module, est._loss_fn, plan.train_data, **{
        **kw, "keep_start": True, "name": f"{kw['name']} (greedy start)"}))
    cycle = max(1, math.ceil(kw["max_iter"] / 4))
    dropped = None
    while random.active or greedy.active:
        random.step()
        greedy.step()
        if (greedy.active and greedy.run.epoch % cycle == 0 and random.error is None
                and random.run.best_row_losses is not None
                and greedy.run.best_row_losses is not None):
            _, z = paired_advantage(random.run.best_row_losses,
                                    greedy.run.best_row_losses, wv)
            if z <= AUTO_DROP_Z:  # not ahead at the end of a cycle: abandoned
                dropped = greedy.run.epoch
                greedy.history = greedy._call(greedy.run.finish)
    if random.error is not None or greedy.error is not None:
        if random.error is not None and greedy.error is not None:
            raise random.error
        z = math.inf if random.error is not None else -math.inf
    elif dropped is None:
        _, z = paired_advantage(row_losses(plan.module, est._loss_fn, val[0], val[1]),
                                row_losses(module, est._loss_fn, val[0], val[1]), wv)
    keep_greedy = z > AUTO_INIT_Z and (dropped is None or random.error is not None)
    est.init_ = "cart" if keep_greedy else "random"
    kept = greedy if est.init_ == "cart" else random
    for record in kept.caught:
        warnings.warn_explicit(record.message, record.category, record.filename,
                               record.lineno)
    if est.verbose >= 2:  # with the per-epoch lines
        why = (f"the greedy start was abandoned at epoch {dropped} (paired statistic "
               f"{z:.2f} <= {AUTO_DROP_Z})" if dropped is not None
               else f"paired statistic {z:.2f}, threshold {AUTO_INIT_Z}")
        print(f"{type(est).__name__}: init='auto' kept the {est.init_} start ({why})")
    if est.init_ == "cart":
        plan.module = module
    return kept.history
