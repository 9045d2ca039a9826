"""Torch side of the DGT bandit learners (imported only by ``fit``/``update``).

:class:`OnlineDGT` wraps the live :class:`~sklearn_difftrees.dgt._module.DGTModule`
and its optimizer, and converts both to and from plain numpy state so that the
estimators pickle without torch objects. Rounds are mini-batches of one
sample with gradient accumulation (Appendix C.3.2 of the DGT paper): the
parameters change only every ``accumulation_steps`` rounds, so the rounds
between two optimizer steps are evaluated together in one forward pass (with
the per-row scale of the quantized decisions, so that this is exactly the
sequential computation) and the accumulated gradient is carried over calls.
"""

import numpy as np
import torch
from sklearn.base import is_classifier

from .._core._trainer import make_optimizer, resolve_device, seeded, to_tensor
from ._module import DGTModule

__all__ = [
    "OnlineDGT",
    "classification_surrogate",
    "leaf_reward_estimates",
    "regression_surrogate",
    "reward_surrogate",
]

#: Floating-point type of the live module, its optimizer and the contexts.
#: float32 in use; the tests switch it to float64 to check that ``update`` on n
#: rounds at once equals n one-round calls up to float64 rounding (in float32
#: the two orders of summation differ in the last bits).
DTYPE = torch.float32


def classification_surrogate(logits, actions, rewards, propensities):
    """Per-round loss whose gradient is eq. 8 of the DGT paper.

    ``(sigmoid(logits[i, a_i]) - r_i)**2 / p_i`` for the played action ``a_i``
    (the DGT authors' code). Its gradient with respect to ``logits[i]`` is
    ``2 / p_i * (sigma - r_i) * sigma * (1 - sigma) * e_{a_i}``, i.e. eq. 8 with
    ``loss = 1 - r``; its expectation over ``a_i ~ p`` is the gradient of
    ``sum_k (sigmoid(logits[i, k]) - r_{ik})**2``.
    """
    s = torch.sigmoid(logits.gather(1, actions[:, None])[:, 0])
    return (s - rewards) ** 2 / propensities


def reward_surrogate(estimates, actions, rewards):
    """Per-round loss ``(estimates[i, a_i] - r_i)**2`` (``leaf_estimator="counts"``).

    The squared error of the played action's estimated reward, for leaves
    that hold reward estimates in [0, 1]. Only the routing receives its
    gradient (the leaves are counted, not trained): it moves a context
    towards the leaves whose estimate for the played action is closer to
    the observed reward. Unlike eq. 8 there is no sigmoid, whose factor
    ``sigma * (1 - sigma)`` vanishes at the confident estimates of
    well-visited leaves, and no ``1 / p`` weight (the direct method): with K
    actions an explored round weighs ``K (1 - delta) / delta + 1`` times a
    greedy one (61 for letter's 26 classes), and the rare explored rounds
    then drive the shared split parameters and RMSprop's scale.
    """
    return (estimates.gather(1, actions[:, None])[:, 0] - rewards) ** 2


def regression_surrogate(pred, derivative):
    """Per-round loss whose gradient is ``derivative * grad(pred)`` (eq. 6)."""
    return derivative.detach() * pred[:, 0]


