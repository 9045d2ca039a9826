"""Greedy trees grown on binned features: the core's ``FeatureBins`` and the
compiled stump search of NonGreedy's CO2 start (``cython_src/_stump.pyx``).

* A code ``<= k`` iff the raw value ``<= edges[k]``; a column with at most
  ``max_bins`` distinct values gets one code per value, so a CART grown on
  its codes is the CART grown on the raw values (same splits of the rows;
  a threshold may differ inside a gap between a node's values).
* ``fit_cart(..., bins=)`` returns a CART whose raw thresholds route raw rows
  exactly as the tree grown on the codes routes their codes.
* ``level_stumps`` against an independent oracle: scikit-learn's depth-1
  CART grown on the same codes of each node's rows (same existence of a
  split, same impurity decrease), for both criteria, weights, ties and
  several nodes per level (some skipped, some pure, some with one row).
* Property-based (hypothesis): the codes of any finite column are ordered
  bins consistent with the edges.
* ``bins="auto"``: the CART grown on codes from ``BINNED_MIN_ROWS`` rows,
  the exact one below; DGT's and ConvexPolytopeTree's greedy CARTs (start,
  floor, validation choice) take that path.
* The depth's cross-validation grows its CARTs level by level with the same
  kernel: its scores at every depth equal those of scikit-learn's CART grown
  on the same codes (on the rows grown on, where ties cannot matter).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_difftrees._core.greedy import FEATURE_THRESHOLD, FeatureBins, fit_cart
from sklearn_difftrees.non_greedy._train import level_stumps


def test_codes_order_values_by_the_edges():
    rng = np.random.RandomState(0)
    Z = np.column_stack([rng.randn(5000), rng.randint(0, 7, 5000), np.full(5000, 2.5)])
    bins = FeatureBins(Z, max_bins=32)
    codes = bins.transform(Z)
    assert codes.dtype == np.float32
    assert [e.size for e in bins.edges] == [31, 6, 0]
    for j, edges in enumerate(bins.edges):
        for k, edge in enumerate(edges):
            np.testing.assert_array_equal(codes[:, j] <= k, Z[:, j] <= edge)
    assert (codes[:, 2] == 0).all()


@pytest.mark.parametrize("classification", [True, False])
def test_cart_on_few_distinct_values_is_the_exact_cart(classification):
    rng = np.random.RandomState(1)
    Z = rng.randint(0, 40, size=(600, 4)) * 0.37 - 3.0  # 40 values per column
    Y = (Z[:, 0] + Z[:, 1] > 0).astype(int) if classification else Z[:, 0] * Z[:, 2]
    w = rng.rand(600) + 0.5
    bins = FeatureBins(Z)
    exact = fit_cart(Z, Y, w, depth=4, classification=classification, seed=0)
    binned = fit_cart(bins.transform(Z), Y, w, depth=4, classification=classification, seed=0,
                      bins=bins)
    np.testing.assert_array_equal(binned.apply(Z), exact.apply(Z))
    np.testing.assert_array_equal(binned.tree_.feature, exact.tree_.feature)


@pytest.mark.parametrize("classification", [True, False])
def test_binned_cart_routes_raw_rows_as_its_codes(classification):
    rng = np.random.RandomState(2)
    Z = rng.standard_t(3, size=(3000, 5))
    Y = (Z[:, 0] * Z[:, 1] > 0).astype(int) if classification else np.sin(Z[:, 0]) + Z[:, 3]
    bins = FeatureBins(Z, max_bins=64)
    codes = bins.transform(Z)
    on_codes = fit_cart(codes, Y, np.ones(3000), depth=6, classification=classification,
                        seed=0)
    raw = fit_cart(codes, Y, np.ones(3000), depth=6, classification=classification, seed=0,
                   bins=bins)
    fresh = rng.standard_t(3, size=(2000, 5)) * 1.5  # unseen values, also outside the range
    for rows in (Z, fresh):
        np.testing.assert_array_equal(raw.apply(rows), on_codes.apply(bins.transform(rows)))


@pytest.mark.parametrize("classification", [True, False])
def test_auto_bins_grow_on_codes_from_many_rows(classification, monkeypatch):
    from sklearn_difftrees._core import greedy

    monkeypatch.setattr(greedy, "BINNED_MIN_ROWS", 1000)
    rng = np.random.RandomState(3)
    Z = rng.randn(1200, 4)  # continuous: more distinct values than MAX_BINS
    Y = (Z[:, 0] + Z[:, 1] ** 2 > 1).astype(int) if classification else Z[:, 0] - Z[:, 2] ** 2
    w = np.ones(1200)
    kw = dict(depth=5, classification=classification, seed=0)
    edges = greedy.FeatureBins(Z).edges
    binned = greedy.fit_cart(Z, Y, w, bins="auto", **kw)
    t = binned.tree_
    split = np.flatnonzero(t.children_left != -1)
    assert split.size > 3
    for f, thr in zip(t.feature[split], t.threshold[split]):
        assert thr in edges[f]  # thresholds are bin edges (raw values)
    exact = greedy.fit_cart(Z[:999], Y[:999], w[:999], **kw)
    auto = greedy.fit_cart(Z[:999], Y[:999], w[:999], bins="auto", **kw)
    np.testing.assert_array_equal(auto.tree_.threshold, exact.tree_.threshold)
    assert greedy.auto_bins(Z[:999]) is None  # one row short of BINNED_MIN_ROWS
    assert isinstance(greedy.auto_bins(Z[:1000]), greedy.FeatureBins)
    ref = greedy.greedy_reference(Z, Y, w, bins="auto", **kw)
    t = ref.cart.tree_
    split = np.flatnonzero(t.children_left != -1)
    assert all(thr in edges[f] for f, thr in zip(t.feature[split], t.threshold[split]))


@pytest.mark.parametrize("name", ["DGTClassifier", "ConvexPolytopeTreeRegressor"])
def test_large_data_greedy_carts_are_binned(name, monkeypatch):
    # DGT's start and floor, ConvexPolytopeTree's validation choice and
    # floor: every greedy CART grown on BINNED_MIN_ROWS rows or more is
    # grown on codes (BINNED_MIN_ROWS lowered here to keep the fit small).
    import sklearn_difftrees
    from sklearn_difftrees._core import greedy

    monkeypatch.setattr(greedy, "BINNED_MIN_ROWS", 300)
    calls = []
    real = greedy.auto_bins
    monkeypatch.setattr(greedy, "auto_bins", lambda Z: calls.append(Z.shape[0]) or real(Z))
    rng = np.random.RandomState(4)
    X = rng.randn(600, 5)
    y = X[:, 0] + np.sin(2 * X[:, 1]) if "Regressor" in name else (X[:, 0] > X[:, 1]).astype(int)
    est = getattr(sklearn_difftrees, name)(max_depth=3, max_iter=2, random_state=0).fit(X, y)
    assert len(calls) >= 2 and max(calls) >= 300
    assert est.score(X, y) > 0.5


def _impurity(rows, Y, w, classification):
    """Weighted impurity sum (entropy / squared error) of a set of rows."""
    ww = w[rows]
    if classification:
        p = np.bincount(Y[rows], weights=ww) / ww.sum()
        p = p[p > 0]
        return -ww.sum() * (p * np.log(p)).sum()
    y = Y[rows].reshape(rows.size, -1)
    return (ww[:, None] * (y - (ww[:, None] * y).sum(0) / ww.sum()) ** 2).sum()


@pytest.mark.parametrize("seed", range(40))
def test_level_stumps_match_sklearn_stumps(seed):
    rng = np.random.RandomState(seed)
    classification = seed % 2 == 0
    n, p, n_lvl = rng.randint(2, 400), rng.randint(1, 6), rng.choice([1, 4, 8])
    Z = rng.randn(n, p).round(rng.choice([0, 1, 3]))  # ties and coarse values
    Y = (rng.randint(0, rng.randint(2, 5), n) if classification
         else rng.randn(n, rng.randint(1, 3)).squeeze())
    w = rng.rand(n) + 0.1
    local = rng.randint(0, n_lvl, n)
    if n_lvl > 1:  # a pure node and a one-row node
        Y[local == 1] = Y[local == 1][0]
        local[local == 2] = 3
        local[np.flatnonzero(local == 3)[:1]] = 2
    skip = rng.rand(n_lvl) < 0.2
    bins = FeatureBins(Z, max_bins=int(rng.choice([4, 16, 256])))
    codes = bins.transform(Z)
    W, b, found = level_stumps(codes, Y, w, local, n_lvl, skip, bins,
                               "log" if classification else "squared", 1.0)
    np.testing.assert_allclose(np.hypot(np.linalg.norm(W, axis=1), b)[found], 1.0)
    for j in range(n_lvl):
        rows = np.flatnonzero(local == j)
        if skip[j] or rows.size < 2:
            assert not found[j]
            continue
        cart = (DecisionTreeClassifier(criterion="entropy", max_depth=1) if classification
                else DecisionTreeRegressor(max_depth=1))
        cart.fit(codes[rows], Y[rows], sample_weight=w[rows])
        assert found[j] == (cart.tree_.node_count == 3)
        if not found[j]:
            assert not W[j].any() and b[j] == 0
            continue
        mine = rows[Z[rows] @ W[j] + b[j] <= 0]
        theirs = rows[codes[rows, cart.tree_.feature[0]] <= cart.tree_.threshold[0]]
        gain = [_impurity(np.setdiff1d(rows, left), Y, w, classification)
                + _impurity(left, Y, w, classification) for left in (mine, theirs)]
        np.testing.assert_allclose(gain[0], gain[1], rtol=1e-9, atol=1e-9)


def test_values_closer_than_sklearns_feature_threshold_share_a_code():
    one = np.nextafter(1.0, 0.0)
    Z = np.array([[1.0, 1e308], [one, 1.5e308], [1.0 + 5e-8, 1.7e308], [2.0, 1e308]])
    bins = FeatureBins(Z)
    codes = bins.transform(Z)
    assert codes[:3, 0].tolist() == [0, 0, 0] and codes[3, 0] == 1  # noise merged
    assert np.isfinite(bins.edges[1]).all() and len(set(codes[:, 1])) == 3  # no overflow
    tiny = FeatureBins(np.array([[5e-324], [1e-323], [1.5e-323]]))
    assert tiny.edges[0].size == 0  # subnormal neighbours: one code


def test_codes_per_column_at_and_above_max_bins():
    col = np.arange(256.0)
    assert FeatureBins(col[:, None]).edges[0].size == 255  # one code per value
    many = FeatureBins(np.arange(1000.0)[:, None])
    assert many.edges[0].size == 255  # quantile bins
    codes = many.transform(np.arange(1000.0)[:, None])[:, 0]
    assert np.all(np.diff(codes) >= 0) and np.bincount(codes.astype(int)).min() >= 3


def test_quantile_edges_never_sit_on_a_repeated_value():
    """A column of more than ``max_bins`` values, many repeated: a quantile
    on a value moves halfway to the next one, the rows' codes unchanged
    (the thresholds a tree takes from them keep a margin to every row)."""
    rng = np.random.RandomState(0)
    col = np.round(rng.exponential(50.0, 4000))  # integers, heavily repeated at the start
    bins = FeatureBins(col[:, None], max_bins=64)
    edges, values = bins.edges[0], np.unique(col)
    assert not np.isin(edges, values).any()
    quantiles = np.unique(np.percentile(col, np.linspace(0, 100, 65)[1:-1], method="midpoint"))
    assert np.isin(quantiles, values).sum() > 5  # the case occurs
    old_codes = np.searchsorted(quantiles, col, side="left")
    np.testing.assert_array_equal(bins.transform(col[:, None])[:, 0], old_codes)
    moved = ~np.isin(edges, quantiles)
    i = np.searchsorted(values, edges[moved]) - 1
    np.testing.assert_array_equal(edges[moved], values[i] / 2.0 + values[i + 1] / 2.0)


def test_moved_quantile_edges_stay_sorted():
    """A quantile on a repeated value ``a`` moves to ``a/2 + b/2``; the next
    quantile, np.percentile's midpoint of the last ``a`` and the first ``b``,
    can be an ulp below that: the edges must stay sorted, so that
    ``code <= k`` iff ``value <= edges[k]`` for any value, not only the
    training ones."""
    col = np.array([-2.0, -1.0] + [0.102] * 6 + [0.988, 2.0, 3.0])
    bins = FeatureBins(col[:, None], max_bins=4)
    edges = bins.edges[0]
    assert np.all(np.diff(edges) >= 0)
    probe = np.concatenate([col, edges, np.nextafter(edges, np.inf),
                            np.nextafter(edges, -np.inf)])
    codes = bins.transform(probe[:, None])[:, 0]
    for k, edge in enumerate(edges):
        np.testing.assert_array_equal(codes <= k, probe <= edge)
    assert not np.isin(edges, col).any()


def test_mapping_a_cart_twice_is_refused():
    rng = np.random.RandomState(3)
    Z = rng.randn(300, 3)
    y = (Z[:, 0] > 0.2).astype(int)
    bins = FeatureBins(Z)
    cart = fit_cart(bins.transform(Z), y, np.ones(300), depth=3, classification=True, seed=0,
                    bins=bins)
    with pytest.raises(ValueError, match="not those of binned codes"):
        bins.to_raw(cart)


def test_non_greedy_ignores_the_rounding_noise_of_a_constant_column():
    # Labels hidden in a column constant up to 1e-13 (its values are noise to
    # the fitted tree, which drops the column): the greedy trees must not
    # split on it either (this diverged when they did).
    from sklearn_difftrees import NonGreedyObliqueTreeClassifier

    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 200)
    X = np.column_stack([1 + 1e-13 * y, rng.randn(200)])
    est = NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3, random_state=0).fit(X, y)
    # The noise changes nothing: the same fit as with an exactly constant column.
    X_exact = X.copy()
    X_exact[:, 0] = 1.0
    exact = NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3, random_state=0)
    exact.fit(X_exact, y)
    for a, b in ((est.init_tree_, exact.init_tree_), (est.tree_, exact.tree_)):
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a.bias, b.bias, rtol=1e-9, atol=1e-9)
    assert not est.tree_.weights[:, 0].any()
    np.testing.assert_array_equal(est.predict(X), exact.predict(X_exact))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    col=st.lists(st.one_of(
        st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False, width=64),
        st.sampled_from([0.0, 1.0, np.nextafter(1.0, 0.0), 1.0 + 4e-8, -2.5, 5e-324])),
        min_size=1, max_size=600),
    max_bins=st.sampled_from([2, 3, 16, 256]),
)
def test_codes_are_ordered_bins_of_any_column(col, max_bins):
    """Any finite column: codes in 0..max_bins-1, ``code <= k`` iff
    ``value <= edges[k]``, equal values equal codes, and values closer than
    sklearn's FEATURE_THRESHOLD never on two sides of an edge."""
    Z = np.asarray(col, dtype=np.float64)[:, None]
    bins = FeatureBins(Z, max_bins=max_bins)
    edges = bins.edges[0]
    codes = bins.transform(Z)[:, 0]
    assert np.isfinite(edges).all() and np.all(np.diff(edges) > 0)
    assert edges.size <= max_bins - 1
    assert codes.min() >= 0 and codes.max() <= edges.size
    for k, edge in enumerate(edges):
        np.testing.assert_array_equal(codes <= k, Z[:, 0] <= edge)
    values = np.unique(Z[:, 0])
    # An edge sits on a value only where no float lies between it and the next.
    on = np.flatnonzero(np.isin(values[:-1], edges))
    np.testing.assert_array_equal(values[on] / 2.0 + values[on + 1] / 2.0, values[on + 1])
    close = np.flatnonzero(np.diff(values) <= FEATURE_THRESHOLD)
    if edges.size and close.size and len(values) <= max_bins:
        near = bins.transform(values[:, None])[:, 0]
        np.testing.assert_array_equal(near[close], near[close + 1])


