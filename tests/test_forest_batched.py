"""The batched forest fit trains every member as its own ``fit`` would.

A forest trains its members together, as one model with a leading member axis
(``dgt/_batched.py`` and ``_core/_batched_trainer.py``). The oracle is the
member's ordinary ``fit`` with the member's seed and bootstrap weights: the
two must give the same tree up to float32 rounding (batched and unbatched
matmuls accumulate in different orders, ~1e-7 relative per step; after a few
epochs the weights agree to ~1e-6, so the tolerances below leave two orders of
magnitude of room while a wrong batch order, learning rate, optimizer state,
clipping or early-stopping rule moves the weights by 1e-3 or more).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from sklearn_difftrees import (
    DGTClassifier,
    DGTForestClassifier,
    DGTForestRegressor,
    DGTRegressor,
)
from sklearn_difftrees.dgt._bagging import _bootstrap_counts

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

_MAX_INT = np.iinfo(np.int32).max
SMALL = dict(max_depth=3, max_iter=12, hidden_width=8)


def _independent_members(forest_cls, member_cls, X, y, params, n_estimators, random_state,
                         max_samples=1.0):
    """Each member fitted alone, with the seed and bootstrap the forest draws."""
    rng = np.random.RandomState(random_state)
    member_seeds = rng.randint(_MAX_INT, size=n_estimators)
    sample_seeds = rng.randint(_MAX_INT, size=n_estimators)
    n = len(y)
    n_draws = max(1, int(round(max_samples * n)))
    members, weights = [], []
    for i in range(n_estimators):
        w = _bootstrap_counts(sample_seeds[i], np.arange(n), n, n_draws)
        # The forest's member parameters (its defaults may differ from a
        # single tree's), with verbose and random_state as the forest sets them.
        forest = forest_cls(**params)
        member = member_cls(**{k: getattr(forest, k) for k in forest._member_param_names()})
        member.set_params(random_state=int(member_seeds[i]), verbose=0)
        if hasattr(member, "_leaf_prior_rows"):  # as the forest sets it on its members
            member._leaf_prior_rows = 0.0
        members.append(member.fit(X, y, sample_weight=w))
        weights.append(w)
    return members, weights


def _assert_same_member(batched, alone, X):
    assert batched.n_iter_ == alone.n_iter_
    np.testing.assert_allclose(batched.loss_curve_, alone.loss_curve_, rtol=1e-4, atol=1e-6)
    scale = np.abs(alone.tree_.weights).max()
    np.testing.assert_allclose(batched.tree_.weights, alone.tree_.weights,
                               rtol=1e-3, atol=1e-4 * scale)
    # The routing agrees (a weight within rounding of a row's boundary may
    # flip that row; none does here, but allow one in a hundred).
    assert np.mean(batched.apply(X) == alone.apply(X)) >= 0.99


CASES = [
    # the defaults (one layer, RMSprop, cosine schedule, clipping, early stopping,
    # every member starting from its own bootstrap CART)
    {},
    # (Adam with an L1 penalty is left out: Adam moves a weight that sits at 0
    # by a full learning rate in the direction of sign(w), so rounding alone
    # sends such weights apart; SGD's steps are proportional to the gradient.)
    dict(optimizer="adam", alpha_l2=1e-3, lr_schedule="constant"),
    dict(optimizer="sgd", momentum=0.5, learning_rate=0.05, alpha_l1=1e-3,
         early_stopping=False),
    # members stop apart; hidden layers (node scores through the product W_3 W_2 W_1)
    dict(optimizer="rmsprop", momentum=0.3, n_iter_no_change=2, n_layers=3, init="random"),
    # the greedy start with a short patience: every member's CART is also its
    # epoch-0 early-stopping candidate
    dict(init="cart", n_iter_no_change=3),
]


@pytest.mark.parametrize("extra", CASES)
@pytest.mark.parametrize("forest_cls, member_cls", [(DGTForestClassifier, DGTClassifier),
                                                    (DGTForestRegressor, DGTRegressor)])
def test_a_batched_member_is_its_own_fit(forest_cls, member_cls, extra):
    if forest_cls is DGTForestClassifier:
        X, y = make_classification(240, 5, n_informative=3, n_classes=3, random_state=0)
    else:
        X, y = make_regression(240, 5, n_informative=3, noise=1.0, random_state=0)
    params = {**SMALL, **extra}
    forest = forest_cls(n_estimators=3, random_state=7, n_jobs=1, **params).fit(X, y)
    alone, _ = _independent_members(forest_cls, member_cls, X, y, params, 3, 7)
    for b, a in zip(forest.estimators_, alone):
        _assert_same_member(b, a, X)
    if extra.get("n_iter_no_change") == 2:
        assert len(set(forest.n_iter_)) > 1  # the members did stop at different epochs


def test_members_whose_sample_misses_a_class_equal_their_own_fit():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    y[:1] = 2  # a one-row class that most bootstrap samples of 30% miss
    forest = DGTForestClassifier(n_estimators=6, max_samples=0.3, random_state=0, n_jobs=1,
                                 **SMALL).fit(X, y)
    alone, weights = _independent_members(DGTForestClassifier, DGTClassifier, X, y, SMALL, 6,
                                          0, 0.3)
    assert 0 < sum(w[0] == 0 for w in weights) < 6  # some samples miss the rare row
    for b, a in zip(forest.estimators_, alone):
        np.testing.assert_array_equal(b.classes_, a.classes_)
        _assert_same_member(b, a, X)


def test_divergence_is_reported_not_returned():
    X, y = make_regression(200, 5, noise=1.0, random_state=0)
    forest = DGTForestRegressor(n_estimators=3, random_state=0, n_jobs=1, optimizer="sgd",
                                learning_rate=1e20, grad_clip=None, early_stopping=False,
                                **{**SMALL, "max_iter": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError, match="diverged"):
            forest.fit(X, y)


@pytest.mark.parametrize("depth", [4, 8])  # path scores: dense product / level by level
@pytest.mark.parametrize("n_layers", [1, 2])
def test_fused_route_equals_module_expression(n_layers, depth):
    """The batched forward (decisions, path scores, softmax and leaf product
    fused) gives the module's output and gradients: those of
    ``(hard + softmax(s @ S.T) - softmax(...).detach()) @ leaf``, in float64."""
    torch = pytest.importorskip("torch")
    from torch import nn

    from sklearn_difftrees._core import topology
    from sklearn_difftrees.dgt import _batched
    from sklearn_difftrees.dgt._module import hard_leaf

    from _oracles import ScaledSignSTE  # s = sign(a) * scale, gradient 1{|a| <= 1}

    T, B, d, K = 4, 50, 5, 3
    g = torch.Generator().manual_seed(0)
    dims = [d] + [6] * (n_layers - 1) + [topology.n_internal(depth)]

    def params():
        p = {}
        for i in range(n_layers):
            p[f"layers.{i}.weight"] = torch.randn(T, dims[i + 1], dims[i], generator=g,
                                                  dtype=torch.float64)
            p[f"layers.{i}.bias"] = 0.1 * torch.randn(T, dims[i + 1], generator=g,
                                                      dtype=torch.float64)
        p["leaf"] = torch.randn(T, topology.n_leaves(depth), K, generator=g, dtype=torch.float64)
        return p

    p0 = params()
    x = 0.3 * torch.randn(T, B, d, generator=g, dtype=torch.float64)
    mask = torch.rand(T, B, generator=g) < 0.8
    w = torch.randn(T, B, K, generator=g, dtype=torch.float64)
    S = torch.tensor(topology.path_matrix(depth), dtype=torch.float64)

    def unfused(p):
        a = _batched._node_scores(p, x, n_layers)
        m = mask.to(a.dtype).unsqueeze(2)  # the mean of |a| over real rows and all nodes
        scale = (a.detach().abs() * m).sum(dim=(1, 2), keepdim=True)
        scale = scale / (m.sum(dim=(1, 2), keepdim=True).clamp(min=1) * a.shape[2])
        s = ScaledSignSTE.apply(a, scale)
        soft = torch.softmax(s @ S.T, dim=2)
        hard = nn.functional.one_hot(hard_leaf(a, depth), soft.shape[2]).to(soft.dtype)
        return torch.bmm(hard + soft - soft.detach(), p["leaf"])

    def fused(p):
        return _batched.batched_forward(p, x, mask, n_layers=n_layers, depth=depth)

    results = []
    for f in (unfused, fused):
        p = {k: v.clone().requires_grad_(True) for k, v in p0.items()}
        out = f(p)
        (out * w).sum().backward()
        results.append((out.detach(), {k: v.grad for k, v in p.items()}))
    # (1 + soft) - soft is 1 only up to rounding in the unfused form
    np.testing.assert_allclose(results[1][0].numpy(), results[0][0].numpy(), rtol=1e-12)
    for k, grad in results[0][1].items():
        assert grad.abs().max() > 0
        np.testing.assert_allclose(results[1][1][k].numpy(), grad.numpy(), rtol=1e-12,
                                   atol=1e-12 * float(grad.abs().max()))


# ------------------------------------------- the bag's rows and max_features
def _oob_rows(n_estimators, random_state, n):
    """The out-of-bag rows of every member, as the forest draws them."""
    rng = np.random.RandomState(random_state)
    rng.randint(_MAX_INT, size=n_estimators)  # the member seeds
    sample_seeds = rng.randint(_MAX_INT, size=n_estimators)
    return [np.flatnonzero(_bootstrap_counts(s, np.arange(n), n, n) == 0) for s in sample_seeds]


def test_members_stop_on_their_out_of_bag_rows():
    """``validation_fraction="oob"``: a member's validation rows are the rows
    its bootstrap sample left out, so its best validation score is the
    accuracy of the tree it keeps on exactly those rows (up to a row within
    rounding of a boundary)."""
    X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=0)
    forest = DGTForestClassifier(n_estimators=4, random_state=3, n_jobs=1, max_depth=3,
                                 max_iter=15, validation_fraction="oob").fit(X, y)
    for member, rows in zip(forest.estimators_, _oob_rows(4, 3, len(y))):
        assert not member.greedy_fallback_
        accuracy = np.mean(member.predict(X[rows]) == y[rows])
        assert abs(member.best_validation_score_ - accuracy) <= 1.0 / rows.size + 1e-9
        # a held-out tenth of the sample (~19 rows) could not give this score
        assert rows.size > 90
    held_out = DGTForestClassifier(n_estimators=4, random_state=3, n_jobs=1, max_depth=3,
                                   max_iter=15, validation_fraction=0.1).fit(X, y)
    assert [m.best_validation_score_ for m in held_out.estimators_] != [
        m.best_validation_score_ for m in forest.estimators_]


@pytest.mark.parametrize("cls", [DGTForestClassifier, DGTForestRegressor])
def test_max_features_draws_the_start_features_per_split(cls, monkeypatch):
    """Only feature 0 carries the target. Every member's CART start grown on
    all features splits its root on it; with ``max_features=1`` each split
    of the start looks at one random feature, so the members' roots differ.
    (The greedy floor may later replace a member whose start fits worse than
    two greedy levels, so the starts are read as training begins.)"""
    from sklearn_difftrees.dgt import _bag_rows

    roots = []

    def spy(member, plan, *args, **kwargs):
        use_bag_rows(member, plan, *args, **kwargs)
        weight = plan.module.layers[0].weight.detach().abs()
        roots.append(int(weight[0].argmax()))

    use_bag_rows = _bag_rows.use_bag_rows
    monkeypatch.setattr(_bag_rows, "use_bag_rows", spy)
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] > 0).astype(int) if cls is DGTForestClassifier else 3.0 * X[:, 0]
    starts = {}
    for max_features in (None, 1):
        roots.clear()
        forest = cls(n_estimators=8, random_state=0, max_depth=3, max_iter=2,
                     max_features=max_features).fit(X, y)
        assert forest.max_features_ == (6 if max_features is None else 1)
        starts[max_features] = set(roots)
    assert starts[None] == {0}
    assert len(starts[1]) > 1


@pytest.mark.parametrize("cls", [DGTForestClassifier, DGTForestRegressor])
def test_bag_options_are_reproducible(cls):
    """Out-of-bag early stopping and the feature draws of the starts depend
    on random_state alone: two fits give identical members."""
    if cls is DGTForestClassifier:
        X, y = make_classification(200, 9, n_informative=4, random_state=1)
    else:
        X, y = make_regression(200, 9, n_informative=4, noise=1.0, random_state=1)
    a, b = (cls(n_estimators=3, random_state=5, max_depth=3, max_iter=8, max_features="sqrt",
                validation_fraction="oob").fit(X, y) for _ in range(2))
    assert a.max_features_ == 3
    for m, n in zip(a.estimators_, b.estimators_):
        np.testing.assert_array_equal(m.tree_.weights, n.tree_.weights)
        np.testing.assert_array_equal(m.tree_.value, n.tree_.value)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
