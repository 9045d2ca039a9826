"""The greedy (CART) start of DGT and the start kept as an early-stopping candidate.

* ``init="cart"`` embeds a CART grown on the training rows into DGT's
  complete tree: before any training step the module must route every row
  to a leaf of the CART leaf it came from, with ``n_layers=1`` and through
  the product of ``n_layers > 1`` layers.
* ``keep_start=True`` of the shared trainers makes the starting weights
  epoch 0's candidate: when every epoch only makes the validation loss worse,
  the starting weights come back unchanged (and without the option they do
  not).
"""

import math
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_difftrees import DGTClassifier, DGTRegressor
from sklearn_difftrees._core._batched_trainer import train_batched
from sklearn_difftrees._core._trainer import train
from sklearn_difftrees._core.embedding import cart_to_complete
from sklearn_difftrees.dgt._module import hard_leaf

from _starts import FORCED_STATISTIC, _data, force_statistic, weighted_case

# The starts' machinery, without the out-of-fold cross-check that runs after
# it (whose clones would add their own runs): tests/test_cross_check.py.
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.usefixtures("no_cross_check")]


@pytest.mark.parametrize("n_layers", [1, 3])
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_cart_start_routes_like_the_cart_it_came_from(task, n_layers):
    X, y = _data(task)
    cls = DGTClassifier if task == "classification" else DGTRegressor
    est = cls(max_depth=4, n_layers=n_layers, hidden_width=16, init="cart", random_state=0)
    plan = est._fit_setup(X, y, None)
    Z, Y, w = (t.numpy() for t in plan.train_data)
    assert plan.train_kwargs["keep_start"]
    seed = plan.train_kwargs["seed"]
    if task == "classification":
        cart = DecisionTreeClassifier(criterion="entropy", max_depth=4, random_state=seed)
    else:
        cart = DecisionTreeRegressor(max_depth=4, random_state=seed)
    cart.fit(Z, Y, sample_weight=w)
    _, _, leaf_node = cart_to_complete(cart, 4, Z.shape[1], 1.0)
    with torch.no_grad():
        leaf = hard_leaf(plan.module.node_scores(plan.train_data[0]), 4).numpy()
        out = plan.module(plan.train_data[0]).numpy()
    np.testing.assert_array_equal(leaf_node[leaf], cart.apply(Z))
    # The leaves start at the closed-form leaves of their rows: the CART's own
    # predictions (majority class / mean target, the mean with one pseudo-row
    # of the training mean).
    if task == "classification":
        assert np.mean(out.argmax(1) == cart.predict(Z)) > 0.99
    else:
        node = cart.apply(Z)
        W = np.bincount(node, weights=w)[node]
        prior = (w @ Y.reshape(-1).astype(np.float64)) / w.sum()
        np.testing.assert_allclose(out[:, 0], (cart.predict(Z) * W + prior) / (W + 1.0),
                                   rtol=1e-5, atol=1e-5)


def test_random_init_keeps_the_random_start():
    X, y = _data("classification")
    plan = DGTClassifier(max_depth=3, init="random", random_state=0)._fit_setup(X, y, None)
    assert not plan.train_kwargs["keep_start"]
    weight = plan.module.layers[0].weight
    assert (weight != 0).all()  # not axis-aligned rows


def _flipped_plan(est, X, y):
    """A plan whose training labels contradict the validation labels: every
    step away from the (CART) start makes the validation loss worse."""
    plan = est._fit_setup(X, y, None)
    Xt, Yt, wt = plan.train_data
    plan.train_data = (Xt, (Yt + 1) % 3, wt)
    return plan


