"""
Polytope regions against CART's rectangles
==========================================

A convex polytope tree (Armandpour et al., 2021) splits each node by a union
of oblique half-spaces smoothed into a convex region, so a tree with few
leaves can draw curved boundaries. With two features we can look at them
directly: :func:`~sklearn_difftrees.plot_polytope_regions` shades the
prediction and draws every split's polytope boundary, where samples reach
that node.

Data: two of the seven measurements of the bundled ``ecoli`` table (protein
localization sites, 5 classes): ``mcg`` and ``gvh``, two signal-sequence
recognition scores.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.tree import DecisionTreeClassifier

from sklearn_difftrees import ConvexPolytopeTreeClassifier, plot_polytope_regions
from sklearn_difftrees.datasets import load_dataset

data = load_dataset("ecoli")
cols = [data.feature_names.index("mcg"), data.feature_names.index("gvh")]
X = data.data[:, cols]
y = data.target
train_rows, test_rows = train_test_split(
    np.arange(len(y)), test_size=0.3, stratify=y, random_state=0
)
X_tr, X_te, y_tr, y_te = X[train_rows], X[test_rows], y[train_rows], y[test_rows]

# A depth-2 polytope tree (its default depth is chosen on a validation split)
# keeps the picture simple: three splits.
cpt = ConvexPolytopeTreeClassifier(max_depth=2, max_iter=40, random_state=0).fit(X_tr, y_tr)
cart = GridSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": range(1, 9)}, cv=3)
cart.fit(X_tr, y_tr)
print(f"ConvexPolytopeTree: accuracy {cpt.score(X_te, y_te):.3f}, "
      f"{cpt.get_n_leaves()} leaves, facets per split {cpt.n_facets_[cpt.n_facets_ > 0].tolist()}")
print(f"CART (depth {cart.best_params_['max_depth']}): accuracy {cart.score(X_te, y_te):.3f}, "
      f"{cart.best_estimator_.get_n_leaves()} leaves")

# %%
# Left: the polytope tree's predicted class and its split boundaries. Right:
# the depth-tuned CART, whose regions are axis-aligned rectangles.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5), sharex=True, sharey=True)
plot_polytope_regions(cpt, X_te, y_te, ax=ax1)
ax1.set_title(f"ConvexPolytopeTreeClassifier ({cpt.get_n_leaves()} leaves)")
xx, yy = np.meshgrid(np.linspace(*ax1.get_xlim(), 200), np.linspace(*ax1.get_ylim(), 200))
z = np.searchsorted(cart.classes_, cart.predict(np.column_stack([xx.ravel(), yy.ravel()])))
ax2.contourf(xx, yy, z.reshape(xx.shape), levels=20, cmap="RdBu_r", alpha=0.6)
ax2.scatter(X_te[:, 0], X_te[:, 1], c=y_te, s=6, cmap="RdBu_r")
ax2.set_title(f"CART, depth tuned ({cart.best_estimator_.get_n_leaves()} leaves)")
for ax in (ax1, ax2):
    ax.set_xlabel("mcg")
ax1.set_ylabel("gvh")
fig.tight_layout()
plt.show()

# %%
# A model fitted on all seven features can be looked at on any 2-D slice:
# the two drawn features vary, the others are held at ``values`` (by default
# their training medians). The boundaries are those of the full model where
# the slice crosses them.
cpt7 = ConvexPolytopeTreeClassifier(max_iter=40, random_state=0)
cpt7.fit(data.data[train_rows], y[train_rows])
print(f"ConvexPolytopeTree on all 7 features: accuracy "
      f"{cpt7.score(data.data[test_rows], y[test_rows]):.3f}, {cpt7.get_n_leaves()} leaves")
fig, ax = plt.subplots(figsize=(5.5, 4.5))
plot_polytope_regions(cpt7, data.data[test_rows], y[test_rows], features=cols, ax=ax)
ax.set_xlabel("mcg")
ax.set_ylabel("gvh")
ax.set_title("7-feature model, others at their training medians")
fig.tight_layout()
plt.show()
