"""Torch-free bookkeeping of a training loop, shared by every epoch loop.

:class:`EpochMonitor` owns what does not depend on how a model is updated:
the training record (:class:`History`, in sklearn MLP's vocabulary), the
patience counter of early stopping, which epoch is the best, divergence
(:class:`FloatingPointError`: a non-finite loss, or a loss that stays far
above its starting value), the progress display
(:class:`~sklearn_difftrees._core._progress.Progress`: a bar or lines, by
``verbose``) and the :class:`~sklearn.exceptions.ConvergenceWarning` when the
budget runs out.
The torch loop (:func:`~sklearn_difftrees._core._trainer.train`) and the
numpy loop of the non-greedy trees (which never imports torch) both use it.
"""

import math
import time
from dataclasses import dataclass, field

from sklearn.exceptions import ConvergenceWarning

from ._progress import Progress
from ._warn import warn

__all__ = ["EpochMonitor", "History"]


@dataclass
class History:
    """What one training run recorded (sklearn MLP's vocabulary)."""

    n_iter: int = 0
    loss_curve: list = field(default_factory=list)
    validation_loss_curve: list = field(default_factory=list)
    validation_scores: list = field(default_factory=list)
    epoch_seconds: list = field(default_factory=list)
    best_loss: float = math.inf
    best_validation_score: float = -math.inf
    best_epoch: int = 0
    stopped_early: bool = False


