"""Torch side of ConvexPolytopeTree (imported only inside ``fit``).

* :class:`PolytopeTreeModule` — the probabilistic tree of eq. (8): every split
  node ``v`` sends a sample right with probability
  ``q_v(x) = 1 - exp(-s_v(x))``, ``s_v(x) = sum_k r_k softplus(beta_k . x + b_k)``
  (eq. 2), decisions are independent, and the probability of a leaf is the
  product along its path. ``forward`` returns the leaf probabilities.
* :func:`entropy_loss` / :func:`variance_loss` — the batch conditional
  entropy of eqs. (11)–(14) and the weighted variance of eqs. (16)–(17),
  written as per-sample terms whose batch mean is the criterion, so that the
  shared training loop (``_core/_trainer.train``) can run them.
* :func:`prior_penalty` — eq. (15), divided by the number of training samples.
* :func:`train_stump` / :func:`train_stumps` / :func:`refine` — the two uses
  of the learner (Section 3.3.2): new stumps on nodes' data (one node, or a
  level's nodes batched), and joint refinement.
"""

import contextlib
import math

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.exceptions import ConvergenceWarning
from torch import nn

from .._core._trainer import seeded, to_tensor, train
from .._core._warn import quiet as quiet_warnings
from ._freeze import PRIOR_EPS
from ._kernels import child_table, polytope_backward, polytope_forward
from ._scores import _TINY, _CellEntropy, _NodeScores, _PriorPenalty, _StumpScores

__all__ = [
    "PolytopeTreeModule",
    "entropy_loss",
    "variance_loss",
    "prior_penalty",
    "train_stump",
    "train_stumps",
    "refine",
]

def _inv_softplus(r):
    """``rho`` with ``softplus(rho) = r`` (the facet weights are ``softplus(rho)``)."""
    r = np.maximum(np.asarray(r, dtype=np.float64), 1e-12)
    return np.where(r > 30, r, np.log(np.expm1(r)))


#: Split nodes from which :class:`PolytopeTreeModule` may run the compiled
#: conditional passes on the CPU (below, the dense passes are as fast).
CONDITIONAL_MIN_NODES = 32
#: The module runs the conditional passes while its split nodes outnumber
#: the nodes a training row reaches on average by this factor. Measured on
#: full training steps (forward, backward, Adam; 704 rows, 50 features, 10
#: facets, one thread, FMA build), the two passes cost the same at about
#: 2.3 split nodes per reached node at depth 6 and at depth 8; at 3.5
#: (depth 6, a grown tree before refinement) the conditional step took
#: 3.4 ms against the dense 4.2 ms. (It was 4.0 before the FMA build of the
#: kernels and the faster backward.)
CONDITIONAL_COST_RATIO = 2.5
#: Reach probability at or below which the conditional passes do not expand
#: a split node (see ``_kernels/_polytope.pyx``): the leaves below it, whose
#: exact probabilities are at most this, get 0.
REACH_EPS = 1e-6


class _ConditionalPolytope(torch.autograd.Function):
    """The compiled conditional forward / backward of a
    :class:`PolytopeTreeModule` (CPU tensors, float32/64)."""

    @staticmethod
    def forward(ctx, X, beta, bias, r, module):
        n_threads = torch.get_num_threads()
        P, rec = polytope_forward(
            X.detach().contiguous().numpy(), beta.detach().numpy(), bias.detach().numpy(),
            r.detach().numpy(), module._child, len(module.leaves), eps=module.reach_eps,
            record=True, capacity=module._capacity, pool=module._records, n_threads=n_threads)
        # The next batch's record width: twice this batch's longest record
        # (when a row does not fit, the pass runs again with enough).
        module._capacity = max(8, 2 * int(rec.length.max(initial=0)))
        module._choose(float(rec.length.mean()) if rec.length.size else 0.0)
        ctx.rec, ctx.child, ctx.n_threads = rec, module._child, n_threads
        ctx.save_for_backward(X, r)
        return torch.from_numpy(P)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_P):
        X, r = ctx.saved_tensors
        gb, gc, gr = polytope_backward(
            X.detach().contiguous().numpy(), r.detach().numpy(), ctx.child,
            grad_P.contiguous().numpy(), ctx.rec, X.shape[1], n_threads=ctx.n_threads)
        return None, torch.from_numpy(gb), torch.from_numpy(gc), torch.from_numpy(gr), None


