"""
Regression: every family against CART
=====================================

The regressors of every family on the bundled ``abalone`` table (predict the
age of abalone, in rings, from 10 physical measurements), beside CART with
its depth tuned by cross-validation. We use 2000 of the 4177 rows and
shortened training to keep the gallery quick; section 1 and the family
sections of :doc:`/benchmarks` have the full runs with default parameters.
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import root_mean_squared_error
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.tree import DecisionTreeRegressor

from sklearn_difftrees import (
    ConvexPolytopeTreeRegressor,
    DGTRegressor,
    LatentTreeRegressor,
    NonGreedyObliqueTreeRegressor,
    TreeEnsembleLayerRegressor,
)
from sklearn_difftrees.datasets import load_dataset

warnings.filterwarnings("ignore", category=ConvergenceWarning)  # short training below

X, y = load_dataset("abalone", return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=1400, test_size=600, random_state=0)

models = {
    "CART (depth tuned)": GridSearchCV(
        DecisionTreeRegressor(random_state=0), {"max_depth": range(2, 13)}, cv=3
    ),
    "DGT": DGTRegressor(max_iter=30, random_state=0),
    "NonGreedy": NonGreedyObliqueTreeRegressor(random_state=0),
    "ConvexPolytope": ConvexPolytopeTreeRegressor(max_iter=30, random_state=0),
    "LatentTree": LatentTreeRegressor(max_iter=30, random_state=0),
    "TEL": TreeEnsembleLayerRegressor(max_iter=30, random_state=0),
}
predictions = {}
for name, model in models.items():
    t0 = time.perf_counter()
    model.fit(X_tr, y_tr)
    seconds = time.perf_counter() - t0
    predictions[name] = model.predict(X_te)
    rmse = root_mean_squared_error(y_te, predictions[name])
    print(f"{name:20s} RMSE {rmse:.3f} rings   fit {seconds:5.1f} s")

# %%
# Predicted against true age. Every hard tree (CART, DGT, NonGreedy,
# ConvexPolytope) predicts one constant per leaf, hence the rows of dots;
# LatentTree (a linear head on the features and the traversal) and TEL (a sum
# of soft trees) predict continuous values.
fig, axes = plt.subplots(1, len(models), figsize=(15, 3.2), sharex=True, sharey=True)
lims = [y_te.min(), y_te.max()]
for ax, (name, pred) in zip(axes, predictions.items()):
    ax.scatter(y_te, pred, s=4, alpha=0.5)
    ax.plot(lims, lims, color="k", lw=1)
    ax.set_title(f"{name}\nRMSE {root_mean_squared_error(y_te, pred):.2f}", fontsize=9)
    ax.set_xlabel("true rings")
axes[0].set_ylabel("predicted rings")
fig.tight_layout()
plt.show()
