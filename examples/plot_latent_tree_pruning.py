"""
Pruning in LatentTree
=====================

:class:`~sklearn_difftrees.LatentTreeClassifier` learns a *pruning vector*
``a`` together with the splits (Zantedeschi et al., 2021): a node with
``a_t = 0`` is pruned and no sample passes through it. The ``pruning``
parameter (the paper's λ, per sample) sets how strongly ``a`` is pulled
towards zero. Here we sweep it on the bundled ``vehicle`` table and watch the
tree shrink.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from sklearn_difftrees import LatentTreeClassifier, plot_tree
from sklearn_difftrees.datasets import load_dataset

warnings.filterwarnings("ignore", category=ConvergenceWarning)  # short training below

data = load_dataset("vehicle")
X_tr, X_te, y_tr, y_te = train_test_split(
    data.data, data.target, test_size=0.3, stratify=data.target, random_state=0
)

# %%
# A depth-4 tree has 15 split nodes and 16 leaves. ``active_fraction_`` is
# the fraction of nodes the pruning keeps, ``get_n_leaves()`` counts the
# leaves of the pruned tree.
lambdas = [1e-2, 1e-1, 1.0, 3.0, 10.0]
rows = []
for lam in lambdas:
    clf = LatentTreeClassifier(pruning=lam, max_iter=30, random_state=0).fit(X_tr, y_tr)
    rows.append((lam, clf.active_fraction_, clf.get_n_leaves(), clf.score(X_te, y_te), clf))
    print(f"pruning={lam:<6g} active fraction {clf.active_fraction_:.2f}   "
          f"leaves {clf.get_n_leaves():2d}   test accuracy {clf.score(X_te, y_te):.3f}")

# %%
# Below ``pruning=1`` the tree stays nearly complete; from about 3 on the
# pruning removes around half of the leaves, and the accuracy follows. The
# linear head on ``[x, z]`` keeps it from collapsing. (One split and one
# seed: small differences are noise.)
fig, ax1 = plt.subplots(figsize=(6.5, 3.8))
ax1.semilogx(lambdas, [r[2] for r in rows], "o-", color="tab:blue")
ax1.set_xlabel("pruning (lambda)")
ax1.set_ylabel("leaves of the pruned tree", color="tab:blue")
ax2 = ax1.twinx()
ax2.semilogx(lambdas, [r[3] for r in rows], "s--", color="tab:red")
ax2.set_ylabel("test accuracy", color="tab:red")
fig.tight_layout()
plt.show()

# %%
# The pruning values of the most pruned tree, node by node in heap order
# (0 = pruned), and the tree that remains.
lam, _, _, _, pruned = rows[-1]
print(np.round(pruned.pruning_values_, 2))
fig, ax = plt.subplots(figsize=(10, 4.5))
plot_tree(pruned, feature_names=data.feature_names, ax=ax)
ax.set_title(f"LatentTreeClassifier(pruning={lam:g})")
plt.show()