def test_estimator_returns_its_start_when_training_only_hurts_validation():
    X, y = make_classification(600, 5, n_informative=4, n_redundant=0, n_classes=3,
                               class_sep=2.0, random_state=0)
    est = DGTClassifier(max_depth=3, max_iter=6, n_iter_no_change=3, init="cart",
                        random_state=0)
    plan = _flipped_plan(est, X, y)
    start = {k: v.clone() for k, v in plan.module.state_dict().items()}
    history = train(plan.module, est._loss_fn, plan.train_data, **plan.train_kwargs)
    assert history.best_epoch == 0 and history.stopped_early
    for k, v in plan.module.state_dict().items():
        torch.testing.assert_close(v, start[k], rtol=0, atol=0)
    assert len(history.validation_scores) == 3  # it did train, then went back
    est._fit_complete(plan, history)
    assert est.best_validation_score_ > 0.8  # the CART's, not the flipped labels'

    # Without the option, the trained (worse) weights are kept.
    plan = _flipped_plan(est, X, y)
    kwargs = {**plan.train_kwargs, "keep_start": False}
    history = train(plan.module, est._loss_fn, plan.train_data, **kwargs)
    assert history.best_epoch > 0
    moved = plan.module.state_dict()["layers.0.weight"] - start["layers.0.weight"]
    assert moved.abs().max() > 1e-4


@pytest.mark.parametrize("keep_start", [True, False])
def test_training_run_stepped_by_hand_is_train(keep_start):
    """Stepping a ``TrainingRun`` to the end gives ``train``'s weights and
    record; ``best_row_losses`` are the restored module's per-row validation
    losses (epoch 0's with ``keep_start`` when no epoch beats the start)."""
    from sklearn_difftrees._core._trainer import TrainingRun, row_losses

    X, y = make_classification(600, 5, n_informative=4, n_redundant=0, n_classes=3,
                               class_sep=2.0, random_state=0)
    est = DGTClassifier(max_depth=3, max_iter=6, n_iter_no_change=3, init="cart",
                        random_state=0)
    results = []
    for how in ("train", "steps"):
        plan = _flipped_plan(est, X, y)
        kw = {**plan.train_kwargs, "keep_start": keep_start}
        if how == "train":
            history = train(plan.module, est._loss_fn, plan.train_data, **kw)
        else:
            run = TrainingRun(plan.module, est._loss_fn, plan.train_data, **kw,
                              track_rows=True)
            epochs = 0
            while run.step():
                epochs += 1
                assert run.epoch == epochs
            assert not run.step() and run.epoch == epochs + 1  # a stopped run stays stopped
            history = run.finish()
            Xv, Yv, _ = kw["validation_data"]
            np.testing.assert_array_equal(run.best_row_losses,
                                          row_losses(plan.module, est._loss_fn, Xv, Yv))
        results.append((history, plan.module.state_dict()))
    (h1, s1), (h2, s2) = results
    assert (h1.n_iter, h1.best_epoch, h1.loss_curve) == (h2.n_iter, h2.best_epoch, h2.loss_curve)
    for k in s1:
        torch.testing.assert_close(s1[k], s2[k], rtol=0, atol=0)


@pytest.mark.parametrize("keep_start", [True, False])
def test_batched_trainer_keeps_every_members_start(keep_start):
    """Two members (linear softmax models) whose training labels contradict
    their validation labels, the start fitted to the validation labels."""
    rng = np.random.RandomState(0)
    members, starts = [], []
    for _ in range(2):
        X = torch.as_tensor(rng.normal(size=(120, 3)), dtype=torch.float32)
        y = X[:, 0].gt(0).long()
        w = torch.ones(120)
        members.append({"train_data": (X[:100], 1 - y[:100], w[:100]),
                        "validation_data": (X[100:], y[100:], w[100:]),
                        "seed": 0, "verbose": 0})
        starts.append(torch.tensor([[-2.0, 0, 0], [2.0, 0, 0]]))
    params = {"weight": torch.stack(starts)}

    def forward(p, x, mask):
        return torch.bmm(x, p["weight"].transpose(1, 2))

    def loss_fn(out, yy):
        return torch.nn.functional.cross_entropy(out, yy, reduction="none")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        histories = train_batched(
            forward, params, loss_fn, members, max_iter=4, batch_size=32, learning_rate=0.1,
            optimizer="sgd", momentum=0.0, lr_schedule="constant", grad_clip=None,
            early_stopping=True, n_iter_no_change=10, tol=0.0, keep_start=keep_start)
    if keep_start:
        torch.testing.assert_close(params["weight"], torch.stack(starts), rtol=0, atol=0)
        assert all(h.best_epoch == 0 for h in histories)
    else:
        assert (params["weight"] - torch.stack(starts)).abs().max() > 1e-3


