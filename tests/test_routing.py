"""The compiled router of ObliqueTree against a pure numpy reference."""

import pickle

import numpy as np
import pytest

from sklearn_difftrees import ObliqueTree


def _random_tree(depth, n_features, n_outputs=2, seed=0):
    rng = np.random.RandomState(seed)
    W = rng.normal(size=(2**depth - 1, n_features))
    b = rng.normal(scale=0.5, size=2**depth - 1)
    V = rng.normal(size=(2**depth, n_outputs))
    return W, b, V


def _reference_paths(X, W, b, depth):
    """Heap indices visited by every row: float64 scores, right iff score > 0."""
    X = np.asarray(X, dtype=np.float64)
    paths = np.empty((X.shape[0], depth + 1), dtype=np.int64)
    for r in range(X.shape[0]):
        node = 0
        paths[r, 0] = 0
        for level in range(depth):
            score = b[node] + sum(W[node, j] * X[r, j] for j in range(X.shape[1]))
            node = 2 * node + 2 if score > 0 else 2 * node + 1
            paths[r, level + 1] = node
    return paths


def _reference_apply(X, W, b, depth):
    """Vectorized variant (independent of the row loop above)."""
    X = np.asarray(X, dtype=np.float64)
    node = np.zeros(X.shape[0], dtype=np.int64)
    for _ in range(depth):
        s = np.einsum("ij,ij->i", X, W[node]) + b[node]
        node = np.where(s > 0, 2 * node + 2, 2 * node + 1)
    return node


