# Hard routing through a complete oblique binary tree stored in heap order.
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no Python objects inside the loops. The Python layer
# (``sklearn_difftrees/_core/tree.py``) checks shapes and dtypes, allocates the
# outputs and never hands user arrays to a kernel that writes.
#
# Routing rule shared by every method: at internal node ``i`` a sample goes to
# the right child ``2i + 2`` iff ``W[i] . x + b[i] > 0``, to the left child
# ``2i + 1`` otherwise (ties go left). Scores accumulate in float64 whatever
# the dtype of ``X``, so float32 and float64 inputs route identically up to the
# rounding of the inputs themselves.

from cython cimport floating

from _dot cimport dot
from libc.stdint cimport int64_t


cdef inline double _node_score(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    Py_ssize_t row,
    Py_ssize_t node,
) noexcept nogil:
    return b[node] + dot(&W[node, 0], &X[row, 0], X.shape[1])


def _apply_oblique(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    int depth,
    int64_t[::1] out,
):
    """Write into ``out[i]`` the heap index of the leaf that row ``i`` reaches."""
    cdef Py_ssize_t i, level, node
    with nogil:
        for i in range(X.shape[0]):
            node = 0
            for level in range(depth):
                if _node_score(X, W, b, i, node) > 0.0:
                    node = 2 * node + 2
                else:
                    node = 2 * node + 1
            out[i] = node


def _path_oblique(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    int depth,
    int64_t[:, ::1] out,
):
    """Write into ``out[i, :]`` the ``depth + 1`` heap indices row ``i`` visits."""
    cdef Py_ssize_t i, level, node
    with nogil:
        for i in range(X.shape[0]):
            node = 0
            out[i, 0] = 0
            for level in range(depth):
                if _node_score(X, W, b, i, node) > 0.0:
                    node = 2 * node + 2
                else:
                    node = 2 * node + 1
                out[i, level + 1] = node


# ---------------------------------------------------------------------------
# Convex-polytope splits (ConvexPolytopeTree).
#
# A node holds ``ptr[node + 1] - ptr[node]`` facets, stored contiguously in
# ``C`` (facet weight vectors), ``c`` (facet intercepts) and ``r`` (facet
# weights, >= 0). Its score is the noisy-OR log-odds
#     s(x) = sum_k r_k * softplus(C_k . x + c_k)
# and, with the package's one routing rule, a sample goes right iff
# ``s(x) - thr[node] > 0`` (left iff ``s(x) <= thr[node]``: a convex region).
# ``is_split[node]`` is 0 for nodes where routing stops (the leaves of the
# grown, not necessarily complete, tree); the walk stops there, so the output
# is the heap index of the leaf that a sample reaches, at whatever depth.

from libc.math cimport exp, log1p


cdef inline double _softplus(double z) noexcept nogil:
    # log(1 + e^z) without overflow: max(z, 0) + log1p(e^{-|z|}).
    if z > 0.0:
        return z + log1p(exp(-z))
    return log1p(exp(z))


cdef inline double _polytope_score(
    const floating[:, ::1] X,
    const double[:, ::1] C,
    const double[::1] c,
    const double[::1] r,
    const int64_t[::1] ptr,
    Py_ssize_t row,
    Py_ssize_t node,
) noexcept nogil:
    cdef Py_ssize_t f
    cdef double s = 0.0
    for f in range(ptr[node], ptr[node + 1]):
        s += r[f] * _softplus(c[f] + dot(&C[f, 0], &X[row, 0], X.shape[1]))
    return s


def _polytope_scores(
    const floating[:, ::1] X,
    const double[:, ::1] C,
    const double[::1] c,
    const double[::1] r,
    const int64_t[::1] ptr,
    const int64_t[::1] nodes,
    double[::1] out,
):
    """Write into ``out[i]`` the polytope score of row ``i`` at node ``nodes[i]``."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(X.shape[0]):
            out[i] = _polytope_score(X, C, c, r, ptr, i, nodes[i])


def _apply_polytope(
    const floating[:, ::1] X,
    const double[:, ::1] C,
    const double[::1] c,
    const double[::1] r,
    const int64_t[::1] ptr,
    const double[::1] thr,
    const unsigned char[::1] is_split,
    int64_t[::1] out,
):
    """Write into ``out[i]`` the heap index of the leaf that row ``i`` reaches."""
    cdef Py_ssize_t i, node, n_int = is_split.shape[0]
    with nogil:
        for i in range(X.shape[0]):
            node = 0
            while node < n_int and is_split[node]:
                if _polytope_score(X, C, c, r, ptr, i, node) - thr[node] > 0.0:
                    node = 2 * node + 2
                else:
                    node = 2 * node + 1
            out[i] = node


def _path_polytope(
    const floating[:, ::1] X,
    const double[:, ::1] C,
    const double[::1] c,
    const double[::1] r,
    const int64_t[::1] ptr,
    const double[::1] thr,
    const unsigned char[::1] is_split,
    int64_t[:, ::1] out,
):
    """Write into ``out[i, :]`` the heap indices row ``i`` visits, padded with -1."""
    cdef Py_ssize_t i, k, node, n_int = is_split.shape[0]
    with nogil:
        for i in range(X.shape[0]):
            node = 0
            k = 0
            out[i, 0] = 0
            while node < n_int and is_split[node]:
                if _polytope_score(X, C, c, r, ptr, i, node) - thr[node] > 0.0:
                    node = 2 * node + 2
                else:
                    node = 2 * node + 1
                k = k + 1
                out[i, k] = node
            for k in range(k + 1, out.shape[1]):
                out[i, k] = -1


def _apply_axis_subtrees(
    const floating[:, ::1] X,
    const int64_t[::1] start,
    const int64_t[::1] feature,
    const double[::1] threshold,
    const int64_t[::1] left,
    const int64_t[::1] right,
    int64_t[::1] out,
):
    """Axis-aligned trees stored as node arrays (scikit-learn's layout: a
    leaf has ``left == -1``): write into ``out[i]`` the leaf reached from
    node ``start[i]``; a row goes left iff ``X[i, feature] <= threshold``."""
    cdef Py_ssize_t i, node
    with nogil:
        for i in range(X.shape[0]):
            node = start[i]
            while left[node] >= 0:
                if X[i, feature[node]] <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            out[i] = node
