"""Compiled loss-augmented inference (``_lai.pyx``) against brute-force enumeration."""

import itertools

import numpy as np
import pytest

from sklearn_difftrees.non_greedy._lai import (
    CO2LevelEpochs,
    SGDEpochs,
    leaf_losses,
    loss_augmented_inference,
)


# ------------------------------------------------------------------ oracle
def _split_grad(X, weight, res, m):
    """``sum_n weight[n] (g - h)_i [x_n, 1]`` from the differing nodes of ``res``."""
    node, sign = res.diff_node, res.diff_sign
    rows = np.nonzero(node >= 0)
    coef = 2.0 * sign[rows] * weight[rows[0]]
    gW, gb = np.zeros((m, X.shape[1])), np.zeros(m)
    np.add.at(gW, node[rows], coef[:, None] * X[rows[0]])
    np.add.at(gb, node[rows], coef)
    return gW, gb


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
    gW, gb = _split_grad(X, wts, res, W.shape[0])
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


# ------------------------------------------------------------- SGD epochs
def _reference_epoch(X, Y, w, W, b, theta, state, perm, assign, *, loss, inference, batch_size,
                     lr, momentum, nu):
    """One epoch of Algorithm 1 in numpy; ``state`` = (vW, vb, vth) updated in place."""
    vW, vb, vth = state
    total = 0.0
    for start in range(0, perm.size, batch_size):
        idx = perm[start:start + batch_size]
        zb, yb, wb = X[idx], Y[idx], w[idx]
        res = loss_augmented_inference(zb, W, b, theta, yb, loss=loss, inference=inference,
                                       assign=None if assign is None else assign[idx])
        wsum = wb.sum()
        total += float(res.bound @ wb / wsum) * idx.size
        wn = wb / wsum
        gW, gb = _split_grad(zb, wn, res, W.shape[0])
        gth = np.zeros_like(theta)
        leaves = res.g_leaf
        if loss == "log":
            z = np.exp(theta[leaves] - theta[leaves].max(axis=1, keepdims=True))
            g = z / z.sum(axis=1, keepdims=True)
            g[np.arange(idx.size), yb] -= 1.0
        else:
            g = 2.0 * (theta[leaves] - yb)
        np.add.at(gth, leaves, g * wn[:, None])
        # The dense momentum step (rows never touched have zero momentum).
        vW[...] = momentum * vW + gW
        vb[...] = momentum * vb + gb
        W -= lr * vW
        b -= lr * vb
        norms = np.sqrt((W**2).sum(1) + b**2)
        big = norms > nu
        W[big] *= (nu / norms[big])[:, None]
        b[big] *= nu / norms[big]
        vth[...] = momentum * vth + gth
        theta -= lr * vth
    return total


def _sgd_problem(seed, loss, depth, n=90, p=5, K=3, dtype=np.float64):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, p).astype(dtype)
    Y = rng.randint(K, size=n) if loss == "log" else rng.randn(n, 2)
    w = rng.uniform(0.2, 2.0, n)
    m = 2**depth - 1
    W = 0.5 * rng.randn(m, p)
    b = 0.3 * rng.randn(m)
    theta = rng.randn(m + 1, K if loss == "log" else 2)
    return X, Y, w, W, b, theta, rng


@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("inference", ["fast", "exact"])
@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_epochs_match_the_numpy_loop(loss, inference, stable, dtype):
    depth = 3
    X, Y, w, W, b, theta, rng = _sgd_problem(0, loss, depth, dtype=dtype)
    params = (W.copy(), b.copy(), theta.copy())
    kw = dict(loss=loss, inference=inference, batch_size=16, momentum=0.9)
    epochs = SGDEpochs(X, Y, w, *params, **kw, learning_rate=0.05, nu=1.5)
    ref = (W.copy(), b.copy(), theta.copy())
    state = tuple(np.zeros_like(a) for a in ref)
    for epoch in range(4):
        perm = rng.permutation(X.shape[0])[: 80 if epoch % 2 else None]  # a last short batch
        assign = rng.randint(-1, 2**depth, X.shape[0]) if stable else None
        got = epochs.run(perm, assign)
        want = _reference_epoch(X, Y, w, *ref, state, perm, assign, **kw, lr=0.05, nu=1.5)
        # float64 arithmetic throughout, summed in other orders: rounding only.
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        for a, r in zip(params, ref):
            np.testing.assert_allclose(a, r, rtol=1e-9, atol=1e-12)
    # The epochs moved the parameters, within the norm bound.
    assert not np.allclose(params[0], W)
    assert np.all(np.sqrt((params[0] ** 2).sum(1) + params[1] ** 2) <= 1.5 + 1e-12)


def test_a_non_finite_bound_raises_and_leaves_the_batch_unapplied():
    X, Y, w, W, b, theta, _ = _sgd_problem(1, "squared", 2)
    Y = Y.copy()
    Y[5] = np.inf
    params = (W.copy(), b.copy(), theta.copy())
    epochs = SGDEpochs(X, Y, w, *params, loss="squared", inference="fast", batch_size=10,
                       learning_rate=0.1, momentum=0.0, nu=2.0)
    with pytest.raises(FloatingPointError):
        epochs.run(np.arange(X.shape[0]))
    # Row 5 is in the first batch: nothing was applied.
    for a, r in zip(params, (W, b, theta)):
        np.testing.assert_array_equal(a, r)


