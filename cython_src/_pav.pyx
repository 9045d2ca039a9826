# Tree-structured isotonic optimisation (generalised PAV) for LatentTree.
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no allocation, no Python objects inside the loops.
# The Python layer (``sklearn_difftrees/latent_tree/_pav.py``) validates,
# makes private copies, sorts, allocates every output and scratch array.
#
# Problem (4) of Zantedeschi et al. (2021), "Learning binary decision trees by
# argmin differentiation", with v_it = q_it + 1/2 and m = |G|:
#
#     min_{a in [0,1]^T, a_t <= a_parent(t)}  sum_t g_t(a_t),
#     g_t(a) = lam/2 a^2 + sum_i 1/2 max(v_it - a, 0)^2,
#
# solved by Algorithm 1: every node starts as its own group; while some group
# top t has a_t > a_parent(t), the violator with the largest a_t is merged into
# its parent's group and the pooled value is recomputed (Proposition 2).
#
# Pooled 1-D problem (eq. (8)): f(a) = lam*m/2 a^2 + sum_j 1/2 max(v_j - a, 0)^2
# with v sorted descending. With c = lam*m, a(k) = (v_1 + .. + v_k) / (c + k),
# k* = smallest k with a(k) > v_(k+1) (v_(N+1) = -inf); k = 0 is a candidate
# only when c > 0 (then a(0) = 0). For c = 0 the minimiser set over [0, 1] is
# an interval and this picks its smallest point clip(v_1, 0, 1), which is also
# the limit lam -> 0+. a_G = clip(a(k*), 0, 1).
#
# Data layout. Only entries with v_it > 0 are stored: an entry with v <= 0 in
# a group's support set forces a_G <= 0 (clipped to 0, not interior), so such
# entries change neither a nor its Jacobian (a group without entries has
# a_G = 0, k* = 0). The one sort of Algorithm 1 is done by the Python layer
# with numpy's vectorized sort on packed uint64 keys (the bits of v with the
# row index in the low bits, see ``_tree_isotonic_forward``); the kernel then
# walks each node's keys from the largest and stores its positive entries
# contiguously (``start``; entry e holds ``val[e] = v``, recomputed exactly
# from q, the row ``row[e]`` and the node ``enode[e]``). Every group keeps its
# entries in a singly linked list (``nxt``) sorted by v descending, so S*_G
# is the first k*_G entries of the list from ``head[G]``. (Packing the row
# index into the low bits can swap two entries whose v differ by less than
# 2**(row_bits - 52) relatively; that changes a by as little.) Group ids are
# the heap index of the group's top node (a child's group is merged into its
# parent's, which keeps its id). All arithmetic is float64 whatever the input
# dtype.

from cython cimport floating
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.math cimport INFINITY, fmax, fmin


cdef inline int64_t _merge_lists(
    int64_t h1, int64_t h2, const double[::1] v, int64_t[::1] nxt
) noexcept nogil:
    """Merge two lists sorted by ``v`` descending; return the new head."""
    cdef int64_t head, tail
    if h1 < 0:
        return h2
    if h2 < 0:
        return h1
    if v[h2] > v[h1]:
        head = h2
        h2 = nxt[h2]
    else:
        head = h1
        h1 = nxt[h1]
    tail = head
    while h1 >= 0 and h2 >= 0:
        if v[h2] > v[h1]:
            nxt[tail] = h2
            tail = h2
            h2 = nxt[h2]
        else:
            nxt[tail] = h1
            tail = h1
            h1 = nxt[h1]
    if h1 >= 0:
        nxt[tail] = h1
    else:
        nxt[tail] = h2
    return head


cdef inline void _solve_group(
    int64_t g,
    double lam,
    const double[::1] v,
    const int64_t[::1] nxt,
    const int64_t[::1] head,
    const int64_t[::1] gsize,
    double[::1] ag,
    int64_t[::1] kstar,
    double[::1] denom,
    unsigned char[::1] interior,
) noexcept nogil:
    """Proposition 2 for group ``g``: fill ag, kstar, denom, interior."""
    cdef double c = lam * <double> gsize[g]
    cdef double s = 0.0, ak, vnext, araw
    cdef int64_t k = 0
    cdef int64_t e = head[g]
    while True:
        vnext = v[e] if e >= 0 else -INFINITY
        if k > 0 or c > 0.0:
            ak = s / (c + <double> k)
            if ak > vnext:
                break
        if e < 0:
            # c == 0 and an empty group: cannot happen for n >= 1.
            ak = 0.0
            break
        s += v[e]
        k += 1
        e = nxt[e]
    araw = ak
    kstar[g] = k
    denom[g] = c + <double> k
    interior[g] = 1 if (araw > 0.0 and araw < 1.0) else 0
    if araw <= 0.0:
        ag[g] = 0.0
    elif araw >= 1.0:
        ag[g] = 1.0
    else:
        ag[g] = araw


