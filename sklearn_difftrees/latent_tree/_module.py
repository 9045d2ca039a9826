"""LatentTree's torch modules (imported only while training, or by users).

:class:`LatentTreeLayer` is the public layer of Algorithm 2 of Zantedeschi et
al. (2021): split scores ``s = split(x)`` at the ``2**depth - 1`` internal
nodes, node rewards ``q`` (Lemma 1, ``q_root = 1``), then the pruned
traversal ``(z, a) = T_lam(q)`` of problem (3), differentiable in ``q``.
``_LatentTreeNet`` puts the prediction head ``f_phi`` on ``[x, z]`` (or
``z``) for the estimators.
"""

import torch
from torch import nn

from .._core import topology
from .._core._guard import check_layer_input, check_layer_size
from .._core._memory import check_memory
from ._torch import node_rewards, tree_isotonic

__all__ = ["LatentTreeLayer"]


class LatentTreeLayer(nn.Module):
    """Differentiable pruned binary tree: ``x -> z`` (Algorithm 2's layer).

    Every internal node ``t`` has a split score ``s_t(x) = w_t . x + b_t``
    (``split="linear"``) or ``elu(w_t . x + b_t)`` (``split="elu"``; the same
    hard routing, since ``elu(u) > 0`` iff ``u > 0``). A sample goes right at
    ``t`` iff ``s_t(x) > 0``. The node rewards ``q`` (``q_t`` = the smallest
    signed score on the path to ``t``, ``q_root = 1``) enter the pruning
    problem (3) of the paper, solved exactly by the generalised PAV of
    Algorithm 1; the output ``z`` (n, n_nodes) holds
    ``z_it = clip(q_it + 1/2, 0, a_t)``, where ``a`` (n_nodes,) is the
    pruning vector (``a_t = 0``: node ``t`` is pruned).

    Parameters
    ----------
    in_features : int
        Number of input features.
    max_depth : int
        Depth of the complete tree (``2**max_depth`` leaves, ``n_nodes =
        2**(max_depth + 1) - 1`` in heap order: node ``t`` has children
        ``2t + 1`` (left) and ``2t + 2`` (right)).
    pruning : float, default=1e-2
        Pruning strength ``lam`` **per sample**: a batch of ``n`` rows solves
        problem (4) with ``lam * n``, so the same value means the same
        pruning whatever the batch size.
    split : {"linear", "elu"}, default="linear"
        Split function.
    backend : {"auto", "kernel", "torch"}, default="auto"
        ``"kernel"``: the compiled PAV kernel (float32/float64; a GPU batch
        goes to the host and back); ``"torch"``: the pure-torch
        implementation (any device, differentiated by autograd); ``"auto"``:
        the kernel on the CPU and for GPU batches of at most 1,024 rows,
        torch for larger GPU batches.

    Attributes
    ----------
    split : torch.nn.Linear
        Node weights ``(2**max_depth - 1, in_features)`` and biases.
    n_nodes : int
        Number of nodes of the complete tree, ``2**(max_depth + 1) - 1``
        (the width of ``z``).
    fixed_pruning : torch.Tensor of shape (n_nodes,) or None
        Set by :meth:`fix_pruning`. In ``eval()`` mode a fixed pruning
        vector makes each row's ``z`` depend on that row alone.

    Examples
    --------
    >>> import torch
    >>> from sklearn_difftrees import LatentTreeLayer
    >>> layer = LatentTreeLayer(4, max_depth=2)
    >>> z = layer(torch.randn(16, 4))
    >>> z.shape
    torch.Size([16, 7])
    """

    def __init__(self, in_features, max_depth, pruning=1e-2, split="linear", backend="auto"):
        super().__init__()
        if split not in ("linear", "elu"):
            raise ValueError(f"split must be 'linear' or 'elu', got {split!r}.")
        if backend not in ("auto", "kernel", "torch"):
            raise ValueError(f"backend must be 'auto', 'kernel' or 'torch', got {backend!r}.")
        if not pruning >= 0:
            raise ValueError(f"pruning must be >= 0, got {pruning!r}.")
        in_features = check_layer_size("LatentTreeLayer", "in_features", in_features)
        max_depth = check_layer_size("LatentTreeLayer", "max_depth", max_depth)
        # Parameters, gradients and two optimizer moments, in float32.
        check_memory(
            "LatentTreeLayer",
            16 * (topology.n_internal(max_depth) * (in_features + 1)),
            f"max_depth={max_depth}, in_features={in_features}",
        )
        self.in_features = in_features
        self.max_depth = max_depth
        self.pruning = float(pruning)
        self.split_kind = split
        self.backend = backend
        self.n_nodes = topology.n_nodes(self.max_depth)
        self.split = nn.Linear(self.in_features, topology.n_internal(self.max_depth))
        nn.init.zeros_(self.split.bias)
        # 1 until init_bias has balanced the nodes (saved with the state, so a
        # warm start does not re-initialize).
        self.register_buffer("bias_pending", torch.ones((), dtype=torch.bool))
        self.register_buffer("fixed_pruning", None)

    def extra_repr(self):
        """Return the constructor arguments shown by ``repr(layer)``.

        Returns
        -------
        text : str
            The layer's arguments, comma-separated.
        """
        return (
            f"in_features={self.in_features}, max_depth={self.max_depth}, "
            f"pruning={self.pruning}, split={self.split_kind!r}, backend={self.backend!r}"
        )

    def split_scores(self, x):
        """Split scores ``s`` of the internal nodes.

        Parameters
        ----------
        x : torch.Tensor of shape (n, in_features)
            Input rows.

        Returns
        -------
        s : torch.Tensor of shape (n, 2**max_depth - 1)
            ``w_t . x + b_t`` (or its ``elu``) per internal node, heap order.
        """
        s = self.split(x)
        return nn.functional.elu(s) if self.split_kind == "elu" else s

    def rewards(self, x):
        """Node rewards ``q`` (Lemma 1 of the paper).

        Parameters
        ----------
        x : torch.Tensor of shape (n, in_features)
            Input rows.

        Returns
        -------
        q : torch.Tensor of shape (n, n_nodes)
            The smallest signed split score on the path to each node
            (``q[:, 0] == 1``); positive exactly on the row's path.
        """
        return node_rewards(self.split_scores(x), self.max_depth)

    @torch.no_grad()
    def init_bias(self, x):
        """Balance the rows of ``x`` over the nodes (Appendix A.4 of the paper).

        Top down, ``b_t`` is set to minus the mean of ``w_t . x`` over the rows
        that traverse node ``t`` (``q_t > 0``), so each split halves the rows
        reaching it. The biases stay trainable.

        Parameters
        ----------
        x : torch.Tensor of shape (n, in_features)
            Rows to balance the splits on (e.g. the training inputs).

        Returns
        -------
        self : LatentTreeLayer
            The layer, with its split biases set.
        """
        n = x.shape[0]
        raw = x @ self.split.weight.T  # without bias
        bias = torch.zeros_like(self.split.bias)
        reach = torch.ones(n, 1, dtype=torch.bool, device=x.device)
        for d in range(self.max_depth):
            lo, hi = 2**d - 1, 2 ** (d + 1) - 1
            cnt = reach.sum(0).clamp(min=1).to(raw.dtype)
            b = -(raw[:, lo:hi] * reach).sum(0) / cnt
            bias[lo:hi] = b
            right = (raw[:, lo:hi] + b) > 0
            reach = torch.stack((reach & ~right, reach & right), dim=2).reshape(n, -1)
        self.split.bias.copy_(bias)
        self.bias_pending.fill_(False)
        return self

    def solve(self, q, lam=None):
        """Solve the pruning problem (3) for given rewards.

        Parameters
        ----------
        q : torch.Tensor of shape (n, n_nodes)
            Node rewards (from :meth:`rewards`).
        lam : float, default=None
            Total pruning penalty; ``None`` uses ``pruning * n``.

        Returns
        -------
        a : torch.Tensor of shape (n_nodes,)
            The pruning vector.
        z : torch.Tensor of shape (n, n_nodes)
            The traversal, ``clip(q + 1/2, 0, a)``.
        """
        lam = self.pruning * q.shape[0] if lam is None else lam
        return tree_isotonic(q, lam, self.backend)

    def _check_batch(self, x):
        """The checks of a batch on which the pruning problem is solved."""
        check_layer_input("LatentTreeLayer", x, self.in_features)
        if x.shape[0] == 0:
            raise ValueError(
                "LatentTreeLayer needs at least one row: the pruning problem is "
                "solved on the batch."
            )
        # Scores, rewards, z and the PAV buffers: a few (n, n_nodes) arrays.
        check_memory(
            "LatentTreeLayer",
            48 * x.shape[0] * self.n_nodes,
            f"max_depth={self.max_depth} on a batch of {x.shape[0]} rows",
        )

    @torch.no_grad()
    def fix_pruning(self, x):
        """Fix the pruning vector from the rows of ``x`` (used in ``eval()``).

        Parameters
        ----------
        x : torch.Tensor of shape (n, in_features)
            Rows to solve the pruning problem on (e.g. the training inputs).

        Returns
        -------
        a : torch.Tensor of shape (n_nodes,)
            The fixed pruning vector (also stored as ``fixed_pruning``).
        """
        self._check_batch(x)
        a, _ = self.solve(self.rewards(x))
        self.fixed_pruning = a.detach().clone()
        return self.fixed_pruning

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # ``fixed_pruning`` is None until fix_pruning, and torch leaves a None
        # buffer out of the keys it loads: a state saved after fix_pruning
        # failed to load into a new layer ("Unexpected key"), and strict=False
        # dropped the vector (eval outputs then depended on the batch). The
        # buffer takes the saved vector's shape first; a state without one
        # clears it, as loading restores the saved layer.
        key = prefix + "fixed_pruning"
        saved = state_dict.get(key)
        self.fixed_pruning = (None if saved is None else
                              torch.empty_like(saved, device=self.split.weight.device))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, x, return_pruning=False):
        """``z`` (n, n_nodes), and the pruning vector ``a`` if ``return_pruning``.

        In training mode, or without a fixed pruning vector, ``a`` solves
        problem (3) on the batch. In ``eval()`` mode with a fixed pruning
        vector, ``z = clip(q + 1/2, 0, a_fixed)`` row by row.

        Parameters
        ----------
        x : torch.Tensor of shape (n, in_features)
            Input rows.
        return_pruning : bool, default=False
            Also return the pruning vector ``a``.

        Returns
        -------
        z : torch.Tensor of shape (n, n_nodes)
            The pruned traversal.
        a : torch.Tensor of shape (n_nodes,)
            The pruning vector (only when ``return_pruning=True``).
        """
        self._check_batch(x)
        if self.training and bool(self.bias_pending):
            self.init_bias(x.detach())
        q = self.rewards(x)
        if not self.training and self.fixed_pruning is not None:
            a = self.fixed_pruning.to(q.dtype)
            z = torch.minimum(torch.clamp(q + 0.5, min=0.0), a)
        else:
            a, z = self.solve(q)
        return (z, a) if return_pruning else z


