"""Private wrapper of the compiled loss-augmented inference (``cython_src/_lai.pyx``).

Validates and copies what the kernel reads, allocates what it writes, and
returns the per-sample results as a :class:`LAIResult`. The training loop of
``_classes.py`` calls it once per mini-batch; the tests compare it with a
brute-force enumeration of all codes ``g``.
"""

from typing import NamedTuple

import numpy as np

from .._kernels._lai import _co2_level_epoch, _loss_augmented_inference, _sgd_epoch

__all__ = ["CO2LevelEpochs", "LAIResult", "SGDEpochs", "leaf_losses",
           "loss_augmented_inference"]

_LOSSES = {"log": 0, "squared": 1}
_MODES = {"exact": 0, "fast": 1}


class LAIResult(NamedTuple):
    """Per-sample output of :func:`loss_augmented_inference`.

    Attributes
    ----------
    g_leaf : ndarray of shape (n_samples,), int64
        Leaf number (0 .. 2**depth - 1, left to right) of the loss-augmented
        code ``g`` (eq. 10, or eq. 13 for ``inference="fast"``).
    h_leaf : ndarray of shape (n_samples,), int64
        Leaf number of the prediction ``f(sgn(Wx + b))``.
    bound : ndarray of shape (n_samples,)
        ``max_g [g^T s + loss(theta_f(g), y)] - max_h h^T s`` (eq. 7 / 13, or
        eq. 14 with the frozen assignment); never below the loss of ``h_leaf``.
    diff_node : ndarray of shape (n_samples, 2 * depth), int64
        Internal nodes (heap index) where ``g`` and ``h`` differ, padded
        with -1.
    diff_sign : ndarray of shape (n_samples, 2 * depth), int8
        ``(g_i - h_i) / 2`` at those nodes (+1 or -1), padded with 0.
    """

    g_leaf: np.ndarray
    h_leaf: np.ndarray
    bound: np.ndarray
    diff_node: np.ndarray
    diff_sign: np.ndarray


def _lse(theta):
    mx = theta.max(axis=1, keepdims=True)
    return (mx + np.log(np.exp(theta - mx).sum(axis=1, keepdims=True)))[:, 0]


def _kernel_rows(X):
    """``X`` as the kernels read it: C-contiguous float32 or float64."""
    X = np.ascontiguousarray(X)
    return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)


def _check_updated(*arrays):
    """The arrays a training kernel updates in place: float64, C-contiguous."""
    if any(a.dtype != np.float64 or not a.flags.c_contiguous for a in arrays):
        raise ValueError("W, b and theta must be float64 C-contiguous arrays.")


def leaf_losses(theta, leaves, y, loss):
    """Loss of leaf ``leaves[n]``'s parameters on target ``y[n]`` (numpy)."""
    theta = np.asarray(theta, dtype=np.float64)
    if loss == "log":
        return _lse(theta)[leaves] - theta[leaves, np.asarray(y, dtype=np.int64)]
    diff = theta[leaves] - np.asarray(y, dtype=np.float64).reshape(len(leaves), -1)
    return (diff**2).sum(axis=1)


