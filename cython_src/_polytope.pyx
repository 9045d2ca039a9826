# Conditional forward and backward passes of the probabilistic convex-polytope tree.
#
# Armandpour et al., "Convex Polytope Trees", NeurIPS 2021, eq. (2) and (8):
# split node ``v`` sends a row right with probability ``1 - exp(-s_v(x))``,
# ``s_v(x) = sum_k r[v, k] softplus(beta[v, k] . x + bias[v, k])``, left with
# ``exp(-s_v(x))``; a leaf's probability is the product along its path.
#
# Private, typed and dumb (like scikit-learn's ``_isotonic.pyx``): no
# validation, no defaults, no Python objects inside the loops. The Python
# layer (``sklearn_difftrees/polytope/_kernels.py``) checks shapes and dtypes,
# allocates every output and never hands user arrays to a kernel that writes.
#
# Model. ``S`` split nodes by position (``0`` is the root), ``child[v, 0]``
# and ``child[v, 1]`` the left and right child of ``v``: a split node's
# position (``>= 0``) or a leaf, ``-1 - column`` (its column in the output).
#
# Conditional computation. Unlike TEL's smooth step, ``1 - exp(-s)`` never
# reaches exactly 0 or 1, but after training most rows reach few nodes: a
# split child whose reach probability is at most ``eps`` is not expanded (its
# leaves get probability 0, its subtree no gradient), so a row costs
# ``O(U K p)`` for the ``U`` nodes it reaches instead of ``O(S K p)``. With
# ``eps = 0`` the passes are exact (every node with nonzero reach).
#
# Layout. The facet normals come transposed, ``betaT[v, j, k]``, with ``k``
# padded with zeros to a multiple of ``CHUNK``: the pre-activations of a
# node are then ``p`` element-wise updates of ``CHUNK``-vectors held in
# registers, which the compiler vectorizes (a dot product per facet is a
# serial reduction it may not reorder).
#
# Records. In training mode the forward pass records, per row and in
# pre-order (node, left subtree, right subtree), every expanded split node:
# ``node * 4 + flags`` (bit 0: left child expanded, bit 1: right child
# expanded), its reach probability ``R`` and ``exp(-s)``, and per facet
# ``softplus(z)`` and ``sigmoid(z)`` (the backward pass then evaluates no
# transcendental function). A row's entries beyond the record's capacity are
# counted, not written (the caller runs again with more). The backward pass
# scans the record in reverse, which visits every entry after all of its
# descendants, with a stack of the subtrees' adjoints ``dL/dR`` (depth at
# most the tree's).
#
# Parallelism. Rows are split over OpenMP threads (``prange``). The forward
# pass writes only to its own rows; the parameter gradients are reductions
# over rows, accumulated per thread into its slice of the ``(n_threads, ...)``
# buffers passed in and summed by the caller.

from cython cimport floating

from cython.parallel cimport prange, threadid
from libc.math cimport exp, expm1, log1p
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy

# Depth limit of the fixed-size traversal stacks (the Python layer checks
# every children table: positions, leaf columns, no cycle, depth < MAX_DEPTH).
cdef enum:
    STACK = 64
    CHUNK = 4  # facets whose pre-activations are summed together (see _facets)
MAX_DEPTH = 60
FACET_CHUNK = CHUNK


