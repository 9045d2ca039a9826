"""Torch-free wrappers of the compiled conditional passes (``_kernels/_polytope``).

The kernels are dumb; these functions own safety: they cast every array to
one dtype (float32 or float64, the dtype of ``X``), make them C-contiguous
private copies when needed, check the shapes and allocate every output.
"""

import functools
import sys

import numpy as np

from .._core._guard import check_fitted_arrays
from .._kernels._polytope import FACET_CHUNK, MAX_DEPTH, _polytope_backward, _polytope_forward

__all__ = ["MAX_DEPTH", "PolytopeRecord", "child_table", "polytope_backward", "polytope_forward"]


def child_table(split_nodes, leaves):
    """``(S, 2)`` int32 children of the kernels: a split child's position in
    ``split_nodes`` (``>= 0``) or a leaf's column in ``leaves`` as ``-1 - column``.

    ``split_nodes`` must be sorted heap indices with the root first, every
    child of a split node either splitting or in ``leaves``; raises
    ``ValueError`` when the tree is deeper than the kernels' stacks.
    """
    pos = {int(v): i for i, v in enumerate(split_nodes)}
    col = {int(v): i for i, v in enumerate(leaves)}
    table = np.empty((len(pos), 2), dtype=np.int32)
    for v, i in pos.items():
        for side in (0, 1):
            c = 2 * v + 1 + side
            table[i, side] = pos[c] if c in pos else -1 - col[c]
    if pos and max(int(np.log2(v + 1)) for v in pos) >= MAX_DEPTH:
        raise ValueError(f"The conditional passes support trees of depth <= {MAX_DEPTH}.")
    return table


@functools.lru_cache(maxsize=64)
def _check_child_bytes(data, S, n_leaves):
    child = np.frombuffer(data, dtype=np.int32).reshape(S, 2)
    c = child.ravel()
    split, leaf = c[c >= 0], -1 - c[c < 0]
    owner = np.repeat(np.arange(S), 2)[c >= 0]
    if (split >= S).any() or (leaf >= n_leaves).any() or (split <= owner).any():
        return "a child outside the tree or not after its parent"
    if np.bincount(split, minlength=S).max(initial=0) > 1 or np.bincount(
            leaf, minlength=max(n_leaves, 1)).max(initial=0) > 1:
        return "a node or leaf column with two parents"
    # Depth of every split node by pointer jumping (children come after
    # their parents, so the root, position 0, is every node's ancestor).
    parent = np.zeros(S, dtype=np.int64)
    parent[split] = owner
    depth, anc = (np.arange(S) > 0).astype(np.int64), parent.copy()
    for _ in range(int(np.ceil(np.log2(max(S, 2))))):
        depth = depth + np.where(anc > 0, depth[anc], 0)
        anc = anc[anc]
    if depth.max(initial=0) >= MAX_DEPTH:
        return f"a tree deeper than {MAX_DEPTH}"
    return None


def _check_child(child, n_leaves):
    """Raise ``ValueError`` unless ``child`` is a valid children table for
    ``n_leaves`` leaf columns (positions in range and after their parent,
    one parent each, depth below ``MAX_DEPTH``): what the kernels trust.
    Cached on the table's bytes (a module passes the same one every step)."""
    problem = _check_child_bytes(child.tobytes(), child.shape[0], int(n_leaves))
    if problem:
        raise ValueError(f"polytope kernels: invalid children table ({problem}).")


class PolytopeRecord:
    """What the forward pass keeps for the backward pass: per row, its
    expanded split nodes in pre-order (``node[i, :length[i]]``: position * 4
    + expanded-children flags), their reach and left probabilities
    (``value[i, e] = (R, exp(-s))``) and per facet ``softplus(z)`` and
    ``sigmoid(z)`` (``sp[i, e, :]``, ``sig[i, e, :]``); and the sizes of the
    tree it was made for (``n_nodes``, ``n_features``, ``n_leaves``)."""

    __slots__ = ("node", "value", "sp", "sig", "length", "n_nodes", "n_features", "n_leaves")

    def __init__(self, node, value, sp, sig, length, n_nodes, n_features, n_leaves):
        self.node, self.value, self.sp, self.sig, self.length = node, value, sp, sig, length
        self.n_nodes, self.n_features, self.n_leaves = n_nodes, n_features, n_leaves


