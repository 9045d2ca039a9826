# Loss-augmented inference for non-greedy oblique trees (Norouzi et al., 2015).
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no Python objects inside the loops. The Python layer
# (``sklearn_difftrees/non_greedy/_lai.py``) checks shapes and dtypes, allocates
# the outputs and never hands user arrays to a kernel that writes.
#
# Conventions. The tree is complete, of depth ``D``, in heap order: internal
# nodes ``0 .. m - 1`` (``m = 2**D - 1``), leaf number ``l`` is heap node
# ``m + l``. The node score is ``s_i = W[i] . x + b[i]`` and the paper's split
# decision is ``h_i = sgn(s_i)`` with ``+1`` = right child, ``-1`` = left child
# and ``sgn(0) = -1`` (the package's routing rule: right iff score > 0, ties
# left). For a code ``g`` in {-1, +1}^m,
#
#     g^T s - sgn(s)^T s = -2 * sum_{i : g_i != sgn(s_i)} |s_i|,
#
# so the loss-augmented objective of a leaf ``j`` (eq. 11-12) is
# ``loss(theta_j, y) - 2 * sum |s_i|`` over the nodes of the path to ``j``
# whose direction disagrees with ``sgn(s_i)``; bits off the path keep
# ``g_i = sgn(s_i)``. Losses (``loss_kind``):
#
#     0: log loss on softmax leaves   loss(theta_j, y) = lse_j - theta_j[y]
#        (``lse_j = log sum exp theta_j``: precomputed by the caller for all
#        leaves, or computed here for the leaves visited when ``lse`` is
#        empty, as fast inference does: it visits D + 1 of the 2^D leaves)
#     1: squared loss                 loss(theta_j, y) = ||theta_j - y||^2
#
# Inference modes (``mode``):
#
#     0 "exact": all leaves; one sweep over the heap (the depth-first search of
#       Section 6) accumulates the path penalties, O(2^D p) per sample.
#     1 "fast": the Hamming ball of radius 1 around sgn(s) (eq. 13): the
#       predicted leaf, and for each level k the leaf reached by flipping the
#       k-th decision of the predicted path and following sgn(s) below it;
#       D + 1 candidates, O(D^2 p) per sample.
#
# Stable mode (eq. 14, SSGD): when ``assign[n] >= 0`` the subtracted term is
# ``max h^T s`` over the codes that reach leaf ``assign[n]`` (the frozen
# assignment a(x)), i.e. ``h = sgn(s)`` with the bits on the path to
# ``assign[n]`` forced to its directions. ``assign[n] < 0`` gives the plain
# bounds (7) / (13), where ``h = sgn(s)``.
#
# Outputs per sample ``n``: the leaf of the loss-augmented code g
# (``g_leaf``), the predicted leaf f(sgn(s)) (``h_leaf``), the bound value
# ``max_g [g^T s + loss] - h^T s`` (``bound``), and the nodes where ``g`` and
# ``h`` differ with ``(g_i - h_i) / 2`` in {-1, +1} (``diff_node`` /
# ``diff_sign``, at most ``2 D`` of them, padded with -1 / 0). The gradient of
# the bound with respect to row i of [W, b] is ``(g_i - h_i) [x, 1]``, so the
# update (Algorithm 1, line 6) touches only those rows: O(D p) per sample.

from cython cimport floating

from _dot cimport dot
from libc.math cimport exp, fabs, log
from libc.stdint cimport int8_t, int64_t

# Largest depth the kernel supports (fixed-size path buffers on the stack).
cdef enum:
    MAX_DEPTH = 62


cdef inline double _score(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    Py_ssize_t row,
    Py_ssize_t node,
) noexcept nogil:
    return b[node] + dot(&W[node, 0], &X[row, 0], X.shape[1])


cdef inline double _leaf_loss(
    const double[:, ::1] theta,
    const double[::1] lse,
    const int64_t[::1] y_cls,
    const double[:, ::1] y_reg,
    int loss_kind,
    Py_ssize_t row,
    Py_ssize_t leaf,
) noexcept nogil:
    cdef Py_ssize_t k, n_out = theta.shape[1]
    cdef double d, mx, total = 0.0
    if loss_kind == 0:
        if lse.shape[0] > 0:
            return lse[leaf] - theta[leaf, y_cls[row]]
        # log-sum-exp of this leaf only (fast inference touches D + 1 leaves)
        mx = theta[leaf, 0]
        for k in range(1, n_out):
            if theta[leaf, k] > mx:
                mx = theta[leaf, k]
        for k in range(n_out):
            total += exp(theta[leaf, k] - mx)
        return mx + log(total) - theta[leaf, y_cls[row]]
    for k in range(theta.shape[1]):
        d = theta[leaf, k] - y_reg[row, k]
        total += d * d
    return total


cdef inline Py_ssize_t _descend(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    Py_ssize_t row,
    Py_ssize_t node,
    Py_ssize_t m,
) noexcept nogil:
    # Follow sgn(s) from ``node`` down to a leaf (heap index).
    while node < m:
        if _score(X, W, b, row, node) > 0.0:
            node = 2 * node + 2
        else:
            node = 2 * node + 1
    return node


