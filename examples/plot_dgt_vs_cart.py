"""
DGT against depth-tuned CART
============================

A Dense Gradient Tree trained on the bundled ``vehicle`` table beside a
CART tree whose depth is tuned by cross-validation.
"""

import time

from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.tree import DecisionTreeClassifier

from sklearn_difftrees import DGTClassifier
from sklearn_difftrees.datasets import load_dataset

X, y = load_dataset("vehicle", return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)

t0 = time.perf_counter()
dgt = DGTClassifier(max_depth=4, max_iter=20, random_state=0).fit(X_tr, y_tr)
print(f"DGT: accuracy {dgt.score(X_te, y_te):.3f} ({time.perf_counter() - t0:.1f} s)")
cart = GridSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": range(2, 13)}, cv=3)
cart.fit(X_tr, y_tr)
print(f"CART: accuracy {cart.score(X_te, y_te):.3f}")
