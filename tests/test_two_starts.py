"""The greedy starts of LatentTree and TEL (``init="cart"``) and their two
starts of ``init="auto"`` (the core's ``_core/starts.py``, shared with DGT,
whose own tests are in test_greedy_start.py)."""

import numpy as np
import pytest
import torch
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_difftrees import (LatentTreeClassifier, LatentTreeRegressor,
                               TreeEnsembleLayerClassifier, TreeEnsembleLayerRegressor)
from sklearn_difftrees._core.embedding import cart_to_complete, robust_sharpness
from sklearn_difftrees.latent_tree._start import CART_SCALE
from sklearn_difftrees.tel import _start as tel_start
from _starts import FORCED_STATISTIC, _data, force_statistic, weighted_case

FAMILIES = {
    "LatentTree": (LatentTreeClassifier, LatentTreeRegressor, dict(max_depth=3)),
    "TEL": (TreeEnsembleLayerClassifier, TreeEnsembleLayerRegressor,
            dict(n_trees=3, max_depth=3)),
}

# The starts' machinery, without the out-of-fold cross-check that runs after
# it (whose clones would add their own runs): tests/test_cross_check.py.
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.usefixtures("no_cross_check")]


def _hard_leaf(scores, depth):
    """Leaf reached by every row of node scores (heap order; right iff > 0)."""
    pos = np.zeros(scores.shape[0], dtype=np.int64)
    for level in range(depth):
        pos = 2 * pos + (scores[np.arange(len(pos)), 2**level - 1 + pos] > 0)
    return pos


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_cart_start_routes_like_the_cart_it_came_from(task):
    X, y = _data(task)
    cls = LatentTreeClassifier if task == "classification" else LatentTreeRegressor
    est = cls(max_depth=4, init="cart", random_state=0)
    plan = est._fit_setup(X, y, None)
    assert plan.train_kwargs["keep_start"]
    Z, Y, w = (t.numpy().astype(np.float64) for t in plan.train_data)
    seed = plan.train_kwargs["seed"]
    if task == "classification":
        cart = DecisionTreeClassifier(criterion="entropy", max_depth=4, random_state=seed)
    else:
        cart = DecisionTreeRegressor(max_depth=4, random_state=seed)
    cart.fit(Z, Y, sample_weight=w)
    _, _, leaf_node = cart_to_complete(cart, 4, Z.shape[1], 1.0)
    with torch.no_grad():
        scores = plan.module.tree.split(plan.train_data[0]).double().numpy()
    np.testing.assert_array_equal(leaf_node[_hard_leaf(scores, 4)], cart.apply(Z))
    # The start's biases are final: training does not re-balance them.
    assert not bool(plan.module.tree.bias_pending)
    # Every split is the CART's threshold scaled by CART_SCALE (unit weight
    # on one feature per splitting node, zero rows below shallower leaves),
    # the classifier's times its feature's robust sharpness.
    W = plan.module.tree.split.weight.detach().double().numpy()
    split = np.abs(W).max(1) > 0
    features = np.abs(W[split]).argmax(1)
    expected = np.full(features.size, CART_SCALE)
    if task == "classification":
        expected *= robust_sharpness(Z, w)[features]
    np.testing.assert_allclose(np.abs(W[split]).max(1), expected, rtol=1e-5)
    assert ((np.abs(W) > 0).sum(1) <= 1).all()


@pytest.mark.parametrize("family, zeros, floor", [("LatentTree", False, 0.995),
                                                  ("TEL", False, 0.95),
                                                  ("LatentTree", True, 0.98),
                                                  ("TEL", True, 0.935)])
