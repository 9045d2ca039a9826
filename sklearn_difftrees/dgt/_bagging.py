"""The bagging machinery of the DGT forests: the members' depth, bootstrap
samples as integer row counts, the fit of a chunk of members (one batched
model) in a joblib worker with torch limited to one thread (restored
afterwards), and the fit of all chunks with a progress bar over trees."""

import contextlib
import sys
from numbers import Integral

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from .._core._memory import models_held
from .._core._progress import Progress
from .._core.batching import resolve_batching
from .._core.validation import normalize_weights
from .._core.optional import require_torch
from ._classes import auto_depth

__all__ = ["_bootstrap_counts", "_bootstrap_size", "_fit_chunk", "_fit_members_with_progress",
           "_keep_torch_threads", "_member_depth"]


#: The forest whose members are of a class (its messages name the forest).
_FOREST_OF_MEMBER = {"DGTClassifier": "DGTForestClassifier", "DGTRegressor": "DGTForestRegressor"}


def _member_depth(max_depth, X, y, w, n_classes, seed):
    """``(depth, depth_scores)`` of every member: ``max_depth``, or for
    ``"auto"`` the single tree's choice (:func:`~sklearn_difftrees.dgt._classes.auto_depth`)
    made once on the forest's rows of positive weight (the members share one
    depth: they train as one batched model)."""
    if max_depth != "auto":
        return max_depth, None
    keep = w > 0
    return auto_depth(X[keep], y[keep], normalize_weights(w[keep]), n_classes, seed)


def _bootstrap_size(max_samples, bootstrap, n_rows):
    """Rows drawn for each member's bootstrap sample (as scikit-learn's
    forests read ``max_samples``): a float is a fraction of the ``n_rows``
    rows of positive weight (at least one row), an int a count (at most
    ``n_rows``). Without bootstrap every member trains on all the rows, and
    ``max_samples`` must keep its default 1.0."""
    if not bootstrap and (max_samples != 1.0 or isinstance(max_samples, Integral)):
        raise ValueError(
            f"max_samples={max_samples} sets the size of the bootstrap samples; "
            "with bootstrap=False every member trains on all the rows, so max_samples "
            "must be 1.0. Set bootstrap=True or max_samples=1.0."
        )
    if isinstance(max_samples, Integral):
        if max_samples > n_rows:
            raise ValueError(f"max_samples={max_samples} exceeds the {n_rows} training rows "
                             "of positive weight; pass at most that, or a fraction.")
        size = int(max_samples)
    else:
        size = max(1, int(round(max_samples * n_rows)))
    if size < 2 <= n_rows:
        raise ValueError(f"max_samples={max_samples} draws {size} row for each member's "
                         "bootstrap sample; a member needs at least 2 rows. Pass a larger "
                         "max_samples.")
    return size


def _fit_chunk(members, X, y, weights, single_thread, bag=None, on_member_done=None):
    """Fit a chunk of members as one batched model; runs in a joblib worker.

    Every member prepares its own fit (``_fit_setup``: its standardization,
    validation split and seeded module, from its own bootstrap weights); the
    modules are trained together
    (:func:`~sklearn_difftrees.dgt._batched.fit_batched`), and every member
    then freezes its own tree (``_fit_complete``). With ``single_thread``
    (``n_jobs != 1``) torch is limited to one thread meanwhile, so that the
    workers do not each start a thread pool as large as the machine; the
    previous setting is restored after. ``bag`` (the keyword arguments of
    :func:`~._bag_rows.use_bag_rows` other than the member's, or None) moves
    every member onto its bag's rows before training. ``on_member_done(i,
    history)`` is called as member ``i`` of the chunk stops training.
    """
    torch = require_torch("DGT forest members' fit")
    previous = torch.get_num_threads()
    if single_thread:
        torch.set_num_threads(1)
    try:
        from ._batched import fit_batched

        if members[0].device == "auto":
            # One device for every member, from the forest's rows (as the
            # batching below): the members' modules are stacked.
            from .._core._trainer import resolve_device

            device = resolve_device("auto", X.shape[0]).type
            for member in members:
                member.set_params(device=device)
        # Messages (convergence, divergence, memory, member progress) name the forest.
        name = _FOREST_OF_MEMBER.get(type(members[0]).__name__, type(members[0]).__name__)
        for member in members:
            member._owner_name = f"{name} members"
        # The chunk's members are held (and trained) together: each member's
        # memory check counts all of them.
        with models_held(len(members)):
            plans = [member._fit_setup(X, y, w) for member, w in zip(members, weights)]
        if bag is not None:
            from ._bag_rows import use_bag_rows

            for member, plan, w in zip(members, plans, weights):
                use_bag_rows(member, plan, w, **bag)
        # One batching for every member, from the forest's rows (a member's
        # own would depend on its bootstrap draw, and so on the chunking).
        batch, epoch_rows = resolve_batching(members[0].batch_size, X.shape[0],
                                             members[0]._base_batch_size)
        for plan in plans:
            plan.train_kwargs.update(batch_size=batch, epoch_rows=epoch_rows,
                                     name=f"{name} members")
        # Members share the forest's classes (or outputs), so one batched model.
        histories = fit_batched(members, plans, on_member_done=on_member_done)
        for member, plan, history in zip(members, plans, histories):
            member.init_ = member.init  # "cart" or "random": one start per member
            member._fit_complete(plan, history)
            member._discard_warm_start_state()
            del member._owner_name
    finally:
        torch.set_num_threads(previous)
    return members


def _fit_chunk_indexed(indices, *args):
    """``(indices, _fit_chunk(*args))``: a result that says which members it holds."""
    return indices, _fit_chunk(*args)


def _fit_members_with_progress(chunks, n_members, n_jobs, name, verbose):
    """Fit the chunks of members (``chunks``: ``(indices, args of
    _fit_chunk)`` pairs) while the main process advances a bar over trees.

    In the main process (one chunk) the bar moves as each member stops
    training; with several chunks (joblib workers) the chunks come back as
    they finish (``return_as="generator_unordered"``, whatever ``n_jobs`` and
    the backend) and the bar moves by their members. The members are put back
    in submission order: the forest is the same as without progress.
    """
    members = [None] * n_members
    with Progress(n_members, desc=name, unit="tree", verbose=verbose) as progress:

        def report(i, n_iter, best):
            info = {"member": i, "epochs": n_iter}
            if best is not None:
                info["best_val_score"] = float(best)
            progress.update(info=info)

        if len(chunks) == 1:
            indices, args = chunks[0]

            def done(j, history):
                best = history.best_validation_score if history.validation_scores else None
                report(indices[j], history.n_iter, best)

            for i, member in zip(indices, _fit_chunk(*args, on_member_done=done)):
                members[i] = member
            return members
        results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_fit_chunk_indexed)(indices, *args) for indices, args in chunks
        )
        for indices, chunk in results:
            for i, member in zip(indices, chunk):
                members[i] = member
                report(i, member.n_iter_, member.best_validation_score_)
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
    ``candidates``; other rows get a count of zero. A draw of a single
    distinct row (likely only on a handful of rows) is drawn again, while
    there are two candidates to draw: a member must hold out a validation
    row and still train on one.
    """
    rng = np.random.RandomState(seed)
    while True:
        drawn = candidates[rng.randint(0, candidates.size, n_draws)]
        if candidates.size < 2 or n_draws < 2 or np.any(drawn != drawn[0]):
            return np.bincount(drawn, minlength=n_samples).astype(np.float64)
