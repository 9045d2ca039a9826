# Conditional forward and backward passes of the Tree Ensemble Layer (TEL).
#
# Hazimeh et al., "The Tree Ensemble Layer: Differentiability meets
# Conditional Computation", ICML 2020: Algorithm 1 (conditional forward) and
# Algorithm 2 / Theorem 1 (conditional backward).
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no Python objects inside the loops. The Python
# layer (``sklearn_difftrees/tel/_kernels.py``) checks shapes and dtypes,
# allocates every output and never hands user arrays to a kernel that writes.
#
# Model. ``T`` perfect binary trees of depth ``D`` in heap order (node ``i`` has
# children ``2i+1`` (left) and ``2i+2`` (right); leaves are the nodes
# ``n_int .. 2 n_int``, ``n_int = 2^D - 1``). Internal node ``i`` of tree ``t``
# sends a sample RIGHT with probability ``S(W[t,i].x + b[t,i])`` where ``S`` is
# the smooth-step of eq. (4), and left with ``1 - S``. This maps the paper's
# "S(<w,x>) = probability of going left" onto the package's routing rule
# (right iff score > 0): a node whose score is outside (-gamma/2, gamma/2)
# routes exactly like the shared hard router. The output is
# ``sum_t sum_l P(x -> l) O[t, l - n_int, :]``.
#
# Records. In training mode the forward pass records, per sample, the
# *fractional tree* of every tree in pre-order (node, left part, right part):
# one entry per fractional internal node (0 < S < 1, its score) and one per
# reachable leaf (its probability), each tagged ``t * n_nodes + node``. The
# backward pass scans that record in reverse, which visits every entry after
# all of its fractional-tree descendants (a post-order), with a stack of
# partial sums ``sum_g`` of depth at most ``D + 1``. Nodes whose activation is
# exactly 0 or 1 have zero gradient (Theorem 1) and are not recorded, so the
# backward pass costs O(U p + U k) per sample and tree (``U`` reachable leaves).
#
# Parallelism. Samples are split over OpenMP threads (``prange``) in blocks of
# ``BLOCK`` rows, which both passes run tree by tree (one tree's splits stay in
# cache for the whole block; every row still sees its trees in order, so the
# results do not depend on the blocking). The forward pass and dL/dx write
# only to their own rows. The parameter gradients are reductions over samples:
# each thread accumulates into its own slice of the ``(n_threads, ...)``
# buffers passed in (the inputs' dtype, like the gradients returned), summed
# by the caller, so no two threads ever write the same memory.

from cython cimport floating

from _dot cimport dot_native
from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t

# Depth limit of the fixed-size traversal stacks (the Python layer enforces
# depth <= MAX_DEPTH).
cdef enum:
    STACK = 64
    BLOCK = 16  # rows per block of both passes (one tree at a time)
MAX_DEPTH = 24


cdef struct Step:
    # The constants of eq. (4) for one gamma, computed once per call (the
    # divisions are loop-invariant); every expression evaluates as before.
    double h  # gamma / 2
    double c3  # -2 / gamma^3
    double c1  # 1.5 / gamma
    double d3  # -6 / gamma^3


cdef inline Step _step(double gamma) noexcept nogil:
    cdef Step st
    st.h = 0.5 * gamma
    st.c3 = -2.0 / (gamma * gamma * gamma)
    st.c1 = 1.5 / gamma
    st.d3 = -6.0 / (gamma * gamma * gamma)
    return st


cdef inline double _smooth_step(double t, const Step* st) noexcept nogil:
    """Eq. (4): 0 for t <= -gamma/2, 1 for t >= gamma/2, a cubic between."""
    if t <= -st.h:
        return 0.0
    if t >= st.h:
        return 1.0
    return st.c3 * t * t * t + st.c1 * t + 0.5


cdef inline double _smooth_step_grad(double t, const Step* st) noexcept nogil:
    if t <= -st.h or t >= st.h:
        return 0.0
    return st.d3 * t * t + st.c1


