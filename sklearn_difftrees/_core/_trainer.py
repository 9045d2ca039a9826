"""The torch training loop shared by every gradient-trained estimator.

Imported only inside ``fit`` (it imports torch at module level); fitted
estimators never touch it. The estimator validates data, builds its
``nn.Module`` under :func:`seeded`, and calls :func:`train`, which owns
batching, the optimizer, the learning-rate schedule, gradient clipping, early
stopping (restoring the best weights), divergence detection and progress
output, and returns a :class:`History`.
"""

import contextlib
import math
import threading
import time

import numpy as np
import torch

from ._monitor import EpochMonitor, History
from .batching import RowStream

__all__ = ["AUTO_CUDA_MIN_ROWS", "History", "PlainRMSprop", "TrainingRun", "cosine_lr",
           "eval_outputs", "make_optimizer", "resolve_device", "row_losses", "seeded",
           "to_tensor", "train"]


#: Fewest training rows for which ``device="auto"`` trains on a GPU. A step
#: of these small trees moves too little data to pay for its kernel launches:
#: on one H100 machine, default fits of 100,000 x 50 rows took DGT 103.8 s and
#: LatentTree 74.7 s on the GPU against 53.4 s and 37.6 s on one thread of the
#: same machine's CPU (ConvexPolytopeTree 119.7 s on the GPU); on an H200, at
#: 1,000,000 rows, DGT and TEL trained faster on the GPU than on one CPU core
#: (docs/benchmarks.md, section 13). So the GPU is taken from a million rows.
AUTO_CUDA_MIN_ROWS = 1_000_000


def resolve_device(device, n_rows=None, auto_cuda=True):
    """Map ``"auto"``/``"cpu"``/``"cuda"`` to a :class:`torch.device`.

    ``"auto"`` is CUDA when torch sees a CUDA device, ``auto_cuda`` is true
    (a family whose training the GPU does not speed up passes ``False``) and
    the fit has at least :data:`AUTO_CUDA_MIN_ROWS` training rows
    (``n_rows``; ``None``, e.g. a stream of updates, counts as few); else the
    CPU.
    """
    if device == "auto":
        big = auto_cuda and n_rows is not None and n_rows >= AUTO_CUDA_MIN_ROWS
        return torch.device("cuda" if big and torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but torch sees no CUDA device.")
    return torch.device(device)


#: Serializes :func:`seeded` blocks: torch's CPU generator is process-global, so
#: two fits in threads of one process (a forest under a threading or in-process
#: Dask backend) would otherwise draw from each other's seeds.
_GLOBAL_RNG_LOCK = threading.Lock()


@contextlib.contextmanager
def seeded(seed):
    """Run a block with torch's global RNG seeded, restoring the user's after.

    Thread-safe: the block holds a process-wide lock, so keep it short (module
    construction only).
    """
    with _GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def to_tensor(a, device, dtype=torch.float32):
    return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)


def make_optimizer(name, params, learning_rate, momentum, fused=False):
    """The ``torch.optim`` optimizer ``name``; see also :class:`PlainRMSprop`.
    ``fused``: Adam's fused kernel (one pass per parameter instead of about
    ten tensor operations; the same update up to float rounding, 0.16 ->
    0.07 ms per step on a depth-6 polytope tree's 32,130 parameters, one CPU
    thread), where this torch has it for the parameters' device (the CPU
    from torch 2.4); elsewhere the plain Adam."""
    params = list(params)
    if name == "adam":
        if fused:
            try:
                return torch.optim.Adam(params, lr=learning_rate, fused=True)
            except (RuntimeError, ValueError):  # no fused kernel for this device
                pass
        return torch.optim.Adam(params, lr=learning_rate)
    if name == "rmsprop":
        # eps as in the DGT authors' code; momentum as given.
        return torch.optim.RMSprop(params, lr=learning_rate, momentum=momentum, eps=1e-5)
    return torch.optim.SGD(params, lr=learning_rate, momentum=momentum)


