"""The Tree Ensemble Layer as a torch module (imported lazily: it imports torch).

* :class:`TreeEnsembleLayer` -- ``nn.Module`` usable anywhere in a network.
* :func:`tree_ensemble_dense` -- the same function computed densely over all
  nodes with vectorized torch ops (any device; the test oracle), with the
  smooth-step or the (rescaled) logistic activation.
* ``_ConditionalTEL`` -- the autograd Function running the compiled
  conditional forward (Algorithm 1) and backward (Algorithm 2) passes.
"""

import math

import numpy as np
import torch
from torch import nn

from .._core._guard import check_layer_input, check_layer_size
from .._core._memory import check_memory, memory_limit
from ._kernels import MAX_DEPTH, ensemble_memory, record_bound, tel_backward, tel_forward

__all__ = ["TreeEnsembleLayer", "backend_costs", "smooth_step", "tree_ensemble_dense"]


def smooth_step(t, gamma):
    """Smooth-step of eq. (4) in torch (exact 0 / 1 outside ``[-gamma/2, gamma/2]``)."""
    h = 0.5 * gamma
    inner = -2.0 / gamma**3 * t**3 + 1.5 / gamma * t + 0.5
    return torch.where(t <= -h, torch.zeros_like(t), torch.where(t >= h, torch.ones_like(t), inner))


def tree_ensemble_dense(x, weight, bias, leaf, gamma, activation="smooth_step", reach=None):
    """Dense (all nodes) evaluation of a soft-tree ensemble.

    Parameters
    ----------
    x : Tensor of shape (n, p)
    weight : Tensor of shape (n_trees, 2**depth - 1, p)
    bias : Tensor of shape (n_trees, 2**depth - 1)
    leaf : Tensor of shape (n_trees, 2**depth, k)
    gamma : float
    activation : {"smooth_step", "logistic"}
        Probability of going right at a node of score ``t``: ``S(t)`` of eq. (4),
        or the logistic ``1 / (1 + exp(-6 t / gamma))`` (the paper's rescaled
        logistic, Figure 1, for the timing comparison).
    reach : dict, optional
        If given, ``reach["n_leaves"]`` is set to the number of leaves of
        nonzero probability of every row, summed over the trees (what the
        conditional pass reports).

    Returns
    -------
    out : Tensor of shape (n, k)
        ``sum_t sum_l P(x -> l) leaf[t, l]``.
    """
    scores = torch.einsum("np,tip->nti", x, weight) + bias  # (n, T, n_int)
    if activation == "smooth_step":
        right = smooth_step(scores, gamma)
    else:
        right = torch.sigmoid(scores * (6.0 / gamma))
    n, n_trees = x.shape[0], weight.shape[0]
    depth = int(round(math.log2(leaf.shape[1])))
    prob = x.new_ones((n, n_trees, 1))
    for level in range(depth):
        first = 2**level - 1
        s = right[:, :, first : first + 2**level]  # nodes of this level, left to right
        # children of node j at this level: left (2j+1) then right (2j+2).
        prob = torch.stack((prob * (1 - s), prob * s), dim=3).reshape(
            n, n_trees, 2 ** (level + 1))
    out = torch.einsum("ntl,tlk->nk", prob, leaf)
    if reach is not None:  # reachable leaves of every row, summed over the trees
        reach["n_leaves"] = (prob.detach() > 0).sum(dim=(1, 2)).cpu().numpy()
    return out


#: Cost model of one forward + backward pass on the CPU, in milliseconds for a
#: batch of 128 rows and 20 trees (one thread), fitted by relative least
#: squares to two runs of the grid of ``benchmarks/bench_tel_speed.py
#: --crossover`` pooled (in_features 5..200, depth 2..8, gamma 0.3..20; AMD
#: EPYC, 2026-11-25, after the blocked conditional kernels).
#: Conditional: a per-call overhead, per reachable node (``R`` = reachable
#: leaves + depth per row and tree) a constant and an ``in_features`` term (the
#: dot products), and the per-thread gradient buffers of every node. Dense:
#: a per-call overhead and every node of every tree, constant + ``in_features``.
_COND_COST = (0.162, 0.121, 1.6e-3, 1.25e-4)
_DENSE_COST = (0.989, 0.14, 2.25e-4)


