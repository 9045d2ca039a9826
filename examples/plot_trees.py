"""
Drawing the trees
=================

Every tree of the package can be printed with
:func:`~sklearn_difftrees.export_text`, drawn with
:func:`~sklearn_difftrees.plot_tree` (without ``ax`` the figure is sized to
the tree, at most 40 x 25 inches; a tree too large for it shows the levels
that fit, the subtrees below as ``(...)``, and ``max_depth`` cuts it as in
scikit-learn) and exported to Graphviz with
:func:`~sklearn_difftrees.export_graphviz`. Oblique splits are shown by
their heaviest weights (``top_k``), with the feature names of the data, and
nodes that send every training sample the same way are not drawn.

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
    DGTForestClassifier,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
    export_graphviz,
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
# A depth-8 DGT tree. Each internal node tests a weighted sum of the
# features against a threshold (two heaviest terms shown); only the leaves
# that training data reach are drawn.
dgt = DGTClassifier(max_depth=8, max_iter=40, random_state=0).fit(X_tr, y_tr)
print(f"DGT test accuracy {dgt.score(X_te, y_te):.3f}, {dgt.get_n_leaves()} leaves, "
      f"depth {dgt.get_depth()}")
plot_tree(dgt, feature_names=names, class_names=classes, filled=True)
plt.title("DGTClassifier(max_depth=8)")
plt.show()

# %%
# The same tree as text, down to depth 2.
print(export_text(dgt, feature_names=names, class_names=classes, max_depth=2, top_k=2))

# %%
# A non-greedy oblique tree (Norouzi et al., 2015) with its default depth,
# chosen by cross-validation, started from CART and refined by SGD.
ng = NonGreedyObliqueTreeClassifier(random_state=0).fit(X_tr, y_tr)
print(f"NonGreedy test accuracy {ng.score(X_te, y_te):.3f}, {ng.get_n_leaves()} leaves, "
      f"depth {ng.get_depth()}")
plot_tree(ng, feature_names=names, class_names=classes, filled=True)
plt.title("NonGreedyObliqueTreeClassifier()")
plt.show()

# %%
# A LatentTree of depth 3: only the nodes kept by the learned pruning vector
# are drawn. The prediction is made by a linear head that sees the features
# and the tree's traversal.
lt = LatentTreeClassifier(max_depth=3, max_iter=40, random_state=0).fit(X_tr, y_tr)
print(f"LatentTree test accuracy {lt.score(X_te, y_te):.3f}, {lt.get_n_leaves()} leaves")
plot_tree(lt, feature_names=names, class_names=classes, filled=True)
plt.title("LatentTreeClassifier(max_depth=3)")
plt.show()

# %%
# A convex polytope tree: each split is a union of a few oblique facets
# (Armandpour et al., 2021), so a small tree can carve curved regions.
cpt = ConvexPolytopeTreeClassifier(max_iter=40, random_state=0).fit(X_tr, y_tr)
print(f"ConvexPolytope test accuracy {cpt.score(X_te, y_te):.3f}, "
      f"{cpt.get_n_leaves()} leaves")
print(export_text(cpt, feature_names=names, class_names=classes, top_k=2))
plot_tree(cpt, feature_names=names, class_names=classes, filled=True)
plt.title("ConvexPolytopeTreeClassifier()")
plt.show()

# %%
# A Tree Ensemble Layer is drawn whole, as ``export_text`` prints it: one
# axes per soft tree (its nodes route fractionally inside a band of width
# ``gamma``); ``tree_index=t`` draws soft tree ``t`` alone. A forest's member
# is chosen with ``tree_index``: here, as Graphviz source, a member of a DGT
# forest (its oblique tree, then the greedy subtrees below its leaves).
tel = TreeEnsembleLayerClassifier(n_trees=5, max_depth=3, max_iter=20, random_state=0)
tel.fit(X_tr, y_tr)
print(f"TEL test accuracy {tel.score(X_te, y_te):.3f}")
plot_tree(tel, feature_names=names)  # axes titled "tree 0" ... "tree 4"
plt.show()

forest = DGTForestClassifier(n_estimators=3, max_depth=3, max_iter=20, random_state=0)
forest.fit(X_tr, y_tr)
dot = export_graphviz(forest, feature_names=names, class_names=classes, tree_index=0,
                      filled=True, rounded=True)
print("\n".join(dot.splitlines()[:8]), "\n...")
