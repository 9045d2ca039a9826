"""Complete binary trees in heap order.

Node ``0`` is the root; the children of node ``i`` are ``2i + 1`` (left) and
``2i + 2`` (right). A tree of depth ``D`` has ``2**D - 1`` internal nodes
(heap indices ``0 .. 2**D - 2``) and ``2**D`` leaves (heap indices
``2**D - 1 .. 2**(D + 1) - 2``). Leaf number ``l`` (0-based, left to right) has
heap index ``2**D - 1 + l``.

Every method needs, for each leaf, its ancestors and the direction taken at
each of them. The matrices built here are those:

* :func:`path_matrix` is DGT's ``S(i, l)`` (``-1`` if leaf ``l`` lies in the
  left subtree of internal node ``i``, ``+1`` in the right subtree, ``0`` if
  ``i`` is not an ancestor), and ``(S < 0, S > 0)`` are the latent-tree paper's
  ``A_L`` / ``A_R``.
* :func:`leaf_ancestors` / :func:`leaf_directions` give the same information as
  dense ``(n_leaves, depth)`` arrays, root first.

The arrays are cached and read-only; copy them before writing.
"""

from functools import lru_cache

import numpy as np

__all__ = [
    "n_internal",
    "n_leaves",
    "n_nodes",
    "left_child",
    "right_child",
    "parent",
    "node_depth",
    "leaf_ancestors",
    "leaf_directions",
    "path_matrix",
    "subtree_sums",
]


def n_internal(depth):
    """Number of internal (split) nodes of a complete tree of ``depth``."""
    return 2**depth - 1


def n_leaves(depth):
    """Number of leaves of a complete tree of ``depth``."""
    return 2**depth


def n_nodes(depth):
    """Total number of nodes (internal and leaves) of a complete tree."""
    return 2 ** (depth + 1) - 1


def left_child(node):
    return 2 * node + 1


def right_child(node):
    return 2 * node + 2


def parent(node):
    """Parent of ``node`` (``-1`` for the root); works on arrays too."""
    return (np.asarray(node) - 1) // 2


def node_depth(node):
    """Depth of heap index ``node`` (root is 0); works on arrays too."""
    return np.floor(np.log2(np.asarray(node) + 1)).astype(np.int64)


def _readonly(a):
    a.setflags(write=False)
    return a


@lru_cache(maxsize=32)
def leaf_ancestors(depth):
    """Heap indices of the ancestors of every leaf, root first.

    Returns
    -------
    ancestors : ndarray of shape (2**depth, depth), dtype int64
    """
    out = np.empty((n_leaves(depth), depth), dtype=np.int64)
    for leaf in range(n_leaves(depth)):
        node = 0
        for level in range(depth):
            out[leaf, level] = node
            go_right = (leaf >> (depth - 1 - level)) & 1
            node = 2 * node + 1 + go_right
    return _readonly(out)


@lru_cache(maxsize=32)
def leaf_directions(depth):
    """Direction taken at every ancestor of every leaf: ``-1`` left, ``+1`` right.

    Returns
    -------
    directions : ndarray of shape (2**depth, depth), dtype int8
    """
    leaves = np.arange(n_leaves(depth))[:, None]
    bits = (leaves >> (depth - 1 - np.arange(depth))[None, :]) & 1
    return _readonly((2 * bits - 1).astype(np.int8))


@lru_cache(maxsize=32)
def path_matrix(depth):
    """Signed leaf/ancestor incidence matrix ``S`` of shape (n_leaves, n_internal).

    ``S[l, i]`` is ``-1`` if leaf ``l`` is in the left subtree of internal node
    ``i``, ``+1`` if it is in the right subtree and ``0`` otherwise. A sample
    whose node scores are ``a`` reaches leaf ``argmax_l S[l] @ sign(a)`` under the
    shared routing rule (right iff score > 0).
    """
    S = np.zeros((n_leaves(depth), n_internal(depth)), dtype=np.int8)
    rows = np.repeat(np.arange(n_leaves(depth)), depth)
    S[rows, leaf_ancestors(depth).ravel()] = leaf_directions(depth).ravel()
    return _readonly(S)


def subtree_sums(leaf_values):
    """Per-node totals, in heap order, of values given per leaf (left to right).

    Node ``i`` gets the sum over the leaves below it (a leaf gets its own
    value). For boolean input the sum is a logical OR ("some leaf below").

    Parameters
    ----------
    leaf_values : ndarray of shape (2**depth, ...)

    Returns
    -------
    totals : ndarray of shape (2**(depth + 1) - 1, ...)
    """
    leaf_values = np.asarray(leaf_values)
    depth = int(round(np.log2(leaf_values.shape[0])))
    out = np.zeros((n_nodes(depth),) + leaf_values.shape[1:], dtype=leaf_values.dtype)
    out[n_internal(depth) :] = leaf_values
    for level in range(depth - 1, -1, -1):
        nodes = np.arange(2**level - 1, 2 ** (level + 1) - 1)
        out[nodes] = out[2 * nodes + 1] + out[2 * nodes + 2]
    return out