def backend_costs(n_rows, n_trees, depth, in_features, reachable_leaves):
    """Predicted ``(dense, conditional)`` milliseconds of one training pass.

    ``reachable_leaves`` is the mean number of reachable leaves per row and
    tree (``2**depth`` when no node is hard). Only the comparison of the two
    numbers matters: it is what ``backend="auto"`` decides by.
    """
    scale = n_rows * n_trees / 2560.0
    nodes = 2.0**depth
    c0, c1, c2, c3 = _COND_COST
    r = reachable_leaves + depth
    cond = c0 + scale * (c1 * r + c2 * r * in_features) + n_trees / 20.0 * c3 * nodes * in_features
    d0, d1, d2 = _DENSE_COST
    dense = d0 + scale * nodes * (d1 + d2 * in_features)
    return dense, cond


class _ConditionalTEL(torch.autograd.Function):
    """Compiled conditional forward / backward (CPU tensors, float32/float64)."""

    @staticmethod
    def forward(ctx, x, weight, bias, leaf, gamma, state, record=True):
        # ``record``: keep the fractional trees for the backward pass (the
        # caller passes False under torch.no_grad(), where no backward follows).
        n_threads = torch.get_num_threads()
        Xn = x.detach().contiguous().numpy()
        Wn = weight.detach().contiguous().numpy()
        On = leaf.detach().contiguous().numpy()
        out, n_leaves, rec = tel_forward(
            Xn, Wn, bias.detach().contiguous().numpy(), On, gamma,
            record=record, capacity=state.get("capacity", 16), n_threads=n_threads,
        )
        if rec is not None:
            # The next batch's record capacity: twice this batch's longest
            # record, or 0.5% less than this batch's capacity, whichever is
            # larger, and never more than a record can hold (every node of
            # every tree). The longest record of a batch is heavy-tailed, and
            # a row that does not fit runs again alone, into a wider copy of
            # the record; unused capacity is never written (np.empty), so it
            # costs address space, not memory.
            grown = max(16, 2 * int(rec.length.max(initial=0)) + 1,
                        int(0.995 * state.get("capacity", 16)))
            state["capacity"] = min(record_bound(Wn), grown)
        state["n_leaves"] = n_leaves
        ctx.gamma, ctx.rec, ctx.n_threads = gamma, rec, n_threads
        # The tensors themselves, not numpy views: torch's version counter then
        # raises if one is modified in place before the backward pass.
        ctx.save_for_backward(x, weight, leaf)
        return torch.from_numpy(out)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        Xn, Wn, On = (t.detach().contiguous().numpy() for t in ctx.saved_tensors)
        need_x = ctx.needs_input_grad[0]
        gX, gW, gb, gO = tel_backward(
            Xn, Wn, On, ctx.gamma, grad_out.detach().contiguous().numpy(), ctx.rec,
            need_X=need_x, n_threads=ctx.n_threads,
        )
        return (
            torch.from_numpy(gX) if need_x else None,
            torch.from_numpy(gW),
            torch.from_numpy(gb),
            torch.from_numpy(gO),
            None,
            None,
            None,
        )


# torch.compile runs the conditional passes as they are, outside the traced
# graph: they work on numpy arrays, which Dynamo does not trace (a compiled
# layer with the default backend failed at its first call).
@torch.compiler.disable
def _conditional(x, weight, bias, leaf, gamma, state, record):
    """:class:`_ConditionalTEL` applied to its arguments."""
    return _ConditionalTEL.apply(x, weight, bias, leaf, gamma, state, record)


