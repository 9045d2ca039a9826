# The one dot product of the kernels (cimported by _routing, _lai, _tel).
#
# ``w . x`` accumulated in float64 with four independent accumulators: the
# compiler may not reorder a single floating-point reduction, and one
# dependency chain would bound the speed. The summation order is fixed, so a
# score is the same in every kernel that routes with it.

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
