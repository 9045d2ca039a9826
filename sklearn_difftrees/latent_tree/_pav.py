"""Private wrapper around the compiled tree-isotonic (PAV) kernel.

The kernel (``cython_src/_pav.pyx``) solves problem (4) of Zantedeschi et al.
(2021) by the generalised pool-adjacent-violators Algorithm 1 with the
closed-form pooled subproblem of Proposition 2, and differentiates it with
the Jacobian stated after Proposition 2. This module owns all the safety:
validation, private C-contiguous copies, the one global sort, and the
allocation of every array the kernel writes. User arrays are never written.
"""

import numbers

import numpy as np

from .._kernels._pav import _tree_isotonic_backward, _tree_isotonic_forward

__all__ = []  # private module: nothing here is public API


class _PAVContext:
    """What the backward pass needs from a forward pass (private, read-only).

    Per node: ``grp`` (group id = heap index of the group's top node) and
    ``a_node`` (float64 solution). Per group id ``g`` (valid where
    ``grp[g] == g``): ``kstar`` (k*), ``denom`` (lam*|G| + k*, float64),
    ``interior`` (0 < a_G < 1), ``gsize`` (|G|) and ``head``; the support set
    S*_G is the first ``kstar[g]`` entries of the linked list
    ``head[g] -> nxt[...]``, an entry ``e`` standing for ``(i, t) =
    (e % n, e // n)``. ``v`` is ``(q + 1/2).T.ravel()`` in float64.
    """

    __slots__ = (
        "dtype", "n", "T", "lam", "v", "nxt", "head", "grp", "gsize",
        "a_node", "kstar", "denom", "interior",
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
            out.append((e % self.n) * self.T + e // self.n)
            e = int(self.nxt[e])
        return np.asarray(out, dtype=np.int64)


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
    # The one sort of Algorithm 1 (the paper's "sort once"), done per node:
    # order[t] lists the rows by q[:, t] descending (groups merge these sorted
    # lists). Negation is exact, so float32 and float64 give the same order
    # up to ties, which do not change the solution.
    neg_qt = np.negative(q.T, order="C")  # new array, q is left alone
    order = np.argsort(neg_qt, axis=1).astype(np.int64, copy=False)

    v = np.empty(n * T, dtype=np.float64)
    nxt = np.empty(n * T, dtype=np.int64)
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
        q, lam, order, v, nxt, head, grp, gsize, ag, kstar, denom, interior,
        a_node, a, z,
    )
    ctx = _PAVContext(
        dtype=dtype, n=n, T=T, lam=lam, v=v, nxt=nxt, head=head, grp=grp,
        gsize=gsize, a_node=a_node, kstar=kstar, denom=denom,
        interior=interior,
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
    grad_a = np.array(grad_a, dtype=dtype, order="C", copy=True)
    grad_z = np.array(grad_z, dtype=dtype, order="C", copy=True)
    ga = np.empty(T, dtype=np.float64)
    grad_q = np.empty((n, T), dtype=dtype)
    _tree_isotonic_backward(
        ctx.v, ctx.a_node, ctx.grp, ctx.head, ctx.nxt, ctx.kstar, ctx.denom,
        ctx.interior, grad_a, grad_z, ga, grad_q,
    )
    return grad_q