# -- init="auto": both starts trained, the greedy one kept on clear validation evidence --

def _tree_arrays(est):
    t = est.tree_
    return t.weights, t.bias, t.value


@pytest.mark.parametrize("weights", ["none", "sample_weight", "class_weight"])
@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("expected", ["cart", "random"])
def test_auto_init_returns_exactly_the_chosen_starts_tree(monkeypatch, task, expected,
                                                          weights):
    """Whichever start the statistic picks, the fitted tree is bit for bit the
    one ``init=<that start>`` fits with the same seed (same validation rows,
    batch order and schedule; the greedy start grown on the same float64
    weights, zeros and class weights included)."""
    X, y = _data(task)
    cls = DGTClassifier if task == "classification" else DGTRegressor
    case = weighted_case(weights, task, dict(max_depth=3, max_iter=8, random_state=0), y)
    if case is None:
        pytest.skip("class_weight is a classifier parameter")
    params, y, fit_params = case
    runs = force_statistic(monkeypatch, FORCED_STATISTIC[expected])
    auto = cls(init="auto", **params).fit(X, y, **fit_params)
    assert auto.init_ == expected
    assert len(runs) == 2 and runs[0].epoch == runs[1].epoch == 8  # both ran to the end
    single = cls(init=expected, **params).fit(X, y, **fit_params)
    assert single.init_ == expected
    for a, b in zip(_tree_arrays(auto), _tree_arrays(single)):
        np.testing.assert_array_equal(a, b)
    assert auto.n_iter_ == single.n_iter_


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_auto_init_abandons_the_greedy_run_at_a_check(monkeypatch, task):
    """Where the greedy start is not ahead at a check (forced here: threshold
    +inf), its run stops there, after exactly ceil(max_iter / AUTO_CHECKS)
    epochs of its own, and the fitted tree is
    bit for bit ``init="random"``'s; with the drop disabled it runs on."""
    from sklearn_difftrees._core._trainer import TrainingRun
    from sklearn_difftrees._core import starts as _start

    real_init, runs = TrainingRun.__init__, []

    def init(self, *args, **kwargs):
        runs.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(TrainingRun, "__init__", init)
    X, y = _data(task)
    cls = DGTClassifier if task == "classification" else DGTRegressor
    params = dict(max_depth=3, max_iter=24, n_iter_no_change=50, random_state=0)
    monkeypatch.setattr(_start, "AUTO_DROP_Z", np.inf)
    auto = cls(**params).fit(X, y)
    assert auto.init_ == "random"
    assert [r.epoch for r in runs] == [24, math.ceil(24 / _start.AUTO_CHECKS)]
    single = cls(init="random", **params).fit(X, y)
    for a, b in zip(_tree_arrays(auto), _tree_arrays(single)):
        np.testing.assert_array_equal(a, b)
    runs.clear()
    monkeypatch.setattr(_start, "AUTO_DROP_Z", -np.inf)
    cls(**params).fit(X, y)
    assert [r.epoch for r in runs] == [24, 24]


def test_auto_init_without_validation_rows_trains_the_random_start():
    X, y = _data("classification")
    params = dict(max_depth=3, max_iter=5, early_stopping=False, random_state=0)
    auto = DGTClassifier(**params).fit(X, y)
    assert auto.init_ == "random"
    np.testing.assert_array_equal(auto.tree_.weights,
                                  DGTClassifier(init="random", **params).fit(X, y).tree_.weights)


