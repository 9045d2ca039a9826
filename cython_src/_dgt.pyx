# The route of DGT's trees (``sklearn_difftrees/dgt/_module.Route``) on the
# CPU: the hard leaves forward, the gradient of the node scores backward.
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no Python objects inside the loops. The Python layer
# (``sklearn_difftrees/dgt/_module.py``) passes C-contiguous arrays of one
# dtype, allocates the outputs and the per-thread work rows.
#
# Conventions. ``T`` trees of depth ``D`` evaluated on ``B`` rows each; node
# scores ``a[t, r]`` in heap order (``m = 2**D - 1`` internal nodes), leaf
# parameters ``leaf[t, l]`` (``L = 2**D`` leaves, ``k`` outputs), the gradient
# of the loss with respect to the route's output ``grad[t, r]`` (``k``
# values). The decisions are ``s_i = sign(a_i) * c`` (``c = scale[t, r]``) and
# the path scores ``q_l = sum_i S(i, l) s_i``: ``+s_i`` where leaf ``l`` lies in
# the right subtree of node ``i``, ``-s_i`` in its left subtree.
#
# The softmax of ``q`` needs no exponential per leaf: the two children of a
# node differ from their parent's score by ``+s_i`` and ``-s_i``, and when no
# ``s_i`` is 0 the sum over a subtree's leaves of ``exp(q_l)`` is the same for
# every subtree of one height (it factors level by level into
# ``(exp(c) + exp(-c))**height``), so
#
#     softmax(q)_l = prod over the path to l of sigma(+-2 s_i)
#
# (``sigma(x) = 1 / (1 + exp(-x))``; ``+`` for a right step). ``sigma(2 s_i)``
# is ``1/2 + delta`` or ``1/2 - delta`` with one ``delta`` per row, so a row
# costs one exponential and O(L k) multiply-adds. A decision of exactly 0
# (``a_i = 0``) breaks the factorization; a row with one gets ``q`` and its
# softmax as written. Backward, per row:
#
# 1. ``p`` = softmax(q), top down (a node's children get its probability
#    times ``1/2 -+ delta``);
# 2. ``g_l = grad . leaf_l`` and ``dq_l = p_l (g_l - sum_j p_j g_j)`` (the
#    softmax's Jacobian);
# 3. ``grad_a_i = (sum of dq over the right subtree of i - sum over its left
#    subtree) * 1{|a_i| <= 1}`` (``dq @ S`` and the straight-through
#    indicator), bottom up by pairs.
#
# A decision of 0 is any score that is neither positive nor negative (0, -0
# and NaN, as ``torch.sign``; tested without short-circuit operators, whose
# branches on random signs made the pass three times slower).
#
# Parallelism: rows are independent and write only their own row of the
# outputs; every OpenMP thread uses its own row of ``work`` (at least ``3 L``
# values, padded by the caller to whole cache lines).

from cython cimport floating

from cython.parallel cimport prange, threadid
from libc.math cimport fabs
from libc.stdint cimport int64_t


