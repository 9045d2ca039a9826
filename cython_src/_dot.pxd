# The one dot product of the kernels (cimported by _routing, _lai, _tel).
#
# ``w . x`` accumulated in float64 with four independent accumulators: the
# compiler may not reorder a single floating-point reduction, and one
# dependency chain would bound the speed. The summation order is fixed, so a
# score is the same in every kernel that routes with it.
#
# ``dot_native`` is the same sum in the inputs' own precision: on float64 it
# is exactly ``dot``; on float32 (only TEL's training passes on the torch
# layer's float32 tensors, whose oracle is the dense backend's float32 matrix
# product) the four accumulators are float32, which one SIMD register holds
# (no conversions). Fitted models always route in float64 through ``dot``.

from cython cimport floating

ctypedef fused weight_t:
    float
    double


cdef inline double dot(const weight_t* w, const floating* x, Py_ssize_t p) noexcept nogil:
    cdef Py_ssize_t j, p4 = p - p % 4
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    for j in range(0, p4, 4):
        s0 += <double>w[j] * x[j]
        s1 += <double>w[j + 1] * x[j + 1]
        s2 += <double>w[j + 2] * x[j + 2]
        s3 += <double>w[j + 3] * x[j + 3]
    for j in range(p4, p):
        s0 += <double>w[j] * x[j]
    return (s0 + s1) + (s2 + s3)


cdef inline double dot_native(const floating* w, const floating* x, Py_ssize_t p) noexcept nogil:
    cdef Py_ssize_t j, p4 = p - p % 4
    cdef floating s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    for j in range(0, p4, 4):
        s0 += w[j] * x[j]
        s1 += w[j + 1] * x[j + 1]
        s2 += w[j + 2] * x[j + 2]
        s3 += w[j + 3] * x[j + 3]
    for j in range(p4, p):
        s0 += w[j] * x[j]
    return (s0 + s1) + (s2 + s3)