def loss_augmented_inference(X, W, b, theta, y, *, loss="log", inference="fast", assign=None):
    """Loss-augmented inference of a complete oblique tree for a batch.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
        Inputs (the space ``W`` acts on).
    W : ndarray of shape (2**depth - 1, n_features)
        Node weights; node score ``s = W @ x + b``; ``s > 0`` goes right.
    b : ndarray of shape (2**depth - 1,)
    theta : ndarray of shape (2**depth, n_outputs)
        Leaf parameters: logits (``loss="log"``) or values (``"squared"``).
    y : ndarray of shape (n_samples,) (class codes) or (n_samples, n_outputs)
    loss : {"log", "squared"}
    inference : {"fast", "exact"}
        ``"exact"`` maximizes over every code (O(2**depth p) per sample),
        ``"fast"`` over the Hamming ball of radius 1 around ``sgn(s)``
        (O(depth**2 p)).
    assign : ndarray of shape (n_samples,) of int or None
        Frozen leaf assignment ``a(x)`` of stable SGD (eq. 14); ``-1`` (or
        ``None`` for all rows) gives the plain bound with ``h = sgn(s)``.

    Returns
    -------
    result : LAIResult
    """
    X = _kernel_rows(X)
    W = np.ascontiguousarray(W, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    n, m = X.shape[0], W.shape[0]
    depth = int(round(np.log2(m + 1)))
    if (
        X.ndim != 2
        or W.ndim != 2
        or W.shape[1] != X.shape[1]
        or 2**depth - 1 != m
        or m < 1
        or depth > 62
        or b.shape != (m,)
        or theta.ndim != 2
        or theta.shape[0] != m + 1
    ):
        raise ValueError(
            f"Inconsistent shapes: X {X.shape}, W {W.shape}, b {b.shape}, theta {theta.shape}."
        )
    if loss not in _LOSSES or inference not in _MODES:
        raise ValueError(f"Unknown loss {loss!r} or inference {inference!r}.")
    dummy_cls = np.zeros(1, dtype=np.int64)
    dummy_reg = np.zeros((1, 1), dtype=np.float64)
    if loss == "log":
        y_cls = np.ascontiguousarray(y, dtype=np.int64).reshape(-1)
        if y_cls.shape != (n,) or (n and (y_cls.min() < 0 or y_cls.max() >= theta.shape[1])):
            raise ValueError("y must hold one class code in [0, n_classes) per row.")
        # Exact inference reads every leaf: precompute log-sum-exp once; fast
        # inference computes it for the D + 1 leaves it visits (empty array).
        y_reg = dummy_reg
        lse = _lse(theta) if inference == "exact" else np.zeros(0)
    else:
        y_reg = np.ascontiguousarray(y, dtype=np.float64).reshape(n, -1)
        if y_reg.shape[1] != theta.shape[1]:
            raise ValueError("y and theta must have the same number of outputs.")
        y_cls, lse = dummy_cls, np.zeros(m + 1)
    if assign is None:
        assign = np.full(n, -1, dtype=np.int64)
    else:
        assign = np.ascontiguousarray(assign, dtype=np.int64).reshape(-1)
        if assign.shape != (n,) or (n and assign.max() > m):
            raise ValueError("assign must hold one leaf number (or -1) per row.")
    g_leaf = np.empty(n, dtype=np.int64)
    h_leaf = np.empty(n, dtype=np.int64)
    bound = np.empty(n, dtype=np.float64)
    diff_node = np.empty((n, 2 * depth), dtype=np.int64)
    diff_sign = np.empty((n, 2 * depth), dtype=np.int8)
    exact = inference == "exact"
    scores = np.empty(m if exact else 0)
    penalty = np.empty(2 * m + 1 if exact else 0)
    if n:
        _loss_augmented_inference(
            X, W, b, theta, lse, y_cls, y_reg, assign, depth,
            _LOSSES[loss], _MODES[inference], g_leaf, h_leaf, bound, diff_node, diff_sign,
            scores, penalty,
        )
    return LAIResult(g_leaf, h_leaf, bound, diff_node, diff_sign)


class SGDEpochs:
    """The epochs of Algorithm 1 on ``(X, y, w)``, each one compiled call.

    Holds the parameters ``W``, ``b``, ``theta`` (updated in place: the
    caller's float64 C-contiguous arrays), their momentum, the rows that
    ever received a gradient (their momentum is the only nonzero one, so a
    step moves only them: the dense momentum step at O(touched) instead of
    O(2^D)) and the per-batch scratch buffers, from one epoch to the next.
    :meth:`run` is one epoch: every mini-batch of ``batch_size`` rows of
    ``perm`` in turn does loss-augmented inference (as
    :func:`loss_augmented_inference`), the bound's split and leaf gradients,
    the momentum step and the projection ``||[w_i, b_i]|| <= nu``
    (``cython_src/_lai.pyx``, ``_sgd_epoch``).
    """

    def __init__(self, X, y, w, W, b, theta, *, loss, inference, batch_size, learning_rate,
                 momentum, nu):
        self.X = _kernel_rows(X)
        _check_updated(W, b, theta)
        self.W, self.b, self.theta = W, b, theta
        n, m = self.X.shape[0], W.shape[0]
        depth = int(round(np.log2(m + 1)))
        if W.shape[1] != self.X.shape[1] or 2**depth - 1 != m or depth > 62:
            raise ValueError(f"Inconsistent shapes: X {self.X.shape}, W {W.shape}.")
        if b.shape != (m,) or theta.ndim != 2 or theta.shape[0] != m + 1:
            raise ValueError(f"Inconsistent shapes: W {W.shape}, b {b.shape}, "
                             f"theta {theta.shape}.")
        self.depth = depth
        self.loss, self.mode = _LOSSES[loss], _MODES[inference]
        self.y_cls, self.y_reg = _targets(y, loss, n, theta.shape[-1])
        self.w = _row_weights(w, n)
        self.batch_size = _batch_size(batch_size)
        self.step = (float(learning_rate), float(momentum), float(nu))
        K = theta.shape[1]
        self.state = (np.zeros_like(W), np.zeros_like(b), np.zeros_like(theta),
                      np.zeros_like(W), np.zeros_like(b), np.zeros_like(theta),
                      np.zeros(m, dtype=np.uint8), np.zeros(m, dtype=np.int64),
                      np.zeros(m + 1, dtype=np.uint8), np.zeros(m + 1, dtype=np.int64),
                      np.zeros(2, dtype=np.int64))
        nb, exact = max(1, min(self.batch_size, n)), inference == "exact"
        self.scratch = (np.empty(nb, dtype=np.int64), np.empty(nb, dtype=np.int64),
                        np.empty(nb), np.empty((nb, 2 * depth), dtype=np.int64),
                        np.empty((nb, 2 * depth), dtype=np.int8),
                        np.empty(m if exact else 0), np.empty(2 * m + 1 if exact else 0),
                        np.empty(m + 1 if exact and loss == "log" else 0), np.empty(K))

    def run(self, perm, assign=None):
        """One epoch over the rows ``perm``, frozen leaves ``assign`` (all rows)
        or None; returns the sum over the batches of their mean bound times
        their rows. Raises ``FloatingPointError`` (with the bound) when a
        batch's bound is not finite; that batch is not applied."""
        perm = _row_order(perm, self.X.shape[0])
        if min(self.batch_size, perm.size) > self.scratch[0].size:
            raise ValueError("perm has more rows than X and batch_size more than X's rows.")
        if assign is None:
            assign = np.zeros(0, dtype=np.int64)
        else:
            assign = np.ascontiguousarray(assign, dtype=np.int64).reshape(-1)
            if assign.shape != (self.X.shape[0],) or assign.max() > self.W.shape[0]:
                raise ValueError("assign must hold one leaf number (or -1) per row of X.")
        result = np.zeros(2)
        status = _sgd_epoch(self.X, self.y_cls, self.y_reg, self.w, perm, assign,
                            self.batch_size, self.depth, self.loss, self.mode, *self.step,
                            self.W, self.b, self.theta, *self.state, *self.scratch, result)
        if status:
            raise FloatingPointError(float(result[1]))
        return float(result[0])


def _targets(y, loss, n, n_outputs):
    """``(y_cls, y_reg)`` of the kernels: class codes in ``[0, n_outputs)``
    or ``(n, n_outputs)`` target rows (a dummy for the other); the kernels
    index them without checks."""
    if loss == "log":
        y_cls = np.ascontiguousarray(y, dtype=np.int64).reshape(-1)
        if y_cls.shape != (n,) or (n and (y_cls.min() < 0 or y_cls.max() >= n_outputs)):
            raise ValueError("y must hold one class code in [0, n_classes) per row.")
        return y_cls, np.zeros((1, 1))
    y_reg = np.ascontiguousarray(y, dtype=np.float64)
    if y_reg.size != n * n_outputs:
        raise ValueError("y and theta must have the same number of outputs.")
    return np.zeros(1, dtype=np.int64), y_reg.reshape(n, n_outputs)


def _row_weights(w, n):
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"w must hold one weight per row of X ({n}), got {w.shape}.")
    return w


