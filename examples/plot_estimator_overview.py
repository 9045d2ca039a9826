"""
Every family against CART on a bundled table
============================================

One seeded 70/30 split of the bundled ``vehicle`` table (846 silhouettes,
18 features, 4 classes). Every family of the package is fitted beside
scikit-learn's CART (depth tuned by 3-fold cross-validation), RandomForest
and HistGradientBoosting, and we compare test accuracy, fit time and size.

To keep the gallery fast, the gradient-trained models get fewer epochs
(``max_iter``) than their defaults and the forest fewer members; the
three-split benchmarks with the defaults are in :doc:`/benchmarks` and the
summary table in :doc:`/choosing`.
"""

# %%
# Data: a bundled copy of a UCI table, no download.
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.tree import DecisionTreeClassifier

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTClassifier,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
)
from sklearn_difftrees.datasets import load_dataset

X, y = load_dataset("vehicle", return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
print(X_tr.shape, "training rows,", len(np.unique(y)), "classes")

# %%
# The models. ``random_state`` fixes every source of randomness; nothing else
# but the training length is changed from the defaults. With so few epochs
# early stopping may not trigger, and the estimators say so with a
# ``ConvergenceWarning``, silenced here (the forests have their own example:
# :ref:`sphx_glr_auto_examples_plot_forest_vs_random_forest.py`).
warnings.filterwarnings("ignore", category=ConvergenceWarning)
models = {
    "CART (depth tuned)": GridSearchCV(
        DecisionTreeClassifier(random_state=0), {"max_depth": range(2, 13)}, cv=3
    ),
    "DGT": DGTClassifier(max_iter=40, random_state=0),
    "NonGreedy": NonGreedyObliqueTreeClassifier(random_state=0),
    "ConvexPolytope": ConvexPolytopeTreeClassifier(max_iter=40, random_state=0),
    "LatentTree": LatentTreeClassifier(max_iter=40, random_state=0),
    "TEL": TreeEnsembleLayerClassifier(max_iter=30, random_state=0),
    "RandomForest": RandomForestClassifier(random_state=0),
    "HistGradientBoosting": HistGradientBoostingClassifier(random_state=0),
}

scores, times = {}, {}
for name, model in models.items():
    t0 = time.perf_counter()
    model.fit(X_tr, y_tr)
    times[name] = time.perf_counter() - t0
    scores[name] = model.score(X_te, y_te)
    print(f"{name:22s} accuracy {scores[name]:.3f}   fit {times[name]:5.1f} s")

# %%
# Accuracy and fit time side by side. The single trees (DGT, NonGreedy,
# ConvexPolytope) are one readable tree each; LatentTree adds a linear head on
# top of its tree, TEL and the scikit-learn forests are ensembles. The dashed
# line is CART's accuracy.
names = list(models)
ypos = np.arange(len(names))
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
ax1.barh(ypos, [scores[n] for n in names], color="tab:blue")
ax1.set_yticks(ypos, names)
ax1.invert_yaxis()
ax1.set_xlim(0.5, 0.85)
ax1.axvline(scores["CART (depth tuned)"], color="k", lw=1, ls="--")
ax1.set_xlabel("test accuracy (vehicle, one split)")
ax2.barh(ypos, [times[n] for n in names], color="tab:orange")
ax2.set_xscale("log")
ax2.set_xlabel("fit time [s] (this build machine)")
fig.tight_layout()
plt.show()