def test_the_bound_is_the_lai_bound_before_any_step():
    # One batch of every row, learning rate 0: the epoch's total is the
    # weighted mean bound of loss_augmented_inference times the rows.
    X, Y, w, W, b, theta, _ = _sgd_problem(2, "log", 3)
    epochs = SGDEpochs(X, Y, w, W.copy(), b.copy(), theta.copy(), loss="log",
                       inference="exact", batch_size=1000, learning_rate=0.0, momentum=0.0,
                       nu=10.0)
    total = epochs.run(np.arange(X.shape[0]))
    res = loss_augmented_inference(X, W, b, theta, Y, loss="log", inference="exact")
    assert total == pytest.approx(float(res.bound @ w / w.sum()) * X.shape[0], rel=1e-12)
    assert np.all(res.bound >= leaf_losses(theta, res.h_leaf, Y, "log") - 1e-12)


def test_parameters_must_be_float64_contiguous():
    X, Y, w, W, b, theta, _ = _sgd_problem(3, "log", 2)
    with pytest.raises(ValueError, match="float64"):
        SGDEpochs(X, Y, w, W.astype(np.float32), b, theta, loss="log", inference="fast",
                  batch_size=8, learning_rate=0.1, momentum=0.5, nu=1.0)


def _reference_co2_epoch(X, Y, w, node_of, W, b, th, state, perm, *, loss, batch_size, lr,
                         momentum, nu):
    """One epoch of a CO2 level's depth-1 bounds in numpy (``state`` = momenta)."""
    vW, vb, vth = state
    n_lvl = W.shape[0]
    for start in range(0, perm.size, batch_size):
        bi = perm[start:start + batch_size]
        nb, zb, yb, wb = node_of[bi], X[bi], Y[bi], w[bi]
        sb = (zb * W[nb]).sum(1) + b[nb]
        h = (sb > 0).astype(np.int64)
        rows = np.arange(bi.size)
        own = leaf_losses(th[nb, h], rows, yb, loss)
        other = leaf_losses(th[nb, 1 - h], rows, yb, loss)
        flip = other - 2.0 * np.abs(sb) > own
        gside = np.where(flip, 1 - h, h)
        cnt = np.bincount(nb, weights=wb, minlength=n_lvl)
        inv = np.where(cnt > 0, 1.0 / np.maximum(cnt, 1e-300), 0.0)  # as co2_tree's loop
        c = wb * inv[nb]
        gW, gb, gth = np.zeros_like(W), np.zeros_like(b), np.zeros_like(th)
        coef = np.where(flip, 2.0 * (2 * gside - 1) * c, 0.0)
        np.add.at(gW, nb, coef[:, None] * zb)
        np.add.at(gb, nb, coef)
        t = th[nb, gside]
        if loss == "log":
            g = np.exp(t - t.max(1, keepdims=True))
            g /= g.sum(1, keepdims=True)
            g[rows, yb] -= 1.0
        else:
            g = 2.0 * (t - yb)
        np.add.at(gth, (nb, gside), g * c[:, None])
        vW[...] = momentum * vW + gW
        vb[...] = momentum * vb + gb
        vth[...] = momentum * vth + gth
        W -= lr * vW
        b -= lr * vb
        th -= lr * vth
        norms = np.sqrt((W**2).sum(1) + b**2)
        big = norms > nu
        W[big] *= (nu / norms[big])[:, None]
        b[big] *= nu / norms[big]


@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_co2_level_epochs_match_the_numpy_loop(loss, dtype):
    rng = np.random.RandomState(4)
    n, p, n_lvl = 120, 4, 4
    X = rng.randn(n, p).astype(dtype)
    Y = rng.randint(3, size=n) if loss == "log" else rng.randn(n, 2)
    w = rng.uniform(0.2, 2.0, n)
    node_of = rng.randint(n_lvl, size=n)
    live = np.flatnonzero(node_of != 2)  # a dead node: its rows are not in the epochs
    W, b = 0.5 * rng.randn(n_lvl, p), 0.2 * rng.randn(n_lvl)
    th = rng.randn(n_lvl, 2, 3 if loss == "log" else 2)
    W[2], b[2] = 0.0, 0.0
    params = (W.copy(), b.copy(), th.copy())
    kw = dict(loss=loss, batch_size=32, momentum=0.9)
    level = CO2LevelEpochs(X, Y, w, node_of, *params, **kw, learning_rate=0.05, nu=1.2)
    ref = (W.copy(), b.copy(), th.copy())
    state = tuple(np.zeros_like(a) for a in ref)
    for _ in range(3):
        perm = live[rng.permutation(live.size)]
        level.run(perm)
        _reference_co2_epoch(X, Y, w, node_of, *ref, state, perm, **kw, lr=0.05, nu=1.2)
        for a, r in zip(params, ref):
            np.testing.assert_allclose(a, r, rtol=1e-9, atol=1e-12)
    assert not np.allclose(params[0], W)
    np.testing.assert_array_equal(params[0][2], 0.0)  # the dead node did not move


