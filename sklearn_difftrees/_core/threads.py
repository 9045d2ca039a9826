"""One thread while a single model trains.

A single tree's training steps are small (a mini-batch of 128 rows, or a few
thousand on large tables, through one tree): torch's intra-op thread pool
costs more than it saves there. On a 2-core machine (AMD EPYC, 2026-11-27;
`docs/design.md`, "Threads") two torch threads made the default fits 1.2 to
2 times slower than one with idle threads sleeping (``OMP_WAIT_POLICY=PASSIVE``)
and as slow with twice the CPU time with them spinning (torch's default).
Torch's default is one thread per core, so every fit of a single model runs
its torch operations on one thread, as scikit-learn's ``KMeans`` limits the
BLAS pool inside its ``fit``; the user's setting is restored afterwards.
It also makes a fitted tree independent of the machine's number of cores:
another thread count sums in another order. A forest's batched members are
larger steps that a second thread speeds up; its ``fit`` is not wrapped.

The BLAS pools (numpy's and scipy's OpenBLAS or MKL, through threadpoolctl,
a scikit-learn dependency) get one thread too: a fit's numpy work is many
small calls (NonGreedy's per-node solves, LatentTree's logistic start,
standardization), which a pool of one thread per core makes slower, and
much slower while other work holds the other cores.

- :func:`single_thread`: torch and BLAS, around a single model's ``fit``;
- :func:`single_torch_thread`: torch only, around a bandit's ``update``
  (called once per round: the BLAS pools' limit costs about 0.1 ms);
- :func:`single_blas_thread`: BLAS only, around NonGreedy's ``fit`` (numpy
  only: it must not import torch).

The settings are process-wide: while fits run in several Python threads at
once, the first one to start records the user's value and the last one to
finish restores it. Torch-free until called: the torch setting imports torch
only when the wrapped method runs (every method it wraps trains with torch),
and does nothing where torch is not installed (the method then raises its
own ``ImportError``).
"""

import contextlib
import functools
import threading

__all__ = ["one_blas_thread", "one_torch_thread", "single_blas_thread", "single_thread",
           "single_torch_thread"]


class _OneThread:
    """A process-wide one-thread setting held while any block runs in it.

    ``limit()`` sets one thread and returns the function that restores the
    previous setting (``None``: nothing to restore). It runs when the first
    block of the process starts; the restore runs when the last one ends.
    """

    def __init__(self, limit):
        self._limit = limit
        self._lock = threading.Lock()
        self.active = 0  # blocks running now, in any thread
        self._restore = None

    @contextlib.contextmanager
    def __call__(self):
        with self._lock:
            if self.active == 0:
                self._restore = self._limit()
            self.active += 1
        try:
            yield
        finally:
            with self._lock:
                self.active -= 1
                if self.active == 0 and self._restore is not None:
                    restore, self._restore = self._restore, None
                    restore()


def _limit_torch():
    try:
        import torch
    except ImportError:  # the fit raises require_torch's error
        return None
    saved = torch.get_num_threads()
    if saved == 1:
        return None
    torch.set_num_threads(1)
    return lambda: torch.set_num_threads(saved)


_controller = None  # threadpoolctl's view of the loaded BLAS libraries (cached)


def _limit_blas():
    global _controller
    if _controller is None:  # a few ms: once (numpy and scipy load their BLAS on import)
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas").restore_original_limits


one_torch_thread = _OneThread(_limit_torch)
one_torch_thread.__doc__ = """Run the block with ``torch.set_num_threads(1)``;
the previous value is restored when the last such block of the process ends."""
one_blas_thread = _OneThread(_limit_blas)
one_blas_thread.__doc__ = """Run the block with the BLAS pools on one thread
(threadpoolctl); their previous sizes are restored when the last such block of
the process ends."""


def _wrap(blocks, method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with contextlib.ExitStack() as stack:
            for block in blocks:
                stack.enter_context(block())
            return method(*args, **kwargs)

    return wrapper


def single_thread(method):
    """Decorate a method that trains one model with torch: it runs in
    :func:`one_torch_thread` and :func:`one_blas_thread`."""
    return _wrap((one_torch_thread, one_blas_thread), method)


def single_torch_thread(method):
    """Decorate a method that updates a model with torch, called often (a
    bandit's ``update``): it runs in :func:`one_torch_thread`."""
    return _wrap((one_torch_thread,), method)


def single_blas_thread(method):
    """Decorate a method that trains one model with numpy alone: it runs in
    :func:`one_blas_thread`."""
    return _wrap((one_blas_thread,), method)