def test_classifier_cart_start_stays_crisp_on_heavy_tailed_features(family, zeros, floor):
    """On lognormal features (the standard deviation set by the tail) the
    classifier's embedded CART routes its training rows as the CART does
    (training accuracy 1.0 here): the splits are sharpened by the features'
    robust spread. At the plain CART_SCALE the bulk of the rows falls inside
    the splits' bands of fractional routing and the start blurs the CART's
    class regions: training accuracy of the start (one epoch at a vanishing
    learning rate) 0.989 for LatentTree and 0.719 for TEL, against 1.0 and
    0.976 sharpened. Zero-inflated (80% zeros, the rule ``x0 > 0`` XOR
    ``g1 > -0.2``): the interquartile range is 0, and the central 80% range
    stands in for it: 0.993 / 0.945, against 0.943 / 0.923 with the IQR's
    factor of 1."""
    rng = np.random.RandomState(0)
    G = rng.normal(size=(1500, 4))
    X = np.exp(2 * G)
    y = ((G[:, 0] > 0.3) ^ (G[:, 1] > -0.2)).astype(int)
    if zeros:
        X[:, 0] *= rng.uniform(size=1500) < 0.2
        y = ((X[:, 0] > 0) ^ (G[:, 1] > -0.2)).astype(int)
    params = dict(FAMILIES[family][2], max_depth=4, init="cart", max_iter=1,
                  learning_rate=1e-9, early_stopping=False, random_state=0)
    est = FAMILIES[family][0](**params).fit(X, y)
    assert DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y).score(X, y) == 1.0
    assert est.score(X, y) >= floor


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("weights", ["none", "sample_weight", "class_weight"])
@pytest.mark.parametrize("expected", ["cart", "random"])
def test_auto_init_returns_exactly_the_chosen_starts_model(monkeypatch, family, task,
                                                           expected, weights):
    """The two runs trained side by side to the end, the kept one is bit for
    bit the fit of that start alone (weights included)."""
    X, y = _data(task)
    clf, reg, params = FAMILIES[family]
    cls = clf if task == "classification" else reg
    case = weighted_case(weights, task, dict(params, max_iter=8, n_iter_no_change=50,
                                             random_state=0), y)
    if case is None:
        pytest.skip("class_weight is a classifier parameter")
    params, y, fit_params = case
    runs = force_statistic(monkeypatch, FORCED_STATISTIC[expected])
    auto = cls(init="auto", **params).fit(X, y, **fit_params)
    assert len(runs) == 2 and runs[0].epoch == runs[1].epoch == 8  # both ran to the end
    single = cls(init=expected, **params).fit(X, y, **fit_params)
    assert auto.init_ == single.init_ == expected
    np.testing.assert_array_equal(auto.predict(X), single.predict(X))
    assert auto.n_iter_ == single.n_iter_
    assert auto.loss_curve_ == single.loss_curve_


@pytest.mark.parametrize("task", ["3 classes", "2 classes", "regression", "2 targets"])
def test_tel_boosted_start_is_the_boosted_carts(monkeypatch, task):
    """Before training, TEL's greedy start predicts what the boosted CARTs it
    was set to predict: the rounds' values summed along each row's CART
    leaves, wherever the routing is hard (all but the rows within gamma /
    (2 c) of a threshold; a large scale c makes that band negligible). The
    classifier's rounds take the Newton step of the softmax loss, computed
    here from the probabilities: (K - 1) / K * sum(w r) / sum(w p (1 - p))."""
    from sklearn.tree import DecisionTreeRegressor

    monkeypatch.setattr(tel_start, "CART_SCALE", 1e4)
    classification = "classes" in task
    X, y = _data("classification" if classification else "regression")
    if task == "2 classes":
        y = (y > 0).astype(int)
    elif task == "2 targets":
        y = np.column_stack([y, np.sin(X[:, 0])])
    cls = TreeEnsembleLayerClassifier if classification else TreeEnsembleLayerRegressor
    est = cls(n_trees=4, max_depth=3, init="cart", random_state=0)
    plan = est._fit_setup(X, y, None)
    assert plan.train_kwargs["keep_start"]
    Z, Y, w = (t.numpy().astype(np.float64) for t in plan.train_data)
    seed, K = plan.train_kwargs["seed"], plan.module.out_features
    target = np.eye(K)[Y.astype(int)] if classification else Y.reshape(len(Y), -1)
    F = np.zeros_like(target)
    for _ in range(4):  # the rounds, by sklearn's trees directly
        P = np.exp(F - F.max(1, keepdims=True))
        P /= P.sum(1, keepdims=True)
        R = target - P if classification else target - F
        tree = DecisionTreeRegressor(max_depth=3, random_state=seed).fit(Z, R, sample_weight=w)
        leaves = tree.apply(Z)
        if classification:
            nodes = tree.tree_.node_count
            num = np.stack([np.bincount(leaves, w * R[:, k], nodes) for k in range(K)], 1)
            den = np.stack([np.bincount(leaves, w * P[:, k] * (1 - P[:, k]), nodes)
                            for k in range(K)], 1)
            value = (K - 1) / K * num / np.maximum(den, 1e-12)
        else:
            value = tree.tree_.value[:, :, 0]
        F += tel_start.START_LEARNING_RATE * value[leaves]
    with torch.no_grad():
        out = plan.module(plan.train_data[0]).double().numpy()
    close = np.isclose(out, F, rtol=1e-4, atol=1e-4).all(axis=1)
    assert close.mean() > 0.99
    if classification:  # the start already fits its rows better than the prior
        assert (out.argmax(1) == Y).mean() > max(np.bincount(Y.astype(int))) / len(Y)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_auto_init_keeps_the_greedy_start_on_axis_aligned_rules(family):
    """Thresholds on a heavy-tailed feature (the pattern of
    benchmarks/bench_heavy_tails.py): the greedy start's model is clearly
    better on the validation rows and is kept, on at least two of three
    seeds (LatentTree's statistics 3.0, 3.7 and 4.1 when written)."""
    rng = np.random.RandomState(0)
    n = 2000
    X = np.column_stack([np.exp(rng.normal(0, 1.5, n)), rng.normal(size=(n, 4))])
    y = ((X[:, 0] > 4.0) & (X[:, 1] < 0.5)).astype(int) + (X[:, 0] > 20.0)
    clf, _, params = FAMILIES[family]
    chosen = [clf(**params, max_iter=20, random_state=s).fit(X, y).init_ for s in range(3)]
    assert chosen.count("cart") >= 2, chosen


