"""The default estimators' accuracy survives another machine's floating point.

Another CPU rounds dot products differently (other SIMD widths, other
reduction orders in BLAS and torch). CI has one CPU, so two stand-ins for
"another machine" are used on every seeded split of two bundled sets:

* the training features multiplied by ``1 + 1e-6 * N(0, 1)`` (a relative
  perturbation far below any measurement error, of the size of a float32
  rounding), and
* torch running with 2 threads instead of 1 (other reduction orders in its
  parallel kernels), restored afterwards. Since the single models train on
  one torch thread whatever the setting (``_core/threads.py``), this one
  moves only the DGT forest (``tests/test_threads.py`` checks that the
  single models' fits are the same).

The test statistic is the change of the mean test accuracy over the seeds.
A training run that sits on a knife edge moves like a new random draw of its
optimization path; the margin is 3 standard errors of that mean, from the
per-seed changes measured on 6 seeds (and at least 0.02). Its assertion
fails when the defaults' outcome moves by more than that, e.g. when a small
perturbation sends one seed into a collapsed optimum.
"""

import numpy as np
import pytest
import torch
from _floors import fit_quiet, split

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTClassifier,
    DGTForestClassifier,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
)

# (estimator, dataset) -> (seeds, sd of the per-seed accuracy change under the
# 1e-6 perturbation). Measured on 2026-11-23 at main 93846c9, on the 16-core
# device machine (seeds 0-5) and on a 2-core AMD EPYC (seeds 0-4):
# DGTClassifier on vehicle changed by [+0.008, +0.024, -0.012, +0.091,
# -0.071, +0.075] and [-0.008, -0.012, +0.020, +0.043, +0.012] (sd 0.045
# pooled, 0.059 on the device; DGT's default training is chaotic there); on
# pima by [-0.039, 0, -0.004, -0.026, 0, 0] and [+0.013, 0, 0, +0.022,
# +0.017] (sd 0.019); LatentTree and TEL did not move on pima. 2 torch
# threads changed no accuracy at all on these sizes. The two machines also
# gave different base accuracies on some seeds (vehicle seed 1: 0.693 vs
# 0.717), the knife edge this test guards. Five seeds keep vehicle's margin
# (0.079) below a fifth of DGT's lead over the majority class.
# With the later defaults n_layers=1, n_iter_no_change=50 (AMD EPYC, seeds
# 0-4): vehicle moved by [-0.047, +0.008, +0.004, +0.012, +0.008] (sd 0.025),
# pima by [0, 0, +0.017, 0, 0], 2 threads by nothing; the former (larger)
# spreads are kept as the margins until measured on the device machine.
# The other families (2026-11-26, code 3ef5ec0, AMD EPYC, seeds 0-4; 2 torch
# threads changed nothing): ConvexPolytopeTree on pima did not move (on
# vehicle one seed by -0.004); NonGreedy moved by [-0.004, -0.039, +0.004,
# +0.017, +0.017] on pima (sd 0.023) and [-0.008, -0.059, +0.004, -0.008,
# -0.043] on vehicle (sd 0.027), as much as scikit-learn's own CART does on
# the same splits (depth-tuned: sd 0.030 on pima, 0.018 on vehicle): those
# sets' integer-valued features have ties that the perturbation breaks,
# which creates split points a greedy tree (NonGreedy's start) can take;
# the DGT forest on pima by [0, +0.026, -0.013, 0, -0.004] (sd 0.015).
CASES = {
    (DGTClassifier, "vehicle"): (range(5), 0.059),
    (DGTClassifier, "pima"): (range(5), 0.02),
    (LatentTreeClassifier, "pima"): (range(3), 0.0),
    (TreeEnsembleLayerClassifier, "pima"): (range(3), 0.0),
    (ConvexPolytopeTreeClassifier, "pima"): (range(3), 0.0),
    (NonGreedyObliqueTreeClassifier, "pima"): (range(5), 0.023),
    (NonGreedyObliqueTreeClassifier, "vehicle"): (range(5), 0.027),
    (DGTForestClassifier, "pima"): (range(3), 0.015),
}


def _accuracies(cls, X, y, seeds, perturb=False, threads=1):
    accs = []
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for seed in seeds:
            X_tr, X_te, y_tr, y_te = split(X, y, seed)
            if perturb:
                noise = np.random.RandomState(100 + seed).standard_normal(X_tr.shape)
                X_tr = X_tr * (1.0 + 1e-6 * noise)
            model = fit_quiet(cls(random_state=seed), X_tr, y_tr)
            accs.append(float(np.mean(model.predict(X_te) == y_te)))
    finally:
        torch.set_num_threads(before)
    return np.array(accs)


_BASE = {}  # (cls, name) -> base accuracies, shared by the two tests


@pytest.mark.parametrize("change", ["noise_1e-6", "torch_2_threads"])
@pytest.mark.parametrize(
    "cls, name", list(CASES), ids=[f"{c.__name__}-{n}" for c, n in CASES]
)
def test_default_accuracy_is_stable_under_rounding_changes(cls, name, change, bundled):
    X, y = bundled(name)
    seeds, sd = CASES[(cls, name)]
    margin = max(0.02, 3 * sd / np.sqrt(len(seeds)))
    if (cls, name) not in _BASE:
        _BASE[(cls, name)] = _accuracies(cls, X, y, seeds)
    base = _BASE[(cls, name)]
    if change == "noise_1e-6":
        other = _accuracies(cls, X, y, seeds, perturb=True)
    else:
        other = _accuracies(cls, X, y, seeds, threads=2)
        assert torch.get_num_threads() == 1  # restored (conftest's setting)
    print(f"\n[{cls.__name__} {name}] base {np.round(base, 4).tolist()}  {change} "
          f"{np.round(other, 4).tolist()}  margin {margin:.3f}")
    assert abs(other.mean() - base.mean()) < margin
