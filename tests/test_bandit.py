"""DGT-Bandit learners (Algorithm 1): gradient estimators, online protocol, simulator."""

import pickle
import warnings

import numpy as np
import pytest
import torch

from sklearn_difftrees import DGTBanditClassifier, DGTBanditRegressor, DGTRegressor
from sklearn_difftrees.bandit import (
    EpsilonGreedyLinearBandit,
    OnlineLinearRegressionBandit,
    plot_learning_curves,
    simulate,
)
from sklearn_difftrees.dgt._bandit_feedback import derivative_estimate, policy_probabilities
from sklearn_difftrees.dgt import _bandit_torch
from sklearn_difftrees.dgt._bandit_torch import classification_surrogate, leaf_reward_estimates


def _tree_data(n, seed, regression=False):
    """Contexts uniform in [-1, 1]^5 labelled by a fixed depth-2 oblique tree.

    The leaves map to classes [0, 1, 1, 2] (class 1 is two opposite leaves, so
    no linear cost model is exact) or to values [0.1, 0.4, 0.6, 0.9] + noise.
    """
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, 5))
    root = X[:, 0] + 0.5 * X[:, 1] > 0
    left = X[:, 2] - 0.5 * X[:, 3] > 0
    right = X[:, 2] + X[:, 4] > 0
    leaf = np.where(root, 2 + right, left.astype(int))
    if regression:
        return X, np.array([0.1, 0.4, 0.6, 0.9])[leaf] + 0.05 * rng.normal(size=n)
    return X, np.array([0, 1, 1, 2])[leaf]


# --------------------------------------------------------- gradient estimators
@pytest.mark.parametrize("feedback", ["one_point", "two_point"])
def test_regression_estimator_mean_is_central_difference(feedback):
    """E_u of eq. 9 / eq. 10 = [l(y+d) - l(y-d)] / 2d = l'(y) for a quadratic loss."""
    X = np.random.RandomState(0).uniform(-1, 1, size=(40, 3))
    reg = DGTBanditRegressor(max_depth=2, feedback=feedback, delta=0.3, random_state=0)
    reg.sample_predictions(X)  # creates the learner
    x = np.repeat(X[:1], 20000, axis=0)
    y_true, y_hat = 0.7, reg.predict(X[:1])[0]

    def loss(v):  # quadratic: the central difference is the exact derivative
        return 2.0 * (v - y_true) ** 2 + 0.5

    played, u = reg.sample_predictions(x, random_state=1)
    assert set(np.unique(u)) == {-1.0, 1.0}
    g = derivative_estimate(loss(played), u, reg.delta)
    central = (loss(y_hat + reg.delta) - loss(y_hat - reg.delta)) / (2 * reg.delta)
    np.testing.assert_allclose(central, 4.0 * (y_hat - y_true), rtol=1e-12)
    if feedback == "two_point":
        np.testing.assert_allclose(g, central, rtol=1e-10)  # exact for every draw
    else:
        assert abs(g.mean() - central) < 4 * g.std() / np.sqrt(g.size)


def test_regression_update_is_derivative_times_output_gradient():
    """With plain SGD the reached leaf moves by -lr * estimate (eq. 6, Remark 2)."""
    X = np.random.RandomState(0).uniform(-1, 1, size=(40, 3))
    reg = DGTBanditRegressor(
        max_depth=2, optimizer="sgd", learning_rate=1e-5, accumulation_steps=1, random_state=0
    )
    reg.sample_predictions(X)  # creates the learner (standardizer on 40 rows)
    played, u = reg.sample_predictions(X[:1], random_state=0)
    before = reg.predict(X[:1])[0]
    losses = np.array([3.0])
    reg.update(X[:1], played, losses, u)
    g = derivative_estimate(losses, u, reg.delta)[0]
    # (a step this small does not move the sample to another leaf)
    np.testing.assert_allclose(reg.predict(X[:1])[0] - before, -1e-5 * g, rtol=1e-3)


