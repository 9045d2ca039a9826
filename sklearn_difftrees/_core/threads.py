"""One torch thread while a single model trains.

A single tree's training steps are small (a mini-batch of 128 rows, or a few
thousand on large tables, through one tree): torch's intra-op thread pool
costs more than it saves there. On a 2-core machine (AMD EPYC, 2026-11-27;
`docs/design.md`, "Threads") two torch threads made the default fits 1.2 to
2 times slower than one with idle threads sleeping (``OMP_WAIT_POLICY=PASSIVE``)
and as slow with twice the CPU time with them spinning (torch's default).
Torch's default is one thread per core, so every fit of a single model runs
its torch operations on one thread (:func:`single_torch_thread`, around
``fit`` and the bandits' ``update``), as scikit-learn's ``KMeans`` limits
the BLAS pool inside its ``fit``; the user's setting is restored afterwards.
It also makes a fitted tree independent of the machine's number of cores:
another thread count sums in another order. A forest's batched members are
larger steps that a second thread speeds up; its ``fit`` is not wrapped.

The setting is process-wide: while fits run in several Python threads at
once, the first one to start records the user's value and the last one to
finish restores it. Torch-free until called: the wrapper imports torch only
when the wrapped method runs (every wrapped method trains with torch), and
does nothing where torch is not installed (the method then raises its own
``ImportError``).
"""

import contextlib
import functools
import threading

__all__ = ["one_torch_thread", "single_torch_thread"]

_lock = threading.Lock()
_active = 0  # wrapped calls running now, in any thread
_saved = None  # torch.get_num_threads() before the first of them


@contextlib.contextmanager
def one_torch_thread():
    """Run the block with ``torch.set_num_threads(1)``; the previous value is
    restored when the last such block of the process ends."""
    global _active, _saved
    try:
        import torch
    except ImportError:  # the fit raises require_torch's error
        yield
        return
    with _lock:
        if _active == 0:
            _saved = torch.get_num_threads()
            if _saved != 1:
                torch.set_num_threads(1)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved != 1:
                torch.set_num_threads(_saved)


def single_torch_thread(method):
    """Decorate a method that trains one model with torch: it runs in
    :func:`one_torch_thread`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with one_torch_thread():
            return method(*args, **kwargs)

    return wrapper
