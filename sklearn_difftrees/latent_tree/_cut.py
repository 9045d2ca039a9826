"""The clusters of a fitted :class:`~sklearn_difftrees.LatentTreeClusterer`:
a cut of its pruned tree (the hierarchy) into at most ``n_clusters`` nodes.

Without ``n_clusters`` the clusters are the nodes where training rows end
(the leaves of the pruned tree, as in Section 4.2 of the paper). With it, the
cut is grown top down from the root as bisecting k-means grows its tree
(scikit-learn's ``BisectingKMeans``, ``bisecting_strategy="biggest_inertia"``):
the cut node whose split lowers the within-cluster sum of squares of the
(standardized) reconstructed features most is replaced by its parts, until
``n_clusters`` clusters are reached or no node can be split.
"""

import numpy as np

__all__ = ["cut_tree", "node_to_cluster"]


def _sse(Y, w, mask):
    """Weighted within-group sum of squares of the rows ``mask``."""
    ww = w[mask]
    total = ww.sum()
    if total <= 0:
        return 0.0
    Yg = Y[mask]
    mean = ww @ Yg / total
    return float(ww @ ((Yg - mean) ** 2).sum(axis=1))


def _through(ends, n_nodes):
    """``through(t)``: the bool mask of the rows whose path passes node ``t``
    (``t`` is ``ends[i]`` or one of its ancestors), and ``reached``: which
    nodes some row passes. Built on the distinct end nodes only, so no
    ``(n_rows, n_nodes)`` matrix is held."""
    nodes, inverse = np.unique(ends, return_inverse=True)
    ancestors = np.zeros((nodes.size, n_nodes), dtype=bool)
    for i, t in enumerate(nodes.tolist()):
        while True:
            ancestors[i, t] = True
            if t == 0:
                break
            t = (t - 1) // 2
    return (lambda t: ancestors[inverse, t]), ancestors.any(axis=0)


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
    through, reached = _through(ends, n_nodes)

    def parts(t):
        out = [c for c in (2 * t + 1, 2 * t + 2) if c < n_nodes and reached[c]]
        stays = ends == t
        return out, stays

    def settle(t):
        # A node whose rows all go on to one child is that child's cluster.
        while True:
            kids, stays = parts(t)
            if len(kids) != 1 or stays.any():
                return t
            t = kids[0]

    def gain(t):
        kids, stays = parts(t)
        n_parts = len(kids) + int(stays.any())
        if not kids or n_parts < 2:
            return None, 0
        after = sum(_sse(Y, w, through(c)) for c in kids) + _sse(Y, w, stays)
        return _sse(Y, w, through(t)) - after, n_parts

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
        kids, stays = parts(t)
        cut.remove(t)
        cut.extend(settle(c) for c in kids)
        if stays.any():  # rows ending at t keep t as their cluster
            cut.append(t)
            final.add(t)
    return np.array(sorted(cut), dtype=np.int64)


def node_to_cluster(cluster_nodes, active, n_nodes):
    """Cluster index (into ``cluster_nodes``) of a row ending at each node.

    A node at or below a cluster node belongs to its nearest cluster node
    (itself or an ancestor); a node above the cut (a new row whose next node
    no training row reached) continues into its active child (the left one
    where both are) until it meets the cut.
    """
    table = np.full(n_nodes, -1, dtype=np.int64)
    index = {int(t): i for i, t in enumerate(cluster_nodes)}
    for t in range(n_nodes):
        if t in index:
            table[t] = index[t]
        elif t > 0 and table[(t - 1) // 2] >= 0:
            table[t] = table[(t - 1) // 2]
    for t in range(n_nodes - 1, -1, -1):
        if table[t] < 0 and 2 * t + 2 < n_nodes:
            left, right = 2 * t + 1, 2 * t + 2
            child = left if active[left] and table[left] >= 0 else right
            table[t] = table[child]
    return table