class PolytopeTreeModule(nn.Module):
    """Probabilistic convex-polytope tree over a fixed set of split nodes.

    Parameters
    ----------
    split_nodes : sequence of int
        Heap indices of the split nodes (a valid tree: the parent of every
        non-root split node splits too).
    n_features, n_facets : int
        Input dimension ``d`` and facets per node ``K``.
    """

    def __init__(self, split_nodes, n_features, n_facets):
        super().__init__()
        self.split_nodes = sorted(int(v) for v in split_nodes)
        S, K, p = len(self.split_nodes), n_facets, n_features
        self.beta = nn.Parameter(torch.randn(S, K, p) / math.sqrt(max(p, 1)))
        self.bias = nn.Parameter(torch.zeros(S, K))
        # r = softplus(rho): r_k = 1/K gives s = ln 2 (q = 1/2) at the facets.
        self.rho = nn.Parameter(torch.full((S, K), float(_inv_softplus(1.0 / K))))
        pos = {v: i for i, v in enumerate(self.split_nodes)}
        splits = set(self.split_nodes)
        leaves = sorted(
            c for v in self.split_nodes for c in (2 * v + 1, 2 * v + 2) if c not in splits
        )
        self.leaves = leaves if self.split_nodes else [0]
        self._pos = pos
        # Level by level (so that forward is a few tensor operations per
        # level, not per node): the positions in ``s`` of the level's split
        # nodes, and which of their children (left, right interleaved) split
        # at the next level and which are leaves (as columns of the output).
        self._levels = []
        level = [0] if self.split_nodes else []
        while level:
            children = [c for v in level for c in (2 * v + 1, 2 * v + 2)]
            self._levels.append((
                [pos[v] for v in level],
                [j for j, c in enumerate(children) if c in splits],
                [j for j, c in enumerate(children) if c not in splits],
                [leaves.index(c) for c in children if c not in splits],
            ))
            level = [c for c in children if c in splits]
        self._index_cache = {}
        # The compiled conditional passes (CPU, trees of at least
        # CONDITIONAL_MIN_NODES split nodes): children table, reach
        # threshold, the record width of the next batch, and whether the next
        # passes run them (see _choose).
        self.conditional = S >= CONDITIONAL_MIN_NODES
        self.reach_eps = REACH_EPS
        self._child = child_table(self.split_nodes, self.leaves) if self.conditional else None
        self._capacity = 8
        self._records = []  # buffers of earlier records, reused once released
        self._use_kernels = self.conditional
        # Leaves come out level by level; their order as ``self.leaves``
        # (None where that is already the order).
        order = np.argsort([c for level in self._levels for c in level[3]], kind="stable")
        self._leaf_order = (None if np.array_equal(order, np.arange(order.size))
                            else torch.as_tensor(order, dtype=torch.long))

    def set_params(self, beta, bias, r):
        with torch.no_grad():
            self.beta.copy_(torch.as_tensor(beta, dtype=self.beta.dtype))
            self.bias.copy_(torch.as_tensor(bias, dtype=self.bias.dtype))
            self.rho.copy_(torch.as_tensor(_inv_softplus(r), dtype=self.rho.dtype))

    def weights(self):
        return F.softplus(self.rho)

    def node_scores(self, X):
        """``s_v(x)`` of every split node, shape (n, S)."""
        return _NodeScores.apply(X, self.beta, self.bias, self.weights())

    def _choose(self, reached):
        """Run the conditional passes next while the split nodes outnumber
        ``reached``, the mean split nodes a training row reached, by
        ``CONDITIONAL_COST_RATIO`` (both passes measure it)."""
        self._use_kernels = len(self.split_nodes) >= CONDITIONAL_COST_RATIO * reached

    def forward(self, X):
        """Leaf probabilities (eq. 8), shape (n, n_leaves), columns = ``self.leaves``.

        On the CPU, a tree of ``conditional`` size runs the compiled passes
        while its training rows reach few of its split nodes (see
        ``_choose``): they skip the split nodes a row reaches with
        probability at most ``reach_eps`` (their leaves get 0). Otherwise
        every node is evaluated.
        """
        if not self.split_nodes:
            return torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)
        on_cpu = X.device.type == "cpu"
        # The kernels differentiate the parameters only, in their own dtype.
        kernels = (self.conditional and on_cpu and self._use_kernels and not X.requires_grad
                   and X.dtype == self.beta.dtype)
        if kernels:
            r = self.weights()
            if torch.is_grad_enabled() and any(
                    t.requires_grad for t in (self.beta, self.bias, self.rho)):
                return _ConditionalPolytope.apply(X, self.beta, self.bias, r, self)
            P, _ = polytope_forward(
                X.detach().contiguous().numpy(), self.beta.detach().numpy(),
                self.bias.detach().numpy(), r.detach().numpy(), self._child, len(self.leaves),
                eps=self.reach_eps, n_threads=torch.get_num_threads())
            return torch.from_numpy(P)
        s = self.node_scores(X)
        n = X.shape[0]
        levels = self._level_index(X.device)
        prob = torch.ones(n, 1, dtype=X.dtype, device=X.device)  # reaching the root
        out = []
        # A training step of a conditional-size tree on the CPU counts the
        # split nodes its rows reach (those the conditional passes would
        # expand), for the choice of the next step's passes.
        count = self.conditional and on_cpu and torch.is_grad_enabled() and n > 0
        reached = n
        for at, split_children, leaf_children, has_leaves in levels:
            sv = s[:, at]
            # children of the level's nodes in heap order: (left, right) per node
            children = torch.stack([prob * torch.exp(-sv), prob * (-torch.expm1(-sv))],
                                   dim=2).reshape(n, -1)
            if has_leaves:
                out.append(children[:, leaf_children])
            prob = children[:, split_children]
            if count:
                reached += int((prob.detach() > self.reach_eps).sum())
        if count:
            self._choose(reached / n)
        if self._leaf_order is None:
            return torch.cat(out, dim=1)
        return torch.cat(out, dim=1)[:, self._leaf_order.to(X.device)]

    def _level_index(self, device):
        """``self._levels`` as column selections on ``device`` (cached): a
        ``slice`` where the columns are contiguous (a complete level: no
        gather, no scatter in the backward), else an index tensor."""
        key = str(device)
        if key not in self._index_cache:
            levels = []
            for at, split_children, leaf_children, leaf_columns in self._levels:
                levels.append((
                    _selector(at, device), _selector(split_children, device),
                    _selector(leaf_children, device), bool(leaf_columns),
                ))
            self._index_cache[key] = levels
        return self._index_cache[key]


