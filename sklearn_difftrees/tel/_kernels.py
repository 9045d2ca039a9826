"""Torch-free wrappers of the compiled TEL kernels (``_kernels/_tel``).

The kernels are dumb; these functions own safety: they cast every array to
one dtype (float32 or float64, the dtype of ``X``), make them C-contiguous
private copies when needed, allocate the outputs and grow the record buffers
of the conditional forward pass until every row fits.
"""

import numpy as np

from .._core._guard import check_fitted_arrays
from .._core._memory import check_memory
from .._kernels._tel import MAX_DEPTH, _tel_backward, _tel_forward

__all__ = [
    "MAX_DEPTH", "TELRecord", "ensemble_memory", "record_bound", "smooth_step", "tel_forward",
    "tel_backward",
]


def record_bound(W):
    """Most entries one row's record can hold: every node of every tree of
    the split weights ``W`` (``n_trees, 2**depth - 1, p``)."""
    return W.shape[0] * (2 * W.shape[1] + 1)


def ensemble_memory(n_trees, depth, n_features, n_outputs, dense_rows=0):
    """Estimated peak bytes of training an ensemble (for the memory limit).

    Per parameter: float32 value, gradient, two Adam moments, the saved best
    weights and the float64 arrays of the fitted model (about 56 bytes). The
    conditional passes add only per-row records (the nodes a row reaches);
    the dense backend evaluates every node of every tree for ``dense_rows``
    rows at once (scores, probabilities and their gradients, float32).
    """
    n_int = 2**depth - 1
    params = n_trees * (n_int * (n_features + 1) + (n_int + 1) * n_outputs)
    dense = dense_rows * n_trees * (3 * n_int + 2 * (2 * n_int + 1)) * 4 * 2
    return 56 * params + dense


def smooth_step(t, gamma):
    """Eq. (4) of the paper, vectorized in numpy: the probability of going right.

    ``0`` for ``t <= -gamma/2``, ``1`` for ``t >= gamma/2`` and the cubic
    ``-2 t^3 / gamma^3 + 3 t / (2 gamma) + 1/2`` in between.
    """
    t = np.asarray(t, dtype=np.float64)
    h = 0.5 * gamma
    inner = -2.0 / gamma**3 * t**3 + 1.5 / gamma * t + 0.5
    return np.where(t <= -h, 0.0, np.where(t >= h, 1.0, inner))


class TELRecord:
    """What the forward pass keeps for the backward pass (per row).

    ``node[i, :length[i]]`` holds ``tree * n_nodes + heap_node`` of the
    fractional nodes and reachable leaves of row ``i`` in pre-order, and
    ``value[i, :length[i]]`` their score (fractional nodes) or probability
    (leaves).
    """

    __slots__ = ("node", "value", "length")

    def __init__(self, node, value, length):
        self.node, self.value, self.length = node, value, length


