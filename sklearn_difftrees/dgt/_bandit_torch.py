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

__all__ = ["OnlineDGT", "classification_surrogate", "regression_surrogate"]

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


def regression_surrogate(pred, derivative):
    """Per-round loss whose gradient is ``derivative * grad(pred)`` (eq. 6)."""
    return derivative.detach() * pred[:, 0]


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
        self.accumulation_steps = est.accumulation_steps
        n_features, n_outputs = est.n_features_in_, est._n_outputs()
        with seeded(est._seed):
            module = DGTModule(
                n_features, est.max_depth, n_outputs, est._hidden_sizes(), row_scale=True
            )
            if is_classifier(est) and n_outputs > 2:
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
        self.optimizer = make_optimizer(est.optimizer, self.params, est.learning_rate, est.momentum)
        self.pending = 0
        if state is not None:
            self.load(state)

    # ------------------------------------------------------------ state
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

    def dump(self):
        return {
            "module": _to_numpy(self.module.state_dict()),
            "optimizer": _to_numpy(self.optimizer.state_dict()),
            "grads": [None if p.grad is None else _to_numpy(p.grad) for p in self.params],
            "pending": self.pending,
        }

    def splits(self):
        """Collapsed ``(W, b)`` in the standardized space and the leaf parameters."""
        W, b = self.module.collapse()
        return W, b, self.module.leaf.detach().cpu().double().numpy()

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
            loss = round_loss(out, leaf, rows)
            total = loss.sum() / self.accumulation_steps
            if not torch.isfinite(total):
                raise FloatingPointError(
                    f"{name}: the bandit update became {float(total.detach())}; check the "
                    "losses / propensities passed, or lower learning_rate."
                )
            total.backward()
            leaves[start:stop] = leaf.cpu().numpy()
            self.pending += stop - start
            if self.pending == self.accumulation_steps:
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.pending = 0
            if on_rounds is not None:
                on_rounds(stop - start)
            start = stop
        return leaves
