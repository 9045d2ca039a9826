"""Small shared helpers of the input-handling tests (test_hardening*.py)."""

import warnings

import numpy as np

#: A tiny training budget for fits whose result does not matter.
FAST = dict(max_iter=3, random_state=0)


def _data(n=120, p=4, seed=0):
    """``(X, y_regression, y_binary)`` of ``n`` rows and ``p`` features."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, p)
    return X, X[:, 0] - X[:, 1] + 0.1 * rng.randn(n), (X[:, 0] > 0).astype(int)


def _quiet(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with every warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)