def _batch_size(batch_size):
    batch_size = int(batch_size)
    if batch_size < 1:  # the kernels' batch loop would not advance
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    return batch_size


def _row_order(perm, n):
    """``perm`` as the kernels read it: int64 indices into the ``n`` rows."""
    perm = np.ascontiguousarray(perm, dtype=np.int64)
    if perm.ndim != 1 or (perm.size and (perm.min() < 0 or perm.max() >= n)):
        raise ValueError(f"perm must hold row indices in [0, {n}).")
    return perm


class CO2LevelEpochs:
    """The epochs of one CO2 level's depth-1 bounds, each one compiled call.

    Row ``r`` of ``X`` belongs to the level's node ``node_of[r]``, whose
    stump is ``W[node]``, ``b[node]`` with leaves ``theta[node, 0 / 1]``
    (float64 C-contiguous, updated in place). :meth:`run` is one epoch over
    the rows ``perm``: mini-batches of ``batch_size``, each row's
    loss-augmented side, the gradients normalized per node by the weight of
    its rows in the batch, the momentum step of every node and the
    projection ``||[w_i, b_i]|| <= nu`` (``cython_src/_lai.pyx``,
    ``_co2_level_epoch``).
    """

    def __init__(self, X, y, w, node_of, W, b, theta, *, loss, batch_size, learning_rate,
                 momentum, nu):
        self.X = _kernel_rows(X)
        _check_updated(W, b, theta)
        n, n_nodes = self.X.shape[0], W.shape[0]
        if (W.ndim != 2 or W.shape[1] != self.X.shape[1] or b.shape != (n_nodes,)
                or theta.ndim != 3 or theta.shape[:2] != (n_nodes, 2)):
            raise ValueError(f"Inconsistent shapes: X {self.X.shape}, W {W.shape}, "
                             f"b {b.shape}, theta {theta.shape}.")
        self.params = (W, b, theta)
        self.y_cls, self.y_reg = _targets(y, loss, n, theta.shape[2])
        self.w = _row_weights(w, n)
        self.node_of = np.ascontiguousarray(node_of, dtype=np.int64).reshape(-1)
        if self.node_of.shape != (n,):
            raise ValueError("node_of must hold one node per row of X.")
        self.loss = _LOSSES[loss]
        self.step = (float(learning_rate), float(momentum), float(nu))
        self.batch_size = _batch_size(batch_size)
        self.state = (np.zeros_like(W), np.zeros_like(b), np.zeros_like(theta),
                      np.zeros_like(W), np.zeros_like(b), np.zeros_like(theta),
                      np.zeros(W.shape[0]), np.zeros(theta.shape[2]))

    def run(self, perm):
        """One epoch over the rows ``perm`` (indices into ``X``)."""
        perm = _row_order(perm, self.X.shape[0])
        nodes = self.node_of[perm]
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self.params[0].shape[0]):
            raise ValueError("node_of of the rows of perm must be nodes of W.")
        _co2_level_epoch(self.X, self.y_cls, self.y_reg, self.w, self.node_of, perm,
                         self.batch_size, self.loss, *self.step, *self.params, *self.state)
