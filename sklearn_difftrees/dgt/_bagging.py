"""The bagging machinery of the DGT forests: bootstrap samples as integer row
counts, the fit of one member in a joblib worker with torch limited to one
thread (restored afterwards), and the fit of all members with a progress bar
over trees."""

import contextlib
import sys

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from .._core._progress import Progress
from .._core.optional import require_torch

__all__ = ["_bootstrap_counts", "_fit_member", "_fit_members_with_progress",
           "_keep_torch_threads"]


def _fit_member(member, X, y, sample_weight, single_thread):
    """Fit one member; runs in a joblib worker.

    With ``single_thread`` (``n_jobs != 1``) torch is limited to one thread
    while the member trains, so that the workers do not each start a thread
    pool as large as the machine; the previous setting is restored after.
    """
    if not single_thread:
        member.fit(X, y, sample_weight=sample_weight)
        return member._discard_warm_start_state()
    torch = require_torch("DGT forest members' fit")  # the member's fit imports it anyway

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        member.fit(X, y, sample_weight=sample_weight)
    finally:
        torch.set_num_threads(previous)
    return member._discard_warm_start_state()


def _fit_member_indexed(i, *args):
    """``(i, _fit_member(*args))``: a result that says which member it is."""
    return i, _fit_member(*args)


def _fit_members_with_progress(jobs, n_members, n_jobs, name, verbose):
    """Fit the members (``jobs``: argument tuples of :func:`_fit_member`)
    while the main process advances a bar over trees.

    The members come back as they finish (joblib's
    ``return_as="generator_unordered"``, so the bar moves with every
    finished member, whatever ``n_jobs`` and the backend) and are put back in
    submission order: the forest is the same as without progress.
    """
    members = [None] * n_members
    with Progress(n_members, desc=name, unit="tree", verbose=verbose) as progress:
        results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_fit_member_indexed)(i, *job) for i, job in enumerate(jobs)
        )
        for i, member in results:
            members[i] = member
            info = {"member": i, "epochs": member.n_iter_}
            if member.best_validation_score_ is not None:
                info["best_val_score"] = float(member.best_validation_score_)
            progress.update(info=info)
    return members


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
