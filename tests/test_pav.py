"""Oracle tests for the compiled tree-isotonic (PAV) kernel of LatentTree.

Problem (4) of Zantedeschi et al. (2021): with v = q + 1/2,

    min_{a in [0,1]^T, a_child <= a_parent}
        F(a) = lam/2 ||a||^2 + 1/2 sum_{i,t} max(v_it - a_t, 0)^2,

and z_it = clip(v_it, 0, a_t) solves problem (3). The oracles below share no
code with the kernel: brute-force 1-D minimisation, exhaustive enumeration of
group structures for T <= 7, SciPy's SLSQP on problem (3) and on (4), an
exact variational-inequality certificate, and central finite differences.
"""

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from sklearn_difftrees.latent_tree._pav import (
    tree_isotonic_backward,
    tree_isotonic_forward,
)


def _parents(T):
    return (np.arange(1, T) - 1) // 2


def _F(a, v, lam):
    """Objective of problem (4) (its a-dependent part)."""
    return 0.5 * lam * np.sum(a**2) + 0.5 * np.sum(np.maximum(v - a, 0.0) ** 2)


def _grad_F(a, v, lam):
    return lam * a - np.maximum(v - a, 0.0).sum(axis=0)


def _obj3(a, z, v, lam):
    """Objective of problem (3)."""
    return 0.5 * lam * np.sum(a**2) + 0.5 * np.sum((z - v) ** 2)


def _feasible(a, tol=0.0):
    T = a.shape[0]
    par = _parents(T)
    return (
        np.all(a >= -tol)
        and np.all(a <= 1 + tol)
        and np.all(a[1:] <= a[par] + tol)
    )


def _pooled_exact(vals, c):
    """argmin over [0, 1] of c/2 a^2 + 1/2 sum max(vals - a, 0)^2.

    Independent of Proposition 2's k* rule: evaluates every piece's
    stationary point (clipped) and both endpoints, keeps the smallest
    minimiser.
    """
    s = np.sort(np.ravel(vals))[::-1]
    cs = np.concatenate([[0.0], np.cumsum(s)])
    cands = [0.0, 1.0]
    for k in range(len(s) + 1):
        if c + k > 0:
            cands.append(min(max(cs[k] / (c + k), 0.0), 1.0))
    cands = np.array(sorted(set(cands)))
    f = 0.5 * c * cands**2 + 0.5 * np.sum(
        np.maximum(s[None, :] - cands[:, None], 0.0) ** 2, axis=1
    )
    return cands[np.flatnonzero(f <= f.min() + 1e-15 * (1 + abs(f.min())))[0]]


def _enumeration_oracle(v, lam):
    """Exact solution of (4) for T <= 7 by enumerating all group structures.

    At the optimum, maximal connected sets of equal values each minimise
    their pooled objective over [0, 1]; every such candidate is tried.
    """
    n, T = v.shape
    par = _parents(T)
    best_a, best_f = None, np.inf
    for mask in range(2 ** (T - 1)):
        comp = np.arange(T)
        for t in range(1, T):  # heap order: parents are resolved first
            if mask >> (t - 1) & 1:
                comp[t] = comp[par[t - 1]]
        a = np.empty(T)
        for g in np.unique(comp):
            members = comp == g
            a[members] = _pooled_exact(v[:, members], lam * members.sum())
        if not _feasible(a):
            continue
        f = _F(a, v, lam)
        if f < best_f:
            best_a, best_f = a, f
    return best_a, best_f


