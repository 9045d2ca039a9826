"""The shared training loop run for several models at once (a bagged ensemble).

Imported only inside ``fit`` (it imports torch at module level). The models
share one architecture; their parameters are stacked along a leading *member*
dimension and a method supplies one batched forward pass (batched matmuls), so
that ``T`` members cost about one model's Python overhead and a few models'
arithmetic instead of ``T`` separate loops.

Every member is trained as :func:`~sklearn_difftrees._core._trainer.train`
trains one model, with its own data, validation set and seed: its own batch
order (a generator seeded with its seed), mini-batches of ``batch_size`` of
its own rows (the last one shorter), its own number of steps per epoch and
learning-rate schedule, the same optimizer update (written out here so that
its state and learning rate are per member), its own gradient-norm clipping,
its own :class:`~sklearn_difftrees._core._monitor.EpochMonitor` (patience,
best epoch, divergence, record) and its own best weights, restored at the end.
Members whose epoch has fewer steps, or that have stopped, are not updated
(their optimizer state neither); stopped members leave the batch, and members
whose epoch has ended leave the forward pass of the epoch's remaining steps.
"""

import functools
import math
import time

import numpy as np
import torch

from ._monitor import EpochMonitor
from ._trainer import cosine_lr as _cosine_lr
from ._trainer import start_reference
from .batching import MAX_BATCH, RowStream

__all__ = ["train_batched"]

_RMSPROP_ALPHA = 0.99  # torch.optim.RMSprop's default
_ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults
_ADAM_EPS = 1e-8


def _pad(tensors, device):
    """Stack tensors of different lengths (first axis) into one zero-padded tensor."""
    n_max = max(t.shape[0] for t in tensors)
    out = torch.zeros((len(tensors), n_max, *tensors[0].shape[1:]), dtype=tensors[0].dtype,
                      device=device)
    for i, t in enumerate(tensors):
        out[i, : t.shape[0]] = t
    return out


class _BatchedOptimizer:
    """RMSprop / Adam / SGD as torch implements them, with one learning rate
    and one step count per member and updates masked per member."""

    def __init__(self, name, params, momentum):
        self.name = name
        self.momentum = momentum
        self.state = {}
        for key, p in params.items():
            if name == "rmsprop":
                self.state[key] = {"square_avg": torch.zeros_like(p)}
                if momentum > 0:
                    self.state[key]["buf"] = torch.zeros_like(p)
            elif name == "adam":
                self.state[key] = {"exp_avg": torch.zeros_like(p),
                                   "exp_avg_sq": torch.zeros_like(p)}
            elif momentum > 0:
                self.state[key] = {"buf": torch.zeros_like(p)}
            else:
                self.state[key] = {}
        self.steps = np.zeros(next(iter(params.values())).shape[0], dtype=np.int64)

    def select(self, keep):
        """Keep the state of the members ``keep`` (indices into the current ones)."""
        for st in self.state.values():
            for k in st:
                st[k] = st[k][keep]
        self.steps = self.steps[keep.cpu().numpy()]

    @torch.no_grad()
    def step(self, params, lrs, stepping):
        """One update of the members where ``stepping`` (bool array) is set.

        The gradients are consumed (overwritten). When every member steps
        (all but the last step of an epoch) the update is in place; otherwise
        the members that do not step keep their parameters and state.
        """
        self.steps[stepping] += 1
        everyone = bool(stepping.all())
        dev = next(iter(params.values())).device
        mask = torch.as_tensor(stepping, device=dev)
        lr = torch.as_tensor(lrs, dtype=torch.float32, device=dev)
        if self.name == "adam":  # the bias corrections, once per step for every parameter
            b1, b2 = _ADAM_BETAS
            t = np.maximum(self.steps, 1).astype(np.float64)
            step_size = torch.as_tensor(1 / (1 - b1**t), dtype=torch.float32, device=dev)
            bc2 = torch.as_tensor(np.sqrt(1 - b2**t), dtype=torch.float32, device=dev)
        for key, p in params.items():
            g = p.grad
            shape = (-1,) + (1,) * (p.dim() - 1)
            m = mask.view(shape)
            old = {} if everyone else {k: v.clone() for k, v in self.state[key].items()}
            st = self.state[key]
            if self.name == "rmsprop":
                sq = st["square_avg"].mul_(_RMSPROP_ALPHA).addcmul_(g, g, value=1 - _RMSPROP_ALPHA)
                update = g.div_(sq.sqrt().add_(1e-5))  # eps as in make_optimizer
                if self.momentum > 0:
                    update = st["buf"].mul_(self.momentum).add_(update)
            elif self.name == "adam":
                st["exp_avg"].lerp_(g, 1 - b1)
                st["exp_avg_sq"].mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = st["exp_avg_sq"].sqrt().div_(bc2.view(shape)).add_(_ADAM_EPS)
                update = (st["exp_avg"] * step_size.view(shape)).div_(denom)
            else:
                update = g
                if self.momentum > 0:  # buf starts at 0: its first value is g
                    update = st["buf"].mul_(self.momentum).add_(g)
            update = update * lr.view(shape)
            if everyone:
                p.sub_(update)
            else:
                p.sub_(update * m)
                for k, v in old.items():
                    st[k].copy_(torch.where(m, st[k], v))


