"""Several DGT trees trained as one batched model (imported only while training).

The members of a DGT forest share one architecture. Their
:class:`~sklearn_difftrees.dgt._module.DGTModule` parameters are stacked on a
leading member axis and :func:`batched_forward` computes the forward pass of
:class:`DGTModule` for all of them with batched matmuls; the shared loop
:func:`~sklearn_difftrees._core._batched_trainer.train_batched` gives each
member its own batches, optimizer state, clipping and early stopping. The
modules are built, seeded, by every member's own ``_fit_setup`` and the
trained weights go back into them before every member's ``_fit_complete``, so
a member is the tree its own ``fit`` would train (up to float rounding).
"""

from functools import partial

import torch

from .._core._batched_trainer import train_batched
from ._module import Route, route_forward

__all__ = ["fit_batched"]


def _masked_scale(magnitude, mask, n_internal):
    """The decisions' scale of every member, ``(T, 1, 1)``: the module's mean
    of ``|a|`` over the member's real rows (``mask``) and all its nodes,
    from the rows' sums of ``|a|`` (``magnitude``, ``(T, B)``)."""
    m = mask.to(magnitude.dtype)
    total = (magnitude * m).sum(dim=1)
    return (total / (m.sum(dim=1).clamp(min=1) * n_internal)).view(-1, 1, 1)


def _node_scores(params, x, n_layers):
    """``a = W_L (... (W_1 x + b_1) ...) + b_L`` of every member, ``(T, B, n_internal)``.

    The layers are linear, so the scores are also ``(W_L ... W_1) x + b``
    with the product taken first, right to left (``W_1`` is thin: ``d``
    columns). That costs ``sum_l h_l h_(l-1) d`` multiply-adds instead of
    ``B sum_l h_l h_(l-1)`` for the rows one layer after the other, so it is
    used when it is cheaper (fewer features than rows, as at the default
    widths: about 6 times fewer operations at depth 6). Same function and
    gradients; only the float rounding differs.
    """
    weights = [params[f"layers.{i}.weight"] for i in range(n_layers)]
    biases = [params[f"layers.{i}.bias"] for i in range(n_layers)]
    n_rows, d = x.shape[1], x.shape[2]
    rowwise = n_rows * sum(w.shape[1] * w.shape[2] for w in weights)
    product = sum(w.shape[1] * w.shape[2] for w in weights[1:]) * d
    product += n_rows * d * weights[-1].shape[1]
    if n_layers == 1 or rowwise <= product:
        a = x
        for weight, bias in zip(weights, biases):
            a = torch.baddbmm(bias.unsqueeze(1), a, weight.transpose(1, 2))
        return a
    W, b = weights[0], biases[0].unsqueeze(2)
    for weight, bias in zip(weights[1:], biases[1:]):
        W = torch.bmm(weight, W)
        b = torch.baddbmm(bias.unsqueeze(2), weight, b)
    return torch.baddbmm(b.transpose(1, 2), x, W.transpose(1, 2))


def batched_forward(params, x, mask, *, n_layers, depth):
    """:meth:`DGTModule.forward` of ``T`` members: ``x`` is ``(T, B, d)``.

    The decisions, path scores, softmax and leaf product are the module's
    fused :class:`~sklearn_difftrees.dgt._module.Route`, with the scale of
    every member taken over its real rows (``mask``).
    """
    a = _node_scores(params, x, n_layers)
    hard, magnitude = route_forward(a.detach(), depth)
    return Route.apply(a, _masked_scale(magnitude, mask, a.shape[2]), params["leaf"], hard,
                       depth)


def batched_penalty(params, *, n_layers, alpha_l1, alpha_l2):
    """``_BaseDGT._penalty`` of every member, shape ``(T,)`` (None without one)."""
    if not (alpha_l1 or alpha_l2):
        return None
    total = 0.0
    for i in range(n_layers):
        weight = params[f"layers.{i}.weight"]
        if alpha_l1:
            total = total + alpha_l1 * weight.abs().sum(dim=(1, 2))
        if alpha_l2:
            total = total + alpha_l2 * (weight**2).sum(dim=(1, 2))
    return total


def fit_batched(members, plans, *, on_member_done=None):
    """Train the modules of ``plans`` (one per member, from ``_fit_setup``)
    together and return the members' histories.

    The members share their parameters (those of one forest); their modules
    must have the same shapes.
    """
    first = members[0]
    modules = [plan.module for plan in plans]
    names = [name for name, _ in modules[0].named_parameters()]
    params = {name: torch.stack([dict(m.named_parameters())[name].detach() for m in modules])
              for name in names}
    n_layers = len(modules[0].layers)
    forward = partial(batched_forward, n_layers=n_layers, depth=modules[0].depth)
    penalty = partial(batched_penalty, n_layers=n_layers, alpha_l1=first.alpha_l1,
                      alpha_l2=first.alpha_l2)
    kwargs = plans[0].train_kwargs
    histories = train_batched(
        forward,
        params,
        first._loss_fn,
        [
            {"train_data": plan.train_data,
             "validation_data": plan.train_kwargs["validation_data"],
             "seed": plan.train_kwargs["seed"], "verbose": plan.train_kwargs["verbose"]}
            for plan in plans
        ],
        score_fn=kwargs["score_fn"],
        penalty_fn=penalty if (first.alpha_l1 or first.alpha_l2) else None,
        on_member_done=on_member_done,
        keep_start=all(plan.train_kwargs["keep_start"] for plan in plans),
        **{k: kwargs[k] for k in ("max_iter", "batch_size", "epoch_rows", "learning_rate",
                                  "optimizer", "momentum", "lr_schedule", "grad_clip",
                                  "early_stopping", "n_iter_no_change", "tol", "name")},
    )
    with torch.no_grad():
        for t, module in enumerate(modules):
            for name, p in module.named_parameters():
                p.copy_(params[name][t])
    return histories