cdef extern from *:
    """
    /* Pre-activations of the facets of one node: z[k] = bias[k] + sum_j
       betaT[j * Kp + k] x[j] for k < K, betaT's rows padded with zeros to
       Kp, a multiple of 4 (z's padding is set to 0). Four facets are summed together (one SIMD
       vector with GCC / Clang vector extensions, any architecture), each
       with four partial sums over j mod 4 added as ((s0 + s1) + (s2 + s3))
       + bias; the scalar build (other compilers) adds in the same order
       (the same floats where neither contracts a multiply-add). A dot
       product per facet is a serial reduction the compiler may not
       vectorize. */
    #include <string.h>
    #define DT_FACETS_SCALAR(T) \
        for (Py_ssize_t k = K; k < Kp; k++) z[k] = 0; \
        for (Py_ssize_t c0 = 0; c0 < Kp; c0 += 4) \
            for (Py_ssize_t k = c0; k < c0 + 4 && k < K; k++) { \
                T s0 = 0, s1 = 0, s2 = 0, s3 = 0; \
                const T* w = betaT + k; \
                Py_ssize_t j = 0, p4 = p - p % 4; \
                for (; j < p4; j += 4, w += 4 * Kp) { \
                    s0 += w[0] * x[j]; s1 += w[Kp] * x[j + 1]; \
                    s2 += w[2 * Kp] * x[j + 2]; s3 += w[3 * Kp] * x[j + 3]; \
                } \
                for (; j < p; j++, w += Kp) s0 += w[0] * x[j]; \
                z[k] = ((s0 + s1) + (s2 + s3)) + bias[k]; \
            }
    /* float32 softplus(z) = max(z, 0) + log1p(e) and sigmoid(z) =
       (z >= 0 ? 1 : e) / (1 + e), e = exp(-|z|), four lanes at a time, with
       the polynomials of Cephes' expf and logf (S. L. Moshier; about 1 ulp):
       exp by rounding x log2(e) to n, a degree-5 polynomial on the remainder
       and 2^n in the exponent bits (x clamped at -87: e stays normal); log1p
       on e in (0, 1] as log1p(f) with f = e, or ln 2 + log1p(f) with
       f = (e - 1) / 2 above sqrt(2) - 1, f then within Cephes' range
       [sqrt(1/2) - 1, sqrt(2) - 1] and computed without rounding 1 + e.
       The scalar build evaluates the same formulas one lane at a time. */
    #define DT_EXP_P(x) (((((1.9875691500E-4f * (x) + 1.3981999507E-3f) * (x) \
        + 8.3334519073E-3f) * (x) + 4.1665795894E-2f) * (x) + 1.6666665459E-1f) * (x) \
        + 5.0000001201E-1f)
    #define DT_LOG_P(f) ((((((((7.0376836292E-2f * (f) - 1.1514610310E-1f) * (f) \
        + 1.1676998740E-1f) * (f) - 1.2420140846E-1f) * (f) + 1.4249322787E-1f) * (f) \
        - 1.6668057665E-1f) * (f) + 2.0000714765E-1f) * (f) - 2.4999993993E-1f) * (f) \
        + 3.3333331174E-1f)
    #define DT_MAGIC 12582912.0f  /* 1.5 * 2^23: adding and subtracting rounds to an integer */
    #define DT_MAGIC_BITS 0x4B400000  /* its bits: those of MAGIC + n minus these are n */
    #ifdef __FAST_MATH__
    #error "cython_src/_polytope.pyx must not be compiled with -ffast-math (its exp rounds with (x + MAGIC) - MAGIC)"
    #endif
    /* The float32 helpers below (dt_*_f_impl) are inlined into two callers
       on x86-64 with GCC / Clang: one built for the baseline x86-64 (SSE2),
       one for processors with FMA (and AVX), whose multiply-adds are then
       fused; dt_select_fma picks one through the function pointers
       dt_facets_f, dt_softplus_sigmoid_f and dt_node_grads_f (at import:
       FMA where the processor has it). Elsewhere the baseline only. */
    /* Not on macOS: Apple's toolchain lacks the runtime behind
       __builtin_cpu_supports (the module would not import). */
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(_WIN32) \
        && !defined(__APPLE__)
    #define DT_DISPATCH 1
    #else
    #define DT_DISPATCH 0
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define DT_INLINE static inline __attribute__((always_inline))
    #else
    #define DT_INLINE static inline
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    typedef float dt_v4f __attribute__((vector_size(16)));
    typedef int dt_v4i __attribute__((vector_size(16)));
    static inline dt_v4f dt_sel(dt_v4i m, dt_v4f a, dt_v4f b) {
        return (dt_v4f)(((dt_v4i)a & m) | ((dt_v4i)b & ~m));
    }
    DT_INLINE void dt_softplus_sigmoid_f_impl(const float* zs, float* sp, float* sig, Py_ssize_t Kp) {
        const dt_v4f zero = {0, 0, 0, 0}, one = {1, 1, 1, 1};
        for (Py_ssize_t k = 0; k < Kp; k += 4) {
            dt_v4f z, x, t, n, y, e, f, kf, q;
            dt_v4i bits;
            memcpy(&z, zs + k, 16);
            x = dt_sel(z > zero, -z, z);                   /* -|z| */
            x = dt_sel(x < -87.0f, zero - 87.0f, x);
            t = x * 1.44269504088896341f + DT_MAGIC;
            n = t - DT_MAGIC;
            x = x - n * 0.693359375f;
            x = x - n * -2.12194440e-4f;
            y = DT_EXP_P(x) * (x * x) + x + 1.0f;
            bits = ((dt_v4i)t - DT_MAGIC_BITS + 127) << 23;
            e = y * (dt_v4f)bits;                           /* exp(-|z|) */
            kf = dt_sel(e > 0.41421356237f, one, zero);
            f = dt_sel(e > 0.41421356237f, (e - 1.0f) * 0.5f, e);
            q = f * f;
            y = DT_LOG_P(f) * f * q + kf * -2.12194440e-4f - 0.5f * q;
            y = f + y + kf * 0.693359375f;                  /* log1p(e) */
            y = dt_sel(z > zero, z, zero) + y;
            memcpy(sp + k, &y, 16);
            y = dt_sel(z >= zero, one, e) / (one + e);
            memcpy(sig + k, &y, 16);
        }
    }
    #else
    DT_INLINE void dt_softplus_sigmoid_f_impl(const float* zs, float* sp, float* sig, Py_ssize_t Kp) {
        for (Py_ssize_t k = 0; k < Kp; k++) {
            float z = zs[k], x = z > 0 ? -z : z, t, n, y, e, f, kf, q, bits_f;
            int bits;
            x = x < -87.0f ? -87.0f : x;
            t = x * 1.44269504088896341f + DT_MAGIC;
            n = t - DT_MAGIC;
            x = x - n * 0.693359375f;
            x = x - n * -2.12194440e-4f;
            y = DT_EXP_P(x) * (x * x) + x + 1.0f;
            memcpy(&bits, &t, 4);
            bits = (bits - DT_MAGIC_BITS + 127) << 23;
            memcpy(&bits_f, &bits, 4);
            e = y * bits_f;
            kf = e > 0.41421356237f ? 1.0f : 0.0f;
            f = e > 0.41421356237f ? (e - 1.0f) * 0.5f : e;
            q = f * f;
            y = DT_LOG_P(f) * f * q + kf * -2.12194440e-4f - 0.5f * q;
            y = f + y + kf * 0.693359375f;
            sp[k] = (z > 0 ? z : 0.0f) + y;
            sig[k] = (z >= 0 ? 1.0f : e) / (1.0f + e);
        }
    }
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    typedef double dt_v2d __attribute__((vector_size(16)));
    typedef float dt_v8f __attribute__((vector_size(32)));
    /* Eight facets (two chunks) share one pass over x, and twelve (three)
       when exactly twelve remain (K = 9 to 12): more independent chains of
       multiply-adds than one chunk's four, with every lane summed exactly as
       by itself (the partial sums over j mod 4, then ((s0 + s1) + (s2 + s3))
       + bias), so the same floats. A last chunk of four alone, as before. */
    DT_INLINE void dt_store_f(const float* acc, const float* bias, Py_ssize_t c0, Py_ssize_t n,
                              Py_ssize_t K, float* z) {
        for (Py_ssize_t k = 0; k < n; k++) z[c0 + k] = c0 + k < K ? acc[k] + bias[c0 + k] : 0;
    }
    DT_INLINE void dt_facets_f_impl(const float* x, const float* betaT, const float* bias,
                                    Py_ssize_t p, Py_ssize_t K, Py_ssize_t Kp, float* z) {
        Py_ssize_t c0 = 0, p4 = p - p % 4;
        float acc[8];
        while (Kp - c0 >= 8) {
            int twelve = Kp - c0 == 12;
            dt_v8f a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0, u0, u1, u2, u3;
            dt_v4f b0 = {0, 0, 0, 0}, b1 = b0, b2 = b0, b3 = b0, w0, w1, w2, w3;
            const float* w = betaT + c0;
            Py_ssize_t j = 0;
            if (twelve) {
                for (; j < p4; j += 4, w += 4 * Kp) {
                    memcpy(&u0, w, 32); memcpy(&u1, w + Kp, 32);
                    memcpy(&u2, w + 2 * Kp, 32); memcpy(&u3, w + 3 * Kp, 32);
                    memcpy(&w0, w + 8, 16); memcpy(&w1, w + Kp + 8, 16);
                    memcpy(&w2, w + 2 * Kp + 8, 16); memcpy(&w3, w + 3 * Kp + 8, 16);
                    a0 += u0 * x[j]; a1 += u1 * x[j + 1]; a2 += u2 * x[j + 2]; a3 += u3 * x[j + 3];
                    b0 += w0 * x[j]; b1 += w1 * x[j + 1]; b2 += w2 * x[j + 2]; b3 += w3 * x[j + 3];
                }
                for (; j < p; j++, w += Kp) {
                    memcpy(&u0, w, 32); memcpy(&w0, w + 8, 16); a0 += u0 * x[j]; b0 += w0 * x[j];
                }
            } else {
                for (; j < p4; j += 4, w += 4 * Kp) {
                    memcpy(&u0, w, 32); memcpy(&u1, w + Kp, 32);
                    memcpy(&u2, w + 2 * Kp, 32); memcpy(&u3, w + 3 * Kp, 32);
                    a0 += u0 * x[j]; a1 += u1 * x[j + 1]; a2 += u2 * x[j + 2]; a3 += u3 * x[j + 3];
                }
                for (; j < p; j++, w += Kp) { memcpy(&u0, w, 32); a0 += u0 * x[j]; }
            }
            a0 = (a0 + a1) + (a2 + a3);
            memcpy(acc, &a0, 32);
            dt_store_f(acc, bias, c0, 8, K, z);
            if (twelve) {
                b0 = (b0 + b1) + (b2 + b3);
                memcpy(acc, &b0, 16);
                dt_store_f(acc, bias, c0 + 8, 4, K, z);
            }
            c0 += twelve ? 12 : 8;
        }
        if (c0 < Kp) {  /* one chunk of four */
            dt_v4f s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0, w0, w1, w2, w3;
            const float* w = betaT + c0;
            Py_ssize_t j = 0;
            for (; j < p4; j += 4, w += 4 * Kp) {
                memcpy(&w0, w, 16); memcpy(&w1, w + Kp, 16);
                memcpy(&w2, w + 2 * Kp, 16); memcpy(&w3, w + 3 * Kp, 16);
                s0 += w0 * x[j]; s1 += w1 * x[j + 1]; s2 += w2 * x[j + 2]; s3 += w3 * x[j + 3];
            }
            for (; j < p; j++, w += Kp) { memcpy(&w0, w, 16); s0 += w0 * x[j]; }
            s0 = (s0 + s1) + (s2 + s3);
            memcpy(acc, &s0, 16);
            dt_store_f(acc, bias, c0, 4, K, z);
        }
    }
    static inline void dt_facets_d(const double* x, const double* betaT, const double* bias,
                                   Py_ssize_t p, Py_ssize_t K, Py_ssize_t Kp, double* z) {
        for (Py_ssize_t c0 = 0; c0 < Kp; c0 += 4) {
            dt_v2d l0 = {0, 0}, l1 = l0, l2 = l0, l3 = l0, h0 = l0, h1 = l0, h2 = l0, h3 = l0, w0, w1;
            const double* w = betaT + c0;
            Py_ssize_t j = 0, p4 = p - p % 4;
            for (; j < p4; j += 4, w += 4 * Kp) {
                memcpy(&w0, w, 16); memcpy(&w1, w + 2, 16); l0 += w0 * x[j]; h0 += w1 * x[j];
                memcpy(&w0, w + Kp, 16); memcpy(&w1, w + Kp + 2, 16);
                l1 += w0 * x[j + 1]; h1 += w1 * x[j + 1];
                memcpy(&w0, w + 2 * Kp, 16); memcpy(&w1, w + 2 * Kp + 2, 16);
                l2 += w0 * x[j + 2]; h2 += w1 * x[j + 2];
                memcpy(&w0, w + 3 * Kp, 16); memcpy(&w1, w + 3 * Kp + 2, 16);
                l3 += w0 * x[j + 3]; h3 += w1 * x[j + 3];
            }
            for (; j < p; j++, w += Kp) {
                memcpy(&w0, w, 16); memcpy(&w1, w + 2, 16); l0 += w0 * x[j]; h0 += w1 * x[j];
            }
            double acc[4];
            l0 = (l0 + l1) + (l2 + l3);
            h0 = (h0 + h1) + (h2 + h3);
            memcpy(acc, &l0, 16); memcpy(acc + 2, &h0, 16);
            for (Py_ssize_t k = 0; k < 4; k++) z[c0 + k] = c0 + k < K ? acc[k] + bias[c0 + k] : 0;
        }
    }
    #else
    DT_INLINE void dt_facets_f_impl(const float* x, const float* betaT, const float* bias,
                                    Py_ssize_t p, Py_ssize_t K, Py_ssize_t Kp, float* z) {
        DT_FACETS_SCALAR(float)
    }
    static inline void dt_facets_d(const double* x, const double* betaT, const double* bias,
                                   Py_ssize_t p, Py_ssize_t K, Py_ssize_t Kp, double* z) {
        DT_FACETS_SCALAR(double)
    }
    #endif
    /* One expanded node's share of the parameter gradients, given
       gs = dL/ds: grad_r[k] += gs sp[k], and with gz = gs r[k] sig[k],
       grad_bias[k] += gz and grad_beta[k, :] += gz x (rows of p). The
       float32 one is built twice (below), the float64 one once. */
    #define DT_NODE_GRADS(NAME, T)                                               \
    DT_INLINE void NAME(double gs, const T* r, const T* sp, const T* sig,        \
                        const T* x, Py_ssize_t K, Py_ssize_t p, T* grad_r,       \
                        T* grad_bias, T* grad_beta) {                            \
        for (Py_ssize_t k = 0; k < K; k++) {                                     \
            T gz = (T)(gs * r[k] * sig[k]);                                      \
            T* gb = grad_beta + k * p;                                           \
            grad_r[k] += (T)(gs * sp[k]);                                        \
            grad_bias[k] += gz;                                                  \
            for (Py_ssize_t j = 0; j < p; j++) gb[j] += gz * x[j];               \
        }                                                                        \
    }
    DT_NODE_GRADS(dt_node_grads_f_impl, float)
    DT_NODE_GRADS(dt_node_grads_d, double)
    #define DT_FACETS_ARGS const float* x, const float* betaT, const float* bias, \
        Py_ssize_t p, Py_ssize_t K, Py_ssize_t Kp, float* z
    #define DT_SPS_ARGS const float* zs, float* sp, float* sig, Py_ssize_t Kp
    #define DT_GRADS_ARGS double gs, const float* r, const float* sp, const float* sig, \
        const float* x, Py_ssize_t K, Py_ssize_t p, float* grad_r, float* grad_bias, \
        float* grad_beta
    #define DT_VARIANT(SUFFIX, ATTR) \
        ATTR static void dt_facets_f_##SUFFIX(DT_FACETS_ARGS) { \
            dt_facets_f_impl(x, betaT, bias, p, K, Kp, z); } \
        ATTR static void dt_softplus_sigmoid_f_##SUFFIX(DT_SPS_ARGS) { \
            dt_softplus_sigmoid_f_impl(zs, sp, sig, Kp); } \
        ATTR static void dt_node_grads_f_##SUFFIX(DT_GRADS_ARGS) { \
            dt_node_grads_f_impl(gs, r, sp, sig, x, K, p, grad_r, grad_bias, grad_beta); }
    DT_VARIANT(base, )
    #if DT_DISPATCH
    DT_VARIANT(fma, __attribute__((target("fma"))))
    #endif
    static void (*dt_facets_f)(DT_FACETS_ARGS) = dt_facets_f_base;
    static void (*dt_softplus_sigmoid_f)(DT_SPS_ARGS) = dt_softplus_sigmoid_f_base;
    static void (*dt_node_grads_f)(DT_GRADS_ARGS) = dt_node_grads_f_base;
    /* Use the FMA variant when on is set and the processor has FMA (else the
       baseline); returns whether it is used. Not thread-safe: the module
       calls it at import, tests between passes. */
    static int dt_select_fma(int on) {
        int fma = 0;
    #if DT_DISPATCH
        __builtin_cpu_init();
        fma = on && __builtin_cpu_supports("fma");
        if (fma) {
            dt_facets_f = dt_facets_f_fma;
            dt_softplus_sigmoid_f = dt_softplus_sigmoid_f_fma;
            dt_node_grads_f = dt_node_grads_f_fma;
            return 1;
        }
    #endif
        dt_facets_f = dt_facets_f_base;
        dt_softplus_sigmoid_f = dt_softplus_sigmoid_f_base;
        dt_node_grads_f = dt_node_grads_f_base;
        return fma;
    }
    """
    void dt_facets_f(const float* x, const float* betaT, const float* bias, Py_ssize_t p,
                     Py_ssize_t K, Py_ssize_t Kp, float* z) noexcept nogil
    void dt_facets_d(const double* x, const double* betaT, const double* bias, Py_ssize_t p,
                     Py_ssize_t K, Py_ssize_t Kp, double* z) noexcept nogil
    void dt_softplus_sigmoid_f(const float* z, float* sp, float* sig,
                               Py_ssize_t Kp) noexcept nogil
    void dt_node_grads_f(double gs, const float* r, const float* sp, const float* sig,
                         const float* x, Py_ssize_t K, Py_ssize_t p, float* grad_r,
                         float* grad_bias, float* grad_beta) noexcept nogil
    void dt_node_grads_d(double gs, const double* r, const double* sp, const double* sig,
                         const double* x, Py_ssize_t K, Py_ssize_t p, double* grad_r,
                         double* grad_bias, double* grad_beta) noexcept nogil
    int dt_select_fma(int on) noexcept nogil


