"""LatentTreeClusterer: the bisecting start (``init="bisect"``) and the cut of
the hierarchy into ``n_clusters`` clusters."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from sklearn_difftrees import LatentTreeClusterer
from sklearn_difftrees.latent_tree._forward import node_rewards_numpy


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the tiny max_iter
        return LatentTreeClusterer(max_iter=10, **kw).fit(X)


def test_n_clusters_recovers_blobs():
    """Four Gaussian blobs: before 0.1.0 the clusterer had no n_clusters and,
    from its random start, trained a linear code of the rows (mean ARI of the
    random start cut to 4 clusters, seeds 0-2: 0.61; KMeans: 0.91). From the
    bisecting start: 0.82 (seeds 0-5: 0.85, per-seed sd 0.12)."""
    scores = []
    for seed in range(3):
        X, y = make_blobs(n_samples=400, centers=4, random_state=seed)
        km = _fit(X, n_clusters=4, random_state=seed)
        assert km.n_clusters_ == 4
        scores.append(adjusted_rand_score(y, km.labels_))
    assert np.mean(scores) > 0.72, scores


def test_bisect_start_keeps_routing_crisp():
    """The cause: from the random start almost every row lies in the band
    where z is fractional (|q| < 1/2), so z is linear in x and the head
    reconstructs the rows whatever the hard routing (validation R^2 0.995 on
    blobs); the bisecting start keeps the routing crisp."""
    X, _ = make_blobs(n_samples=400, centers=4, random_state=0)
    fractions = {}
    for init in ("bisect", "random"):
        km = _fit(X, max_depth=2, init=init, random_state=0)
        s = X @ km.tree_.weights.T + km.tree_.bias
        z = np.clip(node_rewards_numpy(s, 2) + 0.5, 0, km.pruning_values_)
        fractions[init] = ((z > 0) & (z < 1)).mean()
    assert fractions["bisect"] < 0.1 < 0.5 < fractions["random"], fractions


def test_n_clusters_cut_semantics():
    X, _ = make_blobs(n_samples=200, centers=3, random_state=0)
    leaves = _fit(X, random_state=0)
    cut = _fit(X, n_clusters=3, random_state=0)
    # Same tree (n_clusters only cuts it), clusters 0..2 on the cut's nodes.
    np.testing.assert_array_equal(leaves.apply(X), cut.apply(X))
    assert cut.n_clusters_ == 3 and set(cut.labels_) == {0, 1, 2}
    np.testing.assert_array_equal(cut.predict(X), cut.labels_)
    np.testing.assert_array_equal(cut.fit_predict(X), cut.labels_)
    # Every training row's path holds its cluster node.
    path = cut.decision_path(X).toarray().astype(bool)
    assert path[np.arange(X.shape[0]), cut.cluster_nodes_[cut.labels_]].all()
    # Without n_clusters: the leaves the rows end in.
    np.testing.assert_array_equal(leaves.cluster_nodes_[leaves.labels_], leaves.apply(X))
    assert _fit(X, n_clusters=1, random_state=0).n_clusters_ == 1


def test_n_clusters_errors_and_warnings():
    X, _ = make_blobs(n_samples=60, centers=3, random_state=0)
    with pytest.raises(ValueError, match="max_depth >= 5"):
        LatentTreeClusterer(n_clusters=17).fit(X)
    with pytest.raises(ValueError, match="at most n_samples=3"):
        LatentTreeClusterer(n_clusters=5).fit(X[:3])
    with pytest.warns(UserWarning, match="fewer than n_clusters=3"):
        km = LatentTreeClusterer(n_clusters=3, max_iter=2, random_state=0).fit(np.ones((30, 2)))
    assert km.n_clusters_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the cut's spread of 1e300s
        warnings.filterwarnings("ignore", category=UserWarning)
        huge = LatentTreeClusterer(n_clusters=3, max_iter=2, random_state=0).fit(X * 1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = LatentTreeClusterer(n_clusters=3, max_iter=2, random_state=0).fit(X)
    np.testing.assert_array_equal(huge.labels_, plain.labels_)  # standardized inside


def _cut_by_masks(ends, Y, w, n_clusters, n_nodes):
    """Oracle of cut_tree: every sum of squares from the rows themselves."""
    def through(t):
        out = np.zeros(ends.size, dtype=bool)
        for i, e in enumerate(ends):
            while True:
                if e == t:
                    out[i] = True
                    break
                if e == 0:
                    break
                e = (e - 1) // 2
        return out

    def sse(mask):
        ww = w[mask]
        if ww.sum() <= 0:
            return 0.0
        mean = ww @ Y[mask] / ww.sum()
        return float(ww @ ((Y[mask] - mean) ** 2).sum(axis=1))

    def parts(t):
        return [c for c in (2 * t + 1, 2 * t + 2) if c < n_nodes and through(c).any()], ends == t

    def settle(t):
        while True:
            kids, stays = parts(t)
            if len(kids) != 1 or stays.any():
                return t
            t = kids[0]

    cut, final = [settle(0)], set()
    while len(cut) < n_clusters:
        best = None
        for t in cut:
            kids, stays = parts(t)
            n_parts = len(kids) + int(stays.any())
            if t in final or not kids or n_parts < 2 or len(cut) + n_parts - 1 > n_clusters:
                continue
            g = sse(through(t)) - sum(sse(through(c)) for c in kids) - sse(stays)
            if best is None or g > best[0]:
                best = (g, t)
        if best is None:
            break
        t = best[1]
        kids, stays = parts(t)
        cut.remove(t)
        cut.extend(settle(c) for c in kids)
        if stays.any():
            cut.append(t)
            final.add(t)
    return np.array(sorted(cut))


@pytest.mark.parametrize("seed", range(4))
def test_cut_matches_the_sums_of_squares_of_the_rows(seed):
    # cut_tree sums each node's statistics up the tree; the oracle recomputes
    # every sum of squares from the rows on the node's paths.
    from sklearn_difftrees.latent_tree._cut import cut_tree

    rng = np.random.RandomState(seed)
    depth = 4
    n_nodes = 2 ** (depth + 1) - 1
    ends = rng.choice(np.arange(3, n_nodes), size=300)  # some rows end at inner nodes
    Y, w = rng.normal(size=(300, 3)), rng.exponential(size=300)
    for k in (1, 2, 3, 5, 8, 40):
        np.testing.assert_array_equal(cut_tree(ends, Y, w, k, n_nodes),
                                      _cut_by_masks(ends, Y, w, k, n_nodes))


def test_new_row_above_the_cut_walks_down_to_its_cluster():
    # Node 2's training rows all went on to node 5, and rows also ended at the
    # root (a cluster node): a new row ending at node 2 belongs to node 5's
    # cluster (the active child's), not the root's.
    from sklearn_difftrees.latent_tree._cut import node_to_cluster

    active = np.array([1, 0, 1, 0, 0, 1, 0], dtype=bool)
    table = node_to_cluster(np.array([0, 5]), active, 7)
    assert table[2] == 1 and table[5] == 1 and table[0] == 0


def test_scalar_weight_and_warning_location():
    X, _ = make_blobs(n_samples=120, centers=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = LatentTreeClusterer(n_clusters=3, max_iter=5, random_state=0).fit(X, sample_weight=2.0)
        b = LatentTreeClusterer(n_clusters=3, max_iter=5, random_state=0).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    with pytest.warns(UserWarning, match="fewer than n_clusters") as record:
        LatentTreeClusterer(n_clusters=3, max_iter=2, random_state=0).fit(np.ones((30, 2)))
    assert all(r.filename == __file__ for r in record if "fewer than" in str(r.message))
