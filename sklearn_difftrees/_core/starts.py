"""Two starts of one model, trained side by side, one kept (``init="auto"``).

A method whose training can start from its paper's random initialization or
from a greedy tree (a CART embedded into the model) offers
``init={"random", "cart", "auto"}``. Neither start wins everywhere: the
greedy one where the classes follow a few axis-aligned thresholds or there
are many classes and rows, the random one on small noisy sets, where a deep
CART is a poor, overfitted start. ``"auto"`` trains both on the same rows,
with the same validation rows, batch order and schedule, and keeps the
greedy start's model only when its per-row validation losses are clearly
better: the paired statistic of :func:`~.selection.paired_advantage` above
:data:`AUTO_INIT_Z`.

The two runs (:class:`~._trainer.TrainingRun`) are stepped an epoch each in
turn; every run is epoch for epoch the one a single start trains. Every
``ceil(max_iter / 4)`` epochs (the end of a cycle of the cosine schedule;
a quarter of the budget under a constant one) the best models so far are
compared with the same statistic,
and the greedy start's run is abandoned where it is not ahead at all
(statistic at most :data:`AUTO_DROP_Z`): the greedy start begins as a
fitted tree and the random start catches up, so the statistic mostly falls
during training and was never seen to climb from there above
:data:`AUTO_INIT_Z` (the method guides record the measurements).

The method supplies its greedy start (``greedy_start(est, module, Z, Y, w,
seed)``, setting a freshly built module in place); this module knows no
method. Imported only inside ``fit`` (through :mod:`._trainer`, torch).
"""

import math
import warnings

__all__ = ["AUTO_DROP_Z", "AUTO_INIT_Z", "train_starts"]

#: One-sided threshold of the paired statistic above which ``init="auto"``
#: keeps the model trained from the greedy start (a false switch about 2% of
#: the time when the two are equally good).
AUTO_INIT_Z = 2.0
#: At the end of a cycle of the schedule, ``init="auto"`` abandons the greedy
#: start's run when the paired statistic of its best model so far against the
#: random start's is at most this (it is not ahead).
AUTO_DROP_Z = 0.0


class _Start:
    """One start's :class:`~._trainer.TrainingRun`, stepped with its warnings
    recorded (so that only the kept run's reach the user) and a divergence
    caught (``error``)."""

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
            self.finish()

    def finish(self):
        self.history = self._call(self.run.finish)


def train_starts(est, plan, warm, greedy_rows, n_outputs, greedy_start):
    """Train ``plan`` as ``est.init`` asks; set ``est.init_``; return the history.

    ``"random"`` / ``"cart"`` (the method's ``_init_module`` has already set
    ``plan.module`` to its start) and a ``warm_start`` continuation (which
    keeps the ``init_`` of the fit it continues) train ``plan.module`` once.
    Under ``"auto"``, ``plan.module`` (the random start) is trained side by
    side with a module built by ``est._build_module(n_features, n_outputs)``
    under the same seed and set by ``greedy_start`` on ``greedy_rows`` (the
    training rows ``(Z, Y, w)`` that ``init="cart"`` grows its start on),
    kept as the early-stopping candidate of epoch 0. The latter replaces
    ``plan.module`` when the paired statistic of its validation losses
    exceeds :data:`AUTO_INIT_Z`; its run is abandoned at the end of a cycle
    where the statistic of the best models so far is at most
    :data:`AUTO_DROP_Z`. Only the kept run's warnings are shown; a run that
    diverges leaves the other (both: its error is raised). The random start
    is trained alone without validation rows (``early_stopping=False``) and
    when they are too few for the statistic to reach the threshold
    (``z <= sqrt(n)``: ``n <= AUTO_INIT_Z**2``).
    """
    from ._trainer import TrainingRun, row_losses, seeded, train
    from .selection import paired_advantage

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
        module = est._build_module(Z.shape[1], n_outputs)
    greedy_start(est, module, Z, Y, w, kw["seed"])
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
                greedy.finish()
    if random.error is not None or greedy.error is not None:
        if random.error is not None and greedy.error is not None:
            raise random.error
        z = math.inf if random.error is not None else -math.inf
    elif dropped is None:
        _, z = paired_advantage(row_losses(plan.module, est._loss_fn, val[0], val[1]),
                                row_losses(module, est._loss_fn, val[0], val[1]), wv)
    keep_greedy = z > AUTO_INIT_Z and (dropped is None or random.error is not None)
    est.init_ = "cart" if keep_greedy else "random"
    kept = greedy if keep_greedy else random
    for record in kept.caught:
        warnings.warn_explicit(record.message, record.category, record.filename,
                               record.lineno)
    if est.verbose >= 2:  # with the per-epoch lines
        why = (f"the greedy start was abandoned at epoch {dropped} (paired statistic "
               f"{z:.2f} <= {AUTO_DROP_Z})" if dropped is not None
               else f"paired statistic {z:.2f}, threshold {AUTO_INIT_Z}")
        print(f"{type(est).__name__}: init='auto' kept the {est.init_} start ({why})")
    if keep_greedy:
        plan.module = module
    return kept.history
