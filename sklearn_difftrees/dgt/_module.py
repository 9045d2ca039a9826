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

Steps 2 to 4 are one autograd function, :class:`Route`, shared with the
forests' batched members (``_batched.py``). Its forward pass only gathers
``theta`` at the hard leaf: ``s``, ``q`` and the softmax matter only to the
gradient, and are computed in the backward pass. On CPU tensors both passes
are compiled kernels (``cython_src/_dgt.pyx``, one pass per row): the hard
leaf and the row's sum of ``|a|`` forward; backward, the softmax of ``q`` as
the product of one sigmoid per level along each path (the sum of
``exp(q)`` factors level by level, so no exponential per leaf), its Jacobian
and the sums over subtrees. Elsewhere (CUDA) the same steps are torch
operations: ``q`` is the product ``s @ S.T`` when that product is small
(:data:`DENSE_MAX_WORK`: at depth <= 6, any batch of up to 1024 rows) and is
otherwise summed level by level without the product's multiplications by 0
(:func:`path_scores`). The gradients are those autograd computes through
``(hard + softmax(q) - softmax(q).detach()) @ theta``, up to rounding.
"""

from functools import lru_cache

import numpy as np
import torch
from torch import nn

from .._core import topology
from .._core._memory import check_memory
from .._kernels._dgt import _route_backward, _route_forward

#: Most multiply-adds (``rows * n_internal * n_leaves``) for which the path
#: scores and their transpose are dense products with ``S``; beyond, they are
#: summed level by level (``S`` has ``depth`` non-zero entries per leaf, so
#: most of the product's multiply-adds are with 0, but it is one operation
#: instead of a few per level). Measured on one CPU thread, both directions
#: together: the product is 4.7x / 1.6x faster at depth 6 with 128 / 704
#: rows, 2x faster / 1.4x slower at depth 7, 1.4x / 3.5x slower at depth 8.
#: The threshold takes the product up to 1040 rows at depth 6, 258 at depth
#: 7 and 64 at depth 8.
DENSE_MAX_WORK = 2**22


@lru_cache(maxsize=16)
def _path_matrix(depth, dtype, device):
    """:func:`~sklearn_difftrees._core.topology.path_matrix` as a tensor (cached)."""
    return torch.tensor(topology.path_matrix(depth), dtype=dtype, device=device)


def _dense(x, depth):
    """Whether the product of ``x``'s rows (its last axis) with ``S`` costs at
    most :data:`DENSE_MAX_WORK` multiply-adds."""
    rows = x.numel() // max(x.shape[-1], 1)
    return rows * topology.n_internal(depth) * topology.n_leaves(depth) <= DENSE_MAX_WORK


def hard_leaf(a, depth):
    """Leaf number (0 .. 2**depth - 1) each row of node scores ``a`` reaches
    (``a``: ``(..., n_internal)`` in heap order; returns its leading shape).

    Level by level, the position ``p`` among the level's nodes becomes
    ``2 p + 1{a > 0}`` (right iff ``a > 0``); at the bottom it is the leaf.
    """
    p = torch.zeros(*a.shape[:-1], 1, dtype=torch.long, device=a.device)
    for level in range(depth):
        nodes = a[..., 2**level - 1 : 2 ** (level + 1) - 1]
        p = torch.add(nodes.gather(-1, p) > 0, p, alpha=2)
    return p[..., 0]


def _compiled(a):
    """Whether the compiled route kernels take ``a`` (CPU, float32 / float64)."""
    return a.device.type == "cpu" and a.dtype in (torch.float32, torch.float64)


#: Fewest rows per OpenMP thread of the route kernels (a bandit's one-row
#: rounds would otherwise wake every thread for a few microseconds of work).
MIN_ROWS_PER_THREAD = 32


def _kernel_threads(n_rows):
    """Threads of a route kernel over ``n_rows`` rows: torch's thread count,
    at most one per :data:`MIN_ROWS_PER_THREAD` rows."""
    return max(1, min(torch.get_num_threads(), n_rows // MIN_ROWS_PER_THREAD))


def route_forward(a, depth, compiled=None):
    """The hard leaves ``(T, B)`` of node scores ``a`` (``(T, B, n_internal)``,
    not differentiated) and the sums of ``|a|`` over each row's nodes
    ``(T, B)``, from which the decisions' scale is taken.

    The compiled kernel (``cython_src/_dgt.pyx``, one pass per row) on CPU
    tensors of float32 / float64 (``compiled=None``); elsewhere, or with
    ``compiled=False``, :func:`hard_leaf` and torch's sum.
    """
    if compiled is None:
        compiled = _compiled(a)
    if not compiled:
        return hard_leaf(a, depth), a.abs().sum(dim=2)
    hard = torch.empty(a.shape[:2], dtype=torch.long)
    magnitude = torch.empty(a.shape[:2], dtype=a.dtype)
    _route_forward(a.contiguous().numpy(), hard.numpy(), magnitude.numpy(), depth,
                   _kernel_threads(a.shape[0] * a.shape[1]))
    return hard, magnitude


def path_scores(s, depth):
    """``s @ S.T`` (``S``: :func:`~sklearn_difftrees._core.topology.path_matrix`):
    ``(..., n_internal)`` in heap order to ``(..., n_leaves)``, leaves left to
    right.

    Beyond :data:`DENSE_MAX_WORK`, level by level: a child's score is
    its parent's minus (left child) or plus (right child) the parent's
    decision, about ``2 * n_leaves`` additions per row instead of the
    ``n_leaves * n_internal`` multiply-adds of the product; the same sums of
    ``depth`` terms, added in another order.
    """
    if _dense(s, depth):
        return s @ _path_matrix(depth, s.dtype, s.device).T
    q = torch.zeros_like(s[..., :1])
    for level in range(depth):
        nodes = s[..., 2**level - 1 : 2 ** (level + 1) - 1]
        nxt = torch.empty(*q.shape[:-1], 2 * q.shape[-1], dtype=q.dtype, device=q.device)
        torch.sub(q, nodes, out=nxt[..., 0::2])
        torch.add(q, nodes, out=nxt[..., 1::2])
        q = nxt
    return q


def path_scores_transpose(dq, depth):
    """``dq @ S``: each internal node gets the sum over the leaves of its right
    subtree minus the sum over its left subtree (beyond
    :data:`DENSE_MAX_WORK`: pairwise, bottom up)."""
    if _dense(dq, depth):
        return dq @ _path_matrix(depth, dq.dtype, dq.device)
    levels = []
    total = dq
    for _ in range(depth):
        pairs = total.unflatten(-1, (-1, 2))
        left, right = pairs[..., 0], pairs[..., 1]
        levels.append(right - left)
        total = left + right
    return torch.cat(levels[::-1], dim=-1)


class Route(torch.autograd.Function):
    """Steps 2 to 4 of the forward pass for ``T`` trees at once (a single
    tree is ``T = 1``): ``(hard + softmax(q) - softmax(q).detach()) @ leaf``
    with ``q = s @ S.T`` and ``s = sign(a) * scale``, fused.

    ``a``: node scores ``(T, B, n_internal)``; ``scale``: the decisions'
    magnitude, broadcastable to ``(T, B, 1)`` (one per row or per tree) and
    not differentiated (the caller's mean of ``|a|``); ``leaf``:
    ``(T, n_leaves, k)``; ``hard``: the hard leaves ``(T, B)``
    (:func:`hard_leaf`).

    Forward, the value is the hard leaf's parameters (``leaf`` gathered at
    ``hard``: the soft terms cancel). Backward, the leaf parameters get the
    gradient of their rows (through the hard one-hot) and ``a`` gets the
    softmax's gradient carried back through ``S`` (:func:`path_scores_transpose`)
    and the straight-through ``1{|a| <= 1}``: the gradients autograd computes
    through the unfused expression, up to rounding (there ``(1 + soft) -
    soft`` is 1 only up to rounding). ``s``, ``q`` and the softmax are
    computed in the backward pass only.
    """

    @staticmethod
    def forward(ctx, a, scale, leaf, hard, depth):
        ctx.save_for_backward(a, scale, leaf, hard)
        ctx.depth = depth
        return leaf.gather(1, hard.unsqueeze(2).expand(-1, -1, leaf.shape[2]))

    @staticmethod
    def backward(ctx, grad):
        a, scale, leaf, hard = ctx.saved_tensors
        grad_a = grad_leaf = None
        if ctx.needs_input_grad[2]:
            grad_leaf = torch.zeros_like(leaf)
            grad_leaf.scatter_add_(1, hard.unsqueeze(2).expand(-1, -1, leaf.shape[2]), grad)
        if ctx.needs_input_grad[0]:
            grad_a = route_backward(a, scale, leaf, grad, ctx.depth)
        return grad_a, None, grad_leaf, None, None


def route_backward(a, scale, leaf, grad, depth, compiled=None):
    """The gradient of :class:`Route` with respect to the node scores ``a``.

    On CPU tensors of float32 / float64 (``compiled=None``) the compiled
    kernel (``cython_src/_dgt.pyx``: one pass per row, the softmax as a
    product of per-level sigmoids, up to ``torch.get_num_threads()`` OpenMP
    threads; ``scale`` broadcastable to ``(T, B, 1)``); elsewhere, or with
    ``compiled=False``, torch operations (softmax of the path scores, its
    Jacobian, ``dq @ S``). Both compute the same gradient up to rounding.
    """
    if compiled is None:
        compiled = _compiled(a)
    if not compiled:
        soft = torch.softmax(path_scores(torch.sign(a) * scale, depth), dim=2)
        g_soft = torch.bmm(grad, leaf.transpose(1, 2))
        dq = soft * (g_soft - (soft * g_soft).sum(dim=2, keepdim=True))
        return path_scores_transpose(dq, depth) * (a.abs() <= 1)
    n_trees, n_rows, _ = a.shape
    dtype = a.dtype
    scale = torch.as_tensor(scale, dtype=dtype).detach().expand(n_trees, n_rows, 1)
    grad_a = torch.empty_like(a, memory_format=torch.contiguous_format)
    n_threads = _kernel_threads(n_trees * n_rows)
    # Each thread's work row (3 L values) padded to whole 64-byte lines.
    width = -(-3 * leaf.shape[1] * a.element_size() // 64) * 64 // a.element_size()
    work = np.empty((n_threads, width), dtype=grad_a.numpy().dtype)
    _route_backward(
        a.detach().contiguous().numpy(),
        scale.reshape(n_trees, n_rows).contiguous().numpy(),
        leaf.detach().to(dtype).transpose(1, 2).contiguous().numpy(),
        grad.detach().to(dtype).contiguous().numpy(),
        grad_a.numpy(), work, depth, n_threads,
    )
    return grad_a


class DGTModule(nn.Module):
    """Over-parameterized DGT tree of ``depth`` with ``n_outputs`` per leaf.

    The scale of the decisions is the mean of ``|a|`` over the whole batch,
    or over each row's own node scores when ``row_scale`` (the bandit
    learners, whose rounds are mini-batches of one sample processed several
    at a time).
    """

    def __init__(self, n_features, depth, n_outputs, hidden_sizes=(), row_scale=False,
                 owner="DGTModule"):
        super().__init__()
        self.depth = depth
        self.row_scale = row_scale
        dims = [n_features, *hidden_sizes, topology.n_internal(depth)]
        # Parameters, gradients and two optimizer moments, in float32: a huge
        # hidden_width with n_layers > 1 asked torch for tens of GiB.
        n_params = sum((dims[i] + 1) * dims[i + 1] for i in range(len(dims) - 1))
        check_memory(owner, 16 * (n_params + topology.n_leaves(depth) * n_outputs),
                     f"max_depth={depth}, hidden layers of width {tuple(hidden_sizes)}, "
                     f"{n_features} features")
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
        a = self.node_scores(x).unsqueeze(0)
        leaf, magnitude = route_forward(a.detach(), self.depth)
        if self.row_scale:  # the mean of |a| over each row's nodes
            scale = magnitude[0].unsqueeze(1) / a.shape[2]
        else:  # over the batch
            scale = magnitude.sum() / a[0].numel()
        out = Route.apply(a, scale, self.leaf.unsqueeze(0), leaf, self.depth)
        return out[0], leaf[0]

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
