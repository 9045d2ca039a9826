"""
The torch layers inside a network
=================================

Two families are also available as ``torch.nn.Module`` layers for your own
networks: :class:`~sklearn_difftrees.TreeEnsembleLayer` (Hazimeh et al.,
2020: an ensemble of soft trees, trained with conditional computation) and
:class:`~sklearn_difftrees.LatentTreeLayer` (Zantedeschi et al., 2021: a
pruned binary tree whose traversal ``z`` is the solution of a small
quadratic program, differentiable almost everywhere).

We put each one inside a small network and train it with plain torch on the
bundled ``segmentation`` table (2310 image regions, 19 features, 7 classes).
Accessing these names imports torch; ``import sklearn_difftrees`` alone does
not.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import LabelEncoder, StandardScaler

from sklearn_difftrees import LatentTreeLayer, TreeEnsembleLayer
from sklearn_difftrees.datasets import load_dataset

torch.manual_seed(0)
torch.set_num_threads(1)

X, y = load_dataset("segmentation", return_X_y=True)
y = LabelEncoder().fit_transform(y)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_tr)
X_tr = torch.tensor(scaler.transform(X_tr), dtype=torch.float32)
X_te = torch.tensor(scaler.transform(X_te), dtype=torch.float32)
y_tr, y_te = torch.tensor(y_tr), torch.tensor(y_te)
n_features, n_classes = X_tr.shape[1], int(y.max()) + 1

# %%
# A TreeEnsembleLayer as a hidden layer: a linear projection, 10 soft trees
# of depth 3 producing 16 outputs, and a linear classifier on top.
tel_net = torch.nn.Sequential(
    torch.nn.Linear(n_features, 16),
    TreeEnsembleLayer(16, 16, n_trees=10, depth=3, gamma=1.0),
    torch.nn.ReLU(),
    torch.nn.Linear(16, n_classes),
)


# %%
# A LatentTreeLayer feeding a linear head that sees the input and the tree's
# traversal ``z`` (one value per node), as in the paper.
class LatentTreeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tree = LatentTreeLayer(n_features, max_depth=3, pruning=1e-2)
        self.head = torch.nn.Linear(n_features + self.tree.n_nodes, n_classes)

    def forward(self, x):
        return self.head(torch.cat([x, self.tree(x)], dim=1))


lt_net = LatentTreeNet()
lt_net.tree.init_bias(X_tr)  # start the splits at the data


# %%
# The same training loop for both: Adam, mini-batches of 128, 15 epochs.
def train(net, epochs=15):
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    losses, accs = [], []
    for _ in range(epochs):
        net.train()
        total = 0.0
        for idx in torch.randperm(len(X_tr), generator=gen).split(128):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(X_tr[idx]), y_tr[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / len(X_tr))
        net.eval()
        if isinstance(net, LatentTreeNet):
            # fix the pruning vector on the training rows: in eval() mode each
            # row's z then depends on that row alone, not on the batch
            net.tree.fix_pruning(X_tr)
        with torch.no_grad():
            accs.append((net(X_te).argmax(1) == y_te).float().mean().item())
    return losses, accs


tel_curve = train(tel_net)
lt_curve = train(lt_net)
print(f"TreeEnsembleLayer network: test accuracy {tel_curve[1][-1]:.3f}")
print(f"LatentTreeLayer network:   test accuracy {lt_curve[1][-1]:.3f}")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
epochs = np.arange(1, 16)
for name, (loss, acc) in [("TreeEnsembleLayer", tel_curve), ("LatentTreeLayer", lt_curve)]:
    ax1.plot(epochs, loss, label=name)
    ax2.plot(epochs, acc, label=name)
ax1.set_xlabel("epoch")
ax1.set_ylabel("training cross-entropy")
ax2.set_xlabel("epoch")
ax2.set_ylabel("test accuracy")
ax2.legend()
fig.tight_layout()
plt.show()
