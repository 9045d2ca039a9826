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
#
# Training epochs. ``_sgd_epoch`` runs one epoch of Algorithm 1 (the
# mini-batches of a row order: inference per row with ``_lai_row``, the split
# and leaf gradients, the momentum step of the rows that ever got a gradient,
# the projection ||[w_i, b_i]|| <= nu); ``_co2_level_epoch`` one epoch of the
# depth-1 bounds of a CO2 level (every row its node's stump). Both update the
# parameters and their momenta in place (buffers owned by the Python layer).

from cython cimport floating

from _dot cimport dot
from libc.math cimport exp, fabs, isfinite, log, sqrt
from libc.stdint cimport int8_t, int64_t, uint8_t

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


cdef void _lai_row(
    const floating[:, ::1] X,
    const double[:, ::1] W,
    const double[::1] b,
    const double[:, ::1] theta,
    const double[::1] lse,
    const int64_t[::1] y_cls,
    const double[:, ::1] y_reg,
    Py_ssize_t row,
    Py_ssize_t assigned,
    int depth,
    int loss_kind,
    int mode,
    Py_ssize_t out,
    int64_t[::1] g_leaf,
    int64_t[::1] h_leaf,
    double[::1] bound,
    int64_t[:, ::1] diff_node,
    int8_t[:, ::1] diff_sign,
    double[::1] scores,
    double[::1] penalty,
) noexcept nogil:
    # Loss-augmented inference of row ``row`` of ``X`` (targets ``y_*[row]``,
    # frozen leaf ``assigned``, -1: none), written to position ``out`` of the
    # outputs (see the file header).
    cdef Py_ssize_t m = W.shape[0]
    cdef Py_ssize_t n_nodes = 2 * m + 1
    cdef Py_ssize_t node, child, lvl, k, leaf, best, n_diff, target
    cdef Py_ssize_t g_node, a_node, g_next, a_next
    cdef double s, val, best_val, hval, extra
    cdef Py_ssize_t path[MAX_DEPTH + 1]
    cdef double path_abs[MAX_DEPTH + 1]
    cdef int g_dir, a_dir, h_dir

    # Predicted path f(sgn(s)): nodes and |s| along it.
    node = 0
    for lvl in range(depth):
        path[lvl] = node
        s = _score(X, W, b, row, node)
        path_abs[lvl] = fabs(s)
        node = 2 * node + 2 if s > 0.0 else 2 * node + 1
    path[depth] = node
    h_leaf[out] = node - m
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
    g_leaf[out] = best - m

    # Differences between g (path to ``best``, sgn elsewhere) and h
    # (sgn, with the path to ``assigned`` forced in stable mode).
    target = assigned
    if target < 0:
        target = h_leaf[out]
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
                diff_node[out, n_diff] = g_node
                diff_sign[out, n_diff] = g_dir
                n_diff += 1
            if assigned >= 0:
                s = _score(X, W, b, row, a_node)
                h_dir = 1 if s > 0.0 else -1
                if a_dir != h_dir:
                    extra += 2.0 * fabs(s)
        else:
            s = _score(X, W, b, row, g_node)
            h_dir = 1 if s > 0.0 else -1
            if g_dir != h_dir:
                diff_node[out, n_diff] = g_node
                diff_sign[out, n_diff] = g_dir
                n_diff += 1
            s = _score(X, W, b, row, a_node)
            h_dir = 1 if s > 0.0 else -1
            if a_dir != h_dir:
                diff_node[out, n_diff] = a_node
                diff_sign[out, n_diff] = h_dir
                n_diff += 1
                extra += 2.0 * fabs(s)
    for k in range(n_diff, diff_node.shape[1]):
        diff_node[out, k] = -1
        diff_sign[out, k] = 0
    # bound = max_g [g^T s + loss] - h^T s
    #       = best_val + (sgn(s) - h)^T s = best_val + 2 sum_{forced} |s|
    bound[out] = best_val + extra


