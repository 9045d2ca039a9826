"""The torch-free forward pass of a fitted LatentTree, in numpy float64: node
rewards ``q`` from split scores (Lemma 1), ELU, and a matrix product whose rows
do not depend on the batch (so one row predicts as in any batch)."""

import numpy as np

__all__ = ["INPUT_CLIP", "node_rewards_numpy"]

#: Standard deviations (of the training rows) from the training mean beyond
#: which prediction clips an input value: the split scores and the linear head
#: are linear in the input and overflowed on values near the float64 maximum.
#: Every training value lies within (at most ``sqrt(n)`` standard deviations
#: from the mean), so the clip changes no fit.
INPUT_CLIP = 1e6


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


def _rowwise_matmul(A, W):
    """``A @ W.T`` whose rows do not depend on the other rows of ``A``.

    BLAS picks different kernels (and summation orders) for different batch
    sizes; ``einsum``'s loop does not, so predicting one row at a time gives
    bit-identical results to predicting the batch.
    """
    return np.einsum("ij,kj->ik", A, W)


def node_rewards_numpy(s, depth):
    """Node rewards ``q`` (Lemma 1, ``q_root = 1``) from split scores, float64."""
    n = s.shape[0]
    levels = [np.ones((n, 1))]
    path = None
    for d in range(depth):
        sd = s[:, 2**d - 1 : 2 ** (d + 1) - 1]
        child = np.stack((-sd, sd), axis=2).reshape(n, 2 ** (d + 1))
        if path is not None:
            child = np.minimum(np.repeat(path, 2, axis=1), child)
        path = child
        levels.append(child)
    return np.concatenate(levels, axis=1)