DEPTHS = [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_apply_predict_path_match_reference(depth, dtype):
    n_features = 5
    W, b, V = _random_tree(depth, n_features, seed=depth)
    tree = ObliqueTree(W, b, V)
    X = np.random.RandomState(100 + depth).normal(size=(300, n_features)).astype(dtype)
    ref_paths = _reference_paths(X, W, b, depth)
    ref_leaves = _reference_apply(X, W, b, depth)
    np.testing.assert_array_equal(ref_paths[:, -1], ref_leaves)

    leaves = tree.apply(X)
    assert leaves.dtype == np.int64 and leaves.shape == (300,)
    np.testing.assert_array_equal(leaves, ref_leaves)
    assert leaves.min() >= 2**depth - 1 and leaves.max() <= 2 ** (depth + 1) - 2
    np.testing.assert_array_equal(tree.predict(X), V[ref_leaves - (2**depth - 1)])

    P = tree.decision_path(X)
    assert P.shape == (300, 2 ** (depth + 1) - 1)
    P = P.tocsr()
    for r in range(X.shape[0]):
        nodes = np.sort(P.indices[P.indptr[r] : P.indptr[r + 1]])
        np.testing.assert_array_equal(nodes, np.sort(ref_paths[r]))


def test_float32_and_float64_route_identically_for_representable_inputs():
    W, b, V = _random_tree(5, 4, seed=3)
    tree = ObliqueTree(W, b, V)
    X32 = np.random.RandomState(0).normal(size=(500, 4)).astype(np.float32)
    np.testing.assert_array_equal(tree.apply(X32), tree.apply(X32.astype(np.float64)))


def test_ties_go_left():
    # Score exactly 0 at the root -> left child (node 1).
    W = np.array([[1.0, -1.0]])
    tree = ObliqueTree(W, np.array([0.0]), np.array([[0.0], [1.0]]))
    X = np.array([[2.0, 2.0], [2.0, 1.0], [1.0, 2.0]])
    np.testing.assert_array_equal(tree.apply(X), [1, 2, 1])


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_readonly_fortran_and_non_contiguous_inputs(depth):
    W, b, V = _random_tree(depth, 6, seed=7)
    tree = ObliqueTree(W, b, V)
    X = np.random.RandomState(1).normal(size=(200, 6))
    expected = _reference_apply(X, W, b, depth)

    ro = X.copy()
    ro.setflags(write=False)
    np.testing.assert_array_equal(tree.apply(ro), expected)
    np.testing.assert_array_equal(tree.decision_path(ro).toarray(), tree.decision_path(X).toarray())

    ro32 = X.astype(np.float32)
    ro32.setflags(write=False)
    np.testing.assert_array_equal(tree.apply(ro32), _reference_apply(ro32, W, b, depth))

    F = np.asfortranarray(X)
    assert not F.flags.c_contiguous
    np.testing.assert_array_equal(tree.apply(F), expected)
    np.testing.assert_array_equal(tree.predict(F), V[expected - (2**depth - 1)])

    wide = np.zeros((200, 12))
    wide[:, ::2] = X
    strided = wide[:, ::2]
    np.testing.assert_array_equal(tree.apply(strided), expected)

    # Integer input is cast to float64.
    Xi = np.round(X * 3).astype(np.int64)
    np.testing.assert_array_equal(tree.apply(Xi), _reference_apply(Xi, W, b, depth))


def test_inputs_and_tree_arrays_not_mutated():
    W, b, V = _random_tree(4, 3, seed=11)
    tree = ObliqueTree(W, b, V)
    saved = {k: getattr(tree, k).copy() for k in ("weights", "bias", "value")}
    for X in (
        np.random.RandomState(2).normal(size=(100, 3)),
        np.random.RandomState(3).normal(size=(100, 3)).astype(np.float32),
        np.asfortranarray(np.random.RandomState(4).normal(size=(100, 3))),
    ):
        X_copy = X.copy(order="K")
        tree.apply(X)
        tree.decision_path(X)
        tree.predict(X)
        tree.finalize(X)
        np.testing.assert_array_equal(X, X_copy)
        assert X.dtype == X_copy.dtype and X.flags.f_contiguous == X_copy.flags.f_contiguous
    np.testing.assert_array_equal(tree.weights, saved["weights"])
    np.testing.assert_array_equal(tree.bias, saved["bias"])
    # finalize replaces `value` by a new array, it does not write into V.
    np.testing.assert_array_equal(V, saved["value"])


@pytest.mark.parametrize("depth", [1, 2, 4, 6])
def test_decision_path_consistent_with_apply(depth):
    W, b, V = _random_tree(depth, 4, seed=20 + depth)
    tree = ObliqueTree(W, b, V)
    X = np.random.RandomState(5).normal(size=(150, 4))
    leaves = tree.apply(X)
    P = tree.decision_path(X).tocsr()
    assert np.all(P.data == 1)
    np.testing.assert_array_equal(np.diff(P.indptr), depth + 1)
    for r in range(X.shape[0]):
        nodes = np.sort(P.indices[P.indptr[r] : P.indptr[r + 1]])
        assert nodes[0] == 0
        assert nodes[-1] == leaves[r]
        # Each node is the parent of the next one: the path is the ancestor chain.
        np.testing.assert_array_equal((nodes[1:] - 1) // 2, nodes[:-1])


def test_shape_errors():
    W, b, V = _random_tree(2, 3)
    tree = ObliqueTree(W, b, V)
    with pytest.raises(ValueError, match="3 features"):
        tree.apply(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="Inconsistent"):
        ObliqueTree(W[:2], b[:2], V)
    with pytest.raises(ValueError, match="Inconsistent"):
        ObliqueTree(W, b, V[:3])


# --------------------------------------------------------------- finalize
def _leaves_below(node, depth):
    out = []

    def rec(n):
        if n >= 2**depth - 1:
            out.append(n)
        else:
            rec(2 * n + 1)
            rec(2 * n + 2)

    rec(node)
    return np.array(out)


@pytest.mark.parametrize("seed", range(6))
def test_finalize_active_mask_and_inactive_leaf_values(seed):
    depth = 4
    rng = np.random.RandomState(seed)
    W, b, V = _random_tree(depth, 3, n_outputs=3, seed=seed)
    b = b + rng.normal(scale=2.0, size=b.shape)  # skewed splits: some leaves empty
    X = rng.normal(size=(60, 3))
    w = rng.uniform(0.5, 2.0, size=60)
    tree = ObliqueTree(W, b, V).finalize(X, w)

    n_int = 2**depth - 1
    paths = _reference_paths(X, W, b, depth)
    reached = np.zeros(2 ** (depth + 1) - 1, dtype=bool)
    reached[np.unique(paths)] = True
    np.testing.assert_array_equal(tree.active, reached)
    assert not reached.all(), "test setup should leave some nodes unreached"

    # n_node_samples: total weight through every node.
    expected_n = np.zeros(2 ** (depth + 1) - 1)
    for r in range(X.shape[0]):
        expected_n[paths[r]] += w[r]
    np.testing.assert_allclose(tree.n_node_samples, expected_n)

    leaf_weight = expected_n[n_int:]
    for leaf in range(2**depth):
        node = leaf + n_int
        if reached[node]:
            np.testing.assert_array_equal(tree.value[leaf], V[leaf])
            continue
        anc = node
        while not reached[anc]:
            anc = (anc - 1) // 2
        below = _leaves_below(anc, depth) - n_int
        below = below[reached[below + n_int]]
        expected = (leaf_weight[below, None] * V[below]).sum(0) / leaf_weight[below].sum()
        np.testing.assert_allclose(tree.value[leaf], expected, rtol=1e-12)

    assert tree.node_count == reached.sum()
    assert tree.n_leaves == reached[n_int:].sum()
    # Depth: most splits (both children reached) on the path of a sample.
    splits = reached[1::2] & reached[2::2]
    assert tree.depth == max(int(splits[p[:-1]].sum()) for p in paths)


def test_finalize_unreached_subtree_gets_sibling_values():
    # Root sends everything left (x0 <= 0 everywhere): the whole right subtree
    # is inactive and takes the weighted mean of the active left leaves.
    W = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    b = np.array([-10.0, 0.0, 0.0])
    V = np.array([[1.0], [3.0], [100.0], [200.0]])
    X = np.array([[0.0, -1.0], [0.0, 1.0], [0.0, 2.0]])
    tree = ObliqueTree(W, b, V).finalize(X, np.array([1.0, 1.0, 2.0]))
    np.testing.assert_array_equal(tree.active, [1, 1, 0, 1, 1, 0, 0])
    np.testing.assert_allclose(tree.value[:, 0], [1.0, 3.0, 2.5, 2.5])  # (1*1 + 3*3) / 4
    np.testing.assert_allclose(tree.n_node_samples, [4, 4, 0, 1, 3, 0, 0])
    # A test point routed to the right subtree predicts the active mean.
    np.testing.assert_allclose(tree.predict(np.array([[20.0, 5.0]])), [[2.5]])


def test_finalize_ignores_zero_weight_rows():
    """A row of weight 0 is not training data: it activates no node."""
    W = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    b = np.zeros(3)
    V = np.array([[1.0], [3.0], [100.0], [200.0]])
    X = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])
    weighted = ObliqueTree(W, b, V).finalize(X, np.array([1.0, 1.0, 0.0]))
    dropped = ObliqueTree(W, b, V).finalize(X[:2])
    np.testing.assert_array_equal(weighted.active, dropped.active)
    np.testing.assert_array_equal(weighted.value, dropped.value)
    np.testing.assert_array_equal(weighted.n_node_samples, dropped.n_node_samples)


def test_pickle_round_trip():
    W, b, V = _random_tree(3, 4, n_outputs=2, seed=1)
    X = np.random.RandomState(0).normal(size=(40, 4))
    tree = ObliqueTree(W, b, V)
    tree.finalize(X + np.array([3.0, 0, 0, 0]))  # shifted: leaves some nodes inactive
    clone = pickle.loads(pickle.dumps(tree))
    for attr in ("weights", "bias", "value", "active", "n_node_samples"):
        np.testing.assert_array_equal(getattr(clone, attr), getattr(tree, attr))
    assert clone.max_depth == tree.max_depth and clone.n_features == tree.n_features
    X_test = np.random.RandomState(9).normal(size=(100, 4))
    np.testing.assert_array_equal(clone.apply(X_test), tree.apply(X_test))
    np.testing.assert_array_equal(clone.predict(X_test), tree.predict(X_test))
    assert repr(clone) == repr(tree)

    bad = tree.__getstate__()
    bad["active"] = bad["active"][:-1]
    with pytest.raises(ValueError, match="Corrupted"):
        ObliqueTree.__new__(ObliqueTree).__setstate__(bad)