def test_auto_init_keeps_the_greedy_start_on_axis_aligned_rules():
    """Thresholds on a heavy-tailed feature (the pattern of
    benchmarks/bench_heavy_tails.py): the greedy start's tree is clearly
    better on the validation rows and is kept, over three seeds."""
    rng = np.random.RandomState(0)
    n = 3000
    X = np.column_stack([np.exp(rng.normal(0, 1.5, n)), rng.normal(size=(n, 4))])
    y = ((X[:, 0] > 4.0) & (X[:, 1] < 0.5)).astype(int) + (X[:, 0] > 20.0)
    chosen = [DGTClassifier(max_depth=3, max_iter=30, random_state=s).fit(X, y).init_
              for s in range(3)]
    assert chosen.count("cart") >= 2, chosen


def test_warm_start_continuation_keeps_init_():
    X, y = _data("classification")
    est = DGTClassifier(max_depth=3, max_iter=4, warm_start=True, random_state=0).fit(X, y)
    first = est.init_
    est.fit(X, y)
    assert est.init_ == first


def test_forest_members_have_one_start():
    from sklearn.utils._param_validation import InvalidParameterError

    from sklearn_difftrees import DGTForestClassifier

    X, y = _data("classification")
    with pytest.raises(InvalidParameterError, match="init"):
        DGTForestClassifier(init="auto", n_estimators=2).fit(X, y)
    forest = DGTForestClassifier(n_estimators=2, max_depth=2, max_iter=3,
                                 random_state=0).fit(X, y)
    assert [m.init_ for m in forest.estimators_] == ["cart", "cart"]


def test_paired_advantage_is_the_sign_test_for_zero_one_losses():
    from sklearn_difftrees._core.selection import paired_advantage

    rng = np.random.RandomState(0)
    a, b = rng.rand(200) < 0.3, rng.rand(200) < 0.2  # errors of default / alternative
    wins, losses = np.sum(a & ~b), np.sum(~a & b)
    gain, z = paired_advantage(a.astype(float), b.astype(float))
    assert gain == pytest.approx((wins - losses) / 200)
    assert z == pytest.approx((wins - losses) / np.sqrt(wins + losses))
    assert paired_advantage(a, a) == (0.0, 0.0)
    # Integer weights count rows: weighting a row by 2 == repeating it.
    w = rng.randint(1, 3, 200)
    rep = np.repeat(np.arange(200), w)
    gw, zw = paired_advantage(a.astype(float), b.astype(float), w)
    gr, _ = paired_advantage(a[rep].astype(float), b[rep].astype(float))
    assert gw == pytest.approx(gr)
    assert np.sign(zw) == np.sign(gw)


def test_cart_start_grows_on_a_subsample_of_large_data(monkeypatch, rows_seen):
    """Under batch_size="auto" the greedy start's CART grows on at most
    MAX_EPOCH_ROWS rows (a depth-8 CART on 900,000 rows took most of a minute);
    an int batch_size grows it on every training row."""
    from sklearn_difftrees._core import batching, greedy

    monkeypatch.setattr(batching, "MAX_EPOCH_ROWS", 150)
    X, y = _data("classification")
    seen = rows_seen(greedy, "fit_cart")
    DGTClassifier(max_depth=3, max_iter=2, init="cart", random_state=0).fit(X, y)
    assert seen[0] == 150  # the start (the greedy floor's CARTs follow)
    seen.clear()
    DGTClassifier(max_depth=3, max_iter=2, init="cart", batch_size=64,
                  random_state=0).fit(X, y)
    assert seen[0] == 360  # 400 rows less the 10% validation part


def test_auto_init_shows_only_the_kept_runs_warnings(monkeypatch):
    """Each run may warn that it reached max_iter; the user sees the warnings of
    the run whose tree is returned, as a fit with that start alone."""
    X, y = _data("classification")
    for start, z in FORCED_STATISTIC.items():
        force_statistic(monkeypatch, z)
        counts = []
        for init in ("auto", start):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                DGTClassifier(max_depth=3, max_iter=3, init=init, random_state=0).fit(X, y)
            counts.append(sum(issubclass(c.category, ConvergenceWarning) for c in caught))
        assert counts[0] == counts[1] == 1


