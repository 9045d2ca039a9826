"""DGT's torch module (imported only while training).

Forward pass (Algorithm 3 with the BackProp of Algorithm 2 of the DGT paper):

1. node scores ``a = W_L ... W_1 x + biases`` (linear over-parameterization, no
   activations, so the composition is one oblique split per node);
2. hard decisions ``s = sign(a) * mean|a|`` (the per-batch scale of the
   authors' code) whose straight-through gradient is ``1{|a| <= 1}``;
3. sum-form path scores ``q_l = sum_i S(i, l) s_i`` (eq. 4 without the outer
   step; ``S`` is :func:`sklearn_difftrees._core.topology.path_matrix`);
4. the output is the parameter ``theta_l`` of the hard leaf (the path chosen by
   the shared routing rule, right iff ``a > 0``); its gradient goes to the
   leaf parameters through that hard one-hot (Remark 2) and to the node
   parameters through ``softmax(q)`` (Algorithm 2, line 13).

Steps 3 and 4 are one autograd function, :class:`Route`, shared with the
forests' batched members (``_batched.py``): ``S`` is never formed (the path
scores are summed level by level, about ``2 * n_leaves`` additions per row
instead of ``n_leaves * n_internal`` multiply-adds), and the softmax is
computed in the backward pass only (the forward value is ``theta`` of the
hard leaf). At depth 8 that makes a forward and backward pass about 1.45x
faster than the dense expression, with the same gradients up to rounding.
"""

import torch
from torch import nn

from .._core import topology


class _ScaledSignSTE(torch.autograd.Function):
    """``sign(a) * mean(|a|)`` forward, ``1{|a| <= 1}`` straight-through backward.

    The scale is the mean over the whole batch, or over each row's own node
    scores when ``per_row`` (the bandit learners, whose rounds are mini-batches
    of one sample processed several at a time).
    """

    @staticmethod
    def forward(ctx, a, per_row=False):
        ctx.save_for_backward(a)
        mag = a.detach().abs()
        scale = mag.mean(dim=1, keepdim=True) if per_row else mag.mean()
        return torch.sign(a) * scale

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * (a.abs() <= 1).to(grad.dtype), None


def hard_leaf(a, depth):
    """Leaf number (0 .. 2**depth - 1) each row of node scores ``a`` reaches
    (``a``: ``(..., n_internal)``; returns its leading shape)."""
    node = torch.zeros(*a.shape[:-1], 1, dtype=torch.long, device=a.device)
    for _ in range(depth):
        node = 2 * node + 1 + (a.gather(-1, node) > 0).long()
    return node[..., 0] - topology.n_internal(depth)


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


class Route(torch.autograd.Function):
    """The tree's output from the decisions ``s``, fused:
    ``(hard + softmax(s @ S.T) - softmax(...).detach()) @ leaf`` for ``T``
    trees at once (``s``: ``(T, B, n_internal)``, ``leaf``: ``(T, n_leaves,
    k)``, ``hard``: ``(T, B)``; a single tree is ``T = 1``).

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


class DGTModule(nn.Module):
    """Over-parameterized DGT tree of ``depth`` with ``n_outputs`` per leaf."""

    def __init__(self, n_features, depth, n_outputs, hidden_sizes=(), row_scale=False):
        super().__init__()
        self.depth = depth
        self.row_scale = row_scale
        dims = [n_features, *hidden_sizes, topology.n_internal(depth)]
        self.layers = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))
        for layer in self.layers:
            nn.init.zeros_(layer.bias)
        self.leaf = nn.Parameter(0.01 * torch.randn(topology.n_leaves(depth), n_outputs))

    def node_scores(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def forward(self, x):
        return self.forward_with_leaf(x)[0]

    def forward_with_leaf(self, x):
        """``(output, leaf)``: the forward output and the hard leaf of every row."""
        a = self.node_scores(x)
        s = _ScaledSignSTE.apply(a, self.row_scale)
        leaf = hard_leaf(a, self.depth)
        out = Route.apply(s.unsqueeze(0), self.leaf.unsqueeze(0), leaf.unsqueeze(0), self.depth)
        return out[0], leaf

    @torch.no_grad()
    def collapse(self):
        """One float64 oblique split per node: ``(W, b)`` with ``a = W x + b``."""
        W = self.layers[0].weight.detach().cpu().double()
        b = self.layers[0].bias.detach().cpu().double()
        for layer in self.layers[1:]:
            Wl = layer.weight.detach().cpu().double()
            W = Wl @ W
            b = Wl @ b + layer.bias.detach().cpu().double()
        return W.numpy(), b.numpy()