def _use_fma(bint on):
    """Run the float32 passes on their FMA variant (``on``, where the processor
    has FMA) or on the baseline x86-64 one; returns whether FMA is used (never
    off x86-64 or with other compilers). The module picks FMA at import where
    it can; the variants differ by rounding only (tests run both)."""
    return bool(dt_select_fma(on))


#: Whether the float32 passes use the FMA variant (chosen at import).
FMA = _use_fma(True)


cdef inline void _facets(
    const floating* x,
    const floating* betaT,
    const floating* bias,
    Py_ssize_t p,
    Py_ssize_t K,
    Py_ssize_t Kp,
    floating* z,
) noexcept nogil:
    """``z[k] = bias[k] + sum_j betaT[j, k] x[j]`` for ``k < K`` (``betaT`` is
    ``p x Kp``, zero-padded to a multiple of ``CHUNK``)."""
    if floating is float:
        dt_facets_f(x, betaT, bias, p, K, Kp, z)
    else:
        dt_facets_d(x, betaT, bias, p, K, Kp, z)


cdef inline void _softplus_sigmoid(double z, double* sp, double* sig) noexcept nogil:
    """``softplus(z)`` and ``sigmoid(z)`` from one exponential, without overflow
    (float64; the float32 pass uses ``dt_softplus_sigmoid_f``)."""
    cdef double e = exp(-z if z > 0 else z)
    sp[0] = (z if z > 0 else 0) + log1p(e)
    sig[0] = (1 if z >= 0 else e) / (1 + e)


