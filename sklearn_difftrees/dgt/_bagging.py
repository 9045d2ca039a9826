"""The bagging machinery of the DGT forests: bootstrap samples as integer row
counts, and the fit of one member in a joblib worker with torch limited to one
thread (restored afterwards)."""

import contextlib
import sys

import numpy as np

__all__ = ["_bootstrap_counts", "_fit_member", "_keep_torch_threads"]


def _fit_member(member, X, y, sample_weight, single_thread):
    """Fit one member; runs in a joblib worker.

    With ``single_thread`` (``n_jobs != 1``) torch is limited to one thread
    while the member trains, so that the workers do not each start a thread
    pool as large as the machine; the previous setting is restored after.
    """
    if not single_thread:
        member.fit(X, y, sample_weight=sample_weight)
        return member._discard_warm_start_state()
    import torch  # the member's fit imports it anyway

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        member.fit(X, y, sample_weight=sample_weight)
    finally:
        torch.set_num_threads(previous)
    return member._discard_warm_start_state()


@contextlib.contextmanager
def _keep_torch_threads():
    """Restore torch's thread count of this process after the block.

    Under a thread-based joblib backend the workers share this process, and
    their save/restore pairs of :func:`_fit_member` interleave; this restores
    the caller's setting once all of them are done. Torch is not imported
    here: if this process has not imported it, there is nothing to restore.
    """
    torch = sys.modules.get("torch")
    previous = torch.get_num_threads() if torch is not None else None
    try:
        yield
    finally:
        if previous is not None:
            torch.set_num_threads(previous)


def _bootstrap_counts(seed, candidates, n_samples, n_draws):
    """How often each of ``n_samples`` rows is drawn (with replacement).

    ``n_draws`` rows are drawn uniformly among the row indices
    ``candidates``; other rows get a count of zero.
    """
    rng = np.random.RandomState(seed)
    drawn = candidates[rng.randint(0, candidates.size, n_draws)]
    return np.bincount(drawn, minlength=n_samples).astype(np.float64)
