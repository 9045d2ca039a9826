"""Helpers of the tests of the greedy starts and ``init="auto"``
(test_greedy_start.py, test_two_starts.py)."""

import numpy as np
from sklearn.datasets import make_classification, make_regression


def _data(task):
    if task == "classification":
        X, y = make_classification(400, 6, n_informative=4, n_classes=3, random_state=0)
    else:
        X, y = make_regression(400, 6, n_informative=4, noise=5.0, random_state=0)
    return X * np.array([1, 10, 100, 0.1, 1, 1000]) + 3.0, y  # unequal scales


def weighted_case(weights, task, params, y):
    """``(params, y, fit_params)`` of a fit with ``weights``: "none",
    "sample_weight" (zeros included) or "class_weight" ("balanced" on
    unbalanced classes; ``None`` for regression, which has none)."""
    if weights == "sample_weight":
        w = np.random.RandomState(1).choice([0.0, 1.0, 2.0, 3.5], size=len(y))
        return params, y, dict(sample_weight=w)
    if weights == "class_weight":
        if task == "regression":
            return None
        y = np.where(np.arange(len(y)) % 5 == 0, 2, y)  # unbalanced classes
        return dict(params, class_weight="balanced"), y, {}
    return params, y, {}


#: The statistic that makes ``init="auto"`` keep each start while both runs
#: train to the end: above AUTO_INIT_Z (the greedy start), or between
#: AUTO_DROP_Z and AUTO_INIT_Z (the random start; never abandoned).
FORCED_STATISTIC = {"cart": np.inf, "random": 1.0}


def force_statistic(monkeypatch, z):
    """Make every paired comparison of ``init="auto"`` return ``z``; returns
    the list of the ``TrainingRun`` objects the fits build."""
    from sklearn_difftrees._core import selection
    from sklearn_difftrees._core._trainer import TrainingRun

    monkeypatch.setattr(selection, "paired_advantage", lambda *a, **k: (0.0, z))
    real_init, runs = TrainingRun.__init__, []

    def init(self, *args, **kwargs):
        runs.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(TrainingRun, "__init__", init)
    return runs