def test_classification_estimator_expectation():
    """Eq. 8 in expectation over the policy = grad of sum_k (sigmoid(theta_k) - r_k)^2."""
    rng = np.random.RandomState(0)
    K = 4
    theta = torch.tensor(rng.normal(size=K), dtype=torch.float64, requires_grad=True)
    rewards = torch.tensor(rng.uniform(size=K), dtype=torch.float64)
    p = torch.tensor(policy_probabilities(theta.detach().numpy()[None], 0.3)[0])
    expected = torch.zeros(K, dtype=torch.float64)
    for k in range(K):  # exact expectation over the played action
        (g,) = torch.autograd.grad(
            classification_surrogate(
                theta[None], torch.tensor([k]), rewards[k : k + 1], p[k : k + 1]
            ).sum(),
            theta,
        )
        s = torch.sigmoid(theta[k]).detach()
        eq8 = 2 / p[k] * ((1 - rewards[k]) - (1 - s)) * s * (1 - s)  # eq. 8, loss = 1 - r
        np.testing.assert_allclose(g[k].item(), eq8.item(), rtol=1e-10)
        assert torch.count_nonzero(g) <= 1  # only the played action's logit
        expected += p[k] * g
    (full,) = torch.autograd.grad(((torch.sigmoid(theta) - rewards) ** 2).sum(), theta)
    np.testing.assert_allclose(expected.numpy(), full.numpy(), rtol=1e-10)


def test_sample_actions_follows_eq7_policy():
    X, y = _tree_data(200, 0)
    clf = DGTBanditClassifier(max_depth=2, exploration=0.3, classes=[0, 1, 2], random_state=0)
    actions, prop = clf.sample_actions(np.repeat(X[:1], 30000, axis=0), random_state=0)
    p = clf.predict_proba(X[:1])[0]
    np.testing.assert_allclose(np.sort(p), [0.1, 0.1, 0.8])
    assert clf.predict(X[:1])[0] == clf.classes_[np.argmax(p)]
    freq = np.bincount(actions, minlength=3) / actions.size
    np.testing.assert_allclose(freq, p, atol=0.01)
    np.testing.assert_allclose(prop, p[actions])


# ------------------------------------------------------------ counted leaves
def test_leaf_reward_estimates_match_recursive_shrinkage():
    """Oracle: pooled counts per node, estimate (R + m * parent) / (N + m) from the root."""
    rng = np.random.RandomState(0)
    depth, K, m, prior = 3, 4, 1.0, 0.25
    plays = rng.randint(0, 4, size=(2**depth, K)).astype(float)
    plays[2] = 0.0  # a leaf never reached
    rewards = rng.binomial(plays.astype(int), 0.4).astype(float)

    def node_counts(node, level):  # leaves below heap node `node` at `level`
        first = node - (2**level - 1)
        width = 2 ** (depth - level)
        rows = slice(first * width, (first + 1) * width)
        return plays[rows].sum(0), rewards[rows].sum(0)

    expected = np.zeros((2**depth, K))
    above = {}  # leaf -> estimate of its parent
    for leaf in range(2**depth):
        est = np.full(K, prior)
        node = 0
        for level in range(depth + 1):
            n, r = node_counts(node, level)
            est = (r + m * est) / (n + m)
            if level == depth - 1:
                above[leaf] = est
            if level < depth:
                go_right = (leaf >> (depth - 1 - level)) & 1
                node = 2 * node + 1 + go_right
        expected[leaf] = est
    got = leaf_reward_estimates(plays, rewards, prior, strength=m)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(got[2], above[2], rtol=1e-12)  # unreached: the parent's
    assert np.all((got >= 0) & (got <= 1))