def _tree_isotonic_forward(
    const floating[:, ::1] q,
    double lam,
    const uint64_t[:, ::1] keys,
    int row_bits,
    int64_t[::1] start,
    double[::1] val,
    int32_t[::1] row,
    int32_t[::1] enode,
    int64_t[::1] nxt,
    int64_t[::1] head,
    int64_t[::1] grp,
    int64_t[::1] gsize,
    double[::1] ag,
    int64_t[::1] kstar,
    double[::1] denom,
    unsigned char[::1] interior,
    double[::1] a_node,
    floating[::1] a_out,
    floating[:, ::1] z_out,
):
    """Solve problem (4) by tree PAV.

    ``keys[t]`` holds, sorted ascending, one uint64 per row ``i``: the bits
    of ``max(q[i, t] + 1/2, 0)`` (float64, whose bit patterns order like the
    non-negative values) with the low ``row_bits`` bits replaced by ``i``.
    ``start`` has length ``T + 1``; ``val``, ``row``, ``enode`` and ``nxt``
    have room for the entries with ``v > 0``: node ``t``'s entries (those with
    ``v > 0``) are ``start[t] .. start[t + 1] - 1``, by v descending.
    Arrays of length ``T`` indexed by group id
    (``head``, ``gsize``, ``ag``, ``kstar``, ``denom``, ``interior``) are
    meaningful only where ``grp[g] == g``.
    """
    cdef Py_ssize_t n = q.shape[0], T = q.shape[1]
    cdef Py_ssize_t i, t, s, r
    cdef int64_t e, g, pg, best, lo
    cdef uint64_t key
    cdef uint64_t row_mask = (<uint64_t> 1 << row_bits) - 1
    cdef double besta, at, vv
    with nogil:
        # 1-3. Walk each node's keys from the largest: the entries with
        #      v > 0 come first, in descending order; link them.
        e = 0
        for t in range(T):
            lo = e
            start[t] = lo
            for r in range(n - 1, -1, -1):
                key = keys[t, r]
                if (key >> row_bits) == 0:
                    break  # v <= 0 (or below 2**-1000): never matters
                i = <Py_ssize_t> (key & row_mask)
                val[e] = <double> q[i, t] + 0.5
                row[e] = <int32_t> i
                enode[e] = <int32_t> t
                nxt[e] = e + 1
                e += 1
            if e > lo:
                nxt[e - 1] = -1
                head[t] = lo
            else:
                head[t] = -1
            grp[t] = t
            gsize[t] = 1
        start[T] = e
        # 4. Algorithm 1.
        for t in range(T):
            _solve_group(t, lam, val, nxt, head, gsize, ag, kstar, denom, interior)
        while True:
            best = -1
            besta = -1.0
            for t in range(1, T):
                g = grp[t]
                if g != t:
                    continue
                pg = grp[(t - 1) // 2]
                if ag[g] > ag[pg] and ag[g] > besta:
                    best = t
                    besta = ag[g]
            if best < 0:
                break
            pg = grp[(best - 1) // 2]
            head[pg] = _merge_lists(head[pg], head[best], val, nxt)
            head[best] = -1
            gsize[pg] += gsize[best]
            gsize[best] = 0
            for s in range(T):
                if grp[s] == best:
                    grp[s] = pg
            _solve_group(pg, lam, val, nxt, head, gsize, ag, kstar, denom, interior)
        # 5. a and z = clip(v, 0, a), row-major.
        for t in range(T):
            at = ag[grp[t]]
            a_node[t] = at
            a_out[t] = <floating> at
        for i in range(n):
            for t in range(T):
                z_out[i, t] = <floating> fmin(fmax(<double> q[i, t] + 0.5, 0.0), a_node[t])


def _tree_isotonic_backward(
    const floating[:, ::1] q,
    const double[::1] a_node,
    const int64_t[::1] grp,
    const int64_t[::1] head,
    const int64_t[::1] nxt,
    const int32_t[::1] row,
    const int32_t[::1] enode,
    const int64_t[::1] kstar,
    const double[::1] denom,
    const unsigned char[::1] interior,
    const floating[::1] grad_a,
    const floating[:, ::1] grad_z,
    double[::1] ga,
    floating[:, ::1] grad_q,
):
    """Vector-Jacobian product of (a, z) w.r.t. q, written into ``grad_q``.

    z_it = clip(v_it, 0, a_t): d z/d q = 1 where 0 < v < a_t, d z/d a_t = 1
    where v >= a_t. d a_t / d q_it' = 1 / denom[G] for (i, t') in S*_G when
    0 < a_G < 1 (``interior``), else 0. ``ga`` is scratch of length T.
    """
    cdef Py_ssize_t n = grad_z.shape[0], T = grad_z.shape[1]
    cdef Py_ssize_t i, t
    cdef int64_t g, e, k
    cdef double vv, at, w
    with nogil:
        for t in range(T):
            ga[t] = 0.0
        for t in range(T):
            ga[grp[t]] += <double> grad_a[t]
        for i in range(n):
            for t in range(T):
                vv = <double> q[i, t] + 0.5
                at = a_node[t]
                if vv > 0.0 and vv < at:
                    grad_q[i, t] = grad_z[i, t]
                else:
                    grad_q[i, t] = 0.0
                    if vv >= at:
                        ga[grp[t]] += <double> grad_z[i, t]
        for g in range(T):
            if grp[g] != g or not interior[g]:
                continue
            w = ga[g] / denom[g]
            e = head[g]
            for k in range(kstar[g]):
                i = row[e]
                t = enode[e]
                grad_q[i, t] = <floating> (<double> grad_q[i, t] + w)
                e = nxt[e]
