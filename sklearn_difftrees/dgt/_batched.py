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


def _path_scores(s, depth):
    """``s @ S.T`` (``S``: :func:`~sklearn_difftrees._core.topology.path_matrix`)
    level by level: a child's score is its parent's minus (left child) or plus
    (right child) the parent's decision.

    ``s`` is ``(T, B, n_internal)`` in heap order; returns ``(T, B, n_leaves)``,
    leaves left to right: about ``2 * n_leaves`` additions per row instead of
    the ``n_leaves * n_internal`` multiply-adds of the dense product; the same
    sums of ``depth`` terms, added in another order.
    """
    q = torch.zeros_like(s[..., :1])
    for level in range(depth):
        nodes = s[..., 2**level - 1 : 2 ** (level + 1) - 1]
        nxt = torch.empty(*q.shape[:-1], 2 * q.shape[-1], dtype=q.dtype, device=q.device)
        torch.sub(q, nodes, out=nxt[..., 0::2])
        torch.add(q, nodes, out=nxt[..., 1::2])
        q = nxt
    return q


def _path_scores_transpose(dq, depth):
    """``dq @ S``: each internal node gets the sum over the leaves of its right
    subtree minus the sum over its left subtree (pairwise, bottom up)."""
    out = torch.empty(*dq.shape[:-1], topology.n_internal(depth), dtype=dq.dtype,
                      device=dq.device)
    total = dq
    for level in range(depth - 1, -1, -1):
        left, right = total[..., 0::2], total[..., 1::2]
        torch.sub(right, left, out=out[..., 2**level - 1 : 2 ** (level + 1) - 1])
        total = left + right
    return out


class _Route(torch.autograd.Function):
    """The output of :meth:`DGTModule.forward` from the decisions ``s``:
    ``(hard + softmax(s @ S.T) - softmax(...).detach()) @ leaf``, fused.

    Forward, its value is the hard leaf's parameters (``leaf`` gathered at
    ``hard``: the soft terms cancel). Backward, the leaf parameters get the
    gradient of their rows (through the hard one-hot) and ``s`` gets the
    softmax's gradient carried back through ``S``: the gradients autograd
    computes through the unfused expression, up to rounding (there
    ``(1 + soft) - soft`` is 1 only up to rounding). The softmax is computed
    in the backward pass only, and ``S`` is never formed (see
    :func:`_path_scores`).
    """

    @staticmethod
    def forward(ctx, s, leaf, hard, depth):
        ctx.save_for_backward(s, leaf, hard)
        ctx.depth = depth
        index = hard.unsqueeze(2).expand(-1, -1, leaf.shape[2])
        return leaf.gather(1, index)

    @staticmethod
    def backward(ctx, grad):
        s, leaf, hard = ctx.saved_tensors
        grad_s = grad_leaf = None
        if ctx.needs_input_grad[1]:
            grad_leaf = torch.zeros_like(leaf)
            grad_leaf.scatter_add_(1, hard.unsqueeze(2).expand(-1, -1, leaf.shape[2]), grad)
        if ctx.needs_input_grad[0]:
            soft = torch.softmax(_path_scores(s, ctx.depth), dim=2)
            g_soft = torch.bmm(grad, leaf.transpose(1, 2))
            dq = soft * (g_soft - (soft * g_soft).sum(dim=2, keepdim=True))
            grad_s = _path_scores_transpose(dq, ctx.depth)
        return grad_s, grad_leaf, None, None


def batched_forward(params, x, mask, *, n_layers, depth):
    """:meth:`DGTModule.forward` of ``T`` members: ``x`` is ``(T, B, d)``.

    The path scores, softmax and leaf product are fused (:class:`_Route`):
    the same function and gradients as the module's, in fewer operations.
    """
    a = _node_scores(params, x, n_layers)
    s = _MaskedScaledSignSTE.apply(a, mask)
    return _Route.apply(s, params["leaf"], _hard_leaf(a, depth), depth)


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
