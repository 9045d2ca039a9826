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
``ceil(max_iter / AUTO_CHECKS)`` epochs (a fifth of a cycle of the cosine
schedule; a twentieth of the budget under a constant one) the best models so
far are compared with the same statistic, and the greedy start's run is
abandoned where it is not ahead at all (statistic at most
:data:`AUTO_DROP_Z`): the greedy start begins as a fitted tree and the
random start catches up, so the statistic mostly falls during training and
was never seen to climb from there above :data:`AUTO_INIT_Z` (measured on
DGT's and TEL's runs, docs/dgt.md, "Two starts").
Both models count against the memory limit (:func:`~._memory.models_held`).

The method supplies its greedy start (``greedy_start(est, module, Z, Y, w,
seed)``, setting a freshly built module in place); this module knows no
method. Imported only inside ``fit`` (through :mod:`._trainer`, torch).
"""

import math

from sklearn.exceptions import ConvergenceWarning

from ._warn import warn

__all__ = ["AUTO_CHECKS", "AUTO_DROP_Z", "AUTO_INIT_Z", "train_starts"]

#: One-sided threshold of the paired statistic above which ``init="auto"``
#: keeps the model trained from the greedy start (a false switch about 2% of
#: the time when the two are equally good).
AUTO_INIT_Z = 2.0
#: Every ``ceil(max_iter / AUTO_CHECKS)`` epochs, ``init="auto"`` abandons
#: the greedy start's run when the paired statistic of its best model so far
#: against the random start's is at most this (it is not ahead).
AUTO_DROP_Z = 0.0
#: Comparisons of the two runs over ``max_iter`` epochs (every 10 epochs at
#: DGT's and LatentTree's ``max_iter=200``, 5 at TEL's 100). Was 8 (every 25
#: epochs): the greedy run, abandoned at the first check where it is behind,
#: then trained 15 epochs more where the random start wins (on
#: bench_scaling's 100,000 x 50 rows, its statistic was -4.2 at epoch 10,
#: -1.8 at 25); on DGT's per-epoch statistics of 54 splits no split at <= 0
#: at epoch 10 ended above AUTO_INIT_Z, and bench_two_starts.py keeps the
#: same start on all 162 splits of DGT, LatentTree and TEL with either value
#: (docs/dgt.md, "Two starts").
AUTO_CHECKS = 20


class _Start:
    """One start's :class:`~._trainer.TrainingRun`, stepped with a divergence
    caught (``error``); its ``ConvergenceWarning`` is held back
    (``message``) so that only the kept run's reaches the user."""

    def __init__(self, make_run):
        self.error, self.history, self.message = None, None, None
        self.run = self._call(make_run)

    @property
    def active(self):
        return self.run is not None and self.history is None and self.error is None

    def _call(self, fn):
        try:
            return fn()
        except FloatingPointError as exc:
            self.error = exc
            return None

    def step(self):
        """One epoch (nothing once the run ended); finish the run when it stops."""
        if self.active and not self._call(self.run.step) and self.error is None:
            self.finish()

    def finish(self, note=None):
        self.history = self.run.finish(emit=False, note=note)
        self.message = None if note else self.run.convergence_message

    def row_losses(self, val, loss_fn):
        """Per-row validation losses of the finished run's module: those its
        run tracked for the best epoch, which ``finish`` restored, or (no
        epoch was a candidate: its last weights) evaluated again."""
        from ._trainer import row_losses

        if self.run.best_row_losses is not None:
            return self.run.best_row_losses
        return row_losses(self.run.module, loss_fn, val[0], val[1])


def _single(est, plan, warm, init):
    """Train ``plan.module`` once; set ``init_`` (kept by a continuation)."""
    from ._trainer import train

    history = train(plan.module, est._loss_fn, plan.train_data, **plan.train_kwargs)
    if not warm:
        est.init_ = init
    return history


