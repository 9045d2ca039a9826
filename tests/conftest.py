"""Shared fixtures of the test suite.

Torch is limited to one thread at import time: the suite runs on small
machines and many tiny fits are slower, not faster, with a thread pool.
"""

import os

# Idle OpenMP threads sleep instead of spinning: tests/test_stability.py runs
# torch with 2 threads, and spinning threads of a process that shares its
# cores with other jobs turn a 1 s fit into minutes. Read when torch loads
# its OpenMP runtime, so it must be set before the import below.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

try:  # torch is a training-time dependency; keep the suite single-threaded.
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch is a hard dependency of fit
    torch = None

from sklearn_difftrees.datasets import load_dataset

# SKLEARN_DIFFTREES_TEST_FMA=0 runs the whole suite on the compiled training
# kernels' baseline x86-64 variants instead of their FMA ones, which round
# differently: with ATEN_CPU_CAPABILITY=default, MKL_CBWR=COMPATIBLE and
# OPENBLAS_CORETYPE=Haswell (torch's, MKL's and numpy's BLAS on other code
# paths) it stands in for another CPU's floating point (`bash dev.sh
# test-other-fp`, docs/reliability.md).
KERNEL_FMA = os.environ.get("SKLEARN_DIFFTREES_TEST_FMA", "1") != "0"
if not KERNEL_FMA:
    from sklearn_difftrees._kernels import _dgt, _polytope

    for _module in (_dgt, _polytope):
        _module._use_fma(False)

try:  # hypothesis profiles of tests/test_fuzz.py (see docs/reliability.md)
    from hypothesis import settings

    # ci (default): a few derandomized examples per test, fast and repeatable.
    settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                              print_blob=True)
    # deep: HYPOTHESIS_PROFILE=deep pytest tests/test_fuzz.py (random, many examples).
    settings.register_profile("deep", max_examples=150, deadline=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    pass


def load_bundled(name, n_max=None, random_state=0):
    """``(X, y)`` of a bundled dataset, optionally subsampled to ``n_max`` rows."""
    X, y = load_dataset(name, return_X_y=True)
    if n_max is not None and X.shape[0] > n_max:
        idx = np.random.RandomState(random_state).choice(X.shape[0], n_max, replace=False)
        X, y = X[np.sort(idx)], y[np.sort(idx)]
    return X, y


@pytest.fixture(scope="session")
def kernel_fma():
    """Whether the suite runs the kernels' FMA variants where the processor has
    FMA (the import's choice; ``SKLEARN_DIFFTREES_TEST_FMA=0``: never): what a
    test that switches variants restores."""
    return KERNEL_FMA


@pytest.fixture(scope="session")
def bundled():
    """Loader of bundled datasets: ``bundled("pima", n_max=300)`` -> ``(X, y)``."""
    return load_bundled


@pytest.fixture
def rows_seen(monkeypatch):
    """``rows_seen(module, name)``: wrap ``module.name`` (its first argument an
    array) so that every call appends that array's row count to the returned list."""

    def spy(module, name):
        seen, real = [], getattr(module, name)

        def wrapper(first, *args, **kwargs):
            seen.append(first.shape[0])
            return real(first, *args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)
        return seen

    return spy


@pytest.fixture
def no_cross_check(monkeypatch):
    """Fits without the out-of-fold cross-check of small tables (its clones'
    fits would count among a test's runs or calls) nor the validation check
    that replaces it on larger ones (its CARTs' depth choice would): tests
    of what a fit does before them."""
    from sklearn_difftrees._core import selection

    monkeypatch.setattr(selection, "CROSS_CHECK_MAX_ROWS", 0)
    monkeypatch.setattr(selection, "validation_check", lambda *args, **kwargs: None)