def test_co2_level_epoch_rows_of_zero_weight_add_nothing():
    """A node whose rows in a batch all weigh 0 (weights normalized to mean
    1 can underflow there) gets no gradient from them, as co2_tree's numpy
    loop (``inv = 0`` where the node's batch weight is 0), not 0 * inf."""
    rng = np.random.RandomState(5)
    n, p, n_lvl = 40, 3, 2
    X = rng.randn(n, p)
    Y = rng.randint(2, size=n)
    node_of = np.repeat([0, 1], n // 2)
    w = rng.uniform(0.5, 2.0, n)
    w[node_of == 1] = 0.0
    W, b, th = 0.5 * rng.randn(n_lvl, p), 0.2 * rng.randn(n_lvl), rng.randn(n_lvl, 2, 2)
    params = (W.copy(), b.copy(), th.copy())
    kw = dict(loss="log", batch_size=8, momentum=0.9)
    level = CO2LevelEpochs(X, Y, w, node_of, *params, **kw, learning_rate=0.05, nu=1.2)
    ref = (W.copy(), b.copy(), th.copy())
    state = tuple(np.zeros_like(a) for a in ref)
    perm = rng.permutation(n)
    level.run(perm)
    _reference_co2_epoch(X, Y, w, node_of, *ref, state, perm, **kw, lr=0.05, nu=1.2)
    assert all(np.isfinite(a).all() for a in params)
    for a, r in zip(params, ref):
        np.testing.assert_allclose(a, r, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(params[0][1], W[1])  # node 1 only has rows of weight 0


def test_training_kernels_refuse_what_they_would_index_out_of_bounds():
    """The compiled epochs index without checks: the wrappers refuse rows,
    nodes, leaves, targets and weights outside the arrays, and a batch size
    that would not advance."""
    X, Y, w, W, b, theta, _ = _sgd_problem(6, "log", 2)
    kw = dict(loss="log", inference="exact", learning_rate=0.1, momentum=0.5, nu=1.0)
    epochs = SGDEpochs(X, Y, w, W.copy(), b.copy(), theta.copy(), batch_size=8, **kw)
    n = X.shape[0]
    for perm in (np.array([0, n]), np.array([-1, 0]), np.zeros((2, 2), dtype=int)):
        with pytest.raises(ValueError, match="perm"):
            epochs.run(perm)
    with pytest.raises(ValueError, match="assign"):
        epochs.run(np.arange(n), assign=np.zeros(n - 1, dtype=int))
    with pytest.raises(ValueError, match="assign"):
        epochs.run(np.arange(n), assign=np.full(n, W.shape[0] + 1))
    big = SGDEpochs(X, Y, w, W.copy(), b.copy(), theta.copy(), batch_size=10 * n, **kw)
    with pytest.raises(ValueError, match="perm"):  # more rows than the scratch buffers
        big.run(np.tile(np.arange(n), 2))
    bad = [dict(y=Y + theta.shape[1]), dict(w=w[:-1]), dict(batch_size=0),
           dict(theta=theta[:-1].copy()), dict(b=b[:-1].copy())]
    for change in bad:
        args = dict(X=X, y=Y, w=w, W=W.copy(), b=b.copy(), theta=theta.copy(), batch_size=8)
        args.update(change)
        with pytest.raises(ValueError):
            SGDEpochs(args.pop("X"), args.pop("y"), args.pop("w"), args.pop("W"),
                      args.pop("b"), args.pop("theta"), **args, **kw)
    Yr = np.random.RandomState(0).randn(n, 1)  # one output, theta has two
    with pytest.raises(ValueError, match="outputs"):
        SGDEpochs(X, Yr, w, W.copy(), b.copy(), np.zeros((W.shape[0] + 1, 2)),
                  **{**kw, "loss": "squared"}, batch_size=8)
    node_of = np.arange(n) % 2
    W2, b2, th2 = np.zeros((2, X.shape[1])), np.zeros(2), np.zeros((2, 2, theta.shape[1]))
    co2 = dict(loss="log", batch_size=8, learning_rate=0.1, momentum=0.5, nu=1.0)
    level = CO2LevelEpochs(X, Y, w, node_of, W2, b2, th2, **co2)
    with pytest.raises(ValueError, match="perm"):
        level.run(np.array([n]))
    with pytest.raises(ValueError, match="node_of"):
        CO2LevelEpochs(X, Y, w, node_of[:-1], W2, b2, th2, **co2)
    with pytest.raises(ValueError, match="node_of"):
        CO2LevelEpochs(X, Y, w, node_of + 1, W2, b2, th2, **co2).run(np.arange(n))
    with pytest.raises(ValueError, match="shapes"):
        CO2LevelEpochs(X, Y, w, node_of, W2, b2, th2[:1].copy(), **co2)