cdef inline void _forward_row(
    const floating[:, ::1] X,
    const floating[:, :, ::1] betaT,
    const floating[:, ::1] bias,
    const floating[:, ::1] r,
    const int32_t[:, ::1] child,
    double eps,
    Py_ssize_t row,
    floating* z,
    floating[:, ::1] out,
    int32_t[:, ::1] rec_node,
    double[:, :, ::1] rec_val,
    floating[:, :, ::1] rec_sp,
    floating[:, :, ::1] rec_sig,
    bint record,
    int64_t[::1] rec_len,
) noexcept nogil:
    """One row: its leaf probabilities into ``out[row]`` (zeroed first) and,
    when ``record``, its expanded split nodes into the records. ``z`` is the
    calling thread's scratch of ``3 Kp`` values (pre-activations, softplus,
    sigmoid)."""
    cdef Py_ssize_t K = r.shape[1], Kp = betaT.shape[2], p = X.shape[1], L = out.shape[1]
    cdef Py_ssize_t cap = rec_node.shape[1] if record else 0
    cdef Py_ssize_t k, c, v, side, sp = 0, n_rec = 0
    cdef int32_t flags, ch
    cdef double R, s, q, right, part
    cdef floating* spk = z + Kp
    cdef floating* sgk = z + 2 * Kp
    cdef Py_ssize_t stack_node[STACK]
    cdef double stack_prob[STACK]
    cdef const floating* x = &X[row, 0]
    for c in range(L):
        out[row, c] = 0.0
    stack_node[0] = 0
    stack_prob[0] = 1.0
    sp = 1
    while sp > 0:
        sp -= 1
        v = stack_node[sp]
        R = stack_prob[sp]
        _facets(x, &betaT[v, 0, 0], &bias[v, 0], p, K, Kp, z)
        if floating is float:
            dt_softplus_sigmoid_f(z, spk, sgk, Kp)
        else:
            for k in range(K):
                _softplus_sigmoid(z[k], &spk[k], &sgk[k])
        s = 0.0
        for k in range(K):
            s += r[v, k] * spk[k]
        if record and n_rec < cap:
            memcpy(&rec_sp[row, n_rec, 0], spk, K * sizeof(floating))
            memcpy(&rec_sig[row, n_rec, 0], sgk, K * sizeof(floating))
        # Probabilities of going left (q = exp(-s)) and right (1 - q) from
        # one libm call, each to float64's relative precision: beyond
        # s = 1/2, q <= 0.61 and 1 - q loses nothing; below, 1 - q is
        # -expm1(-s) and q >= 0.6 is 1 + expm1(-s).
        if s > 0.5:
            q = exp(-s)
            right = 1.0 - q
        else:
            right = -expm1(-s)
            q = 1.0 - right
        flags = 0
        # Right child first onto the stack, so that the left subtree is
        # visited (and recorded) before it: pre-order.
        for side in range(1, -1, -1):
            ch = child[v, side]
            part = R * q if side == 0 else R * right
            if ch < 0:
                out[row, -1 - ch] = <floating>part
            elif not (part <= eps):  # a NaN reach is expanded (NaN leaves, as dense)
                flags |= 1 << side
                stack_node[sp] = ch
                stack_prob[sp] = part
                sp += 1
        if record and n_rec < cap:
            rec_node[row, n_rec] = <int32_t>(v * 4 + flags)
            rec_val[row, n_rec, 0] = R
            rec_val[row, n_rec, 1] = q
        n_rec += 1
    rec_len[row] = n_rec


