"""The clusters of a fitted :class:`~sklearn_difftrees.LatentTreeClusterer`:
a cut of its pruned tree (the hierarchy) into at most ``n_clusters`` nodes.

Without ``n_clusters`` the clusters are the nodes where training rows end
(the leaves of the pruned tree, as in Section 4.2 of the paper). With it, the
cut is grown top down from the root, as bisecting k-means grows its tree,
greedily: the cut node whose split lowers the within-cluster sum of squares
of the (standardized) reconstructed features most is replaced by its parts,
until ``n_clusters`` clusters are reached or no node can be split.

The sums of squares come from each node's sufficient statistics (weight,
weighted sum and weighted sum of squared norms of its rows), summed once
from the nodes where rows end, so the cut costs ``O(n p)`` for the
statistics and ``O(k)`` node lookups per cluster added, whatever the rows.
"""

import numpy as np

__all__ = ["cut_tree", "node_to_cluster"]


def _node_statistics(ends, Y, w, n_nodes):
    """Per node of the complete tree: the weight ``W``, weighted sum ``S``
    (``(n_nodes, p)``) and weighted sum of squared norms ``Q`` of the rows
    whose path passes it (a row's path is the node it ends in and that
    node's ancestors), and ``E``, ``S_end``, ``Q_end``: the same for the rows
    that end at the node."""
    E = np.bincount(ends, weights=w, minlength=n_nodes)
    S_end = np.zeros((n_nodes, Y.shape[1]))
    np.add.at(S_end, ends, w[:, None] * Y)
    Q_end = np.bincount(ends, weights=w * (Y**2).sum(axis=1), minlength=n_nodes)
    W, S, Q = E.copy(), S_end.copy(), Q_end.copy()
    for t in range(n_nodes - 1, 0, -1):  # children before parents (heap order)
        parent = (t - 1) // 2
        W[parent] += W[t]
        S[parent] += S[t]
        Q[parent] += Q[t]
    return (W, S, Q), (E, S_end, Q_end)


def _sse(W, S, Q):
    """Weighted within-group sum of squares from the group's statistics."""
    return max(0.0, float(Q - S @ S / W)) if W > 0 else 0.0


def cut_tree(ends, Y, w, n_clusters, n_nodes):
    """Cluster nodes (sorted heap indices) of the training rows.

    ``ends`` (n,): the node each row ends in (its path is that node and its
    ancestors); ``Y`` (n, p): the standardized reconstructed features; ``w``
    (n,): the sample weights; ``n_nodes``: the nodes of the complete tree.
    ``n_clusters`` ``None``: the nodes rows end in. A split of node ``t``
    makes up to three parts: its rows through the left child, through the
    right child, and those ending at ``t`` (which stays a cluster node for
    them).
    """
    leaves = np.unique(ends)
    if n_clusters is None or n_clusters >= leaves.size:
        return leaves
    reached = np.zeros(n_nodes, dtype=bool)
    for t in leaves.tolist():  # every node on some row's path
        while not reached[t]:
            reached[t] = True
            if t == 0:
                break
            t = (t - 1) // 2
    (W, S, Q), (E, S_end, Q_end) = _node_statistics(ends, Y, w, n_nodes)
    ending = np.zeros(n_nodes, dtype=bool)
    ending[leaves] = True

    def parts(t):
        return [c for c in (2 * t + 1, 2 * t + 2) if c < n_nodes and reached[c]]

    def settle(t):
        # A node whose rows all go on to one child is that child's cluster.
        while not ending[t]:
            kids = parts(t)
            if len(kids) != 1:
                return t
            t = kids[0]
        return t

    gains = {}

    def gain(t):  # (drop of the sum of squares, number of parts) of splitting t
        if t not in gains:
            kids = parts(t)
            n_parts = len(kids) + int(ending[t])
            if not kids or n_parts < 2:
                gains[t] = (None, 0)
            else:
                after = sum(_sse(W[c], S[c], Q[c]) for c in kids)
                after += _sse(E[t], S_end[t], Q_end[t])
                gains[t] = (_sse(W[t], S[t], Q[t]) - after, n_parts)
        return gains[t]

    cut, final = [settle(0)], set()
    while len(cut) < n_clusters:
        best = None
        for t in cut:
            if t in final:
                continue
            g, n_parts = gain(t)
            if g is not None and len(cut) + n_parts - 1 <= n_clusters and (
                    best is None or g > best[0]):
                best = (g, t)
        if best is None:
            break
        t = best[1]
        cut.remove(t)
        cut.extend(settle(c) for c in parts(t))
        if ending[t]:  # rows ending at t keep t as their cluster
            cut.append(t)
            final.add(t)
    return np.array(sorted(cut), dtype=np.int64)


def node_to_cluster(cluster_nodes, active, n_nodes):
    """Cluster index (into ``cluster_nodes``) of a row ending at each node.

    A node at or below a cluster node, with no cluster node below it, belongs
    to its nearest cluster node (itself or an ancestor); a node above the cut
    (a new row whose next node no training row reached, or a node whose
    training rows all went on towards a deeper cluster node) continues into
    its active child (the left one where both are) until it meets the cut.
    """
    is_cut = np.zeros(n_nodes, dtype=bool)
    is_cut[cluster_nodes] = True
    below = np.zeros(n_nodes, dtype=bool)  # a cluster node strictly below
    for t in range(n_nodes - 1, 0, -1):
        parent = (t - 1) // 2
        below[parent] |= is_cut[t] or below[t]
    table = np.full(n_nodes, -1, dtype=np.int64)
    index = {int(t): i for i, t in enumerate(cluster_nodes)}
    for t in range(n_nodes):
        if t in index:
            table[t] = index[t]
        elif t > 0 and table[(t - 1) // 2] >= 0 and not below[t]:
            table[t] = table[(t - 1) // 2]
    for t in range(n_nodes - 1, -1, -1):
        if table[t] < 0 and 2 * t + 2 < n_nodes:
            left, right = 2 * t + 1, 2 * t + 2
            child = left if active[left] and table[left] >= 0 else right
            table[t] = table[child]
    return table