def _vi_gap(a, v, lam):
    """min over feasible b of grad F(a).(b - a); 0 iff a is optimal.

    The feasible set {0 <= b <= 1, b_child <= b_parent} has 0/1 vertices, the
    indicators of root-containing subtrees, so the linear minimum is an exact
    tree dynamic programme.
    """
    g = _grad_F(a, v, lam)
    T = len(a)
    m = g.copy()
    for t in range(T - 1, 0, -1):
        m[(t - 1) // 2] += min(0.0, m[t])
    return min(0.0, m[0]) - g @ a, np.abs(g).sum()


def _random_q(rng, n, T, scale=1.0, shift=0.0):
    q = rng.normal(shift, scale, size=(n, T))
    q[:, 0] = 1.0
    return q


# ---------------------------------------------------------------------------
# 1-D pooled subproblem (depth 0: one node, one group)


def _special_v(rng):
    yield rng.normal(0.3, 0.8, size=7)
    yield rng.uniform(-2, -0.1, size=5)  # all negative
    yield np.array([0.0, -0.5, 0.0, -1.0])  # zeros, nothing positive
    yield rng.uniform(1.5, 3.0, size=6)  # all above 1
    yield np.array([0.4, 0.4, 0.4, 0.1])  # ties
    yield np.array([0.8])
    yield rng.uniform(-1, 2, size=40)


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0, 2.5, 40.0, 1e6])
def test_pooled_subproblem_matches_brute_force(lam):
    rng = np.random.default_rng(int(lam * 10) % 97)
    grid = np.linspace(0.0, 1.0, 200_001)
    for v in _special_v(rng):
        a, z, ctx = tree_isotonic_forward((v - 0.5)[:, None], lam)
        a = a[0]

        def f(x):
            return 0.5 * lam * x**2 + 0.5 * np.sum(np.maximum(v - x, 0.0) ** 2)

        fg = 0.5 * lam * grid**2 + 0.5 * np.sum(
            np.maximum(v[None, :] - grid[:, None], 0.0) ** 2, axis=1
        ) if v.size <= 8 else np.array([f(x) for x in grid[::50]])
        res = minimize_scalar(
            f, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12}
        )
        f_brute = min(fg.min(), res.fun)
        assert 0.0 <= a <= 1.0
        assert f(a) <= f_brute + 1e-12 * (1 + abs(f_brute))
        if lam > 0:  # strictly convex: unique minimiser
            assert a == pytest.approx(res.x, abs=1e-6)
        else:  # smallest minimiser: clip(max v, 0, 1)
            assert a == pytest.approx(min(max(v.max(), 0.0), 1.0), abs=1e-15)
        assert a == pytest.approx(_pooled_exact(v, lam), abs=1e-12)
        np.testing.assert_allclose(z[:, 0], np.clip(v, 0.0, a), atol=1e-15)


# ---------------------------------------------------------------------------
# Exact oracles for small trees


LAMS = [0.0, 0.37, 2.0, 10.0, 1e4]


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("lam", LAMS)
def test_exact_enumeration_oracle(depth, n, lam):
    T = 2 ** (depth + 1) - 1
    rng = np.random.default_rng(1000 * depth + 10 * n + int(lam) % 7)
    for trial in range(6):
        q = _random_q(rng, n, T, scale=1.0 + trial / 3, shift=trial / 6 - 0.3)
        v = q + 0.5
        a, z, ctx = tree_isotonic_forward(q, lam)
        a_ref, f_ref = _enumeration_oracle(v, lam)
        assert _feasible(a)
        f = _F(a, v, lam)
        assert f == pytest.approx(f_ref, rel=1e-9, abs=1e-12)
        gap, scale = _vi_gap(a, v, lam)
        assert gap >= -1e-9 * (1 + scale)
        # z is unique (problem (3) is strictly convex in z) even when a is not.
        np.testing.assert_allclose(z, np.clip(v, 0.0, a_ref), atol=1e-9)
        if lam > 0:
            np.testing.assert_allclose(a, a_ref, atol=1e-9)


