"""DGT's torch module (imported only while training).

Forward pass (Algorithm 3 with the BackProp of Algorithm 2 of the DGT paper):

1. node scores ``a = W_L ... W_1 x + biases`` (linear over-parameterization, no
   activations, so the composition is one oblique split per node);
2. hard decisions ``s = sign(a) * mean|a|`` (the per-batch scale of the
   authors' code) whose straight-through gradient is ``1{|a| <= 1}``;
3. sum-form path scores ``q_l = sum_i S(i, l) s_i`` (eq. 4 without the outer
   step; ``S`` from :func:`sklearn_difftrees._core.topology.path_matrix`);
4. the output is the parameter ``theta_l`` of the hard leaf (the path chosen by
   the shared routing rule, right iff ``a > 0``); its gradient goes to the
   leaf parameters through that hard one-hot (Remark 2) and to the node
   parameters through ``softmax(q)`` (Algorithm 2, line 13).
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
    """Leaf number (0 .. 2**depth - 1) each row of node scores ``a`` reaches."""
    node = torch.zeros(a.shape[0], 1, dtype=torch.long, device=a.device)
    for _ in range(depth):
        node = 2 * node + 1 + (a.gather(1, node) > 0).long()
    return node[:, 0] - topology.n_internal(depth)


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
        self.register_buffer("S", torch.tensor(topology.path_matrix(depth), dtype=torch.float32))

    def node_scores(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def forward(self, x):
        return self.forward_with_leaf(x)[0]

    def forward_with_leaf(self, x):
        """``(output, leaf)``: the forward output and the hard leaf of every row."""
        a = self.node_scores(x)
        q = _ScaledSignSTE.apply(a, self.row_scale) @ self.S.T
        soft = torch.softmax(q, dim=1)
        leaf = hard_leaf(a, self.depth)
        hard = nn.functional.one_hot(leaf, soft.shape[1]).to(soft.dtype)
        return (hard + soft - soft.detach()) @ self.leaf, leaf

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