def _as(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def _check(X, beta, bias, r, child, n_leaves):
    """Shapes, dtypes and layout of the (already cast) arrays, the core's
    check before any kernel call, and the children table."""
    S, K, p = beta.shape if beta.ndim == 3 and 0 not in beta.shape[:2] else (-1, -1, -1)
    check_fitted_arrays("polytope tree", [
        ("beta", beta, X.dtype, (S, K, p), False),
        ("bias", bias, X.dtype, (S, K), False),
        ("r", r, X.dtype, (S, K), False),
        ("child", child, np.int32, (S, 2), False),
        ("X", X, X.dtype, (None, p), False),
    ])
    if int(n_leaves) < 2:
        raise ValueError(f"polytope kernels: n_leaves={n_leaves}, a tree has at least 2.")
    _check_child(child, n_leaves)


def _threads(n_threads, n_rows):
    """OpenMP threads for ``n_rows`` rows: at most one per 64 rows (each
    thread of the backward pass zeroes and fills its own gradient buffers)."""
    return max(1, min(int(n_threads), -(-int(n_rows) // 64)))


def polytope_forward(X, beta, bias, r, child, n_leaves, *, eps=0.0, record=False, capacity=None,
                     pool=None, n_threads=1):
    """Leaf probabilities of the rows of ``X`` (conditional forward pass).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    beta : ndarray of shape (S, K, n_features)
    bias, r : ndarray of shape (S, K)
    child : ndarray of shape (S, 2), int32
        From :func:`child_table`.
    n_leaves : int
        Output columns (leaves).
    eps : float >= 0
        A split child reached with probability at most ``eps`` is not
        expanded (its leaves get 0). ``0``: exact.
    record : bool
        Keep what :func:`polytope_backward` needs.
    capacity : int, optional
        Record entries per row to allocate (default: ``S``, every split
        node); when a row needs more, the pass runs again with enough.
    pool : list, optional
        Records of earlier passes whose buffers a new record may take over
        once nothing else refers to them (training passes their backward
        pass, then drops them): fresh buffers of a few MB cost page faults
        on every step, which two threads contend for. At most
        ``POOL_SIZE`` records are kept.
    n_threads : int
        OpenMP threads over the rows.

    Returns
    -------
    P : ndarray of shape (n_samples, n_leaves)
    rec : PolytopeRecord or None
    """
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    X, bias, r = _as(X, dtype), _as(bias, dtype), _as(r, dtype)
    beta = np.asarray(beta, dtype=dtype)
    child = _as(child, np.int32)
    _check(X, beta, bias, r, child, n_leaves)
    n, (S, K, p) = X.shape[0], beta.shape
    Kp = -(-K // FACET_CHUNK) * FACET_CHUNK
    betaT = np.zeros((S, p, Kp), dtype=dtype)  # the kernel's layout (see _polytope.pyx)
    betaT[:, :, :K] = beta.transpose(0, 2, 1)
    n_threads = _threads(n_threads, n)
    out = np.empty((n, int(n_leaves)), dtype=dtype)
    # Per-thread scratch rows padded by 128 bytes: no two threads write the
    # same cache line (false sharing), whatever the buffer's alignment.
    work = np.empty((n_threads, 3 * Kp + 128 // X.itemsize), dtype=dtype)
    length = np.empty(n, dtype=np.int64)
    cap = min(S, max(1, int(capacity))) if record and capacity is not None else S
    while True:
        free = _free_record(pool, n, cap, K, dtype) if record else None
        if free is not None:
            node, value, sp, sig = free.node, free.value, free.sp, free.sig
            cap = node.shape[1]
        else:
            rows, width = (n, cap) if record else (1, 1)
            node = np.empty((rows, width), dtype=np.int32)
            value = np.empty((rows, width, 2), dtype=np.float64)
            sp = np.empty((rows, width, K), dtype=dtype)
            sig = np.empty((rows, width, K), dtype=dtype)
        _polytope_forward(X, betaT, bias, r, child, float(eps), out, work, node, value, sp, sig,
                          length, bool(record), n_threads)
        if not record:
            return out, None
        needed = int(length.max(initial=0))
        if needed <= cap:
            rec = PolytopeRecord(node, value, sp, sig, length, S, p, int(n_leaves))
            if pool is not None:
                pool.append(rec)
                del pool[:-POOL_SIZE]
            return out, rec
        cap = needed


#: Records a pool keeps (see polytope_forward): one in use by the step being
#: trained, one held by the previous step's graph, one spare.
POOL_SIZE = 3


def _free_record(pool, n, cap, K, dtype):
    """A record of ``pool`` that nothing else refers to and whose buffers
    fit ``n`` rows of ``cap`` to ``4 cap`` entries of ``K`` facets (removed
    from the pool), or None."""
    for i in range(len(pool or ())):
        # References: the pool's list, ``rec`` and getrefcount's argument.
        rec = pool[i]
        if (sys.getrefcount(rec) == 3 and rec.sp.shape[0] == n and rec.sp.shape[2] == K
                and rec.sp.dtype == dtype and cap <= rec.sp.shape[1] <= 4 * cap):
            return pool.pop(i)
    return None


def polytope_backward(X, r, child, grad_out, rec, n_features, *, n_threads=1):
    """Gradients ``(grad_beta, grad_bias, grad_r)`` of a loss with
    ``dL/dP = grad_out`` from the forward pass's :class:`PolytopeRecord`
    (in the record's dtype, accumulated per thread, then summed)."""
    dtype = rec.sp.dtype
    X, r, grad_out = _as(X, dtype), _as(r, dtype), _as(grad_out, dtype)
    child = _as(child, np.int32)
    S, K = r.shape
    n, width = X.shape[0], rec.node.shape[1]
    check_fitted_arrays("polytope tree", [
        ("X", X, dtype, (n, rec.n_features), False),
        ("r", r, dtype, (rec.n_nodes, None), False),
        ("child", child, np.int32, (rec.n_nodes, 2), False),
        ("grad_out", grad_out, dtype, (n, rec.n_leaves), False),
        ("record node", rec.node, np.int32, (n, width), False),
        ("record value", rec.value, np.float64, (n, width, 2), False),
        ("record sp", rec.sp, dtype, (n, width, K), False),
        ("record sig", rec.sig, dtype, (n, width, K), False),
        ("record length", rec.length, np.int64, (n,), False),
    ])
    filled = np.arange(width) < rec.length[:, None]
    if (n_features != rec.n_features or (rec.length > width).any() or (rec.length < 0).any()
            or ((rec.node[filled] >> 2) >= S).any() or (rec.node[filled] < 0).any()):
        raise ValueError("polytope_backward: the record does not match X, r.")
    _check_child(child, rec.n_leaves)
    n_threads = _threads(n_threads, n)
    grad_beta = np.zeros((n_threads, S, K, n_features), dtype=dtype)
    grad_bias = np.zeros((n_threads, S, K), dtype=dtype)
    grad_r = np.zeros((n_threads, S, K), dtype=dtype)
    _polytope_backward(X, r, child, grad_out, rec.node, rec.value, rec.sp, rec.sig, rec.length,
                       grad_beta, grad_bias, grad_r, n_threads)
    return tuple(g[0] if n_threads == 1 else g.sum(axis=0)
                 for g in (grad_beta, grad_bias, grad_r))
