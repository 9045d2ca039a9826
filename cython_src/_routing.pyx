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
from libc.stdint cimport int64_t


cdef inline double _node_score(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    Py_ssize_t row,
    Py_ssize_t node,
) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = b[node]
    for j in range(X.shape[1]):
        s += W[node, j] * X[row, j]
    return s


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