cdef inline double _lse_of(const double* theta, Py_ssize_t K) noexcept nogil:
    # log sum exp of one leaf's K logits
    cdef Py_ssize_t k
    cdef double mx = theta[0], z = 0.0
    for k in range(1, K):
        if theta[k] > mx:
            mx = theta[k]
    for k in range(K):
        z += exp(theta[k] - mx)
    return mx + log(z)


cdef inline void _add_leaf_grad(
    const double* theta,
    double* gth,
    double* grad_row,
    Py_ssize_t K,
    int loss_kind,
    int64_t y,
    const double* y_row,
    double c,
) noexcept nogil:
    # ``gth += c * d loss(theta, y) / d theta`` of one leaf: softmax minus
    # one-hot (log loss) or 2 (theta - y) (squared loss).
    cdef Py_ssize_t k
    cdef double mx, z = 0.0
    if loss_kind == 0:
        mx = theta[0]
        for k in range(1, K):
            if theta[k] > mx:
                mx = theta[k]
        for k in range(K):
            grad_row[k] = exp(theta[k] - mx)
            z += grad_row[k]
        for k in range(K):
            grad_row[k] = grad_row[k] / z
        grad_row[y] -= 1.0
    else:
        for k in range(K):
            grad_row[k] = 2.0 * (theta[k] - y_row[k])
    for k in range(K):
        gth[k] += grad_row[k] * c


cdef inline void _step(
    double* param,
    double* velocity,
    double* grad,
    Py_ssize_t n,
    double learning_rate,
    double momentum,
) noexcept nogil:
    # One momentum step of ``n`` parameters; the gradient is zeroed.
    cdef Py_ssize_t j
    for j in range(n):
        velocity[j] = momentum * velocity[j] + grad[j]
        param[j] -= learning_rate * velocity[j]
        grad[j] = 0.0


cdef inline void _step_split(
    double[:, ::1] W,
    double[::1] b,
    double[:, ::1] vW,
    double[::1] vb,
    double[:, ::1] gW,
    double[::1] gb,
    Py_ssize_t r,
    double learning_rate,
    double momentum,
    double nu,
) noexcept nogil:
    # The momentum step of split row r of [W, b], then its projection to
    # norm at most nu.
    cdef Py_ssize_t j, p = W.shape[1]
    cdef double norm = 0.0, f
    _step(&W[r, 0], &vW[r, 0], &gW[r, 0], p, learning_rate, momentum)
    _step(&b[r], &vb[r], &gb[r], 1, learning_rate, momentum)
    for j in range(p):
        norm += W[r, j] * W[r, j]
    norm = sqrt(norm + b[r] * b[r])
    if norm > nu:
        f = nu / norm
        for j in range(p):
            W[r, j] *= f
        b[r] *= f


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
    cdef Py_ssize_t row
    with nogil:
        for row in range(X.shape[0]):
            _lai_row(X, W, b, theta, lse, y_cls, y_reg, row, assign[row], depth, loss_kind,
                     mode, row, g_leaf, h_leaf, bound, diff_node, diff_sign, scores, penalty)