def _selector(ix, device):
    """Columns ``ix`` as a slice when they are a contiguous run, else a tensor."""
    if len(ix) and list(ix) == list(range(ix[0], ix[0] + len(ix))):
        return slice(ix[0], ix[0] + len(ix))
    return torch.as_tensor(ix, dtype=torch.long, device=device)


#: Most rows one epoch of the joint refinement visits under
#: ``batch_size="auto"`` (the core's ``MAX_EPOCH_ROWS``, 131,072, elsewhere):
#: on larger training parts successive epochs continue through one shuffled
#: pass of the rows, so that ``max_iter`` bounds the refinement at
#: ``max_iter * 16,384`` rows and early stopping looks at the validation
#: rows every 16,384 training rows. The default fit on the 100k x 50 table
#: (80,000 training rows, epochs of 128 steps before) ran 57 epochs of
#: 80,000 rows (19-20 s CPU of its 39-40 s, side by side); now 100 epochs
#: of 27 steps (10.4 s). Every table of ``benchmarks/bench_defaults.py``
#: has fewer training rows: unchanged there.
REFINE_MAX_EPOCH_ROWS = 16_384

#: Quantile of the projected node data where a stump's facets start.
INIT_QUANTILE = 0.75


def entropy_loss(P, Yw, member=None, n_members=1):
    """Per-sample terms of the batch conditional entropy ``H(Y | L)`` (eqs. 11–14).

    ``Yw`` packs the class code (column 0) and the sample weight (column 1).
    With ``counts[l, j] = sum_n w_n P[n, l] 1[y_n = j]`` and
    ``pi[l, j] = counts[l, j] / sum_j counts[l, j]``, the estimate is
    ``H = -(1/W) sum_{l,j} counts[l, j] log pi[l, j]``
    ``  = mean_n (m w_n / W) sum_l P[n, l] (-log pi[l, y_n])``; the returned
    vector holds those per-sample terms (their plain mean is ``H``).

    ``member`` (optional, ``(m,)`` long): the rows belong to ``n_members``
    separate trees (the batched stumps of one level), each with its own
    counts, ``m`` and ``W``; ``-1`` marks padding rows (zero weight).
    """
    y = Yw[:, 0].long()
    n_classes = int(y.max()) + 1 if y.numel() else 1
    member, w, scale = _members(Yw[:, 1], member, n_members)
    # One autograd node with a hand-written backward (_scores._CellEntropy).
    cell = y if n_members == 1 else member * n_classes + y
    if not torch.is_tensor(scale):
        scale = torch.full_like(w, scale)
    elif scale.dim() == 0:
        scale = scale.expand_as(w)
    return _CellEntropy.apply(P, cell, w, scale, n_members, n_classes)


