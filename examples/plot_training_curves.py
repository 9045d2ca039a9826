"""
Training curves: ``loss_curve_`` and ``validation_scores_``
===========================================================

Every gradient-trained estimator keeps its training record with
scikit-learn's MLP names: ``loss_curve_`` (mean training loss per epoch),
``validation_scores_`` (score on the held-out ``validation_fraction`` per
epoch, when ``early_stopping=True``), ``best_validation_score_`` and
``n_iter_``. Early stopping keeps the weights of the best validation epoch
and stops ``n_iter_no_change`` epochs later.

These are curves over *epochs*, not scikit-learn's learning curves over
training-set sizes.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

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

# %%
# Default parameters except a shorter patience, so that every model stops
# early within a few seconds.
models = {
    "DGT": DGTClassifier(n_iter_no_change=8, random_state=0),
    "NonGreedy": NonGreedyObliqueTreeClassifier(random_state=0),
    "ConvexPolytope": ConvexPolytopeTreeClassifier(n_iter_no_change=5, random_state=0),
    "LatentTree": LatentTreeClassifier(n_iter_no_change=8, random_state=0),
    "TEL": TreeEnsembleLayerClassifier(n_iter_no_change=5, random_state=0),
}
for name, model in models.items():
    model.fit(X_tr, y_tr)
    print(f"{name:15s} epochs {model.n_iter_:3d}   best validation score "
          f"{model.best_validation_score_:.3f}   test accuracy {model.score(X_te, y_te):.3f}")

# %%
# The loss is each family's own training objective (cross-entropy for most,
# the surrogate bound for the non-greedy tree, the conditional entropy of the
# refinement for polytope trees, whose validation score is minus that
# entropy), so compare shapes, not levels. The marker is the epoch whose
# weights were kept.
fig, axes = plt.subplots(2, len(models), figsize=(14, 5.2), sharex="col")
for col, (name, model) in enumerate(models.items()):
    loss = np.asarray(model.loss_curve_)
    val = np.asarray(model.validation_scores_)
    epochs = np.arange(1, len(loss) + 1)
    axes[0, col].plot(epochs, loss, color="tab:blue")
    axes[0, col].set_title(name)
    axes[1, col].plot(np.arange(1, len(val) + 1), val, color="tab:green")
    best = int(np.argmax(val))
    axes[1, col].plot(best + 1, val[best], "o", color="k")
    axes[1, col].set_xlabel("epoch")
    axes[1, col].set_ylabel(
        "minus validation entropy" if name == "ConvexPolytope" else "validation accuracy")
axes[0, 0].set_ylabel("training loss")
fig.tight_layout()
plt.show()