def _loss_augmented_inference(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    const double[:, ::1] theta,
    const double[::1] lse,
    const int64_t[::1] y_cls,
    const double[:, ::1] y_reg,
    const int64_t[::1] assign,
    int depth,
    int loss_kind,
    int mode,
    int64_t[::1] g_leaf,
    int64_t[::1] h_leaf,
    double[::1] bound,
    int64_t[:, ::1] diff_node,
    int8_t[:, ::1] diff_sign,
    double[::1] scores,
    double[::1] penalty,
):
    """Loss-augmented inference for every row of ``X`` (see the file header).

    ``scores`` (m) and ``penalty`` (2m + 1) are scratch buffers for the exact
    mode (may be empty for the fast mode); ``depth <= 62``.
    """
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t m = W.shape[0]
    cdef Py_ssize_t n_nodes = 2 * m + 1
    cdef Py_ssize_t row, node, child, lvl, k, leaf, best, n_diff, target
    cdef Py_ssize_t g_node, a_node, g_next, a_next
    cdef double s, val, best_val, pen, hval, extra
    cdef Py_ssize_t path[MAX_DEPTH + 1]
    cdef double path_abs[MAX_DEPTH + 1]
    cdef int g_dir, a_dir, h_dir

    with nogil:
        for row in range(n_rows):
            # Predicted path f(sgn(s)): nodes and |s| along it.
            node = 0
            for lvl in range(depth):
                path[lvl] = node
                s = _score(X, W, b, row, node)
                path_abs[lvl] = fabs(s)
                node = 2 * node + 2 if s > 0.0 else 2 * node + 1
            path[depth] = node
            h_leaf[row] = node - m
            hval = _leaf_loss(theta, lse, y_cls, y_reg, loss_kind, row, node - m)
            best = node
            best_val = hval
            if mode == 0:
                # Exact: every node score, then one top-down sweep of the heap
                # accumulating 2|s_parent| whenever the edge disagrees with sgn.
                for node in range(m):
                    scores[node] = _score(X, W, b, row, node)
                penalty[0] = 0.0
                for child in range(1, n_nodes):
                    node = (child - 1) // 2
                    s = scores[node]
                    # child is right iff it is even; sgn(s) goes right iff s > 0.
                    if (child % 2 == 0) != (s > 0.0):
                        penalty[child] = penalty[node] + 2.0 * fabs(s)
                    else:
                        penalty[child] = penalty[node]
                for leaf in range(m + 1):
                    val = _leaf_loss(theta, lse, y_cls, y_reg, loss_kind, row, leaf) \
                        - penalty[m + leaf]
                    if val > best_val:  # ties keep the predicted leaf / lower index
                        best_val = val
                        best = m + leaf
            else:
                # Fast: flip one decision of the predicted path (eq. 13).
                for lvl in range(depth):
                    node = path[lvl]
                    # the sibling of the predicted child
                    child = path[lvl + 1]
                    child = child + 1 if child % 2 == 1 else child - 1
                    leaf = _descend(X, W, b, row, child, m)
                    val = _leaf_loss(theta, lse, y_cls, y_reg, loss_kind, row, leaf - m) \
                        - 2.0 * path_abs[lvl]
                    if val > best_val:
                        best_val = val
                        best = leaf
            g_leaf[row] = best - m

            # Differences between g (path to ``best``, sgn elsewhere) and h
            # (sgn, with the path to ``assign[row]`` forced in stable mode).
            target = assign[row]
            if target < 0:
                target = h_leaf[row]
            target = target + m
            extra = 0.0
            n_diff = 0
            for lvl in range(depth):
                # ancestors at level lvl of both leaves, and the directions
                # taken there (+1 right, -1 left)
                g_node = (best + 1) >> (depth - lvl)
                g_next = (best + 1) >> (depth - lvl - 1)
                a_node = (target + 1) >> (depth - lvl)
                a_next = (target + 1) >> (depth - lvl - 1)
                g_dir = 1 if (g_next & 1) else -1
                a_dir = 1 if (a_next & 1) else -1
                g_node -= 1
                a_node -= 1
                if g_node == a_node:
                    if g_dir != a_dir:
                        diff_node[row, n_diff] = g_node
                        diff_sign[row, n_diff] = g_dir
                        n_diff += 1
                    if assign[row] >= 0:
                        s = _score(X, W, b, row, a_node)
                        h_dir = 1 if s > 0.0 else -1
                        if a_dir != h_dir:
                            extra += 2.0 * fabs(s)
                else:
                    s = _score(X, W, b, row, g_node)
                    h_dir = 1 if s > 0.0 else -1
                    if g_dir != h_dir:
                        diff_node[row, n_diff] = g_node
                        diff_sign[row, n_diff] = g_dir
                        n_diff += 1
                    s = _score(X, W, b, row, a_node)
                    h_dir = 1 if s > 0.0 else -1
                    if a_dir != h_dir:
                        diff_node[row, n_diff] = a_node
                        diff_sign[row, n_diff] = h_dir
                        n_diff += 1
                        extra += 2.0 * fabs(s)
            for k in range(n_diff, diff_node.shape[1]):
                diff_node[row, k] = -1
                diff_sign[row, k] = 0
            # bound = max_g [g^T s + loss] - h^T s
            #       = best_val + (sgn(s) - h)^T s = best_val + 2 sum_{forced} |s|
            bound[row] = best_val + extra


def _accumulate_split_grad(
    const floating[:, ::1] X,
    const double[::1] weight,
    const int64_t[:, ::1] diff_node,
    const int8_t[:, ::1] diff_sign,
    double[:, ::1] grad_W,
    double[::1] grad_b,
):
    """Add ``sum_n weight[n] (g - h)_i [x_n, 1]`` into the rows i that differ.

    ``(g_i - h_i) = 2 diff_sign``; O(D p) per sample (Algorithm 1, line 6).
    """
    cdef Py_ssize_t row, k, j, node, p = X.shape[1]
    cdef double c
    with nogil:
        for row in range(X.shape[0]):
            for k in range(diff_node.shape[1]):
                node = diff_node[row, k]
                if node < 0:
                    break
                c = 2.0 * diff_sign[row, k] * weight[row]
                for j in range(p):
                    grad_W[node, j] += c * X[row, j]
                grad_b[node] += c
