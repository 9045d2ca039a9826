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
from sklearn.model_selection import train_test_split

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTClassifier,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
    plot_training_history,
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
# :func:`~sklearn_difftrees.plot_training_history` draws one fit's record:
# the training loss (left axis), the validation score (right axis) and the
# epoch whose weights were kept. The loss is each family's own training
# objective (cross-entropy for most, the surrogate bound for the non-greedy
# tree, the conditional entropy of the refinement for polytope trees, whose
# validation score is minus that entropy), so compare shapes, not levels.
fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
for ax, (name, model) in zip(axes.ravel(), models.items()):
    plot_training_history(model, ax=ax)
    ax.set_title(name)
axes[-1, -1].axis("off")
fig.tight_layout()
plt.show()
