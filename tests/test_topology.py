"""Heap-order topology helpers against a brute-force walk of the tree."""

import numpy as np
import pytest

from sklearn_difftrees._core import topology

DEPTHS = [1, 2, 3, 4, 5, 6]


def _brute_force_paths(depth):
    """(ancestors, directions) of every leaf by walking down every branch.

    Enumerates all root-to-leaf walks recursively (left first), so leaves come
    out left to right; independent of the bit tricks of the package.
    """
    paths = []

    def walk(node, anc, dirs):
        if len(anc) == depth:
            paths.append((node, list(anc), list(dirs)))
            return
        walk(2 * node + 1, anc + [node], dirs + [-1])
        walk(2 * node + 2, anc + [node], dirs + [+1])

    walk(0, [], [])
    return paths


@pytest.mark.parametrize("depth", DEPTHS)
def test_counts(depth):
    paths = _brute_force_paths(depth)
    assert topology.n_leaves(depth) == len(paths)
    assert topology.n_internal(depth) == len({a for _, anc, _ in paths for a in anc})
    assert topology.n_nodes(depth) == topology.n_internal(depth) + topology.n_leaves(depth)
    # Leaf l has heap index 2**D - 1 + l.
    assert [node for node, _, _ in paths] == list(
        range(2**depth - 1, 2 ** (depth + 1) - 1)
    )


@pytest.mark.parametrize("depth", DEPTHS)
def test_leaf_ancestors_and_directions_match_walk(depth):
    paths = _brute_force_paths(depth)
    anc = topology.leaf_ancestors(depth)
    dirs = topology.leaf_directions(depth)
    assert anc.shape == (2**depth, depth) and anc.dtype == np.int64
    assert dirs.shape == (2**depth, depth) and dirs.dtype == np.int8
    for leaf, (_, a, d) in enumerate(paths):
        np.testing.assert_array_equal(anc[leaf], a)
        np.testing.assert_array_equal(dirs[leaf], d)


@pytest.mark.parametrize("depth", DEPTHS)
def test_path_matrix_matches_walk(depth):
    paths = _brute_force_paths(depth)
    S = topology.path_matrix(depth)
    expected = np.zeros((2**depth, 2**depth - 1), dtype=int)
    for leaf, (_, a, d) in enumerate(paths):
        for node, direction in zip(a, d):
            expected[leaf, node] = direction
    assert S.shape == expected.shape
    np.testing.assert_array_equal(S, expected)
    # Every leaf has exactly `depth` ancestors; every node has 2**(D-k) leaves below.
    np.testing.assert_array_equal(np.abs(S).sum(axis=1), depth)
    node_levels = topology.node_depth(np.arange(2**depth - 1))
    np.testing.assert_array_equal(np.abs(S).sum(axis=0), 2 ** (depth - node_levels))
    # Below every node, half the leaves are left (-1) and half right (+1).
    np.testing.assert_array_equal(S.sum(axis=0), 0)


def test_cached_arrays_are_read_only():
    for fn in (topology.leaf_ancestors, topology.leaf_directions, topology.path_matrix):
        a = fn(3)
        with pytest.raises(ValueError):
            a[0, 0] = 5


def test_heap_order_children_parent_depth():
    nodes = np.arange(0, 2**7 - 1)
    for i in nodes:
        assert topology.left_child(i) == 2 * i + 1
        assert topology.right_child(i) == 2 * i + 2
        assert topology.parent(2 * i + 1) == i
        assert topology.parent(2 * i + 2) == i
    assert topology.parent(0) == -1
    # Depth by counting the steps up to the root.
    expected_depth = []
    for i in nodes:
        k, node = 0, int(i)
        while node > 0:
            node = (node - 1) // 2
            k += 1
        expected_depth.append(k)
    np.testing.assert_array_equal(topology.node_depth(nodes), expected_depth)
    np.testing.assert_array_equal(topology.parent(nodes[1:]), (nodes[1:] - 1) // 2)


def _walk(a, depth):
    node = 0
    for _ in range(depth):
        node = 2 * node + 2 if a[node] > 0 else 2 * node + 1
    return node - (2**depth - 1)


@pytest.mark.parametrize("depth", DEPTHS)
def test_argmax_path_score_equals_hard_walk(depth):
    """argmax_l S[l] @ sign(a) is the leaf reached by going right iff a > 0."""
    rng = np.random.RandomState(depth)
    S = topology.path_matrix(depth).astype(float)
    A = rng.normal(size=(500, 2**depth - 1))
    # Include exact zeros: ties go left, and sign(0) must count as left.
    A[rng.rand(*A.shape) < 0.1] = 0.0
    for a in A:
        sgn = np.where(a > 0, 1.0, -1.0)
        scores = S @ sgn
        leaf = _walk(a, depth)
        assert np.argmax(scores) == leaf
        # The reached leaf is the unique maximiser, with score == depth.
        assert scores[leaf] == depth
        assert np.sum(scores == depth) == 1
        if np.all(a != 0):
            assert np.argmax(S @ np.sign(a)) == leaf


@pytest.mark.parametrize("depth", [0, 1, 3, 5])
def test_subtree_sums_matches_brute_force(depth):
    """Every node's total is the sum over the leaves in its subtree (walked here)."""
    rng = np.random.RandomState(depth)
    values = rng.uniform(size=(topology.n_leaves(depth), 2))
    flags = rng.uniform(size=topology.n_leaves(depth)) < 0.3
    totals = topology.subtree_sums(values)
    any_flag = topology.subtree_sums(flags)
    n_int = topology.n_internal(depth)
    for node in range(topology.n_nodes(depth)):
        below, frontier = [], [node]
        while frontier:
            t = frontier.pop()
            if t >= n_int:
                below.append(t - n_int)
            else:
                frontier += [2 * t + 1, 2 * t + 2]
        np.testing.assert_allclose(totals[node], values[below].sum(axis=0))
        assert any_flag[node] == flags[below].any()