def cosine_lr(base, step, cycle):
    """The learning rate of torch's ``CosineAnnealingWarmRestarts(T_0=cycle)``
    (``eta_min=0``, ``T_mult=1``) at its ``step``-th optimizer step (the same
    float operations)."""
    return base * (1 + math.cos(math.pi * (step % cycle) / cycle)) / 2


class PlainRMSprop:
    """``torch.optim.RMSprop`` (``alpha=0.99``, ``eps=1e-5`` as in
    :func:`make_optimizer`, ``momentum``) and ``clip_grad_norm_``, written out
    with the same tensor operations in the same order (so the same weights,
    bit for bit) but without ``torch.optim``'s per-step machinery (hooks,
    profiler records, grouping of the tensors by device and dtype), which on
    a default DGT step of 704 rows at depth 8 (three small parameters) cost
    more than the update itself: one step 1.22 -> 1.07 ms on one CPU thread.
    Constructing no ``torch.optim`` optimizer also spares the first fit of a
    process the import of ``torch._dynamo`` that ``torch.optim.Optimizer``
    triggers (about 1.5 s). The learning rate is set by the caller
    (:func:`cosine_lr`). The CPU training loop's default (:class:`TrainingRun`).
    """

    alpha, eps = 0.99, 1e-5

    def __init__(self, params, learning_rate, momentum):
        self.params, self.lr, self.momentum = params, learning_rate, momentum
        self.square_avg = [torch.zeros_like(p, memory_format=torch.preserve_format)
                           for p in params]
        self.buf = ([torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
                    if momentum > 0 else None)

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def clip(self, max_norm):
        """``torch.nn.utils.clip_grad_norm_(params, max_norm)`` (one device and
        dtype: its foreach branch)."""
        grads = [p.grad for p in self.params if p.grad is not None]
        if not grads:
            return
        if len({(g.device, g.dtype) for g in grads}) > 1:
            torch.nn.utils.clip_grad_norm_(self.params, max_norm)
            return
        total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        torch._foreach_mul_(grads, torch.clamp(float(max_norm) / (total + 1e-6), max=1.0))

    @torch.no_grad()
    def step(self):
        alpha, lr = self.alpha, self.lr
        for i, p in enumerate(self.params):
            grad = p.grad
            if grad is None:
                continue
            square_avg = self.square_avg[i]
            square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
            avg = square_avg.sqrt().add_(self.eps)
            if self.buf is not None:
                buf = self.buf[i]
                buf.mul_(self.momentum).addcdiv_(grad, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(grad, avg, value=-lr)


def _weighted_mean(values, weights):
    return (values * weights).sum() / weights.sum()


@torch.no_grad()
def eval_outputs(module, X, chunk=1024):
    """``module``'s outputs on ``X`` in eval mode (its mode restored after).

    Chunks of a training batch's size keep the temporaries of wide modules
    (a depth-8 polytope tree: 2,550 facets per row) in cache: 1024-row
    chunks evaluate such a tree twice as fast as 8192-row ones.
    """
    training = module.training
    module.eval()
    outputs = torch.cat([module(X[i : i + chunk]) for i in range(0, X.shape[0], chunk)])
    module.train(training)
    return outputs


@torch.no_grad()
def _evaluate(module, loss_fn, score_fn, X, Y, w, chunk=1024):
    """``(loss, score, per-row losses)`` of ``module`` on ``(X, Y, w)``."""
    outputs = eval_outputs(module, X, chunk)
    rows = loss_fn(outputs, Y)
    loss = float(_weighted_mean(rows, w))
    score = float(score_fn(outputs, Y, w)) if score_fn is not None else -loss
    return loss, score, rows


def row_losses(module, loss_fn, X, Y, chunk=1024):
    """Per-row losses (float64 numpy) of ``module`` on ``(X, Y)`` in eval mode:
    what a paired comparison of two trained modules on the same validation
    rows needs."""
    with torch.no_grad():
        return loss_fn(eval_outputs(module, X, chunk), Y).double().cpu().numpy()


def uninformed_loss(loss_fn, outputs, Y, w):
    """Loss of an all-zero output of ``outputs``' shape: uniform logits, the
    mean of a standardized target. The divergence reference of a start that
    is already a fitted model (``keep_start``), whose own loss can be near
    zero."""
    return float(_weighted_mean(loss_fn(torch.zeros_like(outputs), Y), w))


def start_reference(loss_fn, output_shape, validation_data, train_data):
    """The divergence reference of a start that is already a fitted model:
    the all-zero output's loss (:func:`uninformed_loss`) on the validation
    rows or on the training rows, whichever is larger. The training rows'
    is about 1 for a standardized target; the validation rows' alone can be
    far less: where rare extreme targets inflate the scale and none falls
    in a member's few validation rows (a forest regressor on targets with
    0.5% of 50-sd outliers raised "diverged" on every split)."""
    refs = []
    for X, Y, w in (validation_data, train_data):
        zeros = X.new_zeros((X.shape[0], *output_shape))
        refs.append(uninformed_loss(loss_fn, zeros, Y.to(X.device), w.to(X.device)))
    return max(refs)


def train(module, loss_fn, train_data, **kwargs):
    """Train ``module`` in place and return its :class:`History`.

    Parameters
    ----------
    module : torch.nn.Module
        Maps a float tensor batch ``X`` to outputs accepted by ``loss_fn``.
    loss_fn : callable
        ``loss_fn(outputs, Y) -> per-sample losses`` (reduction ``"none"``).
    train_data : tuple of tensors ``(X, Y, w)``
        ``w`` are per-sample weights, normalized by the caller.
    **kwargs
        The keyword arguments of :class:`TrainingRun`.

    Equivalent to stepping a :class:`TrainingRun` until it stops and calling
    its :meth:`~TrainingRun.finish`.
    """
    run = TrainingRun(module, loss_fn, train_data, **kwargs)
    while run.step():
        pass
    return run.finish()


class TrainingRun:
    """One training run of ``module``, stepped an epoch at a time.

    :func:`train` steps it to the end; a caller that trains several modules
    side by side (e.g. two starts of one tree, compared on their validation
    rows while they train) steps each in turn and may abandon a run.

    Parameters
    ----------
    module : torch.nn.Module
        Maps a float tensor batch ``X`` to outputs accepted by ``loss_fn``;
        trained in place.
    loss_fn : callable
        ``loss_fn(outputs, Y) -> per-sample losses`` (reduction ``"none"``).
    train_data, validation_data : tuple of tensors ``(X, Y, w)``
        ``w`` are per-sample weights, normalized by the caller.
    score_fn : callable, optional
        ``score_fn(outputs, Y, w) -> float`` (higher is better) recorded in
        ``validation_scores``. Early stopping monitors the validation *loss*.
    penalty_fn : callable, optional
        ``penalty_fn(module) -> scalar tensor or None`` added to every batch
        loss.
    batch_size : int
        Rows per optimizer step (resolved by the caller, see
        :func:`~sklearn_difftrees._core.batching.resolve_batching`).
    epoch_rows : int, optional
        Rows per epoch (default: all of them). Fewer rows make successive
        epochs slices of one shuffled stream of passes
        (:class:`~sklearn_difftrees._core.batching.RowStream`).
    keep_start : bool, default=False
        With validation data and ``early_stopping``: count the starting
        model as epoch 0, a candidate of early stopping (for a start that is
        already a good model, such as a greedy tree). Training must then beat
        its validation loss, and when no epoch does, the starting weights are
        returned: never worse on validation than where training started.
        Divergence is then measured against the loss of an all-zero output
        on the validation or the training rows, whichever is larger
        (:func:`start_reference`), not the start's, which can be near zero.
    loss_ceiling : float, optional
        With validation data: epochs whose training loss is above it are no
        candidates of early stopping and do not count towards the patience
        (:class:`~sklearn_difftrees._core._monitor.EpochMonitor`); e.g. the
        training loss of a depth-2 CART
        (:func:`~sklearn_difftrees._core.greedy.greedy_loss`).
    track_rows : bool, default=False
        Keep ``best_row_losses`` (for a caller comparing runs row by row).
    fused_optimizer : bool, default=False
        Adam's fused kernel (:func:`make_optimizer`): the same updates up to
        float rounding, for a caller whose steps are short enough that the
        optimizer's per-parameter operations show.

    Early stopping: with ``early_stopping`` the validation loss is monitored
    and the weights of the best epoch are restored at the end; otherwise the
    training loss is monitored and the last weights are kept (as in sklearn's
    MLP). Training stops when the monitored loss has not improved by ``tol``
    for ``n_iter_no_change`` consecutive epochs. Reaching ``max_iter`` first
    emits a :class:`~sklearn.exceptions.ConvergenceWarning`. A non-finite
    loss, or a monitored loss that stays far above the untrained model's
    (:class:`EpochMonitor`), raises :class:`FloatingPointError`.

    Attributes
    ----------
    epoch : int
        Epochs trained so far.
    best_row_losses : ndarray of float64 or None
        With validation data and ``track_rows=True``: the per-row validation
        losses of the best epoch so far (the weights :meth:`finish` restores
        under ``early_stopping``), as :func:`row_losses` computes them;
        ``None`` before the first candidate epoch.
    """

    def __init__(
        self,
        module,
        loss_fn,
        train_data,
        *,
        max_iter,
        batch_size,
        learning_rate,
        optimizer,
        momentum,
        lr_schedule,
        grad_clip,
        early_stopping,
        n_iter_no_change,
        tol,
        seed,
        epoch_rows=None,
        verbose=0,
        validation_data=None,
        score_fn=None,
        penalty_fn=None,
        keep_start=False,
        loss_ceiling=None,
        name="model",
        track_rows=False,
        fused_optimizer=False,
    ):
        self.module, self.loss_fn, self.train_data = module, loss_fn, train_data
        self.track_rows = track_rows
        self.validation_data, self.score_fn, self.penalty_fn = (validation_data, score_fn,
                                                                penalty_fn)
        self.max_iter, self.batch_size, self.grad_clip = max_iter, batch_size, grad_clip
        self.early_stopping, self.learning_rate, self.name = early_stopping, learning_rate, name
        n = train_data[0].shape[0]
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.rows = n if epoch_rows is None else min(int(epoch_rows), n)
        steps_per_epoch = max(1, math.ceil(self.rows / batch_size))
        # Cosine annealing with warm restarts: four cycles over max_iter epochs
        # (three restarts, as in the DGT paper's Appendix C).
        self.cycle = (max(1, math.ceil(max_iter / 4)) * steps_per_epoch
                      if lr_schedule == "cosine" else None)
        self.steps = 0
        self.scheduler = None
        if optimizer == "rmsprop" and train_data[0].device.type == "cpu":
            self.opt = PlainRMSprop(self.params, learning_rate, momentum)
        else:  # torch's (on a GPU its multi-tensor kernels)
            self.opt = make_optimizer(optimizer, self.params, learning_rate, momentum,
                                      fused=fused_optimizer)
            if self.cycle is not None:
                self.scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
                    self.opt, T_0=self.cycle)
        generator = torch.Generator().manual_seed(int(seed))
        self.stream = RowStream(n, self.rows, lambda: torch.randperm(n, generator=generator),
                                torch.cat)
        self.monitor = EpochMonitor(
            name=name, max_iter=max_iter, n_iter_no_change=n_iter_no_change, tol=tol,
            learning_rate=learning_rate, has_validation=validation_data is not None,
            verbose=verbose, loss_ceiling=loss_ceiling,
        )
        # The untrained model's loss: the reference that divergence is measured
        # against (the validation set when there is one, else <= 1024 rows).
        ref_data = validation_data or tuple(t[:1024] for t in train_data)
        ref_loss, ref_score, ref_rows = _evaluate(module, loss_fn, score_fn, *ref_data)
        if validation_data is None and penalty_fn is not None:
            with torch.no_grad():
                penalty = penalty_fn(module)
            ref_loss += 0.0 if penalty is None else float(penalty)
        self.best_state = self.best_row_losses = None
        self.epoch = 0
        self._stopped = max_iter < 1
        if keep_start and early_stopping and validation_data is not None:
            Xv, Yv, wv = validation_data  # = ref_data
            module.eval()
            with torch.no_grad():
                shape = module(Xv[:1]).shape[1:]
            zero = start_reference(loss_fn, shape, validation_data, train_data)
            self.monitor.start(ref_loss, ref_score, reference=zero)
            self._keep_best(ref_rows)
        else:
            self.monitor.reference(ref_loss)
        module.train()

    def _keep_best(self, rows):
        self.best_state = {k: v.detach().clone() for k, v in self.module.state_dict().items()}
        if self.track_rows:
            self.best_row_losses = rows.double().cpu().numpy()

    def step(self):
        """Train one epoch; return whether the run goes on (False once it
        stopped: patience exhausted or ``max_iter`` reached). A divergence
        raises :class:`FloatingPointError` and stops the run."""
        if self._stopped:
            return False
        try:
            return self._epoch()
        except FloatingPointError:
            self._stopped = True
            raise

    def _epoch(self):
        module, loss_fn, penalty_fn = self.module, self.loss_fn, self.penalty_fn
        X, Y, w = self.train_data
        self.epoch += 1
        tic = time.perf_counter()
        perm = self.stream.next().to(X.device)
        total = 0.0
        for start in range(0, self.rows, self.batch_size):
            idx = perm[start : start + self.batch_size]
            # index_select: the same rows as X[idx], without advanced
            # indexing's overhead (3-5x faster for a batch of a few hundred rows).
            xb, yb, wb = X.index_select(0, idx), Y.index_select(0, idx), w.index_select(0, idx)
            loss = (loss_fn(module(xb), yb) * wb).mean()
            penalty = penalty_fn(module) if penalty_fn is not None else None
            if penalty is not None:
                loss = loss + penalty
            value = float(loss.detach())  # one read of the loss per step
            if not math.isfinite(value):
                self.monitor.progress.close("diverged")  # end the bar before the error
                raise FloatingPointError(
                    f"{self.name} diverged: the training loss became {value} at epoch "
                    f"{self.epoch}. Try a smaller learning_rate (currently "
                    f"{self.learning_rate}) or enable grad_clip."
                )
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            plain = isinstance(self.opt, PlainRMSprop)
            if self.grad_clip is not None:
                if plain:
                    self.opt.clip(self.grad_clip)
                else:
                    torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip)
            self.opt.step()
            self.steps += 1
            if self.scheduler is not None:
                self.scheduler.step()
            elif plain and self.cycle is not None:
                self.opt.lr = cosine_lr(self.learning_rate, self.steps, self.cycle)
            total += value * idx.shape[0]
        validation = rows = None
        if self.validation_data is not None:
            *validation, rows = _evaluate(module, loss_fn, self.score_fn,
                                          *self.validation_data)
        improved = self.monitor.end_epoch(self.epoch, total / self.rows, tic, validation)
        if improved and validation is not None:
            self._keep_best(rows)
        self._stopped = self.monitor.should_stop or self.epoch >= self.max_iter
        return not self._stopped

    def finish(self, emit=True, note=None):
        """End the run: restore the best epoch's weights (``early_stopping``),
        put the module in eval mode and return the :class:`History`.

        The :class:`~sklearn.exceptions.ConvergenceWarning` of a run that
        reached ``max_iter`` is emitted (``emit``) and kept in
        ``convergence_message``; ``note`` ends the progress display (e.g. a
        run abandoned by its caller)."""
        self._stopped = True
        if self.early_stopping and self.best_state is not None:
            self.module.load_state_dict(self.best_state)
        history = self.monitor.finish(emit=emit, note=note)
        self.convergence_message = self.monitor.convergence_message
        self.module.eval()
        return history