def train_starts(est, plan, warm, n_outputs, greedy_start):
    """Train ``plan`` as ``est.init`` asks; set ``est.init_``; return the history.

    ``"random"`` / ``"cart"`` (the method's ``_init_module`` has already set
    ``plan.module`` to its start) and a ``warm_start`` continuation (which
    keeps the ``init_`` of the fit it continues) train ``plan.module`` once.
    Under ``"auto"``, ``plan.module`` (the random start) is trained side by
    side with a module built by ``est._build_module(n_features, n_outputs, device)``
    under the same seed and set by ``greedy_start`` on ``plan.start_rows``
    (the training rows ``(Z, Y, w)`` that ``init="cart"`` grows its start
    on), kept as the early-stopping candidate of epoch 0. The latter replaces
    ``plan.module`` when the paired statistic of its validation losses
    exceeds :data:`AUTO_INIT_Z`; its run is abandoned every ``ceil(max_iter
    / AUTO_CHECKS)`` epochs where the statistic of the best models so far is at most
    :data:`AUTO_DROP_Z`. Only the kept run's ``ConvergenceWarning`` is shown;
    a run that diverges leaves the other (both: its error is raised). The
    random start is trained alone without validation rows
    (``early_stopping=False``), when they are too few for the statistic to
    reach the threshold (``z <= sqrt(n)``: ``n <= AUTO_INIT_Z**2``), and,
    with a warning, when the memory limit does not hold two models
    (:func:`~._memory.models_held`).
    """
    from ._memory import MemoryLimitError, models_held
    from ._trainer import TrainingRun, seeded
    from .selection import paired_advantage

    kw = plan.train_kwargs
    val = kw["validation_data"]
    wv = None if val is None else val[2].double().cpu().numpy()
    if warm or est.init != "auto":
        return _single(est, plan, warm, "cart" if est.init == "cart" else "random")
    if val is None or (AUTO_INIT_Z > 0 and wv.sum() ** 2 <= AUTO_INIT_Z**2 * (wv**2).sum()):
        return _single(est, plan, warm, "random")
    Z, Y, w = plan.start_rows
    try:
        with models_held(2), seeded(kw["seed"]):
            module = est._build_module(Z.shape[1], n_outputs, plan.device)
    except MemoryLimitError as exc:
        warn(f"init='auto' trains two models side by side: {exc} Only the "
                      "random start was trained (init_='random'); set init='random' or "
                      "init='cart' to train one start.", UserWarning)
        return _single(est, plan, warm, "random")
    greedy_start(est, module, Z, Y, w, kw["seed"])
    module.to(plan.device)
    random = _Start(lambda: TrainingRun(plan.module, est._loss_fn, plan.train_data,
                                        **kw, track_rows=True))
    greedy = _Start(lambda: TrainingRun(module, est._loss_fn, plan.train_data, **{
        **kw, "keep_start": True, "name": f"{kw['name']} (greedy start)"}, track_rows=True))
    cycle = max(1, math.ceil(kw["max_iter"] / AUTO_CHECKS))
    why = None
    while random.active or greedy.active:
        random.step()
        greedy.step()
        if (greedy.active and greedy.run.epoch % cycle == 0 and random.error is None
                and random.run.best_row_losses is not None
                and greedy.run.best_row_losses is not None):
            _, z = paired_advantage(random.run.best_row_losses,
                                    greedy.run.best_row_losses, wv)
            if z <= AUTO_DROP_Z:  # not ahead: abandoned
                why = (f"the greedy start was abandoned at epoch {greedy.run.epoch} "
                       f"(paired statistic {z:.2f} <= {AUTO_DROP_Z})")
                greedy.finish(note=f"abandoned (not ahead at epoch {greedy.run.epoch})")
    if random.error is not None or greedy.error is not None:
        if random.error is not None and greedy.error is not None:
            raise random.error
        z = math.inf if random.error is not None else -math.inf
    elif why is None:
        _, z = paired_advantage(random.row_losses(val, est._loss_fn),
                                greedy.row_losses(val, est._loss_fn), wv)
    keep_greedy = z > AUTO_INIT_Z and (why is None or random.error is not None)
    est.init_ = "cart" if keep_greedy else "random"
    kept = greedy if keep_greedy else random
    if kept.message is not None:
        warn(kept.message, ConvergenceWarning)
    if est.verbose >= 2:  # with the per-epoch lines
        if why is None or random.error is not None:
            why = f"paired statistic {z:.2f}, threshold {AUTO_INIT_Z}"
        print(f"{type(est).__name__}: init='auto' kept the {est.init_} start ({why})")
    if keep_greedy:
        plan.module = module
    return kept.history