def _sgd_epoch(
    const floating[:, ::1] X,
    const int64_t[::1] y_cls,
    const double[:, ::1] y_reg,
    const double[::1] w,
    const int64_t[::1] perm,
    const int64_t[::1] assign,
    Py_ssize_t batch_size,
    int depth,
    int loss_kind,
    int mode,
    double learning_rate,
    double momentum,
    double nu,
    double[:, ::1] W,
    double[::1] b,
    double[:, ::1] theta,
    double[:, ::1] vW,
    double[::1] vb,
    double[:, ::1] vth,
    double[:, ::1] gW,
    double[::1] gb,
    double[:, ::1] gth,
    uint8_t[::1] live_W,
    int64_t[::1] idx_W,
    uint8_t[::1] live_th,
    int64_t[::1] idx_th,
    int64_t[::1] n_live,
    int64_t[::1] g_leaf,
    int64_t[::1] h_leaf,
    double[::1] bound,
    int64_t[:, ::1] diff_node,
    int8_t[:, ::1] diff_sign,
    double[::1] scores,
    double[::1] penalty,
    double[::1] lse,
    double[::1] grad_row,
    double[::1] result,
):
    """One epoch of Algorithm 1: the mini-batches of ``batch_size`` rows of
    ``perm`` (indices into ``X`` / ``y_*`` / ``w`` / ``assign``), in order.

    Every batch: loss-augmented inference of its rows with the parameters as
    they are (:func:`_lai_row`; frozen leaves ``assign[row]`` when
    ``assign`` is not empty); its bound ``sum w bound / sum w``, added
    (times the batch's rows) to ``result[0]``; the split gradients
    ``(g - h) [x, 1] w / sum w`` into ``gW`` / ``gb`` and the leaf gradients
    (softmax minus one-hot, or ``2 (theta - y)``, times ``w / sum w``) into
    ``gth``; then the momentum step of every row of ``[W, b]`` / ``theta``
    that ever got a gradient (``live_*``, listed in the first ``n_live[0]``
    / ``n_live[1]`` entries of ``idx_*``: the others have zero momentum, so
    this is the dense step), the gradients of the step zeroed, and the
    projection of the live rows of ``[W, b]`` to norm at most ``nu``.

    ``lse`` (``m + 1``: exact inference with the log loss, recomputed per
    batch; else empty), ``grad_row`` (n_outputs) and the per-row outputs
    (``batch_size`` rows) and ``scores`` / ``penalty`` are scratch. Returns 0,
    or 1 with ``result[1]`` the first batch bound that is not finite (its
    batch is not applied).
    """
    cdef Py_ssize_t n = perm.shape[0], m = W.shape[0], p = W.shape[1], K = theta.shape[1]
    cdef Py_ssize_t start = 0, nb, i, k, j, t, r, row, node, leaf
    cdef double wsum, total, c, c0
    cdef bint stable = assign.shape[0] > 0
    cdef int status = 0
    with nogil:
        while start < n:
            nb = min(batch_size, n - start)
            if lse.shape[0] > 0:
                for leaf in range(m + 1):
                    lse[leaf] = _lse_of(&theta[leaf, 0], K)
            for i in range(nb):
                row = perm[start + i]
                _lai_row(X, W, b, theta, lse, y_cls, y_reg, row,
                         assign[row] if stable else -1, depth, loss_kind, mode, i,
                         g_leaf, h_leaf, bound, diff_node, diff_sign, scores, penalty)
            wsum = 0.0
            total = 0.0
            for i in range(nb):
                row = perm[start + i]
                wsum = wsum + w[row]
                total = total + bound[i] * w[row]
            total = total / wsum
            if not isfinite(total):
                result[1] = total
                status = 1
                break
            result[0] += total * nb
            # Split gradients (g - h)[x, 1] on the differing rows only.
            for i in range(nb):
                row = perm[start + i]
                c0 = w[row] / wsum
                for k in range(diff_node.shape[1]):
                    node = diff_node[i, k]
                    if node < 0:
                        break
                    c = 2.0 * diff_sign[i, k] * c0
                    for j in range(p):
                        gW[node, j] += c * X[row, j]
                    gb[node] += c
                    if not live_W[node]:
                        live_W[node] = 1
                        idx_W[n_live[0]] = node
                        n_live[0] += 1
            # Leaf gradients of loss(theta_f(g), y) (Algorithm 1, line 10).
            for i in range(nb):
                row = perm[start + i]
                leaf = g_leaf[i]
                _add_leaf_grad(&theta[leaf, 0], &gth[leaf, 0], &grad_row[0], K, loss_kind,
                               y_cls[row] if loss_kind == 0 else 0,
                               &y_reg[row if loss_kind == 1 else 0, 0], w[row] / wsum)
                if not live_th[leaf]:
                    live_th[leaf] = 1
                    idx_th[n_live[1]] = leaf
                    n_live[1] += 1
            # Momentum steps, the gradients zeroed, the projection
            # ||[w_i, b_i]|| <= nu of the rows that moved.
            for t in range(n_live[0]):
                _step_split(W, b, vW, vb, gW, gb, idx_W[t], learning_rate, momentum, nu)
            for t in range(n_live[1]):
                r = idx_th[t]
                _step(&theta[r, 0], &vth[r, 0], &gth[r, 0], K, learning_rate, momentum)
            start += nb
    return status