def test_counted_leaves_hold_the_reward_means_of_their_rounds():
    X, y = _tree_data(400, 0)
    clf = DGTBanditClassifier(max_depth=2, classes=[0, 1, 2], leaf_estimator="counts",
                              random_state=0)
    clf.update(X, *_logged(clf, X, y))
    plays, rewards = clf._state["counts"]
    assert plays.sum() == 400 and clf._state["pending"] == 0
    leaf_value = clf._state["module"]["leaf"]
    expected = leaf_reward_estimates(plays, rewards, 1 / 3, clf.prior_strength)
    np.testing.assert_allclose(leaf_value, expected, atol=1e-5)  # + the 1e-6 tie-break
    # The greedy action of a context is the largest estimate of its leaf.
    leaf = clf.apply(X) - (2**2 - 1)
    np.testing.assert_array_equal(clf.predict(X), np.argmax(leaf_value[leaf], axis=1))


def test_linear_leaves_are_logistic_sgd_plus_counted_residuals():
    """Oracle replay: the per-action logistic models follow SGD on the played
    actions' log-loss, summed over each optimizer step of 4 rounds (they do not
    depend on the tree), the leaves count the residual rewards (prior 0), and
    the greedy action maximizes linear + leaf."""
    X, y = _tree_data(400, 0)
    clf = DGTBanditClassifier(max_depth=2, classes=[0, 1, 2], random_state=0)
    assert clf.leaf_estimator == "linear"
    actions, losses, p = _logged(clf, X, y)
    clf.update(X, actions, losses, p)
    Z1 = np.column_stack([clf._standardized(X), np.ones(400)]).astype(np.float64)
    W = np.zeros((3, Z1.shape[1]))
    residual = np.zeros(400)
    for start in range(0, 400, 4):
        rows = np.arange(start, start + 4)
        g = 1 / (1 + np.exp(-(Z1[rows] @ W.T)))[np.arange(4), actions[rows]]
        residual[rows] = (1 - losses[rows]) - g
        grad = np.zeros_like(W)
        np.add.at(grad, actions[rows], (g - (1 - losses[rows]))[:, None] * Z1[rows])
        W -= clf.linear_learning_rate * grad
    np.testing.assert_allclose(clf._state["linear"], W, rtol=1e-10, atol=1e-12)
    plays, sums = clf._state["counts"]
    np.testing.assert_allclose(sums.sum(), residual.sum(), rtol=1e-9, atol=1e-9)
    expected = leaf_reward_estimates(plays, sums, 0.0, clf.prior_strength)
    np.testing.assert_allclose(clf._state["module"]["leaf"], expected, atol=1e-5)
    reward = 1 / (1 + np.exp(-(X @ clf.linear_coef_.T + clf.linear_intercept_)))
    reward += clf._state["module"]["leaf"][clf.apply(X) - 3]
    np.testing.assert_array_equal(clf.predict(X), np.argmax(reward, axis=1))
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.max(axis=1), 0.7 + 0.3 / 3)
    np.testing.assert_array_equal(np.argmax(proba, axis=1), clf.predict(X))


