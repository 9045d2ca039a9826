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
# Parallelism. Samples are split over OpenMP threads (``prange``). The forward
# pass and dL/dx write only to their own rows. The parameter gradients are
# reductions over samples: each thread accumulates into its own slice of the
# ``(n_threads, ...)`` float64 buffers passed in, summed by the caller, so no
# two threads ever write the same memory.

from cython cimport floating

from _dot cimport dot
from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t

# Depth limit of the fixed-size traversal stacks (the Python layer enforces
# depth <= MAX_DEPTH).
cdef enum:
    STACK = 64
MAX_DEPTH = 24


cdef inline double _smooth_step(double t, double gamma) noexcept nogil:
    """Eq. (4): 0 for t <= -gamma/2, 1 for t >= gamma/2, a cubic between."""
    cdef double h = 0.5 * gamma
    if t <= -h:
        return 0.0
    if t >= h:
        return 1.0
    return -2.0 / (gamma * gamma * gamma) * t * t * t + 1.5 / gamma * t + 0.5


cdef inline double _smooth_step_grad(double t, double gamma) noexcept nogil:
    cdef double h = 0.5 * gamma
    if t <= -h or t >= h:
        return 0.0
    return -6.0 / (gamma * gamma * gamma) * t * t + 1.5 / gamma


cdef inline double _score(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, ::1] b,
    Py_ssize_t row,
    Py_ssize_t tree,
    Py_ssize_t node,
) noexcept nogil:
    return b[tree, node] + dot(&W[tree, node, 0], &X[row, 0], X.shape[1])


cdef inline int64_t _forward_row(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, ::1] b,
    const floating[:, :, ::1] O,
    double gamma,
    Py_ssize_t row,
    floating[:, ::1] out,
    int32_t[:, ::1] rec_node,
    double[:, ::1] rec_val,
    bint record,
    int64_t[::1] n_leaves,
) noexcept nogil:
    """Algorithm 1 for one row and every tree; returns the record length.

    Entries beyond the capacity of ``rec_node`` are counted but not written
    (the caller grows the buffers and calls again).
    """
    cdef Py_ssize_t n_trees = W.shape[0], n_int = W.shape[1], k = O.shape[2]
    cdef Py_ssize_t n_nodes = 2 * n_int + 1
    cdef Py_ssize_t cap = rec_node.shape[1] if record else 0
    cdef Py_ssize_t t, c, node, sp
    cdef int64_t n_rec = 0, reached = 0
    cdef double prob, s, score
    cdef Py_ssize_t stack_node[STACK]
    cdef double stack_prob[STACK]
    for c in range(k):
        out[row, c] = 0.0
    for t in range(n_trees):
        sp = 0
        stack_node[0] = 0
        stack_prob[0] = 1.0
        sp = 1
        while sp > 0:
            sp -= 1
            node = stack_node[sp]
            prob = stack_prob[sp]
            if node >= n_int:  # reachable leaf
                reached += 1
                for c in range(k):
                    out[row, c] += prob * O[t, node - n_int, c]
                if record:
                    if n_rec < cap:
                        rec_node[row, n_rec] = <int32_t>(t * n_nodes + node)
                        rec_val[row, n_rec] = prob
                    n_rec += 1
                continue
            score = _score(X, W, b, row, t, node)
            s = _smooth_step(score, gamma)
            if record and 0.0 < s < 1.0:
                if n_rec < cap:
                    rec_node[row, n_rec] = <int32_t>(t * n_nodes + node)
                    rec_val[row, n_rec] = score
                n_rec += 1
            # Push right first so that the left subtree is traversed first
            # (pre-order: node, left part, right part).
            if s > 0.0:
                stack_node[sp] = 2 * node + 2
                stack_prob[sp] = prob * s
                sp += 1
            if s < 1.0:
                stack_node[sp] = 2 * node + 1
                stack_prob[sp] = prob * (1.0 - s)
                sp += 1
    n_leaves[row] = reached
    return n_rec


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
    """
    cdef Py_ssize_t i
    with nogil:
        for i in prange(X.shape[0], num_threads=n_threads, schedule="static"):
            rec_len[i] = _forward_row(
                X, W, b, O, gamma, i, out, rec_node, rec_val, record, n_leaves
            )


cdef inline void _backward_row(
    const floating[:, ::1] X,
    const floating[:, :, ::1] W,
    const floating[:, :, ::1] O,
    double gamma,
    const floating[:, ::1] grad_out,
    const int32_t[:, ::1] rec_node,
    const double[:, ::1] rec_val,
    Py_ssize_t length,
    Py_ssize_t i,
    Py_ssize_t tid,
    floating[:, ::1] grad_X,
    double[:, :, :, ::1] grad_W,
    double[:, :, ::1] grad_b,
    double[:, :, :, ::1] grad_O,
    bint need_X,
) noexcept nogil:
    """Algorithm 2 for one row and every tree (thread ``tid``'s buffers)."""
    cdef Py_ssize_t p = X.shape[1], n_int = W.shape[1], k = O.shape[2]
    cdef Py_ssize_t n_nodes = 2 * n_int + 1
    cdef Py_ssize_t e, j, c, t, node, sp = 0, cur_tree = -1
    cdef double g, s, ds, left, right, dt, val
    cdef double stack[STACK]  # partial sums sum_g of the pending subtrees
    if need_X:
        for j in range(p):
            grad_X[i, j] = 0.0
    # Reverse pre-order: every entry comes after its fractional descendants.
    for e in range(length - 1, -1, -1):
        t = rec_node[i, e] // n_nodes
        node = rec_node[i, e] % n_nodes
        val = rec_val[i, e]
        if t != cur_tree:
            cur_tree = t
            sp = 0
        if node >= n_int:  # reachable leaf: val = P(x -> l)
            g = 0.0
            for c in range(k):
                g += grad_out[i, c] * O[t, node - n_int, c]
                grad_O[tid, t, node - n_int, c] += val * grad_out[i, c]
            stack[sp] = val * g
            sp += 1
        else:  # fractional node: val = its score, 0 < S(val) < 1
            # The left part was recorded last, so its sum is on top.
            left = stack[sp - 1]
            right = stack[sp - 2]
            sp -= 2
            s = _smooth_step(val, gamma)
            ds = _smooth_step_grad(val, gamma)
            # Theorem 1 with P(right) = S, P(left) = 1 - S.
            dt = ds * (right / s - left / (1.0 - s))
            grad_b[tid, t, node] += dt
            for j in range(p):
                grad_W[tid, t, node, j] += dt * X[i, j]
            if need_X:
                for j in range(p):
                    grad_X[i, j] += dt * W[t, node, j]
            stack[sp] = left + right
            sp += 1


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
    double[:, :, :, ::1] grad_W,
    double[:, :, ::1] grad_b,
    double[:, :, :, ::1] grad_O,
    bint need_X,
    int n_threads,
):
    """Conditional backward pass (Algorithm 2) from the forward records.

    ``grad_W``, ``grad_b`` and ``grad_O`` have a leading thread axis of length
    ``n_threads`` and must be zero on entry; the thread of id ``r`` adds only
    into ``[r]``. ``grad_X`` rows are overwritten when ``need_X``.
    """
    cdef Py_ssize_t i
    with nogil:
        for i in prange(X.shape[0], num_threads=n_threads, schedule="static"):
            _backward_row(
                X, W, O, gamma, grad_out, rec_node, rec_val, rec_len[i], i,
                threadid(), grad_X, grad_W, grad_b, grad_O, need_X,
            )