cdef inline void _forward_tree(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, ::1] b,
    const floating[:, :, ::1] O,
    const Step* st,
    Py_ssize_t row,
    Py_ssize_t t,
    floating[:, ::1] out,
    int32_t[:, ::1] rec_node,
    double[:, ::1] rec_val,
    bint record,
    int64_t[::1] n_leaves,
    int64_t[::1] rec_len,
) noexcept nogil:
    """Algorithm 1 for one row and tree ``t``: adds to ``out[row]``, counts its
    reachable leaves into ``n_leaves[row]`` and appends its fractional tree to
    the row's record at ``rec_len[row]``.

    Entries beyond the capacity of ``rec_node`` are counted but not written
    (the caller runs the row again with larger buffers).
    """
    cdef Py_ssize_t n_int = W.shape[1], k = O.shape[2], p = X.shape[1]
    cdef Py_ssize_t n_nodes = 2 * n_int + 1
    cdef Py_ssize_t cap = rec_node.shape[1] if record else 0
    cdef Py_ssize_t c, node, sp
    cdef int64_t n_rec = rec_len[row], reached = 0
    cdef double prob, s, score
    cdef Py_ssize_t stack_node[STACK]
    cdef double stack_prob[STACK]
    cdef const floating* x = &X[row, 0]
    stack_node[0] = 0
    stack_prob[0] = 1.0
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack_node[sp]
        prob = stack_prob[sp]
        # Descend: a hard node continues to its one child, a fractional one
        # continues left and leaves its right part on the stack (pre-order:
        # node, left part, right part).
        while node < n_int:
            score = b[t, node] + dot_native(&W[t, node, 0], x, p)
            s = _smooth_step(score, st)
            if 0.0 < s < 1.0:
                if record:
                    if n_rec < cap:
                        rec_node[row, n_rec] = <int32_t>(t * n_nodes + node)
                        rec_val[row, n_rec] = score
                    n_rec += 1
                stack_node[sp] = 2 * node + 2
                stack_prob[sp] = prob * s
                sp += 1
                prob = prob * (1.0 - s)
                node = 2 * node + 1
            elif s >= 1.0:
                prob = prob * s
                node = 2 * node + 2
            elif s <= 0.0:
                prob = prob * (1.0 - s)
                node = 2 * node + 1
            else:  # nan: no leaf below is reached
                break
        if node < n_int:
            continue
        # a reachable leaf
        reached += 1
        for c in range(k):
            out[row, c] += prob * O[t, node - n_int, c]
        if record:
            if n_rec < cap:
                rec_node[row, n_rec] = <int32_t>(t * n_nodes + node)
                rec_val[row, n_rec] = prob
            n_rec += 1
    n_leaves[row] += reached
    rec_len[row] = n_rec


cdef inline void _forward_block(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, ::1] b,
    const floating[:, :, ::1] O,
    const Step* st,
    Py_ssize_t lo,
    Py_ssize_t hi,
    floating[:, ::1] out,
    int32_t[:, ::1] rec_node,
    double[:, ::1] rec_val,
    bint record,
    int64_t[::1] n_leaves,
    int64_t[::1] rec_len,
) noexcept nogil:
    """Algorithm 1 for rows ``lo .. hi - 1``, tree by tree."""
    cdef Py_ssize_t i, t, c
    for i in range(lo, hi):
        for c in range(O.shape[2]):
            out[i, c] = 0.0
        n_leaves[i] = 0
        rec_len[i] = 0
    for t in range(W.shape[0]):
        for i in range(lo, hi):
            _forward_tree(X, W, b, O, st, i, t, out, rec_node, rec_val, record, n_leaves,
                          rec_len)


def _tel_forward(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, ::1] b,
    const floating[:, :, ::1] O,
    double gamma,
    floating[:, ::1] out,
    int64_t[::1] n_leaves,
    int32_t[:, ::1] rec_node,
    double[:, ::1] rec_val,
    int64_t[::1] rec_len,
    bint record,
    int n_threads,
):
    """Conditional forward pass (Algorithm 1) of the whole ensemble.

    Writes ``out[i] = sum_t T_t(X[i])``, ``n_leaves[i]`` = reachable leaves of
    row ``i`` summed over trees and, when ``record``, the fractional trees of
    row ``i`` into ``rec_node[i, :rec_len[i]]`` / ``rec_val[i, :rec_len[i]]``.
    ``rec_len[i]`` larger than ``rec_node.shape[1]`` means the record of row
    ``i`` did not fit and was truncated.

    Rows run in blocks of ``BLOCK``, tree by tree within a block, so that one
    tree's splits stay in cache for the whole block; every row still sums its
    trees in order, so the results do not depend on the blocking.
    """
    cdef Py_ssize_t n = X.shape[0]
    cdef Py_ssize_t blk
    cdef Step st = _step(gamma)
    with nogil:
        for blk in prange((n + BLOCK - 1) // BLOCK, num_threads=n_threads,
                          schedule="static"):
            _forward_block(X, W, b, O, &st, blk * BLOCK, min(blk * BLOCK + BLOCK, n), out,
                           rec_node, rec_val, record, n_leaves, rec_len)