def test_pca_split_init_cuts_along_the_widest_spread():
    """The root of the "pca" start splits along the leading principal axis, at
    the median; every node then halves its contexts."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(512, 4)) * [1.0, 5.0, 0.5, 0.2]
    clf = DGTBanditClassifier(max_depth=3, classes=[0, 1], split_init="pca", random_state=0)
    clf.sample_actions(X)
    w = clf.tree_.weights[0] * clf._feature_scale  # in the standardized space
    np.testing.assert_array_equal(np.bincount(clf.apply(X) - 7, minlength=8), 64)
    Z = clf._standardized(X)
    top = np.linalg.svd(Z - Z.mean(0), full_matrices=False)[2][0]
    cos = abs(w @ top) / np.linalg.norm(w)
    assert cos > 0.999


def test_median_split_init_halves_the_contexts_at_every_node():
    X = np.random.RandomState(0).normal(size=(512, 4))
    for split_init, balanced in [("median", True), ("random", False)]:
        clf = DGTBanditClassifier(max_depth=4, classes=[0, 1], split_init=split_init,
                                  random_state=0)
        clf.sample_actions(X)
        leaves = np.bincount(clf.apply(X) - 15, minlength=16)
        if balanced:  # 512 distinct contexts: 32 per leaf, none on a threshold
            np.testing.assert_array_equal(leaves, 32)
        else:  # splits through the mean: cones of very unequal mass
            assert leaves.max() > 2 * leaves.min()


# ------------------------------------------------------------ online protocol
def _logged(est, X, y, seed=0):
    if isinstance(est, DGTBanditClassifier):
        a, p = est.sample_actions(X, random_state=seed)
        return a, (a != y).astype(float), p
    played, u = est.sample_predictions(X, random_state=seed)
    y2 = y if played.ndim == 1 else y[:, None]
    return played, (played - y2) ** 2, u


_LEARNERS = [
    lambda: DGTBanditClassifier(max_depth=3, classes=[0, 1, 2], learning_rate=1e-2,
                                random_state=0),
    lambda: DGTBanditClassifier(max_depth=3, classes=[0, 1, 2], learning_rate=1e-2,
                                leaf_estimator="counts", split_init="median", random_state=0),
    lambda: DGTBanditClassifier(max_depth=3, classes=[0, 1, 2], learning_rate=1e-2,
                                leaf_estimator="gradient", split_init="random", random_state=0),
    lambda: DGTBanditRegressor(max_depth=3, feedback="two_point", random_state=0),
    lambda: DGTBanditRegressor(max_depth=3, n_layers=2, hidden_width=8, random_state=0),
]


def _one_and_many(make, n=30):
    """``(one, many)``: the same rounds learned in one call and in n calls."""
    X, y = _tree_data(n, 0, regression=isinstance(make(), DGTBanditRegressor))
    one, many = make(), make()
    one.sample_predictions(X) if hasattr(one, "sample_predictions") else one.sample_actions(X)
    many.sample_predictions(X) if hasattr(many, "sample_predictions") else many.sample_actions(X)
    feedback = _logged(one, X, y)
    one.update(X, *feedback)
    for i in range(n):  # one round per call
        many.update(X[i : i + 1], *(f[i : i + 1] for f in feedback))
    assert one.n_rounds_ == many.n_rounds_ == n
    np.testing.assert_array_equal(one.tree_.n_node_samples, many.tree_.n_node_samples)
    assert one._state["pending"] == many._state["pending"] == n % 4
    if "counts" in one._state:  # counted leaves: the same rounds entered the same leaves
        # (plays exactly; the linear mode's residual sums up to float64 rounding)
        for key in ("counts", "pending_counts"):
            np.testing.assert_array_equal(one._state[key][0], many._state[key][0])
            np.testing.assert_allclose(one._state[key][1], many._state[key][1], rtol=1e-12,
                                       atol=1e-14)
    if "linear" in one._state:
        np.testing.assert_allclose(one._state["linear"], many._state["linear"], rtol=1e-12,
                                   atol=1e-14)
    return one, many


@pytest.mark.parametrize("make", _LEARNERS)
def test_update_in_one_call_equals_many_calls(make, monkeypatch):
    """One call on n rounds is the sequential computation (checked in float64).

    The two paths add the same per-round gradients in a different order (one
    backward pass over the 4 rounds of a step vs 4 passes adding into
    ``.grad``). In float32 (the learners' type) they then differ in the last
    bits, and RMSprop's ``g / (sqrt(v) + eps)`` (eps = 1e-5) amplifies that by
    up to ``1 / eps``: 1e-6 here, 1.5e-5 on an Intel CPU, so no float32
    tolerance both holds everywhere and catches a missed round (which moves
    the parameters by ~1e-2). In float64 the same amplification stays below
    1e-10, so the check is tight.
    """
    monkeypatch.setattr(_bandit_torch, "DTYPE", torch.float64)
    one, many = _one_and_many(make)
    assert one._state["module"]["leaf"].dtype == np.float64
    np.testing.assert_allclose(one.tree_.weights, many.tree_.weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(one.tree_.value, many.tree_.value, rtol=1e-9, atol=1e-12)


def test_pickle_mid_stream_continues_identically():
    """The online state (weights, RMSprop buffers, pending gradient) survives pickling."""
    X, y = _tree_data(40, 1)
    clf = DGTBanditClassifier(max_depth=3, classes=[0, 1, 2], random_state=0)
    clf.update(X[:10], *_logged(clf, X[:10], y[:10]))  # 10 % 4: a pending gradient
    copy = pickle.loads(pickle.dumps(clf))
    assert "_engine" not in copy.__dict__
    fb = _logged(clf, X[10:], y[10:], seed=3)
    clf.update(X[10:], *fb)
    copy.update(X[10:], *fb)
    np.testing.assert_allclose(copy.tree_.weights, clf.tree_.weights, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(copy.tree_.value, clf.tree_.value, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cls", [DGTBanditClassifier, DGTBanditRegressor])
def test_fit_sees_labels_only_through_the_loss(cls):
    """With a loss that ignores y, fit gives the same model whatever the labels."""
    X, y = _tree_data(60, 0, regression=cls is DGTBanditRegressor)
    seen = []

    def loss(y_true, played):
        seen.append((np.array(y_true), np.array(played)))
        return np.full(np.shape(played), 0.5)

    y_other = y[::-1].copy()  # same classes, different labels per row
    a = cls(max_depth=2, simulated_loss=loss, random_state=0).fit(X, y)
    n_calls = len(seen)
    b = cls(max_depth=2, simulated_loss=loss, random_state=0).fit(X, y_other)
    np.testing.assert_array_equal(a.tree_.weights, b.tree_.weights)
    np.testing.assert_array_equal(a.tree_.value, b.tree_.value)
    # The loss received every label once per pass, with what the learner played.
    y_seen = np.concatenate([s[0].ravel() for s in seen[:n_calls]])
    assert y_seen.size == 60 * (2 if getattr(a, "feedback", "") == "two_point" else 1)
    assert sorted(np.unique(y_seen)) == sorted(np.unique(y))


def test_simulator_never_passes_labels():
    X, y = _tree_data(50, 0)
    labels = np.array(["a", "b", "c"])[y]
    calls = []

    class Spy(DGTBanditClassifier):
        def sample_actions(self, X, random_state=None):
            calls.append(("sample", X))
            out = super().sample_actions(X, random_state)
            self._last = out[0]
            return out

        def update(self, X, actions, losses, propensities):
            calls.append(("update", X, actions, losses, propensities))
            np.testing.assert_array_equal(actions, self._last)  # only what it played
            return super().update(X, actions, losses, propensities)

    given = []

    def loss(y_true, actions):
        given.append((y_true.copy(), actions.copy()))
        return (y_true != actions).astype(float)

    spy = Spy(max_depth=2, classes=["a", "b", "c"], random_state=0)
    rec = simulate(spy, X, labels, loss=loss, eval_every=10, X_eval=X, y_eval=labels,
                   random_state=0)
    assert rec.rounds == [10, 20, 30, 40, 50] and len(rec.scores) == 5
    for call in calls:
        for arg in call[1:]:
            assert arg is not labels
            assert not (isinstance(arg, np.ndarray) and arg.dtype.kind in "US"
                        and call[0] == "sample")
    updates = [c for c in calls if c[0] == "update"]
    assert len(updates) == len(given) == 50
    for (_, _, actions, losses, _), (y_true, played) in zip(updates, given):
        np.testing.assert_array_equal(actions, played)
        np.testing.assert_array_equal(losses, (y_true != played).astype(float))


# ----------------------------------------------------------------- contract
def test_online_contract_errors():
    X, y = _tree_data(20, 0)
    with pytest.raises(ValueError, match="classes"):
        DGTBanditClassifier().sample_actions(X)
    clf = DGTBanditClassifier(max_depth=2, classes=[0, 1, 2], random_state=0)
    a, p = clf.sample_actions(X)
    with pytest.raises(ValueError, match="classes_"):
        clf.update(X, a + 10, np.zeros(20), p)
    with pytest.raises(ValueError, match=r"\[0.0, 1.0\]"):
        clf.update(X, a, np.full(20, 2.0), p)
    with pytest.raises(ValueError, match="propensities"):
        clf.update(X, a, np.zeros(20), np.zeros(20))
    with pytest.raises(ValueError, match="not in classes"):
        DGTBanditClassifier(classes=[0, 1]).fit(X, y)
    reg = DGTBanditRegressor(max_depth=2, feedback="two_point", random_state=0)
    played, u = reg.sample_predictions(X)
    assert played.shape == (20, 2)
    with pytest.raises(ValueError, match="shape"):
        reg.update(X, played, np.zeros(20), u)
    with pytest.raises(ValueError, match="-1 or \\+1"):
        reg.update(X, played, np.zeros((20, 2)), np.zeros(20))


def test_fit_then_online_update_and_predict_proba_is_policy():
    X, y = _tree_data(200, 0)
    clf = DGTBanditClassifier(max_depth=3, n_passes=2, exploration=0.2, random_state=0).fit(X, y)
    assert clf.n_iter_ == 2 and len(clf.loss_curve_) == 2 and clf.n_rounds_ == 400
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.max(axis=1), 0.8 + 0.2 / 3)
    clf.update(X[:5], *_logged(clf, X[:5], y[:5]))
    assert clf.n_rounds_ == 405


# ------------------------------------------------------ learning (CI floors)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dgt_bandit_beats_epsilon_greedy_linear_after_one_pass():
    """Means over 3 seeded streams of 3000 rounds (a fresh stream and test set each).

    Measured (AMD EPYC, 2026-11-24, the defaults of that day with lr 1e-2):
    DGT-Bandit 0.916 / 0.892 / 0.904, the epsilon-greedy linear baseline
    0.754 / 0.761 / 0.739, so the mean lead is 0.15 with a per-seed sd of
    0.02; the floors leave more than 5 standard errors.
    """
    acc_dgt, acc_base = [], []
    for seed in range(3):
        X, y = _tree_data(3000, 2 * seed)
        X_te, y_te = _tree_data(2000, 2 * seed + 1)
        dgt = DGTBanditClassifier(classes=[0, 1, 2], learning_rate=1e-2, random_state=seed)
        base = EpsilonGreedyLinearBandit([0, 1, 2], random_state=seed)
        kw = dict(X_eval=X_te, y_eval=y_te, eval_every=3000, batch_size=4, random_state=seed,
                  init_contexts=X)
        acc_dgt.append(simulate(dgt, X, y, **kw).final_score)
        acc_base.append(simulate(base, X, y, **kw).final_score)
    assert np.mean(acc_dgt) > np.mean(acc_base) + 0.08, (acc_dgt, acc_base)
    assert np.mean(acc_dgt) > 0.85


class _EpsilonGreedyLogistic:
    """Issue 12's baseline: epsilon 0.3, one logistic reward model per action on
    the standardized context, one SGD step (0.05) of the played action's log-loss
    per round (as ``benchmarks/bench_bandit.py``'s EpsilonGreedyLogisticBandit)."""

    def __init__(self, classes, seed):
        self.classes_, self._rng = np.asarray(classes), np.random.RandomState(seed)

    def _z(self, X):
        if not hasattr(self, "coef_"):
            self._mean, self._scale = X.mean(0), np.where(X.std(0) > 0, X.std(0), 1.0)
            self.coef_ = np.zeros((self.classes_.size, X.shape[1] + 1))
        return np.c_[(X - self._mean) / self._scale, np.ones(X.shape[0])]

    def predict(self, X):
        return self.classes_[np.argmax(self._z(X) @ self.coef_.T, axis=1)]

    def sample_actions(self, X, random_state=None):
        Z, K = self._z(X), self.classes_.size
        greedy = np.argmax(Z @ self.coef_.T, axis=1)
        explore = self._rng.random_sample(Z.shape[0]) < 0.3
        idx = np.where(explore, self._rng.randint(K, size=Z.shape[0]), greedy)
        return self.classes_[idx], np.where(idx == greedy, 0.7 + 0.3 / K, 0.3 / K)

    def update(self, X, actions, losses, propensities):
        for z, k, loss in zip(self._z(X), np.searchsorted(self.classes_, actions), losses):
            self.coef_[k] -= 0.05 * (1.0 / (1.0 + np.exp(-z @ self.coef_[k])) - (1.0 - loss)) * z
        return self


def test_default_beats_epsilon_greedy_logistic_on_satimage():
    """The default learner against issue 12's epsilon-greedy logistic baseline:
    one pass over a 2000-round stream of the bundled satimage (6 classes),
    held-out accuracy of the greedy policy, mean of 3 seeded splits.

    Measured (AMD EPYC, 2026-11-24): default 0.851 / 0.852 / 0.841, baseline
    0.818 / 0.785 / 0.806; per-seed lead 0.045 with sd 0.016 (standard error
    of the mean 0.009). The margin 0.015 is 3 standard errors below the lead.
    """
    from sklearn.model_selection import train_test_split

    from sklearn_difftrees.datasets import load_dataset

    X, y = load_dataset("satimage", return_X_y=True)
    classes = np.unique(y)
    acc_dgt, acc_base = [], []
    for seed in range(3):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed,
                                                  stratify=y)
        X_s, y_s = X_tr[:2000], y_tr[:2000]
        kw = dict(X_eval=X_te, y_eval=y_te, eval_every=2000, batch_size=4, random_state=seed,
                  init_contexts=X_s)
        acc_dgt.append(simulate(DGTBanditClassifier(classes=classes, random_state=seed),
                                X_s, y_s, **kw).final_score)
        acc_base.append(simulate(_EpsilonGreedyLogistic(classes, seed), X_s, y_s,
                                 **kw).final_score)
    assert np.mean(acc_dgt) > np.mean(acc_base) + 0.015, (acc_dgt, acc_base)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_two_point_regressor_ends_near_supervised_rmse():
    """Five passes of two-point feedback vs supervised DGT and online linear regression.

    Means over 3 seeded streams (fresh data each); ratios measured below.
    """
    ratio_sup, ratio_lin = [], []
    for seed in range(3):
        X, y = _tree_data(2000, 2 * seed, regression=True)
        X_te, y_te = _tree_data(2000, 2 * seed + 1, regression=True)

        def rmse(model):
            return np.sqrt(np.mean((model.predict(X_te) - y_te) ** 2))

        sup = rmse(DGTRegressor(max_depth=3, random_state=seed).fit(X, y))
        bandit = rmse(DGTBanditRegressor(max_depth=3, feedback="two_point", n_passes=5,
                                         random_state=seed).fit(X, y))
        lin = simulate(
            OnlineLinearRegressionBandit(feedback="two_point", random_state=seed), X, y,
            n_rounds=10000, eval_every=10000, X_eval=X_te, y_eval=y_te, random_state=seed,
            init_contexts=X,
        ).final_score
        ratio_sup.append(bandit / sup)
        ratio_lin.append(bandit / lin)
    print(f"\nbandit / supervised RMSE {np.round(ratio_sup, 3).tolist()}, "
          f"bandit / linear {np.round(ratio_lin, 3).tolist()}")
    # Supervised DGT trains up to 200 epochs with early stopping and a leaf refit.
    # Measured (AMD EPYC, 2026-11-23): bandit / supervised RMSE 1.22 / 1.40 / 1.84
    # (mean 1.49, sd 0.32; the former single-seed test saw only seed 0's 1.22
    # and asserted < 1.3), bandit / linear 0.50 / 0.54 / 0.69 (mean 0.58, sd
    # 0.10). The bounds are 3 standard errors of the 3-seed mean above those.
    assert np.mean(ratio_sup) < 2.1, ratio_sup
    assert np.mean(ratio_lin) < 0.8, ratio_lin


def test_plot_learning_curves():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = _tree_data(40, 0, regression=True)
    rec = simulate(DGTBanditRegressor(max_depth=2, random_state=0), X, y, eval_every=20,
                   X_eval=X, y_eval=y, random_state=0)
    assert rec.metric == "rmse" and rec.rounds == [20, 40] and rec.queries == [20, 40]
    ax = plot_learning_curves([rec])
    assert ax.get_lines()[0].get_label() == "DGTBanditRegressor"


@pytest.mark.parametrize("make", [
    lambda: DGTBanditClassifier(classes=[0, 1, 2], max_depth=2, random_state=0),
    lambda: EpsilonGreedyLinearBandit([0, 1, 2], random_state=0),
])
def test_simulate_refuses_labels_outside_the_classes(make):
    # Labels 1..3 for classes 0..2 (an off-by-one) ran silently: the 0-1 loss
    # of every action on label 3 was 1, so the curve was flat and wrong.
    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    y = rng.randint(3, size=30)
    with pytest.raises(ValueError, match=r"labels \[3\] not in the learner's classes"):
        simulate(make(), X, y + 1, eval_every=10)
    # A custom loss may compare labels of another kind: not checked.
    simulate(make(), X, y + 1, loss=lambda t, a: (t - 1 != a).astype(float), eval_every=10)
    simulate(make(), X, y, eval_every=10)


def test_simulate_refuses_held_out_rows_without_their_targets():
    # X_eval without y_eval recorded an accuracy of 0.0 (pred == None) and
    # an RMSE of NaN at every evaluation.
    X = np.random.RandomState(0).randn(40, 3)
    y = (X[:, 0] > 0).astype(int)
    learner = DGTBanditClassifier(classes=[0, 1], max_depth=2, random_state=0)
    with pytest.raises(ValueError, match="X_eval and y_eval go together"):
        simulate(learner, X, y, X_eval=X, eval_every=20)
    with pytest.raises(ValueError, match="X_eval has 40 rows but y_eval has 39"):
        simulate(learner, X, y, X_eval=X, y_eval=y[:-1], eval_every=20)


def test_linear_policy_is_quiet_on_extreme_contexts():
    """Contexts far outside the training range (1e300) give finite
    probabilities without numpy's overflow warning (the logistic reward
    models' sigmoid is scipy's expit)."""
    rng = np.random.RandomState(0)
    X = rng.randn(200, 3)
    y = (X[:, 0] > 0).astype(int)
    model = DGTBanditClassifier(random_state=0).fit(X, y)
    assert model.leaf_estimator == "linear"
    X_far = X[:4].copy()
    X_far[:, 1] = 1e300
    X_far[1, 2] = -1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = model.predict_proba(X_far)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_bandit_regressor_fit_warns_when_targets_dwarf_delta():
    """The tree starts at 0 and learns at delta's scale (target units): on
    targets of mean 83 (197_cpu_act) one pass learned nothing, silently."""
    import warnings

    from sklearn_difftrees import DGTBanditRegressor

    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 3))
    y = 0.5 + 0.2 * np.tanh(X[:, 0])  # in [0, 1], as the paper's
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        DGTBanditRegressor(random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="times delta=0.5 .*Scale the targets"):
        DGTBanditRegressor(random_state=0).fit(X, 80 + 20 * y)
    with warnings.catch_warnings():  # delta at their scale: no warning
        warnings.simplefilter("error", UserWarning)
        DGTBanditRegressor(delta=20.0, random_state=0).fit(X, 80 + 20 * y)
    # Targets that vary far less than delta drown in its perturbations (a
    # user's trial: targets times 1e-12, R^2 of -1e22 without a word).
    with pytest.warns(UserWarning, match="vary by .*of delta=0.5 .*Scale the targets"):
        DGTBanditRegressor(random_state=0).fit(X, 1e-12 * y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        DGTBanditRegressor(delta=1e-12, random_state=0).fit(X, 1e-12 * y)
        # A constant target varies by nothing: no such warning (it divided by 0).
        DGTBanditRegressor(random_state=0).fit(X, np.full(len(y), 0.3))