class TreeEnsembleLayer(nn.Module):
    r"""Tree Ensemble Layer: an additive ensemble of smooth-step soft trees.

    ``n_trees`` perfect binary trees of depth ``depth`` whose internal node
    ``i`` sends a sample to its right child with probability
    ``S(w_i . x + b_i)``, where ``S`` is the smooth-step function of
    Hazimeh et al. (2020), eq. (4): exactly 0 for scores ``<= -gamma/2``,
    exactly 1 for scores ``>= gamma/2`` and a cubic in between. The output is
    ``sum_trees sum_leaves P(x -> leaf) o_leaf``. Because ``S`` reaches exact
    0 and 1, a sample visits only the branches of nonzero probability, and
    the compiled conditional passes cost time proportional to the reachable
    nodes instead of ``2**depth``.

    A node whose score is outside ``(-gamma/2, gamma/2)`` routes exactly like
    the package's hard trees (right iff ``w.x + b > 0``). The paper defines
    ``S`` as the probability of going *left*; since ``S(-t) = 1 - S(t)`` the
    two conventions describe the same model with ``w, b`` negated.

    Parameters
    ----------
    in_features : int
        Size of each input sample.
    out_features : int
        Size of each output (the leaf vectors).
    n_trees : int, default=10
        Number of trees (summed).
    depth : int, default=3
        Depth of every tree (``2**depth`` leaves), 1 to 24.
    gamma : float, default=1.0
        Width of the fractional band of the smooth-step (> 0). Inputs are
        expected to be roughly standardized (the paper puts batch-norm before
        the layer).
    backend : {"auto", "conditional", "dense"}, default="auto"
        ``"conditional"``: the compiled conditional forward/backward passes
        (CPU tensors only, float32/float64; samples run in parallel on
        ``torch.get_num_threads()`` OpenMP threads). ``"dense"``: all nodes
        with vectorized torch ops (any device, autograd). ``"auto"``: dense
        off the CPU; on the CPU, every pass runs the backend that a cost
        model (:func:`backend_costs`) predicts faster for the batch size,
        depth, ``in_features`` and the number of reachable leaves measured in
        the previous pass: conditional while the trees are sparse (a narrow
        band, or trees that hardened during training), dense when most
        leaves are reachable and the inputs are wide. The first pass is
        conditional, and dense is used only where its buffers fit the memory
        limit. The choice depends on the model's state only, never on timing,
        so a seeded fit repeats exactly.

    Attributes
    ----------
    weight : Parameter of shape (n_trees, 2**depth - 1, in_features)
        Split weights of the internal nodes (heap order).
    bias : Parameter of shape (n_trees, 2**depth - 1)
        Split biases (the reference has none; it relies on batch-norm shifts).
    leaf : Parameter of shape (n_trees, 2**depth, out_features)
        Leaf vectors ``o_l``, leaves left to right.
    n_reachable_leaves : float
        Mean number of reachable leaves per sample and tree in the last
        conditional forward pass (``nan`` before one ran).

    Examples
    --------
    >>> import torch
    >>> from sklearn_difftrees import TreeEnsembleLayer
    >>> _ = torch.manual_seed(0)
    >>> net = torch.nn.Sequential(
    ...     torch.nn.BatchNorm1d(4), TreeEnsembleLayer(4, 3, n_trees=5, depth=3))
    >>> net(torch.randn(8, 4)).shape
    torch.Size([8, 3])
    """

    def __init__(self, in_features, out_features, n_trees=10, depth=3, gamma=1.0,
                 backend="auto"):
        super().__init__()
        layer = "TreeEnsembleLayer"
        in_features = check_layer_size(layer, "in_features", in_features)
        out_features = check_layer_size(layer, "out_features", out_features)
        n_trees = check_layer_size(layer, "n_trees", n_trees)
        depth = check_layer_size(layer, "depth", depth, 1, MAX_DEPTH)
        if not (isinstance(gamma, (int, float, np.floating)) and gamma > 0
                and math.isfinite(gamma)):
            raise ValueError(f"gamma must be a positive finite number; got {gamma!r}.")
        if backend not in ("auto", "conditional", "dense"):
            raise ValueError(
                f"backend must be 'auto', 'conditional' or 'dense'; got {backend!r}."
            )
        check_memory(
            layer, ensemble_memory(n_trees, depth, in_features, out_features),
            f"n_trees={n_trees}, depth={depth}, in_features={in_features}, "
            f"out_features={out_features}",
        )
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.n_trees, self.depth = int(n_trees), int(depth)
        self.gamma, self.backend = float(gamma), backend
        n_int, n_leaves = 2**self.depth - 1, 2**self.depth
        self.weight = nn.Parameter(torch.empty(self.n_trees, n_int, self.in_features))
        self.bias = nn.Parameter(torch.empty(self.n_trees, n_int))
        self.leaf = nn.Parameter(torch.empty(self.n_trees, n_leaves, self.out_features))
        self._state = {}
        self.reset_parameters()

    def reset_parameters(self):
        """Draw every tree independently from the current torch RNG.

        Split weights are uniform with variance ``1 / in_features`` (a node's
        score has unit variance on standardized inputs, so a good share of the
        nodes starts hard while the smooth band keeps gradients flowing),
        biases are zero and leaves are uniform in ``[-0.05, 0.05]``. Every
        entry is an independent draw, so no two trees start identical.
        """
        bound = math.sqrt(3.0 / self.in_features)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            self.bias.zero_()
            self.leaf.uniform_(-0.05, 0.05)

    @property
    def n_reachable_leaves(self):
        """Mean number of reachable leaves per sample and tree.

        Measured in the last forward pass of either backend (``nan`` before
        one).
        """
        n_leaves = self._state.get("n_leaves")
        if n_leaves is None or n_leaves.size == 0:
            return float("nan")
        return float(n_leaves.mean()) / self.n_trees

    def _dense_memory(self, n_rows):
        return ensemble_memory(self.n_trees, self.depth, self.in_features, self.out_features,
                               dense_rows=n_rows)

    def _use_conditional(self, x):
        if self.backend == "dense":
            return False
        ok = (x.device.type == "cpu" and self.weight.device.type == "cpu"
              and x.dtype in (torch.float32, torch.float64))
        if self.backend == "conditional" and not ok:
            raise ValueError(
                "backend='conditional' needs float32/float64 CPU tensors; got "
                f"{x.dtype} on {x.device}. Use backend='dense' (or 'auto') on GPU."
            )
        if not ok or self.backend == "conditional":
            return ok
        # backend="auto" on the CPU: the cheaper backend for the last measured
        # sparsity (conditional until a pass has measured it).
        leaves = self.n_reachable_leaves
        if math.isnan(leaves):
            return True
        dense, cond = backend_costs(x.shape[0], self.n_trees, self.depth, self.in_features,
                                    leaves)
        limit = memory_limit()
        fits = limit is None or self._dense_memory(x.shape[0]) <= limit
        return not (dense < cond and fits)

    def forward(self, x):
        """Sum of the soft trees' leaf vectors, weighted by reach probability.

        Parameters
        ----------
        x : torch.Tensor of shape (n, in_features)
            Input rows.

        Returns
        -------
        out : torch.Tensor of shape (n, out_features)
            The ensemble's output.
        """
        check_layer_input("TreeEnsembleLayer", x, self.in_features)
        # Both backends compute in the input's dtype (the parameters cast, their
        # gradients cast back): "auto" may switch backend between batches, and
        # the dense one took float64 rows with float32 parameters to an error.
        dtype = x.dtype
        params = (self.weight.to(dtype), self.bias.to(dtype), self.leaf.to(dtype))
        if self._use_conditional(x):
            record = torch.is_grad_enabled() and any(
                t.requires_grad for t in (x, *params)
            )
            return _conditional(x, *params, self.gamma, self._state, record)
        check_memory(
            "TreeEnsembleLayer",
            self._dense_memory(x.shape[0]),
            f"backend='dense', depth={self.depth}, n_trees={self.n_trees} on a batch "
            f"of {x.shape[0]} rows (the conditional backend needs far less)",
        )
        return tree_ensemble_dense(x, *params, self.gamma, reach=self._state)

    def extra_repr(self):
        """Return the constructor arguments shown by ``repr(layer)``.

        Returns
        -------
        text : str
            The layer's arguments, comma-separated.
        """
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"n_trees={self.n_trees}, depth={self.depth}, gamma={self.gamma}, "
                f"backend={self.backend!r}")