cdef inline Py_ssize_t _backward_tree(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, :, ::1] O,
    const Step* st,
    const floating[:, ::1] grad_out,
    const int32_t[:, ::1] rec_node,
    const double[:, ::1] rec_val,
    Py_ssize_t e,
    Py_ssize_t i,
    Py_ssize_t t,
    Py_ssize_t tid,
    floating[:, ::1] grad_X,
    floating[:, :, :, ::1] grad_W,
    floating[:, :, ::1] grad_b,
    floating[:, :, :, ::1] grad_O,
    bint need_X,
) noexcept nogil:
    """Algorithm 2 for row ``i`` and tree ``t`` (thread ``tid``'s buffers).

    Scans the row's record backwards from entry ``e`` while the entries
    belong to tree ``t``; returns the first entry not processed.
    """
    cdef Py_ssize_t p = X.shape[1], n_int = W.shape[1], k = O.shape[2]
    cdef Py_ssize_t n_nodes = 2 * n_int + 1
    cdef Py_ssize_t j, c, node, sp = 0, leaf
    cdef double g, s, ds, left, right, dt, val
    cdef double stack[STACK]  # partial sums sum_g of the pending subtrees
    cdef const floating* x = &X[i, 0]
    cdef floating* gw
    # Reverse pre-order: every entry comes after its fractional descendants.
    while e >= 0 and rec_node[i, e] // n_nodes == t:
        node = rec_node[i, e] % n_nodes
        val = rec_val[i, e]
        e -= 1
        if node >= n_int:  # reachable leaf: val = P(x -> l)
            leaf = node - n_int
            g = 0.0
            for c in range(k):
                g += grad_out[i, c] * O[t, leaf, c]
                grad_O[tid, t, leaf, c] += val * grad_out[i, c]
            stack[sp] = val * g
            sp += 1
        else:  # fractional node: val = its score, 0 < S(val) < 1
            # The left part was recorded last, so its sum is on top.
            left = stack[sp - 1]
            right = stack[sp - 2]
            sp -= 2
            s = _smooth_step(val, st)
            ds = _smooth_step_grad(val, st)
            # Theorem 1 with P(right) = S, P(left) = 1 - S.
            dt = ds * (right / s - left / (1.0 - s))
            grad_b[tid, t, node] += dt
            gw = &grad_W[tid, t, node, 0]
            for j in range(p):
                gw[j] += dt * x[j]
            if need_X:
                for j in range(p):
                    grad_X[i, j] += dt * W[t, node, j]
            stack[sp] = left + right
            sp += 1
    return e


cdef inline void _backward_block(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, :, ::1] O,
    const Step* st,
    const floating[:, ::1] grad_out,
    const int32_t[:, ::1] rec_node,
    const double[:, ::1] rec_val,
    const int64_t[::1] rec_len,
    Py_ssize_t lo,
    Py_ssize_t hi,
    Py_ssize_t tid,
    floating[:, ::1] grad_X,
    floating[:, :, :, ::1] grad_W,
    floating[:, :, ::1] grad_b,
    floating[:, :, :, ::1] grad_O,
    bint need_X,
) noexcept nogil:
    """Algorithm 2 for rows ``lo .. hi - 1``, tree by tree, last tree first."""
    cdef Py_ssize_t i, j, t
    cdef Py_ssize_t cursor[BLOCK]  # next record entry of every row
    for i in range(lo, hi):
        cursor[i - lo] = rec_len[i] - 1
        if need_X:
            for j in range(X.shape[1]):
                grad_X[i, j] = 0.0
    for t in range(W.shape[0] - 1, -1, -1):
        for i in range(lo, hi):
            cursor[i - lo] = _backward_tree(
                X, W, O, st, grad_out, rec_node, rec_val, cursor[i - lo], i, t, tid,
                grad_X, grad_W, grad_b, grad_O, need_X,
            )


def _tel_backward(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, :, ::1] O,
    double gamma,
    const floating[:, ::1] grad_out,
    const int32_t[:, ::1] rec_node,
    const double[:, ::1] rec_val,
    const int64_t[::1] rec_len,
    floating[:, ::1] grad_X,
    floating[:, :, :, ::1] grad_W,
    floating[:, :, ::1] grad_b,
    floating[:, :, :, ::1] grad_O,
    bint need_X,
    int n_threads,
):
    """Conditional backward pass (Algorithm 2) from the forward records.

    ``grad_W``, ``grad_b`` and ``grad_O`` have a leading thread axis of length
    ``n_threads`` and must be zero on entry; the thread of id ``r`` adds only
    into ``[r]``. ``grad_X`` rows are overwritten when ``need_X``.

    Like the forward pass, rows run in blocks, tree by tree (last tree
    first, as the records are read backwards): each row sees its entries in
    the same order as a row-by-row pass, and every gradient entry of a
    thread sums its rows in increasing order.
    """
    cdef Py_ssize_t n = X.shape[0]
    cdef Py_ssize_t blk
    cdef Step st = _step(gamma)
    with nogil:
        for blk in prange((n + BLOCK - 1) // BLOCK, num_threads=n_threads,
                          schedule="static"):
            _backward_block(
                X, W, O, &st, grad_out, rec_node, rec_val, rec_len, blk * BLOCK,
                min(blk * BLOCK + BLOCK, n), threadid(), grad_X, grad_W, grad_b, grad_O,
                need_X,
            )
