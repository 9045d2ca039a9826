"""
Drawing the trees
=================

Every hard tree of the package (DGT, non-greedy, LatentTree, convex polytope
trees) can be printed with :func:`~sklearn_difftrees.export_text` and drawn
with :func:`~sklearn_difftrees.plot_tree`. Oblique splits are shown by their
largest weights (``top_k``), with the feature names of the data.

The data: the bundled ``pima`` table (768 patients, 8 named measurements,
diabetes or not).
"""

import warnings

import matplotlib.pyplot as plt
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTClassifier,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    export_text,
    plot_tree,
)
from sklearn_difftrees.datasets import load_dataset

warnings.filterwarnings("ignore", category=ConvergenceWarning)  # short training below

data = load_dataset("pima")
names = data.feature_names
X_tr, X_te, y_tr, y_te = train_test_split(
    data.data, data.target, test_size=0.3, stratify=data.target, random_state=0
)
classes = ["healthy", "diabetes"]

# %%
# A shallow DGT tree. Each internal node tests a weighted sum of the
# (standardized) features against a threshold; the text lists the largest
# weights first.
dgt = DGTClassifier(max_depth=3, max_iter=40, random_state=0).fit(X_tr, y_tr)
print(f"DGT test accuracy {dgt.score(X_te, y_te):.3f}, {dgt.get_n_leaves()} leaves")
print(export_text(dgt, feature_names=names, class_names=classes, top_k=2))

# %%
fig, ax = plt.subplots(figsize=(11, 5))
plot_tree(dgt, feature_names=names, class_names=classes, ax=ax)
ax.set_title("DGTClassifier(max_depth=3)")
plt.show()

# %%
# A non-greedy oblique tree of depth 3 (Norouzi et al., 2015), started from
# CART and refined by SGD on its surrogate bound.
ng = NonGreedyObliqueTreeClassifier(max_depth=3, random_state=0).fit(X_tr, y_tr)
print(f"NonGreedy test accuracy {ng.score(X_te, y_te):.3f}, {ng.get_n_leaves()} leaves")
fig, ax = plt.subplots(figsize=(11, 5))
plot_tree(ng, feature_names=names, class_names=classes, ax=ax)
ax.set_title("NonGreedyObliqueTreeClassifier(max_depth=3)")
plt.show()

# %%
# A LatentTree of depth 3: only the nodes kept by the learned pruning vector
# are drawn (``a`` is the pruning value of the node). The prediction is made
# by a linear head that sees the features and the tree's traversal.
lt = LatentTreeClassifier(max_depth=3, max_iter=40, random_state=0).fit(X_tr, y_tr)
print(f"LatentTree test accuracy {lt.score(X_te, y_te):.3f}, {lt.get_n_leaves()} leaves")
fig, ax = plt.subplots(figsize=(11, 5))
plot_tree(lt, feature_names=names, class_names=classes, ax=ax)
ax.set_title("LatentTreeClassifier(max_depth=3)")
plt.show()

# %%
# A convex polytope tree: each split is a union of a few oblique facets
# (Armandpour et al., 2021), so a small tree can carve curved regions.
cpt = ConvexPolytopeTreeClassifier(max_iter=40, random_state=0).fit(X_tr, y_tr)
print(f"ConvexPolytope test accuracy {cpt.score(X_te, y_te):.3f}, "
      f"{cpt.get_n_leaves()} leaves, facets per node {cpt.n_facets_.tolist()}")
print(export_text(cpt, feature_names=names, class_names=classes, top_k=2))
fig, ax = plt.subplots(figsize=(9, 4))
plot_tree(cpt, feature_names=names, class_names=classes, ax=ax)
ax.set_title("ConvexPolytopeTreeClassifier()")
plt.show()
