"""``batch_size="auto"``: the batch and epoch length from the data size."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTClassifier,
    DGTForestClassifier,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
)
from sklearn_difftrees._core import batching
from sklearn_difftrees._core.batching import RowStream, resolve_batching

pytest.importorskip("torch")


@pytest.mark.parametrize(
    "n, base, expected",
    [
        (10, 128, (128, 10)),  # one step over all rows
        (1000, 128, (128, 1000)),
        (128 * 128, 128, (128, 128 * 128)),  # 128 steps: still the base batch
        (128 * 128 + 1, 128, (129, 128 * 128 + 1)),
        (50_000, 128, (391, 50_000)),
        (50_000, 256, (391, 50_000)),
        (20_000, 256, (256, 20_000)),
        (128 * 1024, 128, (1024, 128 * 1024)),
        (1_000_000, 128, (1024, 128 * 1024)),  # epochs of 131,072 rows
    ],
)
def test_resolve_auto(n, base, expected):
    assert resolve_batching("auto", n, base) == expected


def test_resolve_int_is_classic():
    assert resolve_batching(64, 1_000_000, 128) == (64, 1_000_000)
    assert resolve_batching(500, 100, 128) == (500, 100)


def test_auto_bounds_the_work_of_an_epoch():
    for n in np.unique(np.logspace(0, 8, 200).astype(int)):
        batch, rows = resolve_batching("auto", n, 128)
        assert 1 <= batch <= batching.MAX_BATCH and rows <= batching.MAX_EPOCH_ROWS
        assert np.ceil(rows / batch) <= batching.MAX_STEPS


def _stream(n, rows, seed=0):
    rng = np.random.RandomState(seed)
    calls = []

    def permute():
        calls.append(1)
        return rng.permutation(n)

    return RowStream(n, rows, permute, np.concatenate), calls


def test_row_stream_full_epochs_draw_one_permutation_each():
    stream, calls = _stream(7, 100)
    ref = np.random.RandomState(0)
    for _ in range(3):
        np.testing.assert_array_equal(stream.next(), ref.permutation(7))
    assert len(calls) == 3


@pytest.mark.parametrize("n, rows", [(10, 3), (10, 4), (100, 99), (5, 5 - 1)])
def test_row_stream_visits_every_row_before_any_twice(n, rows):
    stream, _ = _stream(n, rows)
    seen = np.concatenate([stream.next() for _ in range(3 * n)])
    assert seen.size == 3 * n * rows
    for k in range(seen.size // n):  # each block of n consecutive draws is a permutation
        np.testing.assert_array_equal(np.sort(seen[k * n : (k + 1) * n]), np.arange(n))


def _data(n=300):
    return make_classification(n, 6, n_informative=4, n_classes=3, random_state=0)


@pytest.mark.parametrize(
    "est, base",
    [
        (DGTClassifier(max_iter=2), 128),
        (LatentTreeClassifier(max_iter=2), 128),
        (TreeEnsembleLayerClassifier(max_iter=2, n_trees=3), 128),
        (NonGreedyObliqueTreeClassifier(max_iter=2, max_depth=3), 128),
        (ConvexPolytopeTreeClassifier(max_iter=2, max_depth=2, growth_max_iter=2), 256),
        (DGTForestClassifier(n_estimators=2, max_iter=2), 128),
    ],
    ids=lambda e: type(e).__name__ if not isinstance(e, int) else str(e),
)
def test_auto_is_the_base_batch_on_small_data(est, base):
    """On small data "auto" is exactly the family's fixed base batch."""
    X, y = _data()
    a = est.set_params(random_state=0, batch_size="auto").fit(X, y).predict_proba(X)
    b = est.set_params(batch_size=base).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)


@pytest.fixture
def small_limits(monkeypatch):
    """Shrink the limits so that 1,000 rows count as a large table."""
    monkeypatch.setattr(batching, "MAX_STEPS", 4)
    monkeypatch.setattr(batching, "MAX_BATCH", 16)
    monkeypatch.setattr(batching, "MAX_EPOCH_ROWS", 64)