def _polytope_forward(
    const floating[:, ::1] X,
    const floating[:, :, ::1] betaT,
    const floating[:, ::1] bias,
    const floating[:, ::1] r,
    const int32_t[:, ::1] child,
    double eps,
    floating[:, ::1] out,
    floating[:, ::1] work,
    int32_t[:, ::1] rec_node,
    double[:, :, ::1] rec_val,
    floating[:, :, ::1] rec_sp,
    floating[:, :, ::1] rec_sig,
    int64_t[::1] rec_len,
    bint record,
    int n_threads,
):
    """Conditional forward pass: ``out[i, c]`` = probability that row ``i``
    reaches the leaf of column ``c`` (0 below a node not expanded).

    ``betaT[v]`` is ``beta[v].T`` padded with zero columns to ``Kp``, a
    multiple of ``FACET_CHUNK``; ``work`` is ``(n_threads, >= 3 Kp)`` scratch. With ``record``, ``rec_node``,
    ``rec_val``, ``rec_sp`` and ``rec_sig`` receive one entry per expanded
    split node of row ``i``, ``rec_len[i]`` of them; ``rec_len[i]`` larger
    than ``rec_node.shape[1]`` means the record did not fit and was
    truncated. Without ``record`` the records are not touched (any shape).
    """
    cdef Py_ssize_t n = X.shape[0], Kp = betaT.shape[2]
    cdef Py_ssize_t i, tid
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            tid = threadid()
            _forward_row(X, betaT, bias, r, child, eps, i, &work[tid, 0], out,
                         rec_node, rec_val, rec_sp, rec_sig, record, rec_len)


