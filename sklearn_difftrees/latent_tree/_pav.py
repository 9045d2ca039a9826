"""Private wrapper around the compiled tree-isotonic (PAV) kernel.

The kernel (``cython_src/_pav.pyx``) solves problem (4) of Zantedeschi et al.
(2021) by the generalised pool-adjacent-violators Algorithm 1 with the
closed-form pooled subproblem of Proposition 2, and differentiates it with
the Jacobian stated after Proposition 2. This module owns all the safety:
validation, private C-contiguous copies, the one global sort, and the
allocation of every array the kernel writes. User arrays are never written.
"""

import numbers
import threading

import numpy as np

from .._kernels._pav import _tree_isotonic_backward, _tree_isotonic_forward

__all__ = []  # private module: nothing here is public API


class _PAVContext:
    """What the backward pass needs from a forward pass (private, read-only).

    ``q`` is the forward input (private copy). Per node: ``grp`` (group id =
    heap index of the group's top node) and ``a_node`` (float64 solution).
    Per group id ``g`` (valid where ``grp[g] == g``): ``kstar`` (k*),
    ``denom`` (lam*|G| + k*, float64), ``interior`` (0 < a_G < 1), ``gsize``
    (|G|) and ``head``; the support set S*_G is the first ``kstar[g]``
    entries of the linked list ``head[g] -> nxt[...]``, an entry ``e``
    standing for ``(i, t) = (row[e], enode[e])``. Only entries with
    ``q + 1/2 > 0`` are stored (the others never matter, see the kernel).
    """

    __slots__ = (
        "dtype", "n", "T", "lam", "q", "nxt", "head", "grp", "gsize", "row",
        "enode", "a_node", "kstar", "denom", "interior",
    )

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
            setattr(self, key, value)

    def support(self, g):
        """Flat indices ``i*T + t`` of S*_G for group id ``g`` (for tests)."""
        out = []
        e = int(self.head[g])
        for _ in range(int(self.kstar[g])):
            out.append(int(self.row[e]) * self.T + int(self.enode[e]))
            e = int(self.nxt[e])
        return np.asarray(out, dtype=np.int64)


_SCRATCH = threading.local()


def _scratch(T, n):
    """Per-thread ``(keys, val)`` scratch buffers, reused between calls.

    Fresh multi-megabyte arrays cost page faults on every call (glibc gives
    them back to the OS when freed); a training loop calls the forward with
    the same shape at every step. Only the buffers of the last shape are kept.
    """
    cached = getattr(_SCRATCH, "buffers", None)
    if cached is None or cached[0].shape != (T, n):
        cached = (np.empty((T, n), dtype=np.uint64), np.empty(n * T, dtype=np.float64))
        _SCRATCH.buffers = cached
    return cached


def _check_float_array(x, name, ndim):
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise ValueError(
            f"{name} must have dtype float32 or float64, got {x.dtype}."
        )
    if x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite (no NaN or inf).")
    return x


def _depth_of_n_nodes(T):
    """``D`` with ``T == 2**(D + 1) - 1``, or ``None``."""
    if T < 1 or (T + 1) & T:
        return None
    return (T + 1).bit_length() - 2