@pytest.mark.usefixtures("no_cross_check")  # the fit's own steps, not its clones'
def test_auto_epochs_on_large_data_shared_trainer(small_limits, monkeypatch):
    from sklearn_difftrees._core import _trainer

    steps = []
    step = _trainer.PlainRMSprop.step  # the CPU loop's default optimizer

    def counting(self):
        steps.append(1)
        return step(self)

    monkeypatch.setattr(_trainer.PlainRMSprop, "step", counting)
    X, y = _data(1000)
    est = DGTClassifier(max_iter=3, early_stopping=False, n_iter_no_change=10, random_state=0)
    est.fit(X, y)
    assert est.n_iter_ == 3
    assert len(steps) == 3 * 4  # 3 epochs of 64 rows in batches of 16


def test_auto_epochs_on_large_data_non_greedy(small_limits, monkeypatch, no_cross_check):
    from sklearn_difftrees.non_greedy import _lai

    epochs, real = [], _lai._sgd_epoch

    def spy(X, y_cls, y_reg, w, perm, assign, batch_size, *args):
        epochs.append((perm.shape[0], batch_size))  # one compiled call per epoch
        return real(X, y_cls, y_reg, w, perm, assign, batch_size, *args)

    monkeypatch.setattr(_lai, "_sgd_epoch", spy)
    X, y = _data(1000)
    est = NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=3, early_stopping=False,
                                         n_iter_no_change=10, random_state=0)
    est.fit(X, y)
    assert est.n_iter_ == 3
    assert epochs == [(64, 16)] * 3  # 4 batches of 16 rows per epoch


def test_auto_large_data_batched_and_polytope_fit(small_limits):
    X, y = _data(1000)
    for est in (DGTForestClassifier(n_estimators=2, max_iter=2, random_state=0),
                ConvexPolytopeTreeClassifier(max_depth=2, max_iter=2, growth_max_iter=2,
                                             random_state=0)):
        assert est.fit(X, y).score(X, y) > 0.4


def test_auto_non_greedy_start_on_one_epoch_of_rows(small_limits, monkeypatch, no_cross_check):
    """The greedy start (depth cross-validation, CO2 tree) sees one epoch's
    rows under "auto" and every row with an int batch_size."""
    from sklearn_difftrees.non_greedy import _classes

    seen = {}
    for name in ("cv_depth", "co2_tree"):
        original = getattr(_classes, name)

        def spy(Z, *args, _name=name, _original=original, **kwargs):
            seen[_name] = Z.shape[0]
            return _original(Z, *args, **kwargs)

        monkeypatch.setattr(_classes, name, spy)
    X, y = _data(1000)
    est = NonGreedyObliqueTreeClassifier(max_iter=1, co2_iter=1, random_state=0)
    est.fit(X, y)
    assert seen == {"cv_depth": 64, "co2_tree": 64}
    assert est.score(X, y) > 0.5
    est.set_params(batch_size=128).fit(X, y)
    assert seen == {"cv_depth": 1000, "co2_tree": 900}  # 10% validation split


@pytest.mark.usefixtures("no_cross_check")  # the fit's own rows, not its clones'
def test_auto_polytope_level_epoch_is_shared_by_its_nodes(small_limits, monkeypatch):
    """Under "auto" the stumps of one level visit at most one epoch's rows per
    epoch together (every node its share), whatever the number of nodes."""
    from sklearn_difftrees.polytope import _training

    calls = []
    original = _training.train_stumps

    def spy(nodes, **kwargs):
        calls.append((sum(Z.shape[0] for Z, *_ in nodes), kwargs["epoch_rows"]))
        return original(nodes, **kwargs)

    monkeypatch.setattr(_training, "train_stumps", spy)
    X, y = _data(1000)
    ConvexPolytopeTreeClassifier(max_depth=3, max_iter=1, growth_max_iter=2,
                                 random_state=0).fit(X, y)
    assert len(calls) >= 3
    n_train = calls[0][0]  # the root holds every training row
    assert list(calls[0][1]) == [64]
    for level_rows, rows in calls:
        # 64-row epochs: each node ceil(its rows * 64 / n_train)
        assert sum(rows) <= 64 * level_rows / n_train + len(rows)