def variance_loss(P, Yw, member=None, n_members=1):
    """Per-sample terms of the weighted variance criterion (eqs. 16–17).

    ``Yw`` packs the (standardized) targets (all columns but the last) and
    the sample weight (last column). ``mu_l`` is the ``P``-weighted mean
    target of leaf ``l``; the mean of the returned terms is
    ``(1/W) sum_n w_n sum_l P[n, l] ||y_n - mu_l||^2 / n_outputs``.
    ``member``, ``n_members``: as in :func:`entropy_loss`.
    """
    Y = Yw[:, :-1]
    member, w, scale = _members(Yw[:, -1], member, n_members)
    Pw = P * w[:, None]
    if n_members == 1:
        mu = ((Pw.T @ Y) / (Pw.sum(0)[:, None] + _TINY))[None]  # (1, L, k)
    else:
        L, k = P.shape[1], Y.shape[1]
        sums = torch.zeros((n_members, L, k), dtype=P.dtype, device=P.device).index_add(
            0, member, Pw[:, :, None] * Y[:, None, :])
        wsum = torch.zeros((n_members, L), dtype=P.dtype, device=P.device).index_add(
            0, member, Pw)
        mu = sums / (wsum[..., None] + _TINY)  # (T, L, k)
    sq = ((Y[:, None, :] - mu[member]) ** 2).mean(-1)  # (m, L)
    per = (P * sq).sum(1)
    return per * w * scale


def _members(w, member, n_members):
    """``(member, w, scale)`` of the criteria: every row's member (0 without
    members; padding rows, ``-1``, count in member 0 with weight 0), its
    weight, and its member's ``m / W`` (rows over weight)."""
    if member is None:
        return torch.zeros_like(w, dtype=torch.long), w, w.shape[0] / w.sum()
    real = member >= 0
    member = member.clamp(min=0)
    w = w * real
    m = torch.zeros(n_members, dtype=w.dtype, device=w.device).index_add(0, member,
                                                                         real.to(w.dtype))
    W = torch.zeros(n_members, dtype=w.dtype, device=w.device).index_add(0, member, w)
    return member, w, (m / W.clamp(min=_TINY))[member]


