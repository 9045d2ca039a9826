"""Single models train on one thread and give the user's settings back.

``_core/threads.py``: torch's intra-op pool made single-tree fits slower
(docs/design.md, "Threads"), so every fit of a single model and every
bandit ``update`` runs with ``torch.set_num_threads(1)`` and restores the
previous value, also when the fit raises and when fits run in several Python
threads at once. A forest's batched members keep the user's setting.
Their fits, and NonGreedy's (numpy only), run with the BLAS pools on one thread.
"""

import threading

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTBanditClassifier,
    DGTClassifier,
    DGTForestClassifier,
    DGTRegressor,
    LatentTreeClassifier,
    LatentTreeClusterer,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
)
from sklearn_difftrees._core import threads
from sklearn_difftrees.non_greedy import _classes as non_greedy_classes

FAST = {"max_iter": 2, "random_state": 0}
SINGLE = [
    DGTClassifier(max_depth=3, **FAST),
    DGTRegressor(max_depth=3, **FAST),
    LatentTreeClassifier(max_depth=3, **FAST),
    TreeEnsembleLayerClassifier(max_depth=2, n_trees=3, **FAST),
    ConvexPolytopeTreeClassifier(max_depth=2, **FAST),
    LatentTreeClusterer(max_depth=2, **FAST),
    DGTBanditClassifier(max_depth=3, random_state=0),
]


def _blas_threads():
    return sorted({pool["num_threads"] for pool in threadpool_info()
                   if pool["user_api"] == "blas"})


@pytest.fixture
def two_threads():
    """torch on 2 threads for the test (the suite runs on 1), restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def two_blas_threads():
    """The BLAS pools on 2 threads for the test, restored after (skipped where
    they cannot be set to 2)."""
    with threadpool_limits(2, user_api="blas"):
        if _blas_threads() != [2]:
            pytest.skip(f"the BLAS pools cannot be set to 2 threads here ({_blas_threads()})")
        yield


def _spy_on(monkeypatch, owner, name, measure):
    """What ``measure()`` returns at every call of ``owner.name`` in the test."""
    seen, real = [], getattr(owner, name)

    def spy(*args, **kwargs):
        seen.append(measure())
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen


@pytest.fixture
def backward_threads(monkeypatch):
    """The torch thread count at every backward pass of the test."""
    return _spy_on(monkeypatch, torch.autograd, "backward", torch.get_num_threads)


@pytest.fixture
def backward_blas_threads(monkeypatch):
    """The BLAS pools' sizes at every backward pass of the test."""
    return _spy_on(monkeypatch, torch.autograd, "backward", lambda: tuple(_blas_threads()))


def _data(estimator, n=120):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, (X[:, 0] + 0.1 * rng.normal(size=n) if "Regressor" in type(estimator).__name__
               else y)


@pytest.mark.parametrize("estimator", SINGLE, ids=lambda e: type(e).__name__)
def test_single_models_train_on_one_thread_and_restore(estimator, two_threads,
                                                       backward_threads):
    X, y = _data(estimator)
    estimator.fit(X, y)
    assert backward_threads and set(backward_threads) == {1}
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("estimator", SINGLE, ids=lambda e: type(e).__name__)
def test_single_models_train_on_one_blas_thread_and_restore(estimator, two_blas_threads,
                                                            backward_blas_threads):
    """A fit's numpy work (LatentTree's logistic start, standardization) runs
    on one BLAS thread too: with other work on the machine's cores, a pool of
    one thread per core made LatentTree's default fit 1.3-1.5 times slower."""
    X, y = _data(estimator)
    estimator.fit(X, y)
    assert backward_blas_threads and set(backward_blas_threads) == {(1,)}
    assert _blas_threads() == [2]
    assert threads.one_blas_thread.active == 0


def test_bandit_update_on_one_thread(two_threads, backward_threads):
    X, y = _data(None)
    bandit = DGTBanditClassifier(max_depth=3, classes=[0, 1], random_state=0)
    actions = np.zeros(len(y), dtype=int)
    bandit.update(X, actions, (actions != y).astype(float), np.full(len(y), 0.5))
    assert backward_threads and set(backward_threads) == {1}
    assert torch.get_num_threads() == 2


def test_forest_keeps_the_users_threads(two_threads, backward_threads):
    X, y = _data(None)
    DGTForestClassifier(n_estimators=3, max_depth=3, max_iter=2, random_state=0).fit(X, y)
    assert backward_threads and set(backward_threads) == {2}


def test_restored_when_the_fit_raises(two_threads):
    X, y = _data(None)
    with pytest.raises(ValueError):
        DGTClassifier(**FAST).fit(X, np.full(len(y), np.nan))
    assert torch.get_num_threads() == 2


def test_concurrent_fits_restore_the_setting(two_threads):
    """Fits in several Python threads: the setting is restored when the last
    one ends (not to a value another fit had set)."""
    X, y = _data(None)
    errors = []

    def work(seed):
        try:
            DGTClassifier(max_depth=3, max_iter=3, random_state=seed).fit(X, y)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert torch.get_num_threads() == 2
    assert threads.one_torch_thread.active == 0


def test_non_greedy_fits_on_one_blas_thread(monkeypatch, two_blas_threads):
    """NonGreedy's many small per-node BLAS calls ran slower on two threads
    (docs/design.md, "Threads"): its fit limits the BLAS pools to one and
    restores them after, also when it raises."""
    seen = _spy_on(monkeypatch, non_greedy_classes, "sgd", _blas_threads)
    X, y = _data(None)
    NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=2, random_state=0).fit(X, y)
    assert seen and all(s == [1] for s in seen)
    assert _blas_threads() == [2]
    with pytest.raises(ValueError):
        NonGreedyObliqueTreeClassifier(max_iter=2).fit(X, np.full(len(y), np.nan))
    assert _blas_threads() == [2]
    assert threads.one_blas_thread.active == 0