def test_mlp_head_and_no_validation_train_the_random_start():
    X, y = _data("classification")
    mlp = LatentTreeClassifier(max_depth=2, head="mlp", max_iter=2, random_state=0).fit(X, y)
    assert mlp.init_ == "random"
    plain = LatentTreeClassifier(max_depth=2, max_iter=3, early_stopping=False,
                                 random_state=0).fit(X, y)
    assert plain.init_ == "random"
    np.testing.assert_array_equal(
        plain.tree_.weights,
        LatentTreeClassifier(max_depth=2, max_iter=3, early_stopping=False, init="random",
                             random_state=0).fit(X, y).tree_.weights)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_warm_start_continuation_keeps_init_(family):
    X, y = _data("classification")
    clf, _, params = FAMILIES[family]
    est = clf(**params, max_iter=3, init="cart", warm_start=True, random_state=0).fit(X, y)
    est.set_params(init="random").fit(X, y)
    assert est.init_ == "cart"


def test_robust_sharpness_and_per_feature_split_scales():
    """Oracle: std / ((q75 - q25) / 1.349) per column, clipped to [1, 100];
    a column whose middle half is one value falls back on (q90 - q10) / 2.563
    (the 10% of fives here has none: 1); ``scale_axis_rows`` gives every split
    its feature's scale."""
    from sklearn_difftrees._core.embedding import MAX_SHARPNESS, scale_axis_rows

    rng = np.random.RandomState(0)
    Z = np.column_stack([rng.uniform(-1, 1, 4000), np.exp(2 * rng.normal(size=4000)),
                         (rng.uniform(size=4000) < 0.1) * 5.0, np.exp(9 * rng.normal(size=4000))])
    q1, q3 = np.percentile(Z, [25, 75], axis=0)
    with np.errstate(divide="ignore"):
        ratio = Z.std(axis=0) / ((q3 - q1) / 1.349)
    f = robust_sharpness(Z)
    assert f[0] == 1.0 and ratio[0] < 1  # light tails: unchanged
    np.testing.assert_allclose(f[1], ratio[1])
    assert f[1] > 10
    assert f[2] == 1.0  # 90% one value, the other 10% one value: no spread to use
    assert f[3] == MAX_SHARPNESS < ratio[3]
    zero_inflated = np.exp(2 * rng.normal(size=4000)) * (rng.uniform(size=4000) < 0.2)
    q10, q90 = np.percentile(zero_inflated, [10, 90])
    np.testing.assert_allclose(robust_sharpness(zero_inflated[:, None])[0],
                               min(zero_inflated.std() / ((q90 - q10) / 2.563), MAX_SHARPNESS))
    # Weights: integer weights act as repeated rows (oracle: numpy >= 2's
    # weighted inverted-CDF percentiles and the weighted std); equal weights
    # give the unweighted factor bit for bit.
    wts = rng.randint(1, 5, 4000).astype(float)
    if int(np.__version__.split(".")[0]) >= 2:  # numpy 1 has no weighted percentile
        q1, q3 = np.percentile(Z[:, 1], [25, 75], weights=wts, method="inverted_cdf")
        mean = np.average(Z[:, 1], weights=wts)
        std = np.sqrt(np.average((Z[:, 1] - mean) ** 2, weights=wts))
        np.testing.assert_allclose(robust_sharpness(Z, wts)[1], std / ((q3 - q1) / 1.349))
    np.testing.assert_allclose(robust_sharpness(Z, wts),
                               robust_sharpness(np.repeat(Z, wts.astype(int), axis=0)), rtol=0.02)
    np.testing.assert_array_equal(robust_sharpness(Z, np.full(4000, 3.0)), f)
    W = np.array([[0.0, 2.0, 0, 0], [0, 0, 0, 0], [-1.0, 0, 0, 0]])
    b = np.array([1.0, 0.0, 3.0])
    scale_axis_rows(W, b, 10 * f)
    np.testing.assert_allclose(W, [[0, 10 * f[1], 0, 0], [0, 0, 0, 0], [-10, 0, 0, 0]])
    np.testing.assert_allclose(b, [5 * f[1], 0, 30])
