"""Accuracy floors of the DEFAULT DGT estimators on bundled real data.

Each floor compares means over the seeded 70/30 splits of
``_floors.SEEDS`` (stratified for classification) with a CART whose depth is
tuned by 3-fold cross-validation on the training part; the margins come from
the measured per-seed spread (see ``_floors``). Run with ``-s`` to see the
numbers.
"""

import numpy as np
import pytest
from _floors import SEEDS, scores_over_seeds

from sklearn_difftrees import DGTClassifier, DGTRegressor


def floor_below(mean, sd, tol):
    """Lowest mean difference a 3-seed run should still reach.

    ``mean`` / ``sd``: measured mean and standard deviation over seeds of the
    per-split difference (estimator - CART). Another CPU moves a run like a
    new random draw of its training path, so its 3-seed mean varies by about
    ``sd / sqrt(3)``; the floor is 3 such standard errors below the measured
    mean, and never above the product claim ``-tol``.
    """
    return min(-tol, mean - 3 * sd / np.sqrt(len(SEEDS)))


# Accuracy of default DGTClassifier minus tuned CART, per split (seeds 0-5),
# measured on an AMD EPYC on 2026-11-23 with the defaults n_layers=1,
# n_iter_no_change=50 (branch defaults-dgt, after main ebe5c32):
#   breast_cancer_wisconsin: mean +0.042, sd 0.032 (DGT 0.947-0.959)
#   vehicle:                 mean +0.053, sd 0.029 (DGT 0.697-0.768)
# (former defaults n_layers=3, patience 20, main 93846c9: +0.049 / 0.036 and
# +0.012 / 0.045, DGT 0.622-0.720 on vehicle). Re-measured with the defaults
# max_depth="auto" and greedy_floor=True (Intel Xeon, 2026-11-25, seeds 0-2):
# breast_cancer_wisconsin +0.041 / 0.034, vehicle +0.049 / 0.016, within
# the recorded spread, so the margins stand.
CLASSIFICATION = {"breast_cancer_wisconsin": (0.042, 0.032), "vehicle": (0.053, 0.029)}


@pytest.mark.parametrize("name", sorted(CLASSIFICATION))
def test_classification_accuracy_floor(name, bundled):
    X, y = bundled(name)
    s = scores_over_seeds(lambda seed: DGTClassifier(random_state=seed), X, y)
    diff = s["est"] - s["cart"]
    print(f"\n[{name}] DGT acc {np.round(s['est'], 4).tolist()}  CART acc "
          f"{np.round(s['cart'], 4).tolist()}  majority {np.round(s['base'], 4).tolist()}")
    assert diff.mean() >= floor_below(*CLASSIFICATION[name], tol=0.02), diff
    # Clearly better than predicting the majority class: at least half of the
    # remaining error removed, on average.
    assert s["est"].mean() >= np.mean(s["base"] + 0.5 * (1 - s["base"]))


def test_regression_rmse_floor(bundled):
    """abalone, all 4177 rows: DGT's RMSE within 5% of tuned CART's.

    Measured (AMD EPYC, 2026-11-23) over seeds 0-2 with the defaults
    n_layers=1, n_iter_no_change=50: RMSE ratio DGT / CART 0.939-0.944,
    mean 0.942, sd 0.003 (former defaults, main 93846c9 and c8331db, seeds
    0-2 and 0-1: 0.935-0.980, mean 0.952, sd 0.017); 3 standard errors of
    the larger sd above the mean is 0.98 < 1.05. (197_cpu_act, the
    former single-split test, costs ~20 s per fit at full size, and on a
    4000-row subsample the defaults do not reach CART: ratio 0.96 / 1.26 /
    1.04 on seeds 0-2.)
    """
    X, y = bundled("abalone")
    s = scores_over_seeds(lambda seed: DGTRegressor(random_state=seed), X, y, regression=True)
    print(f"\n[abalone] DGT rmse {np.round(s['est'], 3).tolist()}  CART rmse "
          f"{np.round(s['cart'], 3).tolist()}  mean predictor {np.round(s['base'], 3).tolist()}")
    assert s["est"].mean() <= 1.05 * s["cart"].mean()
    # Clearly better than the training mean (measured ratio ~0.68).
    assert s["est"].mean() <= 0.8 * s["base"].mean()