def tree_isotonic_forward(q, lam):
    """Solve the LatentTree pruning problem (4) and return ``(a, z, ctx)``.

    Parameters
    ----------
    q : ndarray of shape (n_samples, n_nodes), float32 or float64
        Node rewards in heap order (children of ``t`` are ``2t+1, 2t+2``),
        leaves included, ``n_nodes == 2**(depth + 1) - 1``, ``n_samples >= 1``.
        ``q[:, 0]`` is the root's reward; callers fix it at 1 (the kernel
        treats the root like any other node). Never modified; read-only
        arrays are accepted.
    lam : float >= 0
        Pruning strength. The kernel solves (4) with exactly this value, i.e.
        ``lam/2 ||a||^2 + 1/2 sum_i sum_t max(q_it + 1/2 - a_t, 0)^2``, where
        the data term grows with ``n_samples`` and the penalty does not. Callers
        who want a batch-size-independent meaning (a per-sample ``lam``) must
        pass ``lam * n_samples``; the LatentTree estimator will do that.

    Returns
    -------
    a : ndarray of shape (n_nodes,), dtype of ``q``
        Node activations, ``0 <= a_child <= a_parent <= 1``. For ``lam == 0``
        the minimiser in ``a`` need not be unique; the smallest pooled
        minimiser (the ``lam -> 0+`` limit within each group) is returned.
    z : ndarray of shape (n_samples, n_nodes), dtype of ``q``
        ``z_it = clip(q_it + 1/2, 0, a_t)``.
    ctx : object
        Opaque state for :func:`tree_isotonic_backward`.
    """
    q = _check_float_array(q, "q", 2)
    n, T = q.shape
    if n < 1:
        raise ValueError("q must have at least one row.")
    if n > np.iinfo(np.int32).max:
        raise ValueError(f"q has {n} rows; at most {np.iinfo(np.int32).max} are supported.")
    if _depth_of_n_nodes(T) is None:
        raise ValueError(
            f"q must have 2**(depth + 1) - 1 columns (a complete tree in heap "
            f"order), got {T}."
        )
    if (
        isinstance(lam, (bool, np.bool_))
        or not isinstance(lam, numbers.Real)
        or not np.isfinite(lam)
        or lam < 0
    ):
        raise ValueError(f"lam must be a finite real number >= 0, got {lam!r}.")
    lam = float(lam)
    dtype = q.dtype
    q = np.array(q, dtype=dtype, order="C", copy=True)  # private copy
    # The one sort of Algorithm 1 ("sort once"): per node, the rows by
    # v = q + 1/2 descending. numpy's vectorized sort orders uint64 keys
    # holding the bits of max(v, 0) (non-negative float64 bit patterns order
    # like the values) with the row index in the low bits; the kernel keeps
    # the entries with v > 0 and recomputes their v exactly from q.
    row_bits = max(1, int(n - 1).bit_length())
    keys, val = _scratch(T, n)  # private scratch, overwritten below
    v = keys.view(np.float64)
    np.add(q.T, 0.5, out=v)  # (T, n)
    np.maximum(v, 0.0, out=v)
    keys >>= np.uint64(row_bits)
    keys <<= np.uint64(row_bits)
    keys |= np.arange(n, dtype=np.uint64)
    keys.sort(axis=1)
    # Exactly the entries with v > 0 (a nonzero value part in the key).
    m = max(1, int(np.count_nonzero(keys >= np.uint64(1 << row_bits))))
    start = np.empty(T + 1, dtype=np.int64)
    row = np.empty(m, dtype=np.int32)
    enode = np.empty(m, dtype=np.int32)
    nxt = np.empty(m, dtype=np.int64)
    head = np.empty(T, dtype=np.int64)
    grp = np.empty(T, dtype=np.int64)
    gsize = np.empty(T, dtype=np.int64)
    ag = np.empty(T, dtype=np.float64)
    kstar = np.empty(T, dtype=np.int64)
    denom = np.empty(T, dtype=np.float64)
    interior = np.empty(T, dtype=np.uint8)
    a_node = np.empty(T, dtype=np.float64)
    a = np.empty(T, dtype=dtype)
    z = np.empty((n, T), dtype=dtype)
    _tree_isotonic_forward(
        q, lam, keys, row_bits, start, val, row, enode, nxt, head, grp, gsize, ag, kstar, denom,
        interior, a_node, a, z,
    )
    ctx = _PAVContext(
        dtype=dtype, n=n, T=T, lam=lam, q=q, nxt=nxt, head=head, grp=grp,
        gsize=gsize, row=row, enode=enode, a_node=a_node, kstar=kstar,
        denom=denom, interior=interior,
    )
    return a, z, ctx


def tree_isotonic_backward(ctx, grad_a, grad_z):
    """Vector-Jacobian product of :func:`tree_isotonic_forward` w.r.t. ``q``.

    Parameters
    ----------
    ctx : object
        As returned by :func:`tree_isotonic_forward` (not modified; may be
        reused for several backward calls).
    grad_a : ndarray of shape (n_nodes,) or None
        Gradient of the loss w.r.t. ``a`` (``None`` means zeros).
    grad_z : ndarray of shape (n_samples, n_nodes) or None
        Gradient of the loss w.r.t. ``z`` (``None`` means zeros).

    Returns
    -------
    grad_q : ndarray of shape (n_samples, n_nodes), dtype of the forward ``q``
        ``d a_t / d q_it' = 1 / (lam |G| + k*)`` for ``(i, t')`` in the support
        set of ``t``'s group when ``0 < a_t < 1``, zero otherwise; ``z`` passes
        its gradient to ``q_it`` where ``0 < q_it + 1/2 < a_t`` and to ``a_t``
        where ``q_it + 1/2 >= a_t``. Exact almost everywhere; at kinks one
        generalised (Clarke) Jacobian element.
    """
    if not isinstance(ctx, _PAVContext):
        raise TypeError("ctx must come from tree_isotonic_forward.")
    n, T, dtype = ctx.n, ctx.T, ctx.dtype
    if grad_a is None:
        grad_a = np.zeros(T, dtype=dtype)
    if grad_z is None:
        grad_z = np.zeros((n, T), dtype=dtype)
    grad_a = _check_float_array(grad_a, "grad_a", 1)
    grad_z = _check_float_array(grad_z, "grad_z", 2)
    if grad_a.shape != (T,):
        raise ValueError(f"grad_a must have shape ({T},), got {grad_a.shape}.")
    if grad_z.shape != (n, T):
        raise ValueError(
            f"grad_z must have shape ({n}, {T}), got {grad_z.shape}."
        )
    # The kernel only reads them (const views): no copy unless dtype/layout
    # differ; read-only arrays are fine.
    grad_a = np.ascontiguousarray(grad_a, dtype=dtype)
    grad_z = np.ascontiguousarray(grad_z, dtype=dtype)
    ga = np.empty(T, dtype=np.float64)
    grad_q = np.empty((n, T), dtype=dtype)
    _tree_isotonic_backward(
        ctx.q, ctx.a_node, ctx.grp, ctx.head, ctx.nxt, ctx.row, ctx.enode,
        ctx.kstar, ctx.denom, ctx.interior, grad_a, grad_z, ga, grad_q,
    )
    return grad_q