def prior_penalty(module, *, gamma0, c0, a_beta, b_beta, n_samples):
    """Negative log prior of eq. (15) summed over the split nodes, divided by ``n_samples``.

    ``r_k ~ Gamma(gamma0 / K, 1 / c0)`` gives
    ``-(gamma0 / K - 1) ln(r_k + eps) + c0 r_k`` per facet; the Student-t
    shrinkage on every facet coefficient (intercept included) gives
    ``(a_beta + 1/2) ln(1 + beta^2 / (2 b_beta))``. Dividing by the number of
    training samples makes ``H + penalty`` the per-sample negative log
    posterior, whatever the batch size and ``n``.
    """
    # One autograd node with a hand-written backward (_scores._PriorPenalty).
    total = _PriorPenalty.apply(module.beta, module.bias, module.rho, gamma0, c0, a_beta,
                                b_beta, PRIOR_EPS)
    return total / n_samples


def _pack_targets(Y, w, classification):
    if classification:
        return np.column_stack([Y.astype(np.float64), w]).astype(np.float32)
    return np.column_stack([Y, w]).astype(np.float32)


def _train(module, Z, Y, w, val, *, classification, prior, settings, max_iter, early_stopping,
           seed, name, quiet):
    device = next(module.parameters()).device
    loss_fn = entropy_loss if classification else variance_loss
    n = Z.shape[0]

    def pack(Zp, Yp, wp):
        return (
            to_tensor(Zp, device),
            to_tensor(_pack_targets(Yp, wp, classification), device),
            torch.ones(Zp.shape[0], device=device),
        )

    # The prior is switched on gradually over the first half of the epochs
    # (linear warm-up): at initialization no facet is useful yet, and a
    # consistent shrinkage gradient would otherwise remove them all before
    # the data can select any (Adam normalizes the gradient scale away).
    rows = min(n, settings["epoch_rows"])
    warmup = max(1, (max_iter * math.ceil(rows / settings["batch_size"])) // 2)
    step = [0]

    def penalty(m):
        step[0] += 1
        return min(1.0, step[0] / warmup) * prior_penalty(m, n_samples=n, **prior)

    with quiet_warnings(ConvergenceWarning) if quiet else contextlib.nullcontext():
        return train(
            module,
            loss_fn,
            pack(Z, Y, w),
            validation_data=None if val is None else pack(*val),
            penalty_fn=penalty,
            max_iter=max_iter,
            early_stopping=early_stopping,
            seed=seed,
            name=name,
            fused_optimizer=True,  # a refinement step of 625 rows takes a few ms
            **settings,
        )


def _stump_init(Z, w, n_facets, seed):
    """A stump's initial ``(beta (K, p), bias (K,))`` (see :func:`train_stump`)."""
    with seeded(seed):
        module = PolytopeTreeModule([0], Z.shape[1], n_facets)
        u = torch.randn(n_facets, Z.shape[1], dtype=torch.float64).numpy()
    u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
    Zd = Z.astype(np.float64)
    center = (w @ Zd) / w.sum()
    proj = (Zd - center) @ u.T  # (n, K)
    offset = np.quantile(proj, INIT_QUANTILE, axis=0)
    spread = np.maximum(proj.std(axis=0), 1e-6)
    beta = u * (4.0 / spread)[:, None]
    bias = -(beta @ center) - offset * 4.0 / spread
    return module, beta, bias


def train_stump(Z, Y, w, *, n_facets, classification, prior, settings, max_iter, seed, device,
                name):
    """Train one stump (split node 0 over leaves 1, 2) on a node's data.

    Initialization follows the geometry of the split: the ``K`` facets start
    as the faces of a polytope around the node's (weighted) centroid, facet
    ``k`` with a random outward normal ``u_k``, placed at the
    ``INIT_QUANTILE`` quantile of the data projected on ``u_k`` and scaled
    so that its soft transition spans about a quarter of that projection's
    spread. Facets that start through the middle of the data tend to be
    switched off (``r_k -> 0``) by the entropy objective rather than moved.
    ``name`` is the estimator's class name (the trainer's messages name
    ``"<name> stumps"``). Returns ``(beta (K, p), bias (K,), r (K,))`` as
    float64 arrays.
    :func:`train_stumps` trains several nodes' stumps at once.
    """
    module, beta, bias = _stump_init(Z, w, n_facets, seed)
    with torch.no_grad():
        module.beta.copy_(torch.as_tensor(beta[None], dtype=torch.float32))
        module.bias.copy_(torch.as_tensor(bias[None], dtype=torch.float32))
    module.to(device)
    _train(module, Z, Y, w, None, classification=classification, prior=prior,
           settings=settings, max_iter=max_iter, early_stopping=False, seed=seed,
           name=f"{name} stumps", quiet=True)
    module.cpu()
    r = module.weights().detach().double().numpy()[0]
    return (module.beta.detach().double().numpy()[0], module.bias.detach().double().numpy()[0], r)


def _stumps_forward(params, X, mask):
    """Batched stumps: ``(T, B, 3)`` outputs, a row's two leaf probabilities
    (left, right; zero on padding rows) and its member ``t`` (``-1`` on
    padding rows), so that the flattened rows of all members keep their
    stumps apart (:func:`_member_loss`)."""
    s = _StumpScores.apply(X, params["beta"], params["bias"], params["rho"])  # (T, B)
    P2 = torch.stack([torch.exp(-s), -torch.expm1(-s)], dim=-1) * mask[..., None]
    member = torch.arange(P2.shape[0], dtype=P2.dtype, device=P2.device)[:, None]
    member = torch.where(mask, member, torch.full_like(member, -1.0))
    return torch.cat([P2, member[..., None]], dim=-1)


def _member_loss(classification):
    """The criterion of :func:`entropy_loss` / :func:`variance_loss` on the
    flattened rows of several stumps (:func:`_stumps_forward`), per member:
    every member's leaf statistics come from its own rows only and each
    row's term is rescaled by its own member's ``m / W``, so that every
    member's mean is its own criterion. Costs ``O(rows)``, not
    ``O(rows x members)`` (the members' leaves are not laid side by side)."""
    loss_fn = entropy_loss if classification else variance_loss

    def member_loss(out, Yw):
        member = out[:, 2].long()
        n_members = int(member.max()) + 1 if member.numel() else 1
        return loss_fn(out[:, :2], Yw, member, n_members)

    return member_loss


def train_stumps(nodes, *, n_facets, classification, prior, settings, max_iter, device, name,
                 epoch_rows=None):
    """Train the stumps of several nodes together, as :func:`train_stump` trains one.

    ``nodes`` is a list of ``(Z, Y, w, seed)``. The stumps are the members of
    one batched model (``_core._batched_trainer.train_batched``: parameters
    stacked on a leading node axis, each node with its own rows, batch order,
    optimizer state, step count, prior warm-up and stopping), so a level of
    the greedy growth costs about one training's Python overhead instead of
    one per node. Each node's result equals :func:`train_stump`'s with the
    same seed up to float rounding. ``epoch_rows`` (one per node) overrides
    ``settings["epoch_rows"]``: the rows of each node's epoch. ``name`` is the
    estimator's class name: a diverged training raises the trainer's
    :class:`FloatingPointError` naming ``"<name> stumps"``. Returns a list of
    ``(beta, bias, r)``.
    """
    from .._core._batched_trainer import train_batched

    inits = [_stump_init(Z, w, n_facets, seed)[1:] for Z, _, w, seed in nodes]
    K = n_facets
    params = {
        "beta": torch.as_tensor(np.stack([b for b, _ in inits]), dtype=torch.float32,
                                device=device),
        "bias": torch.as_tensor(np.stack([c for _, c in inits]), dtype=torch.float32,
                                device=device),
        "rho": torch.full((len(nodes), K), float(_inv_softplus(1.0 / K)), device=device),
    }
    members = [
        dict(train_data=(to_tensor(Z, device),
                         to_tensor(_pack_targets(Y, w, classification), device),
                         torch.ones(Z.shape[0], device=device)),
             validation_data=None, seed=seed, verbose=0)
        for Z, Y, w, seed in nodes
    ]
    bs = settings["batch_size"]
    n = np.array([Z.shape[0] for Z, _, _, _ in nodes])
    if epoch_rows is None:
        epoch_rows = settings["epoch_rows"]
    epoch_rows = np.minimum(n, epoch_rows)
    steps = np.maximum(1, -(-epoch_rows // bs))
    # _train's linear prior warm-up, per node: its counter also counts the
    # trainer's untrained-loss reference call, hence the + 2.
    warmup = np.maximum(1, (max_iter * steps) // 2)

    def penalty(p, active, taken):
        r = F.softplus(p["rho"])
        gamma = (-(prior["gamma0"] / K - 1.0) * torch.log(r + PRIOR_EPS) + prior["c0"] * r).sum(1)
        coef = torch.cat([p["beta"], p["bias"][..., None]], dim=-1)
        beta = (prior["a_beta"] + 0.5) * torch.log1p(coef**2 / (2.0 * prior["b_beta"]))
        total = (gamma + beta.flatten(1).sum(1)) / torch.as_tensor(
            n[active], dtype=r.dtype, device=r.device)
        ramp = np.minimum(1.0, (taken + 2) / warmup[active])
        return total * torch.as_tensor(ramp, dtype=r.dtype, device=r.device)

    opts = {k: v for k, v in settings.items() if k not in ("verbose", "epoch_rows")}
    with quiet_warnings(ConvergenceWarning):
        train_batched(
            _stumps_forward, params,
            _member_loss(classification), members,
            max_iter=max_iter, epoch_rows=epoch_rows, early_stopping=False,
            member_penalty_fn=penalty,
            name=f"{name} stumps", **opts,
        )
    beta = params["beta"].detach().cpu().double().numpy()
    bias = params["bias"].detach().cpu().double().numpy()
    r = F.softplus(params["rho"]).detach().cpu().double().numpy()
    return [(beta[i], bias[i], r[i]) for i in range(len(nodes))]


def refine(split_nodes, params, Z, Y, w, val, *, classification, prior, settings, max_iter,
           early_stopping, seed, device, name, capped=False):
    """Jointly train every split node of the grown tree (Algorithm 1).

    ``params`` maps node -> ``(beta, bias, r)``; returns the refined mapping
    and the trainer's :class:`History`. ``capped`` (``batch_size="auto"``):
    an epoch visits at most :data:`REFINE_MAX_EPOCH_ROWS` rows.
    """
    if capped:
        settings = {**settings, "epoch_rows": min(settings["epoch_rows"], REFINE_MAX_EPOCH_ROWS)}
    K = next(iter(params.values()))[0].shape[0]
    with seeded(seed):  # the random init is overwritten, but must not draw globally
        module = PolytopeTreeModule(split_nodes, Z.shape[1], K)
    nodes = module.split_nodes
    module.set_params(
        np.stack([params[v][0] for v in nodes]),
        np.stack([params[v][1] for v in nodes]),
        np.stack([params[v][2] for v in nodes]),
    )
    module.to(device)
    history = _train(module, Z, Y, w, val, classification=classification, prior=prior,
                     settings=settings, max_iter=max_iter, early_stopping=early_stopping,
                     seed=seed, name=name, quiet=True)  # max_iter is a budget (see max_iter)
    module.cpu()
    beta = module.beta.detach().double().numpy()
    bias = module.bias.detach().double().numpy()
    r = module.weights().detach().double().numpy()
    return {v: (beta[i], bias[i], r[i]) for i, v in enumerate(nodes)}, history