@pytest.mark.parametrize("fail", [[1], [2], [1, 2]])
def test_auto_init_survives_one_diverged_run(monkeypatch, fail):
    """A run that diverges (FloatingPointError, here at its second epoch)
    leaves the other start's tree; when both diverge, the error is raised.
    Run 1 is the random start, run 2 the greedy one (built in that order)."""
    from sklearn_difftrees._core._trainer import TrainingRun

    real_init, real_step, runs = TrainingRun.__init__, TrainingRun.step, []

    def init(self, *args, **kwargs):
        runs.append(self)
        real_init(self, *args, **kwargs)

    def step(self):
        if runs.index(self) + 1 in fail and self.epoch == 1:
            raise FloatingPointError("diverged")
        return real_step(self)

    monkeypatch.setattr(TrainingRun, "__init__", init)
    monkeypatch.setattr(TrainingRun, "step", step)
    X, y = _data("classification")
    est = DGTClassifier(max_depth=3, max_iter=4, random_state=0)
    if len(fail) == 2:
        with pytest.raises(FloatingPointError):
            est.fit(X, y)
        return
    est.fit(X, y)
    assert len(runs) == 2
    assert est.init_ == ("cart" if fail == [1] else "random")
    assert est.predict(X).shape == (len(y),)


def test_abandoned_greedy_run_is_kept_when_the_random_run_diverges_later(monkeypatch):
    """The greedy run abandoned at the first check (forced), the random run
    diverging after it: the greedy start's best tree is returned, without the
    abandoned run's ConvergenceWarning (it did not reach max_iter)."""
    from sklearn_difftrees._core import starts as _start
    from sklearn_difftrees._core._trainer import TrainingRun

    runs = force_statistic(monkeypatch, -1.0)  # never ahead: abandoned at epoch 2
    real_step = TrainingRun.step

    def step(self):
        if self is runs[0] and self.epoch == 4:
            raise FloatingPointError("diverged")
        return real_step(self)

    monkeypatch.setattr(TrainingRun, "step", step)
    X, y = _data("classification")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DGTClassifier(max_depth=3, max_iter=2 * _start.AUTO_CHECKS,  # checks every 2
                            random_state=0).fit(X, y)
    assert [r.epoch for r in runs] == [4, 2]
    assert est.init_ == "cart"
    assert not [c for c in caught if issubclass(c.category, ConvergenceWarning)]


def test_auto_init_trains_one_start_when_two_exceed_the_memory_limit(monkeypatch):
    """A configuration whose model fits the memory limit once but not twice
    trains the random start alone, with a warning that says why."""
    from sklearn_difftrees._core._memory import ENV_VAR

    X, y = _data("classification")  # the depth-3 module's estimate: 1168 bytes
    monkeypatch.setenv(ENV_VAR, "1500")
    with pytest.warns(UserWarning, match="two models side by side"):
        est = DGTClassifier(max_depth=3, max_iter=3, random_state=0).fit(X, y)
    assert est.init_ == "random"
    single = DGTClassifier(max_depth=3, max_iter=3, init="random", random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.tree_.weights, single.tree_.weights)


def test_auto_init_skips_the_greedy_run_on_too_few_validation_rows(monkeypatch):
    """With n validation rows the statistic is at most sqrt(n): at n <= 4 the
    greedy start could never be kept, so it is not trained."""
    from sklearn_difftrees.dgt import _start

    called = []
    monkeypatch.setattr(_start, "cart_start", lambda *a, **k: called.append(1))
    X, y = make_classification(30, 4, n_informative=3, n_redundant=0, random_state=0)
    est = DGTClassifier(max_depth=2, max_iter=3, random_state=0).fit(X, y)
    assert est.init_ == "random" and not called