def _co2_level_epoch(
    const floating[:, ::1] X,
    const int64_t[::1] y_cls,
    const double[:, ::1] y_reg,
    const double[::1] w,
    const int64_t[::1] node_of,
    const int64_t[::1] perm,
    Py_ssize_t batch_size,
    int loss_kind,
    double learning_rate,
    double momentum,
    double nu,
    double[:, ::1] W,
    double[::1] b,
    double[:, :, ::1] theta,
    double[:, ::1] vW,
    double[::1] vb,
    double[:, :, ::1] vth,
    double[:, ::1] gW,
    double[::1] gb,
    double[:, :, ::1] gth,
    double[::1] count,
    double[::1] grad_row,
):
    """One epoch of the depth-1 bounds of a CO2 level (``co2_tree``).

    The level's nodes are independent stumps: row ``r`` belongs to node
    ``node_of[r]`` (split ``W[node] . x + b[node] > 0`` goes right, leaves
    ``theta[node, side]``). Every mini-batch of ``batch_size`` rows of
    ``perm``: each row's loss-augmented side (the other side iff its loss
    minus ``2 |s|`` exceeds the own side's), the split gradient ``2 (side
    is right ? 1 : -1) w / W_node [x, 1]`` of the rows whose side flips and
    the leaf gradient (softmax minus one-hot, or ``2 (theta - y)``, times
    ``w / W_node``) at the row's loss-augmented side, where ``W_node`` is the
    weight of the node's rows in the batch; then the momentum step of every
    node and the projection of ``[W, b]``'s rows to norm at most ``nu``.
    ``count`` (n_nodes) and ``grad_row`` (n_outputs) are scratch; ``gW``,
    ``gb``, ``gth`` are zero on entry and on return.
    """
    cdef Py_ssize_t n = perm.shape[0], n_nodes = W.shape[0], p = W.shape[1]
    cdef Py_ssize_t K = theta.shape[2]
    cdef Py_ssize_t start = 0, nb, i, j, k, r, row, node, h, side
    cdef double s, own, other, c, z, f, d
    cdef double loss_side[2]
    with nogil:
        while start < n:
            nb = min(batch_size, n - start)
            for r in range(n_nodes):
                count[r] = 0.0
            for i in range(nb):
                row = perm[start + i]
                count[node_of[row]] += w[row]
            # 1 / the node's weight in the batch; 0 where it is 0 (rows of
            # zero weight only: their gradients are 0, not 0 * inf).
            for r in range(n_nodes):
                count[r] = 1.0 / count[r] if count[r] > 0.0 else 0.0
            for i in range(nb):
                row = perm[start + i]
                node = node_of[row]
                s = b[node] + dot(&W[node, 0], &X[row, 0], p)
                h = 1 if s > 0.0 else 0
                for side in range(2):
                    if loss_kind == 0:
                        loss_side[side] = (_lse_of(&theta[node, side, 0], K)
                                           - theta[node, side, y_cls[row]])
                    else:
                        z = 0.0
                        for k in range(K):
                            d = theta[node, side, k] - y_reg[row, k]
                            z += d * d
                        loss_side[side] = z
                own = loss_side[h]
                other = loss_side[1 - h]
                c = w[row] * count[node]
                side = h
                if other - 2.0 * fabs(s) > own:
                    side = 1 - h
                    f = 2.0 * (2 * side - 1) * c
                    for j in range(p):
                        gW[node, j] += f * X[row, j]
                    gb[node] += f
                _add_leaf_grad(&theta[node, side, 0], &gth[node, side, 0], &grad_row[0], K,
                               loss_kind, y_cls[row] if loss_kind == 0 else 0,
                               &y_reg[row if loss_kind == 1 else 0, 0], c)
            for r in range(n_nodes):
                _step_split(W, b, vW, vb, gW, gb, r, learning_rate, momentum, nu)
                _step(&theta[r, 0, 0], &vth[r, 0, 0], &gth[r, 0, 0], 2 * K, learning_rate,
                      momentum)
            start += nb
