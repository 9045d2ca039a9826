# Best axis-aligned split of every node of a tree level, on binned features.
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no Python objects inside the loops. The Python layer
# (``level_splits`` in ``sklearn_difftrees/_core/greedy.py``) groups the rows
# by node, marks pure nodes, allocates the outputs and the workspace; its
# callers bin the columns (``FeatureBins``) and map the chosen codes back to
# raw thresholds.
#
# Conventions. ``codes[i, f]`` is row i's bin code of feature f (an integer
# stored as float32, as scikit-learn's trees store features), in
# ``0 .. n_codes - 1``; a split ``code <= c`` sends a row left. The rows of
# node j are ``order[starts[j] : starts[j + 1]]``, row i weighs ``w[i]``.
# Per code, the workspace ``hist`` (n_codes, S) accumulates
#
#     criterion 0 (information gain): the weight of each class ``y_cls``
#         (S = number of classes); the split maximizes scikit-learn's entropy
#         proxy  sum_k [xlogx(L_k) + xlogx(R_k)] - xlogx(w_L) - xlogx(w_R);
#     criterion 1 (squared error): the weight, then weight * target of each
#         output of ``y_reg`` (S = 1 + n_outputs); the split maximizes
#         scikit-learn's proxy  sum_o [S_Lo^2 / w_L + S_Ro^2 / w_R].
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


cdef inline void _add_row(
    double[:, ::1] hist,
    Py_ssize_t c,
    const int64_t[::1] y_cls,
    const double[:, ::1] y_reg,
    const double[::1] w,
    Py_ssize_t r,
    int criterion,
) noexcept nogil:
    cdef Py_ssize_t o
    if criterion == 0:
        hist[c, y_cls[r]] += w[r]
    else:
        hist[c, 0] += w[r]
        for o in range(y_reg.shape[1]):
            hist[c, o + 1] += w[r] * y_reg[r, o]


cdef inline double _gain(
    const double[::1] left,
    const double[::1] total,
    Py_ssize_t S,
    int criterion,
) noexcept nogil:
    cdef Py_ssize_t s
    cdef double w_left = 0.0, w_right = 0.0, gain = 0.0, sl, sr
    if criterion == 0:
        for s in range(S):
            w_left += left[s]
            w_right += total[s] - left[s]
            gain += _xlogx(left[s]) + _xlogx(total[s] - left[s])
        return gain - _xlogx(w_left) - _xlogx(w_right)
    w_left = left[0]
    w_right = total[0] - left[0]
    if w_left <= 0.0 or w_right <= 0.0:
        return 0.0
    for s in range(1, S):
        sl = left[s]
        sr = total[s] - left[s]
        gain += sl * sl / w_left + sr * sr / w_right
    return gain


def _best_level_splits(
    const float[:, ::1] codes,
    const int64_t[::1] y_cls,
    const double[:, ::1] y_reg,
    const double[::1] w,
    const int64_t[::1] order,
    const int64_t[::1] starts,
    const uint8_t[::1] skip,
    int criterion,
    int64_t[::1] feature,
    int64_t[::1] code,
    double[:, ::1] hist,
    int64_t[::1] count,
    double[::1] left,
    double[::1] total,
):
    """Best split ``(feature[j], code[j])`` of every node j (see the file header).

    ``hist`` (n_codes, S) and ``count`` (n_codes) must be zero on entry and
    are zero on return; ``left`` and ``total`` have S entries. ``y_cls``
    (criterion 0) or ``y_reg`` (criterion 1) may be empty when unused.
    """
    cdef Py_ssize_t n_nodes = starts.shape[0] - 1
    cdef Py_ssize_t p = codes.shape[1], S = hist.shape[1], n_codes = count.shape[0]
    cdef Py_ssize_t j, i, r, f, s, c, lo, hi, prev, n_left
    cdef double gain, best
    cdef bint found
    with nogil:
        for j in range(n_nodes):
            feature[j] = -1
            code[j] = 0
            if skip[j] or starts[j + 1] - starts[j] < 2:
                continue
            # The node's totals: its rows' statistics, all in code 0 of hist.
            for i in range(starts[j], starts[j + 1]):
                _add_row(hist, 0, y_cls, y_reg, w, order[i], criterion)
            for s in range(S):
                total[s] = hist[0, s]
                hist[0, s] = 0.0
            found = False
            best = 0.0
            for f in range(p):
                lo = n_codes
                hi = -1
                for i in range(starts[j], starts[j + 1]):
                    r = order[i]
                    c = <Py_ssize_t> codes[r, f]
                    count[c] += 1
                    if c < lo:
                        lo = c
                    if c > hi:
                        hi = c
                    _add_row(hist, c, y_cls, y_reg, w, r, criterion)
                for s in range(S):
                    left[s] = 0.0
                n_left = 0
                prev = -1
                for c in range(lo, hi + 1):
                    if not count[c]:
                        continue
                    if n_left > 0:  # candidate: codes <= prev left, >= c right
                        gain = _gain(left, total, S, criterion)
                        if not found or gain > best:
                            found = True
                            best = gain
                            feature[j] = f
                            code[j] = (prev + c) // 2
                    for s in range(S):
                        left[s] += hist[c, s]
                    n_left += count[c]
                    prev = c
                for c in range(lo, hi + 1):  # leave the workspace zero
                    count[c] = 0
                    for s in range(S):
                        hist[c, s] = 0.0