# One row of the backward pass, in C over restrict pointers so that the
# compiler vectorizes its loops (written in Cython, the straight-through
# indicator became a branch taken at random, and the in-place top-down pass
# could not be vectorized). ``leaf_t`` is the tree's leaves transposed, ``k``
# rows of ``L``; ``p``, ``q`` and ``g`` are work rows of ``L`` values.
cdef extern from *:
    """
    #include <math.h>
    /* C99's restrict under each compiler's spelling (MSVC has no bare
       restrict in C mode without /std:c11). */
    #if defined(_MSC_VER)
    #define DGT_RESTRICT __restrict
    #elif defined(__GNUC__) || defined(__clang__)
    #define DGT_RESTRICT __restrict__
    #else
    #define DGT_RESTRICT
    #endif
    #define DGT_ROUTE_ROW(NAME, T, ATTR)                                             \
    ATTR static void NAME(const T *DGT_RESTRICT a, double c,                        \
                     const T *DGT_RESTRICT leaf_t, const T *DGT_RESTRICT grad,       \
                     T *DGT_RESTRICT grad_a, T *DGT_RESTRICT p, T *DGT_RESTRICT q,   \
                     T *DGT_RESTRICT g, Py_ssize_t depth, Py_ssize_t k) {            \
        Py_ssize_t n_leaves = (Py_ssize_t)1 << depth, level, j, l, col;              \
        const T delta = (T)(1.0 / (1.0 + exp(-2.0 * c)) - 0.5);                      \
        const T half = (T)0.5;                                                       \
        T *cur = p, *nxt = q, *tmp;                                                  \
        double dot = 0.0;                                                            \
        int zeros = 0;                                                               \
        for (j = 0; j < n_leaves - 1; j++) zeros |= (a[j] == 0) | (a[j] != a[j]);    \
        if (zeros) {                                                                 \
            /* A decision of 0 (a = 0) breaks the factorization: the scores  */      \
            /* q, then their softmax, as written.                             */     \
            T top = 0;                                                               \
            double total = 0.0;                                                      \
            cur[0] = (T)0;                                                           \
            for (level = 0; level < depth; level++) {                                \
                Py_ssize_t width = (Py_ssize_t)1 << level;                           \
                const T *node = a + width - 1;                                       \
                for (j = 0; j < width; j++) {                                        \
                    T s = (T)((node[j] > 0) - (node[j] < 0)) * (T)c;                 \
                    nxt[2 * j] = cur[j] - s;                                         \
                    nxt[2 * j + 1] = cur[j] + s;                                     \
                }                                                                    \
                tmp = cur; cur = nxt; nxt = tmp;                                     \
            }                                                                        \
            top = cur[0];                                                            \
            for (l = 1; l < n_leaves; l++) top = cur[l] > top ? cur[l] : top;        \
            for (l = 0; l < n_leaves; l++) {                                         \
                cur[l] = (T)exp((double)(cur[l] - top));                             \
                total += cur[l];                                                     \
            }                                                                        \
            for (l = 0; l < n_leaves; l++) cur[l] = (T)(cur[l] / total);             \
        } else {                                                                     \
            cur[0] = (T)1;                                                           \
            for (level = 0; level < depth; level++) {                                \
                Py_ssize_t width = (Py_ssize_t)1 << level;                           \
                const T *node = a + width - 1;                                       \
                for (j = 0; j < width; j++) {                                        \
                    T step = (T)((node[j] > 0) - (node[j] < 0)) * delta;             \
                    nxt[2 * j] = cur[j] * (half - step);                             \
                    nxt[2 * j + 1] = cur[j] * (half + step);                         \
                }                                                                    \
                tmp = cur; cur = nxt; nxt = tmp;                                     \
            }                                                                        \
        }                                                                            \
        /* g = leaf . grad, eight leaves at a time summed over the k outputs  */   \
        /* in registers (one pass over g instead of k).                       */   \
        for (l = 0; l + 8 <= n_leaves; l += 8) {                                     \
            T acc[8];                                                                \
            Py_ssize_t e;                                                            \
            for (e = 0; e < 8; e++) acc[e] = grad[0] * leaf_t[l + e];                \
            for (col = 1; col < k; col++) {                                          \
                const T gc = grad[col], *row = leaf_t + col * n_leaves + l;          \
                for (e = 0; e < 8; e++) acc[e] += gc * row[e];                       \
            }                                                                        \
            for (e = 0; e < 8; e++) g[l + e] = acc[e];                               \
        }                                                                            \
        for (; l < n_leaves; l++) {                                                  \
            T acc = grad[0] * leaf_t[l];                                             \
            for (col = 1; col < k; col++) acc += grad[col] * leaf_t[col * n_leaves + l]; \
            g[l] = acc;                                                              \
        }                                                                            \
        {   /* four partial sums: one chain of n_leaves additions would take */   \
            /* most of the row's time (their latency, not their number)       */   \
            double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;                         \
            for (l = 0; l + 4 <= n_leaves; l += 4) {                                 \
                d0 += (double)(cur[l] * g[l]);                                       \
                d1 += (double)(cur[l + 1] * g[l + 1]);                               \
                d2 += (double)(cur[l + 2] * g[l + 2]);                               \
                d3 += (double)(cur[l + 3] * g[l + 3]);                               \
            }                                                                        \
            for (; l < n_leaves; l++) d0 += (double)(cur[l] * g[l]);                 \
            dot = (d0 + d1) + (d2 + d3);                                             \
        }                                                                            \
        for (l = 0; l < n_leaves; l++) g[l] = cur[l] * (g[l] - (T)dot);              \
        T *src = g, *dst = nxt;                                                      \
        for (level = depth - 1; level >= 0; level--) {                               \
            Py_ssize_t width = (Py_ssize_t)1 << level;                               \
            T *out = grad_a + width - 1;                                             \
            for (j = 0; j < width; j++) {                                            \
                T left = src[2 * j], right = src[2 * j + 1];                         \
                out[j] = right - left;                                               \
                dst[j] = left + right;                                               \
            }                                                                        \
            tmp = src; src = dst; dst = tmp;                                         \
        }                                                                            \
        for (j = 0; j < n_leaves - 1; j++)                                           \
            grad_a[j] = fabs((double)a[j]) <= 1.0 ? grad_a[j] : (T)0;                \
    }
    DGT_ROUTE_ROW(_dgt_route_row_d, double, )
    /* The float32 row twice on x86-64 with GCC / Clang: for the baseline
       x86-64 (SSE2) and for processors with FMA (and AVX, whose wider
       vectors the compiler then uses); dgt_select_fma picks one through the
       pointer _dgt_route_row_f (at import: FMA where the processor has it). */
    /* Not on macOS: Apple's toolchain lacks the runtime behind
       __builtin_cpu_supports (the module would not import). */
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(_WIN32) \
        && !defined(__APPLE__)
    #define DGT_DISPATCH 1
    #else
    #define DGT_DISPATCH 0
    #endif
    DGT_ROUTE_ROW(_dgt_route_row_f_base, float, )
    #if DGT_DISPATCH
    DGT_ROUTE_ROW(_dgt_route_row_f_fma, float, __attribute__((target("fma"))))
    #endif
    static void (*_dgt_route_row_f)(const float *, double, const float *, const float *,
                                    float *, float *, float *, float *, Py_ssize_t,
                                    Py_ssize_t) = _dgt_route_row_f_base;
    /* Use the FMA variant when on is set and the processor has FMA; returns
       whether it is used. Not thread-safe: called at import and by tests. */
    static int dgt_select_fma(int on) {
    #if DGT_DISPATCH
        __builtin_cpu_init();
        if (on && __builtin_cpu_supports("fma")) {
            _dgt_route_row_f = _dgt_route_row_f_fma;
            return 1;
        }
    #endif
        _dgt_route_row_f = _dgt_route_row_f_base;
        return 0;
    }
    """
    void _dgt_route_row_f(const float* a, double c, const float* leaf_t, const float* grad,
                          float* grad_a, float* p, float* q, float* g, Py_ssize_t depth,
                          Py_ssize_t k) noexcept nogil
    void _dgt_route_row_d(const double* a, double c, const double* leaf_t,
                          const double* grad, double* grad_a, double* p, double* q,
                          double* g, Py_ssize_t depth, Py_ssize_t k) noexcept nogil
    int dgt_select_fma(int on) noexcept nogil


