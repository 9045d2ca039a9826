# Best axis-aligned split of every node of a tree level, on binned features.
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no Python objects inside the loops. The Python layer
# (``sklearn_difftrees/non_greedy/_stump.py``) bins the columns, groups the rows
# by node, builds the per-row statistics, allocates the outputs and the
# workspace, and maps the chosen codes back to raw thresholds.
#
# Conventions. ``codes[i, f]`` is row i's bin code of feature f (an integer
# stored as float32, as scikit-learn's trees store features), in
# ``0 .. n_codes - 1``; a split ``code <= c`` sends a row left. The rows of
# node j are ``order[starts[j] : starts[j + 1]]``. ``stats[i]`` holds row i's
# additive statistics:
#
#     criterion 0 (information gain): the row's weight in its class's column
#         (K columns); the split maximizes scikit-learn's entropy proxy
#         sum_k [xlogx(L_k) + xlogx(R_k)] - xlogx(w_L) - xlogx(w_R);
#     criterion 1 (squared error): the row's weight, then weight * target for
#         each output (1 + n_outputs columns); the split maximizes
#         scikit-learn's proxy sum_o [S_Lo^2 / w_L + S_Ro^2 / w_R].
#
# Candidates are the boundaries between consecutive codes present in the node
# (at least one row on each side); the threshold between present codes a < b
# is ``(a + b) // 2``, as scikit-learn's midpoint on the codes. Ties keep the
# first (lowest feature, then lowest code). A node with ``skip[j]`` set, or
# with no candidate, gets ``feature[j] = -1``.

from libc.math cimport log
from libc.stdint cimport int64_t, uint8_t


cdef inline double _xlogx(double x) noexcept nogil:
    return x * log(x) if x > 0.0 else 0.0


def _best_level_splits(
    const float[:, ::1] codes,
    const double[:, ::1] stats,
    const int64_t[::1] order,
    const int64_t[::1] starts,
    const uint8_t[::1] skip,
    int criterion,
    int64_t[::1] feature,
    int64_t[::1] code,
    double[:, :, ::1] hist,
    int64_t[:, ::1] count,
    double[::1] left,
    double[::1] total,
    int64_t[:, ::1] span,
):
    """Best split ``(feature[j], code[j])`` of every node j (see the file header).

    ``hist`` (p, n_codes_max, S) and ``count`` (p, n_codes_max) must be zero
    on entry and are zero on return; ``left`` and ``total`` have S entries,
    ``span`` (p, 2) holds each feature's lowest and highest code in the node.
    """
    cdef Py_ssize_t n_nodes = starts.shape[0] - 1
    cdef Py_ssize_t p = codes.shape[1], S = stats.shape[1], n_codes = count.shape[1]
    cdef Py_ssize_t j, i, r, f, s, c, lo, hi, prev, n_left
    cdef double w_left, w_right, gain, best, sl, sr
    cdef bint found
    with nogil:
        for j in range(n_nodes):
            feature[j] = -1
            code[j] = 0
            if skip[j] or starts[j + 1] - starts[j] < 2:
                continue
            for s in range(S):
                total[s] = 0.0
            for f in range(p):
                span[f, 0] = n_codes
                span[f, 1] = -1
            for i in range(starts[j], starts[j + 1]):
                r = order[i]
                for s in range(S):
                    total[s] += stats[r, s]
                for f in range(p):
                    c = <Py_ssize_t> codes[r, f]
                    count[f, c] += 1
                    if c < span[f, 0]:
                        span[f, 0] = c
                    if c > span[f, 1]:
                        span[f, 1] = c
                    for s in range(S):
                        hist[f, c, s] += stats[r, s]
            found = False
            best = 0.0
            for f in range(p):
                lo = span[f, 0]
                hi = span[f, 1]
                for s in range(S):
                    left[s] = 0.0
                n_left = 0
                prev = -1
                for c in range(lo, hi + 1):
                    if not count[f, c]:
                        continue
                    if n_left > 0:  # candidate: codes <= prev left, >= c right
                        if criterion == 0:
                            w_left = 0.0
                            gain = 0.0
                            for s in range(S):
                                w_left += left[s]
                                gain += _xlogx(left[s]) + _xlogx(total[s] - left[s])
                            w_right = 0.0
                            for s in range(S):
                                w_right += total[s] - left[s]
                            gain -= _xlogx(w_left) + _xlogx(w_right)
                        else:
                            w_left = left[0]
                            w_right = total[0] - left[0]
                            gain = 0.0
                            if w_left > 0.0 and w_right > 0.0:
                                for s in range(1, S):
                                    sl = left[s]
                                    sr = total[s] - left[s]
                                    gain += sl * sl / w_left + sr * sr / w_right
                        if not found or gain > best:
                            found = True
                            best = gain
                            feature[j] = f
                            code[j] = (prev + c) // 2
                    for s in range(S):
                        left[s] += hist[f, c, s]
                    n_left += count[f, c]
                    prev = c
                for c in range(lo, hi + 1):  # leave the workspace zero
                    count[f, c] = 0
                    for s in range(S):
                        hist[f, c, s] = 0.0