cdef inline void _backward_row(
    const floating[:, ::1] X,
    const floating[:, ::1] r,
    const int32_t[:, ::1] child,
    const floating[:, ::1] grad_out,
    const int32_t[:, ::1] rec_node,
    const double[:, :, ::1] rec_val,
    const floating[:, :, ::1] rec_sp,
    const floating[:, :, ::1] rec_sig,
    Py_ssize_t i,
    Py_ssize_t length,
    Py_ssize_t tid,
    floating[:, :, :, ::1] grad_beta,
    floating[:, :, ::1] grad_bias,
    floating[:, :, ::1] grad_r,
) noexcept nogil:
    """Row ``i``'s contribution to the parameter gradients (thread ``tid``)."""
    cdef Py_ssize_t K = r.shape[1], p = X.shape[1]
    cdef Py_ssize_t e, v, side, sp = 0
    cdef int32_t flags, ch
    cdef double R, q, gs, adj
    cdef double a[2]
    cdef double stack[STACK]  # adjoints dL/dR of the pending subtrees
    cdef const floating* x = &X[i, 0]
    for e in range(length - 1, -1, -1):
        v = rec_node[i, e] >> 2
        flags = rec_node[i, e] & 3
        R = rec_val[i, e, 0]
        q = rec_val[i, e, 1]
        # In reverse pre-order the left subtree was finished last: its
        # adjoint is on top of the stack.
        for side in range(2):
            ch = child[v, side]
            if ch < 0:
                a[side] = grad_out[i, -1 - ch]
            elif flags & (1 << side):
                sp -= 1
                a[side] = stack[sp]
            else:
                a[side] = 0.0
        adj = q * a[0] + (1.0 - q) * a[1]
        # d(left part)/ds = -R q, d(right part)/ds = R q
        gs = R * q * (a[1] - a[0])
        if gs != 0.0:
            if floating is float:
                dt_node_grads_f(gs, &r[v, 0], &rec_sp[i, e, 0], &rec_sig[i, e, 0], x, K, p,
                                &grad_r[tid, v, 0], &grad_bias[tid, v, 0],
                                &grad_beta[tid, v, 0, 0])
            else:
                dt_node_grads_d(gs, &r[v, 0], &rec_sp[i, e, 0], &rec_sig[i, e, 0], x, K, p,
                                &grad_r[tid, v, 0], &grad_bias[tid, v, 0],
                                &grad_beta[tid, v, 0, 0])
        stack[sp] = adj
        sp += 1