def _slsqp_problem3(v, lam, x0):
    n, T = v.shape
    par = _parents(T)
    nz = n * T

    def split(x):
        return x[nz:], x[:nz].reshape(n, T)

    def fun(x):
        a, z = split(x)
        return _obj3(a, z, v, lam)

    def jac(x):
        a, z = split(x)
        return np.concatenate([(z - v).ravel(), lam * a])

    rows = []
    for t in range(1, T):  # a_p - a_t >= 0
        r = np.zeros(nz + T)
        r[nz + par[t - 1]], r[nz + t] = 1.0, -1.0
        rows.append(r)
    for i in range(n):  # a_t - z_it >= 0
        for t in range(T):
            r = np.zeros(nz + T)
            r[nz + t], r[i * T + t] = 1.0, -1.0
            rows.append(r)
    A = np.array(rows)
    res = minimize(
        fun, x0, jac=jac, method="SLSQP", bounds=[(0.0, 1.0)] * (nz + T),
        constraints=[{"type": "ineq", "fun": lambda x: A @ x, "jac": lambda x: A}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    a, z = split(res.x)
    return a, z, res.fun


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("lam", [0.0, 0.37, 3.0, 50.0])
def test_problem3_slsqp_oracle(depth, lam):
    T = 2 ** (depth + 1) - 1
    n = 3
    rng = np.random.default_rng(7 + depth + int(lam))
    for trial in range(3):
        q = _random_q(rng, n, T, scale=1.2)
        v = q + 0.5
        a, z, _ = tree_isotonic_forward(q, lam)
        best = None
        for x0 in (np.zeros(n * T + T), np.full(n * T + T, 0.5),
                   rng.uniform(0, 1, n * T + T)):
            cand = _slsqp_problem3(v, lam, x0)
            if best is None or cand[2] < best[2]:
                best = cand
        a_ref, z_ref, f_ref = best
        f = _obj3(a, z, v, lam)
        assert f <= f_ref + 1e-9 * (1 + abs(f_ref))
        assert f == pytest.approx(f_ref, rel=1e-6, abs=1e-8)
        np.testing.assert_allclose(z, z_ref, atol=1e-5)
        if lam > 0:
            np.testing.assert_allclose(a, a_ref, atol=1e-5)


@pytest.mark.parametrize("lam", [12.0, 23.5, 40.0])
def test_root_child_pooling(lam):
    # Root alone: a = 1.5 n / (lam + n); children alone would reach ~1 with
    # large q, so the root -> child edges are violated and must be pooled.
    n = 3
    q = np.full((n, 7), -2.0)
    q[:, 0] = 1.0
    q[:, 1] = [4.0, 3.0, 5.0]
    q[:, 2] = [2.5, 6.0, 3.5]
    v = q + 0.5
    a, z, ctx = tree_isotonic_forward(q, lam)
    assert ctx.grp[1] == 0 or ctx.grp[2] == 0
    assert a[0] < 1.0
    a_ref, f_ref = _enumeration_oracle(v, lam)
    np.testing.assert_allclose(a, a_ref, atol=1e-12)
    np.testing.assert_allclose(z, np.clip(v, 0.0, a_ref), atol=1e-12)
    # Unpooled root value is strictly smaller than the pooled one.
    assert a[0] > 1.5 * n / (lam + n)


def test_large_lam_prunes_everything():
    rng = np.random.default_rng(3)
    q = _random_q(rng, 5, 15, scale=2.0)
    a, z, _ = tree_isotonic_forward(q, 1e12)
    assert np.all(a >= 0) and np.all(a < 1e-9)
    assert _feasible(a)
    np.testing.assert_array_less(z, 1e-9)
    # lam = 0: nothing is penalised, a_root = 1 since v_root = 1.5 > 1.
    a0, _, _ = tree_isotonic_forward(q, 0.0)
    assert a0[0] == 1.0


# ---------------------------------------------------------------------------
# Deeper trees: exact certificate and an independent solver


def _slsqp_problem4(v, lam):
    T = v.shape[1]
    par = _parents(T)
    A = np.zeros((T - 1, T))
    A[np.arange(T - 1), par] = 1.0
    A[np.arange(T - 1), np.arange(1, T)] = -1.0
    res = minimize(
        _F, np.full(T, 0.5), args=(v, lam),
        jac=lambda a, v, lam: _grad_F(a, v, lam), method="SLSQP",
        bounds=[(0.0, 1.0)] * T,
        constraints=[{"type": "ineq", "fun": lambda a: A @ a, "jac": lambda a: A}],
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    return res.x


@pytest.mark.parametrize("depth", [3, 4, 6])
@pytest.mark.parametrize("lam", [0.0, 0.5, 4.7, 60.0])
def test_deep_trees_certificate_and_solver(depth, lam):
    T = 2 ** (depth + 1) - 1
    n = 8
    rng = np.random.default_rng(depth * 100 + int(lam * 10))
    for trial in range(2):
        q = _random_q(rng, n, T, scale=1.0 + trial, shift=0.2 * trial)
        v = q + 0.5
        a, z, ctx = tree_isotonic_forward(q, lam)
        assert _feasible(a)
        gap, scale = _vi_gap(a, v, lam)
        assert gap >= -1e-9 * (1 + scale)
        np.testing.assert_array_equal(z, np.clip(v, 0.0, a))
        a_ref = _slsqp_problem4(v, lam)
        assert _F(a, v, lam) <= _F(a_ref, v, lam) + 1e-9 * (1 + scale)
        if lam > 0:
            np.testing.assert_allclose(a, a_ref, atol=1e-6)
        # Groups are connected and contain their top node's subtree-closed part.
        for t in range(1, T):
            g = ctx.grp[t]
            assert g == t or ctx.grp[(t - 1) // 2] == g
            if g != ctx.grp[(t - 1) // 2]:
                assert a[t] <= a[(t - 1) // 2]


def test_certificate_detects_suboptimal_solution():
    # The oracle itself must be able to fail.
    rng = np.random.default_rng(11)
    q = _random_q(rng, 6, 15)
    v = q + 0.5
    a, _, _ = tree_isotonic_forward(q, 1.3)
    b = a * 0.9
    gap, scale = _vi_gap(b, v, 1.3)
    assert gap < -1e-6


# ---------------------------------------------------------------------------
# Backward pass


def _structure(q, lam):
    a, z, ctx = tree_isotonic_forward(q, lam)
    v = q + 0.5
    cat = np.where(v <= 0, 0, np.where(v < a, 1, 2))
    tops = np.flatnonzero(ctx.grp == np.arange(len(a)))
    supports = tuple(
        tuple(sorted(ctx.support(g))) for g in tops if ctx.interior[g]
    )
    kst = np.where(ctx.interior[tops] == 1, ctx.kstar[tops], -1)
    return (tuple(ctx.grp), tuple(kst), tuple(ctx.interior[tops]),
            cat.tobytes(), supports)


def _has_margin(q, lam, margin):
    """No entry within ``margin`` of a kink (S*_G entries sit at a on purpose)."""
    a, z, ctx = tree_isotonic_forward(q, lam)
    v = q + 0.5
    n, T = v.shape
    in_support = np.zeros(n * T, dtype=bool)
    for g in np.flatnonzero(ctx.grp == np.arange(T)):
        if ctx.interior[g]:
            in_support[ctx.support(g)] = True
            if min(a[g], 1 - a[g]) < margin:
                return False
    in_support = in_support.reshape(n, T)
    if np.min(np.abs(v)) < margin:
        return False
    if np.min(np.abs(v - a)[~in_support], initial=np.inf) < margin:
        return False
    for t in range(1, T):
        p = (t - 1) // 2
        if ctx.grp[t] != ctx.grp[p] and a[p] - a[t] < margin and 0 < a[t] < 1:
            return False
    return True


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("lam", [0.0, 0.37, 2.9, 11.3])
def test_backward_matches_finite_differences(depth, lam):
    T = 2 ** (depth + 1) - 1
    n = 5
    rng = np.random.default_rng(500 + depth * 10 + int(lam * 10))
    eps = 1e-6
    checked = 0
    for _ in range(50):
        q = _random_q(rng, n, T, scale=0.8, shift=-0.2)
        if not _has_margin(q, lam, 1e-4):
            continue
        a, z, ctx = tree_isotonic_forward(q, lam)
        ga = rng.normal(size=T)
        gz = rng.normal(size=(n, T))
        grad = tree_isotonic_backward(ctx, ga, gz)
        base = _structure(q, lam)
        fd = np.empty_like(q)
        for idx in np.ndindex(q.shape):
            qp, qm = q.copy(), q.copy()
            qp[idx] += eps
            qm[idx] -= eps
            assert _structure(qp, lam) == base == _structure(qm, lam)
            ap, zp, _ = tree_isotonic_forward(qp, lam)
            am, zm, _ = tree_isotonic_forward(qm, lam)
            fd[idx] = (ga @ (ap - am) + np.sum(gz * (zp - zm))) / (2 * eps)
        np.testing.assert_allclose(grad, fd, atol=1e-7)
        checked += 1
        if checked == 3:
            break
    assert checked == 3


def test_backward_real_valued_denominator():
    # One node, lam = 0.3: v = [0.6, 0.5, 0.2, -0.4] gives k* = 2 and
    # a = 1.1 / 2.3; an integer-truncated denominator would give 1/2.
    q = np.array([[0.1], [0.0], [-0.3], [-0.9]])
    a, z, ctx = tree_isotonic_forward(q, 0.3)
    assert a[0] == pytest.approx(1.1 / 2.3, abs=1e-15)
    assert ctx.kstar[0] == 2 and ctx.denom[0] == pytest.approx(2.3)
    g = tree_isotonic_backward(ctx, np.ones(1), None)
    np.testing.assert_allclose(g[:, 0], [1 / 2.3, 1 / 2.3, 0, 0], atol=1e-15)
    # Through z: z_0 = z_1 = a, z_2 = v_2 (interior), z_3 = 0.
    g = tree_isotonic_backward(ctx, None, np.ones((4, 1)))
    np.testing.assert_allclose(g[:, 0], [2 / 2.3, 2 / 2.3, 1, 0], atol=1e-15)


def test_backward_pooled_non_integer_denominator():
    # A pooled group with lam |G| + k* non-integer, checked by differences.
    q = np.full((3, 7), -2.0)
    q[:, 0] = 1.0
    q[:, 1] = [1.4, 2.1, 1.7]
    lam = 12.45  # pooled {0, 1}: denominator 2 * 12.45 + 6 = 30.9
    a, z, ctx = tree_isotonic_forward(q, lam)
    assert ctx.grp[1] == 0 and ctx.interior[0]
    assert ctx.denom[0] % 1 > 0.01
    grad = tree_isotonic_backward(ctx, np.eye(7)[0], None)
    eps = 1e-6
    for idx in [(0, 0), (1, 1), (2, 1), (0, 2)]:
        qp, qm = q.copy(), q.copy()
        qp[idx] += eps
        qm[idx] -= eps
        fd = (tree_isotonic_forward(qp, lam)[0][0]
              - tree_isotonic_forward(qm, lam)[0][0]) / (2 * eps)
        assert grad[idx] == pytest.approx(fd, abs=1e-8)


# ---------------------------------------------------------------------------
# dtypes, copies, validation


@pytest.mark.parametrize("lam", [0.0, 1.7])
def test_float32_matches_float64(lam):
    rng = np.random.default_rng(21)
    q64 = _random_q(rng, 16, 31).astype(np.float32).astype(np.float64)
    q32 = q64.astype(np.float32)
    a64, z64, c64 = tree_isotonic_forward(q64, lam)
    a32, z32, c32 = tree_isotonic_forward(q32, lam)
    assert a32.dtype == z32.dtype == np.float32
    assert a64.dtype == z64.dtype == np.float64
    np.testing.assert_array_equal(c32.grp, c64.grp)
    np.testing.assert_allclose(a32, a64, atol=1e-6)
    np.testing.assert_allclose(z32, z64, atol=1e-6)
    ga = rng.normal(size=31)
    gz = rng.normal(size=(16, 31))
    g64 = tree_isotonic_backward(c64, ga, gz)
    g32 = tree_isotonic_backward(c32, ga.astype(np.float32), gz.astype(np.float32))
    assert g32.dtype == np.float32 and g64.dtype == np.float64
    np.testing.assert_allclose(g32, g64, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inputs_not_mutated_and_read_only_accepted(dtype):
    rng = np.random.default_rng(5)
    q = _random_q(rng, 6, 15).astype(dtype)
    ga = rng.normal(size=15).astype(dtype)
    gz = rng.normal(size=(6, 15)).astype(dtype)
    copies = [x.copy() for x in (q, ga, gz)]
    for x in (q, ga, gz):
        x.setflags(write=False)
    a, z, ctx = tree_isotonic_forward(q, 0.8)
    g1 = tree_isotonic_backward(ctx, ga, gz)
    g2 = tree_isotonic_backward(ctx, ga, gz)  # ctx is reusable
    np.testing.assert_array_equal(g1, g2)
    for x, c in zip((q, ga, gz), copies):
        np.testing.assert_array_equal(x, c)
    # Non-contiguous views give the same answer.
    qf = np.asfortranarray(copies[0])
    a2, z2, _ = tree_isotonic_forward(qf, 0.8)
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(z, z2)
    wide = np.zeros((6, 30), dtype=dtype)
    wide[:, ::2] = copies[0]
    a3, z3, _ = tree_isotonic_forward(wide[:, ::2], 0.8)
    np.testing.assert_array_equal(a, a3)


def test_validation():
    q = np.zeros((2, 7))
    with pytest.raises(ValueError, match="columns"):
        tree_isotonic_forward(np.zeros((2, 6)), 1.0)
    with pytest.raises(ValueError, match="2-D"):
        tree_isotonic_forward(np.zeros(7), 1.0)
    with pytest.raises(ValueError, match="dtype"):
        tree_isotonic_forward(np.zeros((2, 7), dtype=np.int64), 1.0)
    with pytest.raises(ValueError, match="finite"):
        tree_isotonic_forward(np.full((2, 7), np.nan), 1.0)
    with pytest.raises(ValueError, match="at least one row"):
        tree_isotonic_forward(np.zeros((0, 7)), 1.0)
    for lam in (-0.1, np.nan, np.inf, "1", True, None):
        with pytest.raises(ValueError, match="lam"):
            tree_isotonic_forward(q, lam)
    _, _, ctx = tree_isotonic_forward(q, 1.0)
    with pytest.raises(ValueError, match="grad_a"):
        tree_isotonic_backward(ctx, np.zeros(6), None)
    with pytest.raises(ValueError, match="grad_z"):
        tree_isotonic_backward(ctx, None, np.zeros((3, 7)))
    with pytest.raises(ValueError, match="finite"):
        tree_isotonic_backward(ctx, np.full(7, np.inf), None)
    with pytest.raises(TypeError):
        tree_isotonic_backward(object(), None, None)
