"""
Learning a tree from bandit feedback
====================================

In the bandit setting the learner never sees the label: in every round it
picks an action (a class) for a context and observes only the loss of that
action. :class:`~sklearn_difftrees.DGTBanditClassifier` learns a DGT tree
from this feedback (the DGT paper's Algorithm 1);
:func:`~sklearn_difftrees.bandit.simulate` plays the protocol over a
labelled stream, and :func:`~sklearn_difftrees.bandit.plot_learning_curves`
draws the held-out accuracy of the greedy policy against the number of
rounds.

The baseline is an epsilon-greedy linear contextual bandit. The stream is a
subsample of the bundled ``satimage`` table (6 classes); the full runs are in
section 6 of :doc:`/benchmarks`.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from sklearn_difftrees import DGTBanditClassifier
from sklearn_difftrees.bandit import EpsilonGreedyLinearBandit, plot_learning_curves, simulate
from sklearn_difftrees.datasets import load_dataset

X, y = load_dataset("satimage", return_X_y=True)
X_stream, X_eval, y_stream, y_eval = train_test_split(
    X, y, train_size=1500, test_size=1000, stratify=y, random_state=0
)
classes = np.unique(y)

# %%
# One pass over 1500 rounds, updated in batches of 4 rounds; accuracy on
# 1000 held-out rows every 150 rounds. Both learners standardize the contexts
# with the statistics of the (unlabelled) stream, ``init_contexts``.
learners = {
    "DGT-Bandit": DGTBanditClassifier(classes=classes, learning_rate=1e-2, random_state=0),
    "epsilon-greedy linear": EpsilonGreedyLinearBandit(classes, random_state=0),
}
curves = [
    simulate(learner, X_stream, y_stream, X_eval=X_eval, y_eval=y_eval, eval_every=150,
             batch_size=4, random_state=0, name=name, init_contexts=X_stream)
    for name, learner in learners.items()
]
for curve in curves:
    print(f"{curve.name:22s} final held-out accuracy {curve.scores[-1]:.3f}")

# %%
# One seed and one short stream: the curves are noisy (the benchmark
# averages three seeds over 4500 rounds).
fig, ax = plt.subplots(figsize=(6.5, 4))
plot_learning_curves(curves, ax=ax, title="satimage, bandit feedback only")
fig.tight_layout()
plt.show()
