"""Mini-batch size and epoch length from the data size (``batch_size="auto"``).

Every gradient-trained estimator takes ``batch_size`` as an int or
``"auto"`` (the default). A fixed batch makes the number of optimizer steps,
and with it the Python overhead of every step, grow with the rows at every
epoch; on large tables the fit then spends its time in the interpreter, not
in the arithmetic. ``"auto"`` keeps small data exactly as before and bounds
the work of one epoch on large data:

* the batch is the family's base size (128; 256 for ConvexPolytopeTree)
  while an epoch has at most :data:`MAX_STEPS` (128) steps, i.e. up to
  ``128 * base`` rows; beyond, it grows as ``ceil(n / 128)`` up to
  :data:`MAX_BATCH` (1024) rows, so an epoch keeps 128 steps;
* an epoch (one iteration of ``max_iter`` and ``n_iter_no_change``) visits at
  most :data:`MAX_EPOCH_ROWS` (``128 * 1024 = 131,072``) rows. On larger
  tables successive epochs continue through one shuffled pass of the rows
  (every row is visited once before any is visited twice), so the cost of an
  epoch, and of the whole fit, stops growing with ``n`` apart from the
  validation pass, which is linear in the validation rows and compiled;
* a family may also cap that pass: :func:`validation_subsample` picks, under
  ``"auto"``, at most :data:`MAX_VALIDATION_ROWS` (32,768) of the validation
  rows (a seeded draw without replacement, the same rows every epoch) for the
  per-epoch evaluation of early stopping.

An int ``batch_size`` keeps the classic meaning: that batch, every epoch one
full pass.

This module is torch-free: :class:`RowStream` takes the permutation and
concatenation functions of the caller's array library.
"""

import math

import numpy as np

__all__ = ["MAX_BATCH", "MAX_EPOCH_ROWS", "MAX_STEPS", "MAX_VALIDATION_ROWS", "RowStream",
           "batch_size_doc", "resolve_batching", "validation_subsample"]

#: Steps per epoch below which ``"auto"`` keeps the family's base batch.
MAX_STEPS = 128
#: Largest batch ``"auto"`` chooses.
MAX_BATCH = 1024
#: Most rows one epoch visits under ``"auto"``.
MAX_EPOCH_ROWS = MAX_STEPS * MAX_BATCH
#: Most validation rows one epoch evaluates under ``"auto"`` (where a family
#: caps them, :func:`validation_subsample`): enough to rank epochs whose
#: losses differ by far less than their standard error (the same rows every
#: epoch, so the noise of the comparison is that of the loss *differences*).
MAX_VALIDATION_ROWS = 32_768


def resolve_batching(batch_size, n_samples, base):
    """Return ``(batch, epoch_rows)`` for ``n_samples`` training rows.

    Parameters
    ----------
    batch_size : int or "auto"
        The estimator's parameter.
    n_samples : int
        Rows the training loop sees (after the validation split).
    base : int
        The family's batch size for small data.

    Returns
    -------
    batch : int
        Rows per optimizer step (a batch of more than ``n_samples`` rows is
        one step over all of them).
    epoch_rows : int
        Rows per epoch (``n_samples`` unless ``"auto"`` caps it).
    """
    n = max(1, int(n_samples))
    if batch_size == "auto":
        batch = min(max(int(base), math.ceil(n / MAX_STEPS)), MAX_BATCH)
        return batch, min(n, MAX_EPOCH_ROWS)
    return int(batch_size), n


def validation_subsample(n_val, batch_size, seed):
    """Validation rows evaluated every epoch: all, or a capped random subset.

    Parameters
    ----------
    n_val : int
        Validation rows.
    batch_size : int or "auto"
        The estimator's parameter: only ``"auto"`` caps (an int keeps the
        classic meaning, every epoch on every row).
    seed : int
        Seed of the draw (made only when it subsamples).

    Returns
    -------
    rows : slice or ndarray of int
        ``slice(None)`` when ``n_val <= MAX_VALIDATION_ROWS`` or
        ``batch_size`` is an int; else :data:`MAX_VALIDATION_ROWS` sorted
        indices drawn without replacement.
    """
    n_val = int(n_val)
    if batch_size != "auto" or n_val <= MAX_VALIDATION_ROWS:
        return slice(None)
    rng = np.random.RandomState(int(seed) % (2**32))
    return np.sort(rng.choice(n_val, MAX_VALIDATION_ROWS, replace=False))


def batch_size_doc(base, *, large=""):
    """The numpydoc entry of an estimator's ``batch_size`` parameter.

    ``base`` is the family's batch on small data; ``large`` is inserted
    before "so that the fit time stops growing" (what else the family
    bounds on large tables).
    """
    return f"""    batch_size : int or "auto", default="auto"
        Mini-batch size. ``"auto"`` adapts it to the training rows ``n``:
        {base} rows while an epoch has at most {MAX_STEPS} steps, then
        ``ceil(n / {MAX_STEPS})`` rows up to {MAX_BATCH}; an epoch (one iteration
        of ``max_iter`` and ``n_iter_no_change``) then visits at most
        {MAX_EPOCH_ROWS:,} rows, larger tables being visited over successive
        epochs{large}, so that the fit time stops growing with ``n`` beyond
        that. An int: that batch, every epoch one full pass over the rows.
"""


class RowStream:
    """Row indices of successive epochs of ``rows`` rows out of ``n``.

    With ``rows >= n`` every epoch is one fresh permutation (``permute()``
    called once per epoch, as a plain loop would). Otherwise epochs are
    consecutive slices of a stream of permutations, so that every row is
    visited once before any row is visited twice.

    Parameters
    ----------
    n, rows : int
    permute : callable
        ``permute() -> array`` of a random permutation of ``range(n)``.
    concat : callable
        ``concat([a, b]) -> array``.
    """

    def __init__(self, n, rows, permute, concat):
        self.n = int(n)
        self.rows = min(int(rows), self.n)
        self._permute = permute
        self._concat = concat
        self._pending = None

    def next(self):
        """The next epoch's row indices (``rows`` of them)."""
        if self.rows >= self.n:
            return self._permute()
        parts, have = [], 0
        while have < self.rows:
            if self._pending is None or len(self._pending) == 0:
                self._pending = self._permute()
            take = self._pending[: self.rows - have]
            self._pending = self._pending[len(take):]
            parts.append(take)
            have += len(take)
        return parts[0] if len(parts) == 1 else self._concat(parts)
