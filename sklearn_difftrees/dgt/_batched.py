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
from torch import nn

from .._core import topology
from .._core._batched_trainer import train_batched

__all__ = ["fit_batched"]


class _MaskedScaledSignSTE(torch.autograd.Function):
    """``_ScaledSignSTE`` of every member: ``sign(a) * mean|a|`` with the mean
    over the member's real rows (``mask``) and all its nodes; straight-through
    gradient ``1{|a| <= 1}``."""

    @staticmethod
    def forward(ctx, a, mask):
        ctx.save_for_backward(a)
        m = mask.to(a.dtype).unsqueeze(2)
        mag = (a.detach().abs() * m).sum(dim=(1, 2), keepdim=True)
        scale = mag / (m.sum(dim=(1, 2), keepdim=True).clamp(min=1) * a.shape[2])
        return torch.sign(a) * scale

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * (a.abs() <= 1).to(grad.dtype), None


def _hard_leaf(a, depth):
    """Leaf number each row of every member reaches (``(T, B)``)."""
    node = torch.zeros(a.shape[0], a.shape[1], 1, dtype=torch.long, device=a.device)
    for _ in range(depth):
        node = 2 * node + 1 + (a.gather(2, node) > 0).long()
    return node[..., 0] - topology.n_internal(depth)


def batched_forward(params, x, mask, *, n_layers, depth, S):
    """:meth:`DGTModule.forward` of ``T`` members: ``x`` is ``(T, B, d)``."""
    a = x
    for i in range(n_layers):
        weight, bias = params[f"layers.{i}.weight"], params[f"layers.{i}.bias"]
        a = torch.baddbmm(bias.unsqueeze(1), a, weight.transpose(1, 2))
    q = _MaskedScaledSignSTE.apply(a, mask) @ S.T
    soft = torch.softmax(q, dim=2)
    hard = nn.functional.one_hot(_hard_leaf(a, depth), soft.shape[2]).to(soft.dtype)
    return torch.bmm(hard + soft - soft.detach(), params["leaf"])


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
    forward = partial(batched_forward, n_layers=n_layers, depth=modules[0].depth,
                      S=modules[0].S)
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
        **{k: kwargs[k] for k in ("max_iter", "batch_size", "learning_rate", "optimizer",
                                  "momentum", "lr_schedule", "grad_clip", "early_stopping",
                                  "n_iter_no_change", "tol", "name")},
    )
    with torch.no_grad():
        for t, module in enumerate(modules):
            for name, p in module.named_parameters():
                p.copy_(params[name][t])
    return histories