def leaf_reward_estimates(plays, rewards, prior, strength):
    """Mean reward of every action at every leaf, shrunk along the tree.

    ``plays[l, k]`` rounds reached leaf ``l`` and played action ``k``,
    ``rewards[l, k]`` is the sum of their rewards. A node pools the counts of
    the leaves below it; its estimate is ``(R + m * parent) / (N + m)`` with
    ``m = strength``, starting from ``prior`` above the root. An action never
    played at a leaf therefore takes the value of the nearest ancestor that
    saw it, and a leaf's estimate follows its own data once it has some.

    Parameters
    ----------
    plays, rewards : ndarray of shape (2**depth, n_actions)
    prior : float
        Value above the root.
    strength : float
        Pseudo-count ``m``: a node weighs its parent's estimate as ``m``
        observations of its own (the estimator's ``prior_strength``).

    Returns
    -------
    estimates : ndarray of shape (2**depth, n_actions)
    """
    levels = [(np.asarray(plays, dtype=np.float64), np.asarray(rewards, dtype=np.float64))]
    while levels[-1][0].shape[0] > 1:  # pooled counts, level by level up to the root
        n, r = levels[-1]
        levels.append((n[0::2] + n[1::2], r[0::2] + r[1::2]))
    est = np.full((1, levels[0][0].shape[1]), float(prior))
    for n, r in reversed(levels):
        parent = np.repeat(est, n.shape[0] // est.shape[0], axis=0)
        est = (r + strength * parent) / (n + strength)
    return est


def linear_rewards(Z1, coef):
    """``sigmoid(Z1 @ coef.T)``: the per-action logistic reward models on ``[z, 1]``."""
    return 1.0 / (1.0 + np.exp(-(Z1 @ coef.T)))


def _middle_gap(values):
    """Threshold in the gap between sorted ``values`` nearest their middle.

    Half-way between two consecutive distinct values, so that no context
    lies on the split (where the last bits of a dot product would decide its
    side); 0 when the values do not differ (fewer than 2 distinct).
    """
    v = np.sort(values)
    gaps = np.flatnonzero(v[1:] > v[:-1]) + 1
    if gaps.size == 0:
        return 0.0
    i = gaps[np.argmin(np.abs(gaps - v.size / 2))]
    return 0.5 * (v[i - 1] + v[i])


def _principal_directions(H, W, b):
    """Set every row of ``W`` to its node's top principal direction, in place.

    Node by node from the root, the contexts ``H`` reaching node ``i``
    (routed by the rows already set, with the thresholds at their middle gaps)
    give its direction: the leading right singular vector of their centred
    matrix, with the norm of the random row it replaces (the scale of the node
    scores stays that of the random start) and the sign that makes its largest
    component positive. A node reached by fewer than 2 contexts keeps its row.
    """
    n_internal = W.shape[0]
    node = np.zeros(H.shape[0], dtype=np.int64)
    rows = np.arange(H.shape[0])
    while True:
        inside = node < n_internal
        if not inside.any():
            break
        shift = np.zeros(n_internal)
        for i in np.unique(node[inside]):
            Hi = H[node == i]
            if Hi.shape[0] >= 2:
                C = Hi - Hi.mean(axis=0)
                v = np.linalg.svd(C, full_matrices=False)[2][0]
                v *= np.sign(v[np.argmax(np.abs(v))]) or 1.0
                W[i] = v * np.linalg.norm(W[i])
            shift[i] = _middle_gap(Hi @ W[i] + b[i])
        r = rows[inside]
        score = np.einsum("ij,ij->i", H[r], W[node[r]]) + b[node[r]] - shift[node[r]]
        node[r] = 2 * node[r] + 1 + (score > 0)


def _to_numpy(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().numpy().copy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(v) for v in obj)
    return obj


def _to_torch(obj, device):
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(obj.copy()).to(device)
    if isinstance(obj, dict):
        return {k: _to_torch(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_torch(v, device) for v in obj)
    return obj


class OnlineDGT:
    """Live module + optimizer of a bandit estimator, rebuilt from numpy state."""

    def __init__(self, est, state=None):
        self.device = resolve_device(est.device)
        self.device_param = est.device
        self.accumulation_steps = est.accumulation_steps
        n_features, n_outputs = est.n_features_in_, est._n_outputs()
        self.counts = None
        self.linear = None
        leaf_estimator = getattr(est, "leaf_estimator", "gradient")
        with seeded(est._seed):
            module = DGTModule(
                n_features, est.max_depth, n_outputs, est._hidden_sizes(), row_scale=True,
                owner=type(est).__name__,
            )
            if is_classifier(est) and leaf_estimator in ("counts", "linear"):
                # Leaves hold running reward estimates (leaf_reward_estimates),
                # not trained parameters; the fixed 1e-6 noise only breaks
                # exact ties (e.g. between actions never played below a node).
                module.leaf.requires_grad_(False)
                self.tiebreak = 1e-6 * torch.randn(module.leaf.shape).double().numpy()
                self.counts = np.zeros((2, *module.leaf.shape))  # plays, rewards
                self.pending_counts = np.zeros_like(self.counts)
                self.prior = 1.0 / n_outputs
                self.prior_strength = est.prior_strength
                if leaf_estimator == "linear":
                    # One logistic reward model per action on [z, 1]; the
                    # leaves count the residual rewards (prior 0 above the root).
                    self.linear = np.zeros((n_outputs, n_features + 1))
                    self.pending_linear = np.zeros_like(self.linear)
                    self.linear_learning_rate = est.linear_learning_rate
                    self.prior = 0.0
            elif is_classifier(est) and n_outputs > 2:
                # Leaf logits start at logit(1/K): sigmoid(theta) = 1/K, the
                # expected reward of a uniformly random action, instead of
                # 1/2. From 1/2, the early rounds (mostly loss 1 when K is
                # large) drive every played logit into the flat part of the
                # sigmoid of eq. 8, and the routing collapses (see
                # docs/bandit.md, "Initialization").
                with torch.no_grad():
                    module.leaf.add_(float(np.log(1.0 / (n_outputs - 1))))
        self.module = module.to(device=self.device, dtype=DTYPE)
        self.params = [p for p in module.parameters() if p.requires_grad]
        # Norm of the freshly seeded routing parameters (the same every time
        # the engine is rebuilt): the reference for divergence.
        self.reference_norm = self._routing_norm()
        self.learning_rate = est.learning_rate
        self.optimizer = make_optimizer(est.optimizer, self.params, est.learning_rate, est.momentum)
        self.pending = 0
        self._leaf = None
        if state is not None:
            self.load(state)
        elif self.counts is not None:
            self._refresh_leaves()

    # ------------------------------------------------------------ state
    def configure(self, est):
        """Apply the rates of ``est`` (changed by ``set_params`` between calls,
        or restored from a pickle: the optimizer's state holds the learning
        rate it was saved with): ``learning_rate``, ``accumulation_steps``,
        and for counted leaves ``prior_strength`` and ``linear_learning_rate``.

        A new ``accumulation_steps`` applies from the pending step on: its
        gradient (the mean of the pending rounds over the old value) is
        rescaled to the new one, and if the pending rounds already fill a step
        they make one now.
        """
        self.learning_rate = est.learning_rate
        for group in self.optimizer.param_groups:
            group["lr"] = est.learning_rate
        if est.accumulation_steps != self.accumulation_steps:
            old, self.accumulation_steps = self.accumulation_steps, est.accumulation_steps
            if self.pending:
                scale = old / max(self.accumulation_steps, self.pending)
                for p in self.params:
                    if p.grad is not None:
                        p.grad.mul_(scale)
                if self.pending >= self.accumulation_steps:
                    self._step()
                    self.pending = 0
                    self._check_weights(type(est).__name__)
        if self.linear is not None:
            self.linear_learning_rate = est.linear_learning_rate
        if self.counts is not None and self.prior_strength != est.prior_strength:
            self.prior_strength = est.prior_strength
            self._refresh_leaves()

    def load(self, state):
        self.module.load_state_dict(_to_torch(state["module"], self.device))
        if state["optimizer"] is not None:
            opt = _to_torch(state["optimizer"], "cpu")
            # Optimizer buffers live with their parameters.
            opt["state"] = {
                k: {n: (t.to(self.device) if n != "step" else t) for n, t in v.items()}
                for k, v in opt["state"].items()
            }
            self.optimizer.load_state_dict(opt)
        for p, g in zip(self.params, state["grads"]):
            p.grad = None if g is None else torch.from_numpy(g.copy()).to(self.device)
        self.pending = int(state["pending"])
        # the values the state was built with (configure applies newer ones)
        self.accumulation_steps = int(state.get("accumulation_steps", self.accumulation_steps))
        if self.counts is not None:
            self.prior_strength = float(state.get("prior_strength", self.prior_strength))
            self.tiebreak = state["tiebreak"].copy()
            self.counts = state["counts"].copy()
            self.pending_counts = state["pending_counts"].copy()
        if self.linear is not None:
            self.linear = state["linear"].copy()
            self.pending_linear = state["pending_linear"].copy()

    def dump(self):
        state = {
            "module": _to_numpy(self.module.state_dict()),
            "optimizer": _to_numpy(self.optimizer.state_dict()),
            "grads": [None if p.grad is None else _to_numpy(p.grad) for p in self.params],
            "pending": self.pending,
            "accumulation_steps": self.accumulation_steps,
        }
        if self.counts is not None:
            state.update(prior_strength=self.prior_strength, tiebreak=self.tiebreak.copy(), counts=self.counts.copy(),
                         pending_counts=self.pending_counts.copy())
        if self.linear is not None:
            state.update(linear=self.linear.copy(), pending_linear=self.pending_linear.copy())
        return state

    @torch.no_grad()
    def drop_features(self, mask):
        """Zero the first layer's weights of the features ``mask`` (constant
        in the contexts that created the learner: their standardized values
        are 0 there and their random weights would route by them later).
        Should they vary in later rounds, their weights train from 0."""
        first = self.module.layers[0].weight
        first[:, torch.as_tensor(mask, device=first.device)] = 0.0

    @torch.no_grad()
    def init_thresholds(self, Z, principal=False):
        """Move every split's threshold to the median of its region's contexts.

        ``Z`` are the (standardized, unlabelled) contexts of the call that
        creates the learner. The random directions stay; node by node from
        the root, the bias of the last layer is shifted so that the node
        splits the contexts reaching it in halves (:func:`_middle_gap`), the
        partition of a random projection tree: every leaf covers a comparable
        share of the contexts, instead of the cones through the mean that
        zero biases give. A node reached by fewer than 2 distinct scores
        keeps its bias.
        """
        x = to_tensor(Z, self.device, dtype=DTYPE)
        for layer in self.module.layers[:-1]:
            x = layer(x)
        last = self.module.layers[-1]
        if principal:
            H = x.double().cpu().numpy()
            W = last.weight.detach().double().cpu().numpy().copy()
            _principal_directions(H, W, last.bias.detach().double().cpu().numpy())
            last.weight.copy_(torch.as_tensor(W, dtype=last.weight.dtype))
        a = last(x).double().cpu().numpy()
        n_internal = a.shape[1]
        shift = np.zeros(n_internal)
        node = np.zeros(a.shape[0], dtype=np.int64)
        rows = np.arange(a.shape[0])
        while True:
            inside = node < n_internal
            if not inside.any():
                break
            for i in np.unique(node[inside]):
                shift[i] = _middle_gap(a[node == i, i])
            score = a[rows[inside], node[inside]] - shift[node[inside]]
            node[inside] = 2 * node[inside] + 1 + (score > 0)
        bias = self.module.layers[-1].bias
        bias.sub_(torch.as_tensor(shift, dtype=bias.dtype, device=bias.device))

    # ------------------------------------------------------------ leaf counts
    def played_surrogate(self, out, actions, losses, propensities):
        """Per-round surrogate of the classifier's played actions.

        With counted leaves, :func:`reward_surrogate` (and the rounds are
        counted); with trained leaves, eq. 8 (:func:`classification_surrogate`).
        """
        dev = out.device
        a = torch.as_tensor(actions, dtype=torch.long, device=dev)
        r = torch.as_tensor(1.0 - losses, dtype=out.dtype, device=dev)
        if self.counts is None:
            p = torch.as_tensor(propensities, dtype=out.dtype, device=dev)
            return classification_surrogate(out, a, r, p)
        self.observe(actions, 1.0 - losses)
        return reward_surrogate(out, a, r)

    def observe(self, actions, rewards):
        """Count the rounds being scored (the rows of the current forward pass).

        Called by the classifier's surrogate with the played actions and
        their rewards; the counts enter the leaves at the next optimizer
        step, together with the accumulated gradient.
        """
        if self.counts is None:
            return
        if self.linear is not None:
            g = self._linear_reward[np.arange(actions.size), actions]
            np.add.at(self.pending_linear, actions, (g - rewards)[:, None] * self._z)
            rewards = rewards - g  # the leaves count what the linear model misses
        np.add.at(self.pending_counts[0], (self._leaf, actions), 1.0)
        np.add.at(self.pending_counts[1], (self._leaf, actions), rewards)

    def _refresh_leaves(self):
        est = leaf_reward_estimates(self.counts[0], self.counts[1], self.prior,
                                    self.prior_strength)
        with torch.no_grad():
            self.module.leaf.copy_(torch.from_numpy(est + self.tiebreak))

    def _step(self):
        if self.params:
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        if self.linear is not None:
            self.linear -= self.linear_learning_rate * self.pending_linear
            self.pending_linear[:] = 0.0
        if self.counts is not None:
            self.counts += self.pending_counts
            self.pending_counts[:] = 0.0
            self._refresh_leaves()

    def splits(self):
        """Collapsed ``(W, b)`` in the standardized space and the leaf parameters."""
        W, b = self.module.collapse()
        return W, b, self.module.leaf.detach().cpu().double().numpy()

    # ------------------------------------------------------------ divergence
    #: Routing parameters whose norm exceeds this multiple of (their initial
    #: norm + 1) have exploded: no sensible update sequence takes standardized
    #: splits there, while a too large learning_rate does within a few rounds.
    #: Leaf values are not watched: a regressor's leaves legitimately grow to
    #: the scale of the targets.
    EXPLOSION_FACTOR = 1e3

    def _routing_norm(self):
        with torch.no_grad():
            total = sum(
                float((p.detach().double() ** 2).sum())
                for n, p in self.module.named_parameters()
                if n != "leaf"
            )
        return total**0.5

    def _check_weights(self, name):
        norm = self._routing_norm()
        limit = self.EXPLOSION_FACTOR * (self.reference_norm + 1.0)
        if not norm <= limit:
            raise FloatingPointError(
                f"{name} diverged: the norm of its split parameters grew from "
                f"{self.reference_norm:.3g} to {norm:.3g} (more than {limit:.3g}). "
                f"Try a smaller learning_rate (currently {self.learning_rate})."
            )

    # ------------------------------------------------------------ rounds
    def run(self, Z, round_loss, name, on_rounds=None):
        """Process the rows of ``Z`` as consecutive rounds.

        ``round_loss(outputs, leaves, rows)`` returns the per-round surrogate
        losses (a tensor) of the rows ``rows`` (indices into ``Z``) given the
        module's outputs on them; it may draw the actions it scores (``fit``'s
        simulation). ``on_rounds(k)``, when given, is called after every
        ``k`` rounds processed (progress display). Returns the hard leaf of
        every row at its round.
        """
        n = Z.shape[0]
        Zt = to_tensor(Z, self.device, dtype=DTYPE)
        leaves = np.empty(n, dtype=np.int64)
        start = 0
        self.module.train()
        while start < n:
            stop = min(n, start + self.accumulation_steps - self.pending)
            rows = np.arange(start, stop)
            out, leaf = self.module.forward_with_leaf(Zt[start:stop])
            self._leaf = leaf.cpu().numpy()
            if self.linear is not None:
                self._z = np.column_stack([Z[start:stop], np.ones(stop - start)]).astype(np.float64)
                self._linear_reward = linear_rewards(self._z, self.linear)
                out = out + torch.as_tensor(self._linear_reward, dtype=out.dtype, device=out.device)
            loss = round_loss(out, leaf, rows)
            total = loss.sum() / self.accumulation_steps
            if not torch.isfinite(total):
                raise FloatingPointError(
                    f"{name}: the bandit update became {float(total.detach())}; check the "
                    "losses / propensities passed, or lower learning_rate."
                )
            total.backward()
            leaves[start:stop] = self._leaf
            self.pending += stop - start
            if self.pending == self.accumulation_steps:
                self._step()
                self.pending = 0
                self._check_weights(name)
            if on_rounds is not None:
                on_rounds(stop - start)
            start = stop
        return leaves