def _sklearn_truncated_scores(codes, Y, w, fit, val, max_depth, classification):
    """Oracle: scikit-learn's CART grown on the codes of the rows ``fit``,
    the prediction at depth d that of the deepest node of depth <= d."""
    cart = (DecisionTreeClassifier(criterion="entropy", max_depth=max_depth, random_state=0)
            if classification else DecisionTreeRegressor(max_depth=max_depth, random_state=0))
    cart.fit(codes[fit], Y[fit], sample_weight=w[fit])
    path = cart.decision_path(codes[val]).tocsr()
    path.sort_indices()
    length = np.diff(path.indptr)
    k = np.minimum(np.arange(1, max_depth + 1)[:, None], length[None, :] - 1)
    at = path.indices[path.indptr[:-1][None, :] + k]
    if classification:
        pred = cart.classes_[cart.tree_.value[:, 0, :].argmax(-1)][at]
        return ((pred == Y[val][None]) * w[val]).sum(1) / w[val].sum()
    pred = cart.tree_.value[:, :, 0][at]
    sq = ((pred - Y[val].reshape(len(val), -1)[None]) ** 2).mean(-1)
    return -(sq * w[val]).sum(1) / w[val].sum()


@pytest.mark.parametrize("seed", range(12))
def test_level_wise_cart_scores_match_sklearns_cart(seed):
    from sklearn_difftrees._core.greedy import _binned_truncated_scores

    rng = np.random.RandomState(seed)
    classification = seed % 2 == 0
    n = rng.randint(30, 600)
    Z = rng.randn(n, rng.randint(1, 6))
    if classification:  # classes 0..K-1, some absent from the fit rows
        Y = np.digitize(Z[:, 0] + rng.randn(n), [-1, 0, 1])
    else:
        Y = (np.sin(Z[:, :1]) + 0.3 * rng.randn(n, rng.randint(1, 3))).squeeze()
    w = rng.rand(n) + 0.2
    bins = FeatureBins(Z)
    codes = bins.transform(Z)
    # Scored on the rows it was grown on: equally good splits (ties, e.g. any
    # separating feature of a two-row node) split those rows alike, so the
    # scores do not depend on which one each tree took.
    fit = np.sort(rng.permutation(n)[: 2 * n // 3])
    n_codes = max(e.size for e in bins.edges) + 1
    for depth in (1, 4, 9):
        np.testing.assert_allclose(
            _binned_truncated_scores(codes, Y, w, fit, fit, depth, n_codes, classification),
            _sklearn_truncated_scores(codes, Y, w, fit, fit, depth, classification),
            rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_level_cart_is_the_binned_cart(seed):
    # DGT's greedy start on many rows: the CART grown level by level with the
    # compiled split search embeds as scikit-learn's CART grown on the same
    # codes (same splits, same raw thresholds). Noisy labels, float weights
    # and large nodes: no two splits tie, so the trees are the same.
    from sklearn_difftrees._core.greedy import level_cart
    from sklearn_difftrees._core.embedding import cart_to_complete, set_axis_rows

    rng = np.random.RandomState(seed)
    classification = seed % 2 == 0
    n, p, depth = 3000, rng.randint(2, 7), rng.randint(1, 5)
    Z = rng.randn(n, p)
    if classification:
        Y = np.digitize(Z[:, 0] - Z[:, 1] + rng.randn(n), [-1, 0, 1])
    else:
        Y = (np.sin(Z[:, :1]) + 0.3 * rng.randn(n, rng.randint(1, 3))).squeeze()
    w = rng.rand(n) + 0.2
    bins = FeatureBins(Z, max_bins=64)
    codes = bins.transform(Z)
    cart = fit_cart(codes, Y, w, depth=depth, classification=classification, seed=0, bins=bins)
    W, b, _ = cart_to_complete(cart, depth, p, 1.0)
    feature, threshold = level_cart(codes, Y, w, depth=depth, classification=classification,
                                    bins=bins)
    W2, b2 = np.zeros_like(W), np.zeros_like(b)
    split = np.flatnonzero(feature >= 0)
    set_axis_rows(W2, b2, split, feature[split], threshold[split], 1.0)
    np.testing.assert_array_equal(W2, W)
    np.testing.assert_array_equal(b2, b)


def test_dgt_start_on_many_rows_is_the_level_cart(monkeypatch):
    # From BINNED_MIN_ROWS rows (lowered here) DGT's greedy start grows the
    # CART level by level (level_cart); a forest member's start regrown with
    # max_features features drawn per split is scikit-learn's CART.
    import sklearn_difftrees
    from sklearn_difftrees._core import greedy

    monkeypatch.setattr(greedy, "BINNED_MIN_ROWS", 300)
    calls = []
    real_level, real_fit = greedy.level_cart, greedy.fit_cart
    monkeypatch.setattr(greedy, "level_cart",
                        lambda *a, **k: calls.append("level") or real_level(*a, **k))
    monkeypatch.setattr(greedy, "fit_cart", lambda *a, **k: calls.append(
        k.get("max_features", "floor")) or real_fit(*a, **k))
    rng = np.random.RandomState(5)
    X = rng.randn(600, 5)
    y = (X[:, 0] > X[:, 1]).astype(int)
    est = sklearn_difftrees.DGTClassifier(max_depth=3, max_iter=2, init="cart",
                                          random_state=0).fit(X, y)
    assert calls[0] == "level" and None not in calls and est.score(X, y) > 0.8
    calls.clear()
    sklearn_difftrees.DGTForestClassifier(n_estimators=2, max_depth=3, max_iter=2,
                                          max_features=2, random_state=0).fit(X, y)
    assert calls.count(2) == 2
