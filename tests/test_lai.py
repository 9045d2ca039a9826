"""Compiled loss-augmented inference (``_lai.pyx``) against brute-force enumeration."""

import itertools

import numpy as np
import pytest

from sklearn_difftrees.non_greedy._lai import (
    accumulate_split_grad,
    leaf_losses,
    loss_augmented_inference,
)


# ------------------------------------------------------------------ oracle
def _all_codes(m):
    return np.array(list(itertools.product([-1, 1], repeat=m)), dtype=np.int64)


def _code_leaves(G, depth):
    """f(g): leaf number reached by every code (row of G), by walking the tree."""
    node = np.zeros(G.shape[0], dtype=np.int64)
    for _ in range(depth):
        node = np.where(G[np.arange(G.shape[0]), node] > 0, 2 * node + 2, 2 * node + 1)
    return node - (2**depth - 1)


def _brute_force(X, W, b, theta, y, loss, ball, assign):
    """Per sample: bound value and the set of maximizing (g - h) / 2 vectors.

    Enumerates every g in {-1, +1}^m (within Hamming distance 1 of sgn(s) when
    ``ball``) and, in stable mode, every h reaching leaf ``assign[n]``.
    """
    m = W.shape[0]
    depth = int(round(np.log2(m + 1)))
    G = _all_codes(m)
    leaves = _code_leaves(G, depth)
    bounds, argmax_diffs = [], []
    for n in range(X.shape[0]):
        s = W @ X[n] + b
        sgn = np.where(s > 0, 1, -1)
        lab = np.full(G.shape[0], y[n]) if loss == "log" else np.repeat(y[n][None], len(G), 0)
        obj = G @ s + leaf_losses(theta, leaves, lab, loss)
        if ball:
            obj = np.where((G != sgn).sum(axis=1) <= 1, obj, -np.inf)
        if assign is not None and assign[n] >= 0:
            hs = G[leaves == assign[n]]
            h = hs[np.argmax(hs @ s)]
        else:
            h = sgn
        best = obj.max()
        bounds.append(best - h @ s)
        winners = G[obj >= best - 1e-9]
        argmax_diffs.append({tuple((g - h) // 2) for g in winners})
    return np.array(bounds), argmax_diffs


def _problem(depth, loss, seed, n=25, p=3, k=3):
    rng = np.random.RandomState(seed)
    m = 2**depth - 1
    X = rng.normal(size=(n, p))
    W = rng.normal(size=(m, p))
    b = 0.3 * rng.normal(size=m)
    theta = 2.0 * rng.normal(size=(m + 1, k))
    y = rng.randint(k, size=n) if loss == "log" else rng.normal(size=(n, k))
    return X, W, b, theta, y


def _diff_vectors(res, m):
    out = []
    for nodes, signs in zip(res.diff_node, res.diff_sign):
        v = np.zeros(m, dtype=np.int64)
        keep = nodes >= 0
        v[nodes[keep]] = signs[keep]
        out.append(tuple(v))
    return out


# ------------------------------------------------------------------- tests
@pytest.mark.parametrize("depth", [1, 2, 3, 4])  # m = 1, 3, 7, 15 split nodes
@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("inference", ["exact", "fast"])
@pytest.mark.parametrize("stable", [False, True])
def test_matches_brute_force(depth, loss, inference, stable):
    X, W, b, theta, y = _problem(depth, loss, seed=depth)
    m = W.shape[0]
    assign = None
    if stable:
        assign = np.random.RandomState(7).randint(-1, m + 1, size=X.shape[0])
    res = loss_augmented_inference(X, W, b, theta, y, loss=loss, inference=inference,
                                   assign=assign)
    bound, diffs = _brute_force(X, W, b, theta, y, loss, inference == "fast", assign)
    np.testing.assert_allclose(res.bound, bound, rtol=1e-12, atol=1e-10)
    # The reported (g - h)/2 is one of the maximizers, and g reaches g_leaf.
    for n, v in enumerate(_diff_vectors(res, m)):
        assert v in diffs[n]
    # The predicted leaf is f(sgn(s)).
    sgn = np.where(X @ W.T + b > 0, 1, -1)
    np.testing.assert_array_equal(res.h_leaf, _code_leaves(sgn, depth))


@pytest.mark.parametrize("loss", ["log", "squared"])
def test_fast_equals_exact_when_optimum_in_hamming_ball(loss):
    depth = 4
    X, W, b, theta, y = _problem(depth, loss, seed=11, n=200)
    exact = loss_augmented_inference(X, W, b, theta, y, loss=loss, inference="exact")
    fast = loss_augmented_inference(X, W, b, theta, y, loss=loss, inference="fast")
    n_flips = (exact.diff_node >= 0).sum(axis=1)
    in_ball = n_flips <= 1
    assert in_ball.any() and (~in_ball).any()  # both cases are exercised
    np.testing.assert_allclose(fast.bound[in_ball], exact.bound[in_ball], rtol=1e-12)
    np.testing.assert_array_equal(fast.g_leaf[in_ball], exact.g_leaf[in_ball])
    # Outside the ball the fast bound is smaller (a max over fewer codes).
    assert np.all(fast.bound <= exact.bound + 1e-12)
    assert np.all(fast.bound[~in_ball] < exact.bound[~in_ball])


@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("inference", ["exact", "fast"])
def test_bound_upper_bounds_the_loss(loss, inference):
    X, W, b, theta, y = _problem(5, loss, seed=3, n=300)
    res = loss_augmented_inference(X, W, b, theta, y, loss=loss, inference=inference)
    lab = y if loss == "log" else y
    emp = leaf_losses(theta, res.h_leaf, lab, loss)
    assert np.all(res.bound >= emp - 1e-12)
    # Stable bound (eq. 14) >= plain bound (eq. 13) >= loss.
    assign = np.random.RandomState(0).randint(0, 32, size=X.shape[0])
    st = loss_augmented_inference(X, W, b, theta, y, loss=loss, inference=inference,
                                  assign=assign)
    assert np.all(st.bound >= res.bound - 1e-12)


def test_routing_convention_ties_go_left():
    """s > 0 is the right child (h = +1); s == 0 and s < 0 go left (h = -1)."""
    W = np.array([[1.0]])
    b = np.array([0.0])
    X = np.array([[2.0], [0.0], [-2.0]])
    theta = np.zeros((2, 2))
    res = loss_augmented_inference(X, W, b, theta, np.zeros(3, int), loss="log")
    np.testing.assert_array_equal(res.h_leaf, [1, 0, 0])
    # A leaf whose loss is higher by more than 2|s| is chosen by g, and
    # (g - h)/2 points towards it.
    theta = np.array([[0.0, 5.0], [5.0, 0.0]])  # class 0 is cheap on the right leaf
    res = loss_augmented_inference(np.array([[1.0]]), W, b, theta, np.zeros(1, int),
                                   loss="log")
    assert res.g_leaf[0] == 0 and res.diff_node[0, 0] == 0 and res.diff_sign[0, 0] == -1


@pytest.mark.parametrize("stable", [False, True])
def test_split_gradient_matches_finite_differences(stable):
    """The bound is piecewise linear in [W, b]; away from kinks its
    directional derivative is <(g - h) [x, 1]^T, dW>."""
    depth, loss = 3, "log"
    X, W, b, theta, y = _problem(depth, loss, seed=5, n=40)
    assign = np.random.RandomState(1).randint(0, 8, size=40) if stable else None
    wts = np.random.RandomState(2).uniform(0.5, 2.0, size=40)
    res = loss_augmented_inference(X, W, b, theta, y, loss=loss, inference="exact",
                                   assign=assign)
    gW = np.zeros_like(W)
    gb = np.zeros_like(b)
    accumulate_split_grad(X, wts, res, gW, gb)
    rng = np.random.RandomState(3)
    dW, db = rng.normal(size=W.shape), rng.normal(size=b.shape)
    eps = 1e-7

    def total(Wp, bp):
        r = loss_augmented_inference(X, Wp, bp, theta, y, loss=loss, inference="exact",
                                     assign=assign)
        return r.bound @ wts

    fd = (total(W + eps * dW, b + eps * db) - total(W - eps * dW, b - eps * db)) / (2 * eps)
    np.testing.assert_allclose(fd, (gW * dW).sum() + gb @ db, rtol=1e-5)


@pytest.mark.parametrize("inference", ["exact", "fast"])
def test_float32_readonly_and_inputs_untouched(inference):
    X, W, b, theta, y = _problem(3, "log", seed=0)
    arrays = [X, W, b, theta, y]
    copies = [a.copy() for a in arrays]
    for a in arrays:
        a.setflags(write=False)
    r64 = loss_augmented_inference(X, W, b, theta, y, inference=inference)
    X32 = X.astype(np.float32)
    X32.setflags(write=False)
    r32 = loss_augmented_inference(X32, W, b, theta, y, inference=inference)
    ref = loss_augmented_inference(X32.astype(np.float64), W, b, theta, y, inference=inference)
    for got, want in zip(r32, ref):
        np.testing.assert_array_equal(got, want)
    assert r64.bound.shape == (X.shape[0],)
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(a, c)


def test_bad_shapes_raise():
    X, W, b, theta, y = _problem(2, "log", seed=0)
    with pytest.raises(ValueError, match="Inconsistent"):
        loss_augmented_inference(X, W[:2], b[:2], theta, y)
    with pytest.raises(ValueError, match="class code"):
        loss_augmented_inference(X, W, b, theta, y + 5)


def test_accumulate_node_rows_matches_numpy():
    """One differing node per sample (CO2's depth-1 bounds) against np.add.at."""
    from sklearn_difftrees.non_greedy._lai import accumulate_node_rows

    rng = np.random.RandomState(0)
    X = rng.randn(300, 5)
    weight = rng.rand(300)
    node = rng.randint(-1, 7, 300)  # -1: the sample adds nothing
    sign = rng.choice([-1, 1], 300)
    gW, gb = np.zeros((7, 5)), np.zeros(7)
    accumulate_node_rows(X, weight, node, sign, gW, gb)
    coef = np.where(node >= 0, 2.0 * sign * weight, 0.0)
    want_W, want_b = np.zeros((7, 5)), np.zeros(7)
    np.add.at(want_W, np.maximum(node, 0), coef[:, None] * X)
    np.add.at(want_b, np.maximum(node, 0), coef)
    np.testing.assert_allclose(gW, want_W, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, want_b, rtol=1e-12, atol=1e-12)
