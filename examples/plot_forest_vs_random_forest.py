"""
DGT forest against RandomForest
===============================

:class:`~sklearn_difftrees.DGTForestClassifier` bags oblique DGT trees (the
DGT paper's DGT-Forest) and continues each member below its leaves with
greedy subtrees grown on the member's bootstrap rows, cut at the depth its
out-of-bag rows score best (``subtree_depth="auto"``).
Each member is an accurate tree in its own right, so a few members already
make a useful forest. Here we grow both on the bundled ``vehicle`` table and
look at test accuracy as members are added.

The DGT members train for fewer epochs than the default (``max_iter=40``)
to keep the gallery quick; the full comparison with the defaults (30 members)
is in section 5 of :doc:`/benchmarks`.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from sklearn_difftrees import DGTForestClassifier
from sklearn_difftrees.datasets import load_dataset

warnings.filterwarnings("ignore", category=ConvergenceWarning)  # short training below

X, y = load_dataset("vehicle", return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)

# %%
# One forest of 8 members; the accuracy of its first ``k`` members is the
# mean of their class probabilities, as the forest's own ``predict_proba``
# computes for all of them. A member's probabilities are those of the node
# its rows reach in the subtree below their leaf of the member's trained
# tree (``subtrees_[k]``, already in the forest's columns), or, when the
# out-of-bag rows chose none (``subtree_depth_ == 0``), the member's own.
forest = DGTForestClassifier(n_estimators=8, max_iter=40, random_state=0).fit(X_tr, y_tr)
print(f"subtrees cut at depth {forest.subtree_depth_} (out-of-bag scores: "
      + ", ".join(f"{d}: {s:.3f}" for d, s in forest.subtree_scores_.items()) + ")")
n_internal = 2**forest.max_depth_ - 1  # the members' leaves follow their internal nodes
if forest.subtrees_ is None:
    member_proba = [member.predict_proba(X_te) for member in forest.estimators_]
else:
    member_proba = [
        subtrees.predict(X_te, member.apply(X_te) - n_internal)
        for member, subtrees in zip(forest.estimators_, forest.subtrees_)
    ]
sizes = np.arange(1, len(member_proba) + 1)
dgt_acc = [
    np.mean(forest.classes_[np.mean(member_proba[:k], axis=0).argmax(1)] == y_te) for k in sizes
]
print(f"DGT forest, 8 members: test accuracy {forest.score(X_te, y_te):.3f}")
assert np.isclose(dgt_acc[-1], forest.score(X_te, y_te))  # the same mean as the forest's

# %%
# RandomForest with the same numbers of trees, and with its default 100.
# :doc:`/benchmarks` ("Defaults of every family") has three splits of 17
# sets with the full budgets.
rf_sizes = [1, 2, 4, 8, 16, 32, 100]
rf_acc = [
    RandomForestClassifier(n_estimators=k, random_state=0).fit(X_tr, y_tr).score(X_te, y_te)
    for k in rf_sizes
]
print(f"RandomForest, 100 trees: test accuracy {rf_acc[-1]:.3f}")

fig, ax = plt.subplots(figsize=(6.5, 4))
ax.semilogx(sizes, dgt_acc, "o-", label="DGT forest (oblique DGT trees)")
ax.semilogx(rf_sizes, rf_acc, "s-", label="RandomForest (CART trees)")
ax.set_xlabel("number of trees")
ax.set_ylabel("test accuracy (vehicle)")
ax.legend()
fig.tight_layout()
plt.show()