def _as(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def _check_ensemble(X, W, b, O):
    """Shapes of the (already cast) arrays agree before any kernel call."""
    n_trees, n_int = (W.shape[0], W.shape[1]) if W.ndim == 3 else (-1, -1)
    depth = int(round(np.log2(n_int + 1))) if n_int > 0 else -1
    if depth < 1 or depth > MAX_DEPTH or 2**depth - 1 != n_int:
        n_int = -1  # the check below names W
    p = W.shape[2] if W.ndim == 3 else -1
    check_fitted_arrays("tree ensemble", [
        ("W", W, W.dtype, (n_trees, n_int, p), False),
        ("b", b, W.dtype, (n_trees, n_int), False),
        ("O", O, W.dtype, (n_trees, n_int + 1, None), False),
        ("X", X, W.dtype, (None, p), False),
    ])


def tel_forward(X, W, b, O, gamma, *, record=False, capacity=16, n_threads=1):
    """Conditional forward pass of a tree ensemble.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    W : ndarray of shape (n_trees, 2**depth - 1, n_features)
    b : ndarray of shape (n_trees, 2**depth - 1)
    O : ndarray of shape (n_trees, 2**depth, n_outputs)
    gamma : float > 0
    record : bool
        Keep the fractional trees for :func:`tel_backward`.
    capacity : int
        Initial record length per row (grown automatically).
    n_threads : int
        OpenMP threads over the rows.

    Returns
    -------
    out : ndarray of shape (n_samples, n_outputs)
    n_leaves : ndarray of shape (n_samples,)
        Reachable leaves of each row, summed over the trees.
    rec : TELRecord or None
    """
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    X, W, b, O = _as(X, dtype), _as(W, dtype), _as(b, dtype), _as(O, dtype)
    _check_ensemble(X, W, b, O)
    if record_bound(W) >= 2**31:
        raise ValueError("n_trees * (2**(depth + 1) - 1) must be below 2**31.")
    n = X.shape[0]
    out = np.empty((n, O.shape[2]), dtype=dtype)
    n_leaves = np.empty(n, dtype=np.int64)
    length = np.zeros(n, dtype=np.int64)
    cap = max(1, min(int(capacity), record_bound(W))) if record else 1
    node = np.empty((n if record else 1, cap), dtype=np.int32)
    value = np.empty((n if record else 1, cap), dtype=np.float64)
    _tel_forward(X, W, b, O, float(gamma), out, n_leaves, node, value, length,
                 bool(record), int(n_threads))
    if not record:
        return out, n_leaves, None
    over = np.flatnonzero(length > cap)
    if over.size:
        # Only the rows whose record was truncated run again, into buffers of
        # the longest one's exact size (their outputs are already complete).
        needed = int(length[over].max())
        # Every node can be fractional for every row (soft splits at the start
        # of training): checked before the buffers of that size are allocated.
        check_memory("TreeEnsembleLayer", 12 * (n + over.size) * needed,
                     f"n_trees={W.shape[0]}, depth={int(W.shape[1]).bit_length()} on a batch "
                     f"of {n} rows, whose conditional pass records up to {needed} fractional "
                     "nodes per row (a smaller batch_size, depth or n_trees)")
        sub_node = np.empty((over.size, needed), dtype=np.int32)
        sub_value = np.empty((over.size, needed), dtype=np.float64)
        _tel_forward(X[over], W, b, O, float(gamma), np.empty((over.size, O.shape[2]), dtype),
                     np.empty(over.size, np.int64), sub_node, sub_value,
                     np.empty(over.size, np.int64), True, int(n_threads))
        used = int(length[length <= cap].max(initial=0))  # the longest record that fit
        node, value = _widen(node, needed, used), _widen(value, needed, used)
        node[over], value[over] = sub_node, sub_value
    return out, n_leaves, TELRecord(node, value, length)


def _widen(a, columns, used):
    """``a`` with ``columns`` columns, of which the first ``used`` are copied."""
    wide = np.empty((a.shape[0], columns), dtype=a.dtype)
    wide[:, :used] = a[:, :used]
    return wide


def tel_backward(X, W, O, gamma, grad_out, rec, *, need_X=True, n_threads=1):
    """Conditional backward pass from a :class:`TELRecord`.

    Returns ``(grad_X or None, grad_W, grad_b, grad_O)`` in the dtype of ``X``
    (the parameter gradients are accumulated in that dtype per thread, then
    summed over the threads; with one thread, no copy).
    """
    dtype = X.dtype
    X, W, O = _as(X, dtype), _as(W, dtype), _as(O, dtype)
    grad_out = _as(grad_out, dtype)
    n_threads = max(1, int(n_threads))
    _check_ensemble(X, W, np.ascontiguousarray(W[:, :, 0]), O)
    n_trees, n_int, p = W.shape
    if (grad_out.shape != (X.shape[0], O.shape[2]) or rec.node.shape[0] != X.shape[0]
            or rec.node.shape != rec.value.shape or rec.length.shape != (X.shape[0],)
            or (rec.length > rec.node.shape[1]).any()):
        raise ValueError("tel_backward: grad_out or the forward record does not match X, W, O.")
    grad_X = np.empty(X.shape if need_X else (1, p), dtype=dtype)
    grad_W = np.zeros((n_threads, n_trees, n_int, p), dtype=dtype)
    grad_b = np.zeros((n_threads, n_trees, n_int), dtype=dtype)
    grad_O = np.zeros((n_threads,) + O.shape, dtype=dtype)
    _tel_backward(X, W, O, float(gamma), grad_out, rec.node, rec.value, rec.length,
                  grad_X, grad_W, grad_b, grad_O, bool(need_X), n_threads)
    # One thread: its buffer is the sum (no copy of the largest array).
    grad_W, grad_b, grad_O = (g[0] if n_threads == 1 else g.sum(axis=0)
                              for g in (grad_W, grad_b, grad_O))
    return grad_X if need_X else None, grad_W, grad_b, grad_O