@pytest.mark.usefixtures("no_cross_check")  # the fit's own rows, not its clones'
def test_auto_polytope_caps_stump_and_refinement_epochs(monkeypatch):
    """Under "auto" a stump's epoch visits at most STUMP_MAX_EPOCH_ROWS of its
    node's rows and a refinement epoch at most REFINE_MAX_EPOCH_ROWS rows
    (limits shrunk here); an int batch_size visits every row every epoch."""
    from sklearn_difftrees.polytope import _growth, _training

    monkeypatch.setattr(_growth, "STUMP_MAX_EPOCH_ROWS", 100)
    monkeypatch.setattr(_training, "REFINE_MAX_EPOCH_ROWS", 150)
    stumps, refined = [], []
    train_stumps, train = _training.train_stumps, _training.train

    def stumps_spy(nodes, **kwargs):
        stumps.append((max(Z.shape[0] for Z, *_ in nodes), max(kwargs["epoch_rows"])))
        return train_stumps(nodes, **kwargs)

    def train_spy(module, loss_fn, data, **kwargs):
        refined.append((data[0].shape[0], kwargs["epoch_rows"]))
        return train(module, loss_fn, data, **kwargs)

    monkeypatch.setattr(_training, "train_stumps", stumps_spy)
    monkeypatch.setattr(_training, "train", train_spy)
    X, y = _data(1000)
    est = ConvexPolytopeTreeClassifier(max_depth=2, max_iter=2, growth_max_iter=2,
                                       random_state=0).fit(X, y)
    assert stumps[0] == (800, 100) and refined == [(800, 150)]
    assert all(rows == min(n, 100) for n, rows in stumps)
    assert est.score(X, y) > 0.4
    stumps.clear(), refined.clear()
    est.set_params(batch_size=64).fit(X, y)
    assert stumps[0] == (800, 800) and refined == [(800, 800)]
    assert all(rows == n for n, rows in stumps)


@pytest.mark.usefixtures("no_cross_check")  # the fit's own rows, not its clones'
def test_polytope_validation_choice_freezes_candidates_on_the_greedy_rows(monkeypatch):
    """The validation choice freezes its candidates (facet selection,
    thresholds, leaves) on at most the core's GREEDY_MAX_ROWS training rows,
    the rows its CARTs grow on; the returned tree is frozen on every fit row."""
    from sklearn_difftrees.polytope import _floor
    from sklearn_difftrees.polytope._freeze import _FreezeMixin

    monkeypatch.setattr(_floor, "GREEDY_MAX_ROWS", 300)
    rows, drop = [], _FreezeMixin._drop_facets

    def spy(self, params, Z, *args):
        rows.append(Z.shape[0])
        return drop(self, params, Z, *args)

    monkeypatch.setattr(_FreezeMixin, "_drop_facets", spy)
    X, y = _data(1000)
    est = ConvexPolytopeTreeClassifier(max_depth=2, max_iter=2, growth_max_iter=2,
                                       random_state=0).fit(X, y)
    assert est.validation_scores_ is not None
    assert rows[:2] == [300, 300] and rows[-1] == 1000