def _use_fma(bint on):
    """Run the float32 backward pass on its FMA variant (``on``, where the
    processor has FMA) or on the baseline x86-64 one; returns whether FMA is
    used. The module picks FMA at import where it can; the variants differ
    by rounding only (tests run both)."""
    return bool(dgt_select_fma(on))


#: Whether the float32 backward pass uses the FMA variant (chosen at import).
FMA = _use_fma(True)


def _route_backward(
    const floating[:, :, ::1] a,
    const floating[:, ::1] scale,
    const floating[:, :, ::1] leaf_t,
    const floating[:, :, ::1] grad,
    floating[:, :, ::1] grad_a,
    floating[:, ::1] work,
    int depth,
    int n_threads,
):
    """Write into ``grad_a`` (``T, B, m``) the gradient of the route with
    respect to the node scores ``a`` (``T, B, m``), given the decisions'
    magnitudes ``scale`` (``T, B``), the leaves transposed ``leaf_t``
    (``T, k, L``) and the output's gradient ``grad`` (``T, B, k``).
    ``work`` is ``(n_threads, >= 3 L)``.
    """
    cdef Py_ssize_t n_trees = a.shape[0], n_rows = a.shape[1]
    cdef Py_ssize_t k = leaf_t.shape[1], n_leaves = leaf_t.shape[2]
    cdef Py_ssize_t item, t, r, tid
    with nogil:
        for item in prange(n_trees * n_rows, num_threads=n_threads, schedule="static"):
            t = item // n_rows
            r = item % n_rows
            tid = threadid()
            if floating is float:
                _dgt_route_row_f(&a[t, r, 0], scale[t, r], &leaf_t[t, 0, 0], &grad[t, r, 0],
                                 &grad_a[t, r, 0], &work[tid, 0], &work[tid, n_leaves],
                                 &work[tid, 2 * n_leaves], depth, k)
            else:
                _dgt_route_row_d(&a[t, r, 0], scale[t, r], &leaf_t[t, 0, 0], &grad[t, r, 0],
                                 &grad_a[t, r, 0], &work[tid, 0], &work[tid, n_leaves],
                                 &work[tid, 2 * n_leaves], depth, k)


def _route_forward(
    const floating[:, :, ::1] a,
    int64_t[:, ::1] hard,
    floating[:, ::1] magnitude,
    int depth,
    int n_threads,
):
    """Write the hard leaf of every row of node scores ``a`` (``T, B, m``)
    into ``hard`` (``T, B``: right iff ``a > 0``, as ``Route``'s
    ``hard_leaf``) and the sum of the row's ``|a|`` over its ``m`` nodes into
    ``magnitude`` (``T, B``; summed in float64)."""
    cdef Py_ssize_t n_trees = a.shape[0], n_rows = a.shape[1], m = a.shape[2]
    cdef Py_ssize_t item, t, r, i, level, pos
    cdef double t0, t1, t2, t3
    with nogil:
        for item in prange(n_trees * n_rows, num_threads=n_threads, schedule="static"):
            t = item // n_rows
            r = item % n_rows
            pos = 0
            for level in range(depth):
                pos = 2 * pos + (a[t, r, ((<Py_ssize_t> 1) << level) - 1 + pos] > 0)
            hard[t, r] = pos
            # Four partial sums: one chain of m additions is bound by their
            # latency, not their number.
            t0 = t1 = t2 = t3 = 0.0
            i = 0
            while i + 4 <= m:
                t0 = t0 + fabs(a[t, r, i])
                t1 = t1 + fabs(a[t, r, i + 1])
                t2 = t2 + fabs(a[t, r, i + 2])
                t3 = t3 + fabs(a[t, r, i + 3])
                i = i + 4
            while i < m:
                t0 = t0 + fabs(a[t, r, i])
                i = i + 1
            magnitude[t, r] = <floating> ((t0 + t1) + (t2 + t3))