class _LatentTreeNet(nn.Module):
    """A :class:`LatentTreeLayer` followed by the head ``f_phi([x, z])``."""

    def __init__(
        self, n_features, n_outputs, max_depth, pruning, split, head_input, head_layers,
        head_width, dropout, backend="auto",
    ):
        super().__init__()
        self.tree = LatentTreeLayer(n_features, max_depth, pruning, split, backend)
        self.head_input = head_input
        width_in = self.tree.n_nodes + (n_features if head_input == "concat" else 0)
        widths = [width_in, *([head_width] * head_layers), n_outputs]
        check_memory(  # as the layer: parameters, gradients, two moments (float32)
            "LatentTree head",
            16 * sum((widths[i] + 1) * widths[i + 1] for i in range(len(widths) - 1)),
            f"head_layers={head_layers}, head_width={head_width}",
        )
        layers = []
        for _ in range(head_layers):
            layers += [nn.Linear(width_in, head_width), nn.ELU()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width_in = head_width
        layers.append(nn.Linear(width_in, n_outputs))
        self.head = nn.Sequential(*layers)

    def features(self, x):
        z = self.tree(x)
        return torch.cat((x, z), dim=1) if self.head_input == "concat" else z

    def forward(self, x):
        return self.head(self.features(x))

    def head_weights(self):
        """``[(W, b), ...]`` of the head's linear layers, float64 numpy."""
        return [
            (m.weight.detach().cpu().double().numpy(), m.bias.detach().cpu().double().numpy())
            for m in self.head
            if isinstance(m, nn.Linear)
        ]