def _polytope_backward(
    const floating[:, ::1] X,
    const floating[:, ::1] r,
    const int32_t[:, ::1] child,
    const floating[:, ::1] grad_out,
    const int32_t[:, ::1] rec_node,
    const double[:, :, ::1] rec_val,
    const floating[:, :, ::1] rec_sp,
    const floating[:, :, ::1] rec_sig,
    const int64_t[::1] rec_len,
    floating[:, :, :, ::1] grad_beta,
    floating[:, :, ::1] grad_bias,
    floating[:, :, ::1] grad_r,
    int n_threads,
):
    """Conditional backward pass from complete forward records (every
    ``rec_len[i] <= rec_node.shape[1]``): adds ``dL/dbeta`` (``(S, K, p)``,
    not transposed), ``dL/dbias`` and ``dL/dr`` given ``grad_out = dL/dout``.

    ``grad_beta``, ``grad_bias`` and ``grad_r`` have a leading thread axis of
    length ``n_threads`` and must be zero on entry; the thread of id ``t``
    adds only into ``[t]``.
    """
    cdef Py_ssize_t n = X.shape[0]
    cdef Py_ssize_t i
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            _backward_row(X, r, child, grad_out, rec_node, rec_val, rec_sp, rec_sig, i,
                          rec_len[i], threadid(), grad_beta, grad_bias, grad_r)