class EpochMonitor:
    """Early stopping and the training record of one run.

    The monitored quantity is the validation loss when the loop has
    validation data, else the training loss. Training should stop when it
    has not improved by ``tol`` for ``n_iter_no_change`` consecutive epochs.

    Parameters
    ----------
    name : str
        Estimator name used in messages.
    max_iter, n_iter_no_change, tol : int, int, float
        The budget and the stopping rule.
    learning_rate : float
        Quoted in the divergence message.
    has_validation : bool
        Whether :meth:`end_epoch` receives validation results.
    verbose : int
        ``1``: a progress bar over the epochs with the time left (one line
        per epoch without tqdm); ``>= 2``: also the losses and validation
        score of every epoch (see :mod:`~sklearn_difftrees._core._progress`).
    loss_name : str, default="loss"
        What the training loss is called in messages (e.g. "bound").
    loss_ceiling : float, optional
        With validation data: an epoch whose training loss is above it is
        no candidate of early stopping (a model that still fits its training
        rows worse than a reference, e.g. a depth-2 CART, is not kept
        because a small validation set happened to like it), and counts
        towards the patience only once an earlier epoch got below it. When
        no epoch gets below it, the run keeps its last weights (and its
        ``ConvergenceWarning`` says so).
    """

    def __init__(self, *, name, max_iter, n_iter_no_change, tol, learning_rate,
                 has_validation, verbose=0, loss_name="loss", loss_ceiling=None):
        self.name = name
        self.loss_ceiling = loss_ceiling if has_validation else None
        self.max_iter = max_iter
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.learning_rate = learning_rate
        self.has_validation = has_validation
        self.verbose = verbose
        self.loss_name = loss_name
        self.history = History()
        self._best = math.inf
        self._no_improvement = 0
        self.progress = Progress(max_iter, desc=name, unit="epoch", verbose=verbose)
        self._reference = None
        self._diverging = 0
        self._below_ceiling = False  # whether an epoch's training loss got below loss_ceiling

    def _check_finite(self, value, what, epoch):
        if not math.isfinite(value):
            self.progress.close("diverged")
            raise FloatingPointError(
                f"{self.name} diverged: the {what} became {value} at epoch {epoch}. "
                f"Try a smaller learning_rate (currently {self.learning_rate})."
            )

    def start(self, val_loss, val_score, reference=None):
        """Count the starting model as epoch 0 (it is kept if nothing beats it).

        ``reference`` is the divergence reference (default ``val_loss``). A
        start that is already a fitted model (a greedy tree) can have a
        validation loss near zero, far below an untrained model's; the
        caller then passes the loss of an uninformed output, so that
        training which passes through ordinary losses is not taken for
        divergence.
        """
        self._check_finite(val_loss, "validation loss", 0)
        self._best = val_loss
        self._reference = val_loss if reference is None else max(val_loss, reference)
        self.history.best_validation_score = val_score

    def reference(self, loss):
        """The monitored loss of the untrained model (the divergence reference).

        Without it, the first epoch's value is the reference.
        """
        self._check_finite(loss, self.loss_name, 0)
        self._reference = loss

    #: A monitored loss above ``DIVERGENCE_FACTOR * |reference| + 1`` counts as
    #: diverging (losses are O(1) at the start: standardized targets, cross
    #: entropy of near-uniform probabilities).
    DIVERGENCE_FACTOR = 10.0
    #: Consecutive diverging epochs that raise (fewer when max_iter is smaller).
    DIVERGENCE_PATIENCE = 3

    def _check_divergence(self, monitored, epoch):
        """Raise when the loss stays far above where training started.

        A NaN loss is not the only sign of a learning rate that is too large:
        the loss can also explode while staying finite, and the model left
        behind predicts finite garbage. Several consecutive epochs far above
        the starting loss raise :class:`FloatingPointError`.
        """
        if self._reference is None:
            self._reference = monitored
            return
        if monitored > self.DIVERGENCE_FACTOR * abs(self._reference) + 1.0:
            self._diverging += 1
        else:
            self._diverging = 0
        if self._diverging >= min(self.DIVERGENCE_PATIENCE, self.max_iter):
            watched = "validation loss" if self.has_validation else self.loss_name
            self.progress.close("diverged")
            raise FloatingPointError(
                f"{self.name} diverged: the {watched} "
                f"stayed above {self.DIVERGENCE_FACTOR:g} times its starting value "
                f"({self._reference:.4g}) for {self._diverging} epoch(s), reaching "
                f"{monitored:.4g} at epoch {epoch}. Try a smaller learning_rate "
                f"(currently {self.learning_rate})."
            )

    def end_epoch(self, epoch, loss, tic, validation=None, note=""):
        """Record epoch ``epoch``; return True if it is the best so far.

        ``loss`` is the epoch's mean training loss, ``tic`` the
        ``time.perf_counter()`` at its start, ``validation`` a ``(loss,
        score)`` pair when the loop has validation data. The caller saves its
        weights when this returns True and the loop has validation data.
        """
        h = self.history
        h.epoch_seconds.append(time.perf_counter() - tic)
        h.loss_curve.append(loss)
        h.n_iter = epoch
        h.best_loss = min(h.best_loss, loss)
        monitored = loss
        info = {self.loss_name: loss}
        if validation is not None:
            val_loss, val_score = validation
            self._check_finite(val_loss, "validation loss", epoch)
            h.validation_loss_curve.append(val_loss)
            h.validation_scores.append(val_score)
            monitored = val_loss
            info.update(val_loss=val_loss, val_score=val_score)
        self._check_finite(monitored, "monitored loss", epoch)
        self._check_divergence(monitored, epoch)
        if self.loss_ceiling is not None and loss > self.loss_ceiling:
            # Not a candidate: fits its rows worse than the reference. Once an
            # epoch has got below it, such an epoch counts towards the patience
            # (it improved nothing): a loss that hovers at the reference (features
            # with no signal) otherwise ran every epoch to max_iter.
            if self._below_ceiling:
                self._no_improvement += 1
            self.progress.update(info=info, note=note, step_seconds=h.epoch_seconds[-1])
            return False
        self._below_ceiling = True
        if monitored < self._best - self.tol:
            self._no_improvement = 0
        else:
            self._no_improvement += 1
        improved = monitored < self._best
        if improved:
            self._best = monitored
            h.best_epoch = epoch
            if validation is not None:
                h.best_validation_score = validation[1]
        self.progress.update(info=info, note=note, step_seconds=h.epoch_seconds[-1])
        return improved

    @property
    def should_stop(self):
        """Whether the patience is exhausted (then the run stopped early)."""
        if self._no_improvement >= self.n_iter_no_change:
            self.history.stopped_early = True
        return self.history.stopped_early

    def finish(self, emit=True, note=None):
        """Close the progress display (with ``note``, if given); when the
        budget ran out before the stopping rule fired, set
        ``convergence_message`` and (``emit``) warn with it."""
        h = self.history
        if note is None and h.stopped_early:
            note = f"stopped early (best epoch {h.best_epoch})"
        self.progress.close(note)
        self.convergence_message = None
        if self.history.n_iter > 0 and not self.history.stopped_early:
            watched = "validation loss" if self.has_validation else f"training {self.loss_name}"
            self.convergence_message = (
                f"{self.name}: reached max_iter={self.max_iter} epochs before the "
                f"{watched} stopped improving; consider increasing max_iter.")
            if self.loss_ceiling is not None and not self._below_ceiling:
                # No epoch was a candidate, so the patience never ran: say so,
                # rather than that the validation loss was still improving.
                self.convergence_message = (
                    f"{self.name}: in max_iter={self.max_iter} epochs its training "
                    f"{self.loss_name} never fell below the reference's "
                    f"({self.loss_ceiling:.4g}, a depth-2 CART's; best "
                    f"{h.best_loss:.4g}), so no epoch counted for early stopping and the "
                    "last weights are kept. The features may carry little signal; a "
                    "larger max_iter helps only if the loss was still falling.")
            if emit:
                warn(self.convergence_message, ConvergenceWarning)
        return self.history