def test_validation_subsample_caps_only_auto_above_the_limit():
    from sklearn_difftrees._core.batching import MAX_VALIDATION_ROWS, validation_subsample

    for n_val in (0, 10, MAX_VALIDATION_ROWS):
        assert validation_subsample(n_val, "auto", 0) == slice(None)
    assert validation_subsample(10 * MAX_VALIDATION_ROWS, 256, 0) == slice(None)
    rows = validation_subsample(MAX_VALIDATION_ROWS + 5, "auto", 3)
    assert rows.size == MAX_VALIDATION_ROWS
    assert np.all(np.diff(rows) > 0) and rows[-1] < MAX_VALIDATION_ROWS + 5
    np.testing.assert_array_equal(rows, validation_subsample(MAX_VALIDATION_ROWS + 5, "auto", 3))
    assert not np.array_equal(rows, validation_subsample(MAX_VALIDATION_ROWS + 5, "auto", 4))


def _polytope_spies(monkeypatch):
    """Rows seen by the refinement's validation, the greedy floor's CARTs and
    the facet selection of a ConvexPolytopeTree fit."""
    from sklearn_difftrees.polytope import _floor, _training
    from sklearn_difftrees.polytope._freeze import _FreezeMixin

    seen = {"val": [], "floor": [], "facets": []}
    refine, reference, select = (_training.refine, _floor.greedy_reference,
                                 _FreezeMixin._select_facets)

    def refine_spy(*args, **kwargs):
        seen["val"].append(args[5][0].shape[0])
        return refine(*args, **kwargs)

    def reference_spy(Z, *args, grow=slice(None), **kwargs):
        seen["floor"].append(Z[grow].shape[0])
        return reference(Z, *args, grow=grow, **kwargs)

    def select_spy(self, C, *args):
        seen["facets"].append(C.shape[0])
        return select(self, C, *args)

    monkeypatch.setattr(_training, "refine", refine_spy)
    monkeypatch.setattr(_floor, "greedy_reference", reference_spy)
    monkeypatch.setattr(_FreezeMixin, "_select_facets", select_spy)
    return seen


@pytest.mark.usefixtures("no_cross_check")  # the fit's own rows, not its clones'
def test_auto_polytope_caps_validation_floor_and_facet_rows(small_limits, monkeypatch):
    """On a large table (here: limits shrunk) "auto" evaluates every epoch on
    MAX_VALIDATION_ROWS validation rows (the same subsample, seeded) and
    selects each node's facets on at most the family's SELECT_MAX_ROWS rows;
    an int batch_size, or a table under the limits, uses all. The floor's
    CARTs grow on at most the core's GREEDY_MAX_ROWS rows, whatever
    batch_size."""
    from sklearn_difftrees.polytope import _floor, _freeze

    monkeypatch.setattr(batching, "MAX_VALIDATION_ROWS", 50)
    monkeypatch.setattr(_freeze, "SELECT_MAX_ROWS", 64)
    monkeypatch.setattr(_floor, "GREEDY_MAX_ROWS", 300)
    seen = _polytope_spies(monkeypatch)
    X, y = _data(1000)
    est = ConvexPolytopeTreeClassifier(max_depth=2, max_iter=2, growth_max_iter=2,
                                       random_state=0)
    first = est.fit(X, y).tree_.threshold.copy()
    assert seen["val"] == [50] and seen["floor"] == [300]
    assert seen["facets"] and max(seen["facets"]) == 64
    np.testing.assert_array_equal(est.fit(X, y).tree_.threshold, first)  # seeded
    seen = _polytope_spies(monkeypatch)
    est.set_params(batch_size=64).fit(X, y)
    assert seen["val"] == [200] and seen["floor"] == [300]  # 20% validation
    assert max(seen["facets"]) > 64
    monkeypatch.setattr(batching, "MAX_VALIDATION_ROWS", 200)
    monkeypatch.setattr(batching, "MAX_EPOCH_ROWS", 10_000)
    monkeypatch.setattr(_floor, "GREEDY_MAX_ROWS", 10_000)
    seen = _polytope_spies(monkeypatch)
    est.set_params(batch_size="auto").fit(X, y)
    assert seen["val"] == [200] and seen["floor"] == [1000]