def _clip_per_member(params, max_norm):
    """``clip_grad_norm_`` of every member's gradients separately."""
    grads = [p.grad for p in params.values()]
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads], dim=1).norm(dim=1)
    coef = torch.clamp(max_norm / (norms + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef.view((-1,) + (1,) * (g.dim() - 1)))


def train_batched(
    forward,
    params,
    loss_fn,
    members,
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
    epoch_rows=None,
    verbose=0,
    score_fn=None,
    penalty_fn=None,
    keep_start=False,
    name="model",
    on_member_done=None,
    member_penalty_fn=None,
):
    """Train ``T`` members together; return their histories.

    Parameters
    ----------
    forward : callable
        ``forward(params, X, row_mask) -> outputs``: the method's batched
        forward pass. ``params`` maps names to tensors of shape ``(T', ...)``
        (the members still training), ``X`` has shape ``(T', B, n_features)``
        and ``row_mask`` (bool, ``(T', B)``) marks the real rows of each
        member's batch (the others are padding and must not influence the
        real rows' outputs). Returns ``(T', B, ...)`` outputs.
    params : dict of str to tensor
        The members' initial parameters stacked on a leading axis of size
        ``T``; trained in place (leaves with ``requires_grad``) and left at
        every member's kept weights (the best epoch's with early stopping).
    loss_fn, score_fn : callable
        As for :func:`~sklearn_difftrees._core._trainer.train`, applied to
        one member's outputs (``loss_fn`` also to a batch of all members'
        rows flattened together).
    members : list of dict
        One per member: ``train_data`` and ``validation_data`` (tensors
        ``(X, Y, w)``; ``validation_data`` may be None), ``seed`` and
        ``verbose``.
    penalty_fn : callable, optional
        ``penalty_fn(params) -> (T',) tensor or None``: each member's
        regularizer, added to its batch losses.
    member_penalty_fn : callable, optional
        ``member_penalty_fn(params, active, steps) -> (T',) tensor``: as
        ``penalty_fn`` (used instead of it when given), also told which
        members are still training (``active``, their indices into
        ``members``) and how many optimizer steps each has taken so far
        (``steps``), for regularizers that depend on the member (its number
        of rows) or on its step (a warm-up).
    on_member_done : callable, optional
        Called with a member's index and its history when it stops training.
    epoch_rows : int or array of int (one per member), optional
        As for :func:`~sklearn_difftrees._core._trainer.train`, per member:
        a member's epoch visits ``min(epoch_rows, its rows)`` rows.
    keep_start : bool, default=False
        As for :func:`~sklearn_difftrees._core._trainer.train`: every
        member's starting weights are its epoch-0 candidate of early stopping.

    The other parameters are those of
    :func:`~sklearn_difftrees._core._trainer.train`, shared by all members.

    Returns
    -------
    histories : list of History
    """
    T = len(members)
    device = next(iter(params.values())).device
    # The members' rows one after the other (not padded to the largest: the
    # members of one level of a polytope tree differ in size by orders of
    # magnitude); a batch gathers ``X[offset + row]``.
    X, Y, w = (torch.cat([m["train_data"][k] for m in members]).to(device) for k in range(3))
    n_rows = np.array([m["train_data"][0].shape[0] for m in members])
    offsets = np.concatenate([[0], np.cumsum(n_rows)[:-1]])
    n = n_rows  # rows per epoch, per member
    if epoch_rows is not None:
        n = np.minimum(n_rows, np.asarray(epoch_rows, dtype=np.int64))
    # A batch larger than every member's epoch is one step over all of it:
    # the buffers below are sized by the batch, so a huge int batch_size is
    # cut to the largest epoch (never below MAX_BATCH, the largest batch
    # "auto" picks: the padded width, and with it the rounding of the
    # batch sums, stays that of every batch up to there).
    batch_size = min(int(batch_size), max(int(n.max(initial=1)), MAX_BATCH))
    steps = np.maximum(1, -(-n // batch_size))
    cycles = np.maximum(1, math.ceil(max_iter / 4)) * steps
    streams = []
    for m, n_i, rows_i in zip(members, n_rows, n):
        gen = torch.Generator().manual_seed(int(m["seed"]))
        streams.append(RowStream(n_i, rows_i, functools.partial(
            torch.randperm, int(n_i), generator=gen), torch.cat))
    has_val = members[0]["validation_data"] is not None
    if has_val:
        val = [m["validation_data"] for m in members]
        Xv = _pad([v[0] for v in val], device)
        n_val = np.array([v[0].shape[0] for v in val])
        val_mask = torch.arange(Xv.shape[1], device=device)[None, :] < torch.as_tensor(
            n_val, device=device)[:, None]
    monitors = [
        EpochMonitor(name=name, max_iter=max_iter, n_iter_no_change=n_iter_no_change, tol=tol,
                     learning_rate=learning_rate, has_validation=has_val,
                     verbose=m.get("verbose", 0))
        for m in members
    ]
    histories = [None] * T

    full = {k: v.detach() for k, v in params.items()}  # every member, the results
    start = keep_start and early_stopping and has_val
    if has_val:  # the untrained members' validation losses: divergence references
        with torch.no_grad():
            out = forward(full, Xv, val_mask)
        for i, (Xi, Yi, wi) in enumerate(val):
            oi = out[i, : n_val[i]]
            loss_i = float((loss_fn(oi, Yi) * wi).sum() / wi.sum())
            if start:  # the starting weights are epoch 0's candidate
                score_i = float(score_fn(oi, Yi, wi)) if score_fn is not None else -loss_i
                monitors[i].start(loss_i, score_i, reference=start_reference(
                    loss_fn, oi.shape[1:], val[i], members[i]["train_data"]))
            else:
                monitors[i].reference(loss_i)
    best = {k: v.clone() for k, v in full.items()} if has_val else None
    improved_once = np.full(T, start, dtype=bool)
    active = np.arange(T)  # the members still training, positions in `full`
    work = {k: v.clone().requires_grad_(True) for k, v in full.items()}
    opt = _BatchedOptimizer(optimizer, work, momentum)

    for epoch in range(1, max_iter + 1):
        tic = time.perf_counter()
        A = active.size
        n_a, steps_a = n[active], steps[active]
        perms = torch.zeros((A, int(steps_a.max()) * batch_size), dtype=torch.long)
        for j, i in enumerate(active):
            perms[j, : n_a[j]] = streams[i].next() + int(offsets[i])
        perms = perms.to(device)
        total = torch.zeros(A, dtype=torch.float64, device=device)
        for s in range(int(steps_a.max())):
            counts = np.clip(n_a - s * batch_size, 0, batch_size)
            stepping = counts > 0
            # Only the members that step this time enter the forward pass
            # (the others' batches would be padding only): their parameters
            # are gathered (their gradients scatter back; the others' stay 0
            # and the optimizer skips them).
            sub = None if stepping.all() else np.flatnonzero(stepping)
            sub_t = None if sub is None else torch.as_tensor(sub, device=device)
            idx = perms[:, s * batch_size : (s + 1) * batch_size]
            if sub is not None:
                idx, counts = idx.index_select(0, sub_t), counts[sub]
            step_params = work if sub is None else {k: v.index_select(0, sub_t)
                                                   for k, v in work.items()}
            members_s = active if sub is None else active[sub]
            counts_t = torch.as_tensor(counts, device=device)
            mask = torch.arange(idx.shape[1], device=device)[None, :] < counts_t[:, None]
            # Padding gathers row 0 (masked); index_select as in _trainer.
            flat = idx.reshape(-1)
            xb, yb, wb = (t.index_select(0, flat).view(*idx.shape, *t.shape[1:])
                          for t in (X, Y, w))
            out = forward(step_params, xb, mask)
            per_row = loss_fn(out.flatten(0, 1), yb.flatten(0, 1)).view(idx.shape[0], -1)
            loss = (per_row * wb * mask).sum(1) / counts_t.clamp(min=1)
            if member_penalty_fn is not None:
                taken = opt.steps.copy() if sub is None else opt.steps[sub]
                penalty = member_penalty_fn(step_params, members_s, taken)
            else:
                penalty = penalty_fn(step_params) if penalty_fn is not None else None
            if penalty is not None:
                loss = loss + penalty
            bad = ~torch.isfinite(loss.detach())
            if bool(bad.any()):
                j = int(torch.nonzero(bad)[0, 0])
                value = float(loss.detach()[j])
                for monitor in monitors:
                    monitor.progress.close("diverged")
                raise FloatingPointError(
                    f"{name} diverged: the training loss became {value} at epoch "
                    f"{epoch} (member {int(members_s[j])}). Try a smaller learning_rate "
                    f"(currently {learning_rate}) or enable grad_clip."
                )
            for p in work.values():
                p.grad = None
            loss.sum().backward()
            if grad_clip is not None:
                _clip_per_member(work, grad_clip)
            k_steps = opt.steps  # steps taken so far by each active member
            if lr_schedule == "cosine":
                lrs = np.array([_cosine_lr(learning_rate, int(k), int(c))
                                for k, c in zip(k_steps, cycles[active])])
            else:
                lrs = np.full(A, float(learning_rate))
            opt.step(work, lrs, stepping)
            if sub is None:
                total += loss.detach().double() * counts_t
            else:
                total.index_add_(0, sub_t, loss.detach().double() * counts_t)
        total = (total.cpu().numpy() / n_a).tolist()

        validation = [None] * A
        if has_val:
            with torch.no_grad():
                out = forward(work, Xv[active], val_mask[active])
            for j, i in enumerate(active):
                Xi, Yi, wi = val[i]
                oi = out[j, : n_val[i]]
                loss_i = float((loss_fn(oi, Yi) * wi).sum() / wi.sum())
                score_i = float(score_fn(oi, Yi, wi)) if score_fn is not None else -loss_i
                validation[j] = (loss_i, score_i)

        done = []
        for j, i in enumerate(active):
            if monitors[i].end_epoch(epoch, total[j], tic, validation[j]) and has_val:
                improved_once[i] = True
                for k in best:
                    best[k][i] = work[k][j].detach()
            if monitors[i].should_stop or epoch == max_iter:
                done.append(j)
        if done:
            with torch.no_grad():
                for k in full:
                    full[k][torch.as_tensor(active, device=device)] = work[k].detach()
            for j in done:
                i = active[j]
                histories[i] = monitors[i].finish()
                if on_member_done is not None:
                    on_member_done(int(i), histories[i])
            keep = np.setdiff1d(np.arange(A), done)
            active = active[keep]
            if active.size == 0:
                break
            keep_t = torch.as_tensor(keep, device=device)
            work = {k: v.detach()[keep_t].clone().requires_grad_(True) for k, v in work.items()}
            opt.select(keep_t)

    with torch.no_grad():
        for k, p in params.items():
            result = full[k].clone()
            if early_stopping and has_val:
                chosen = torch.as_tensor(improved_once, device=device)
                chosen = chosen.view((-1,) + (1,) * (result.dim() - 1))
                result = torch.where(chosen, best[k], result)
            p.copy_(result)
    return histories
