"""The memory budget checked before a fit or a layer allocates.

Several parameters make memory grow exponentially (a complete tree of depth
``D`` has ``2**D`` leaves), so a value the parameter constraints accept can
ask for more memory than the machine has, and the process then dies or
swaps instead of failing. Every estimator and layer whose memory grows that
way estimates, before allocating, the bytes its configuration needs (a
deliberate over-estimate: parameters, gradients and optimizer state, plus the
largest per-batch buffers) and calls :func:`check_memory`, which raises
:class:`MemoryLimitError` when the estimate exceeds the limit.

The limit is :data:`DEFAULT_LIMIT` (4 GiB) unless the environment variable
``SKLEARN_DIFFTREES_MAX_MEMORY`` says otherwise, read at every check (so
``os.environ[...] = ...`` works inside a running process): a number of bytes
with an optional unit (``"512MiB"``, ``"16GiB"``, ``"2e9"``, ``"8GB"``), or
``"none"`` / ``"0"`` to disable the check.

A fit that holds several models of one configuration at once (the two starts
of ``init="auto"``) builds them inside :func:`models_held` so that every
check counts all of them.
"""

import contextlib
import contextvars
import os
import re

__all__ = ["DEFAULT_LIMIT", "ENV_VAR", "MemoryLimitError", "check_memory", "memory_limit",
           "models_held"]

#: Environment variable overriding the limit.
ENV_VAR = "SKLEARN_DIFFTREES_MAX_MEMORY"
#: Default limit in bytes.
DEFAULT_LIMIT = 4 * 2**30

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


class MemoryLimitError(MemoryError, ValueError):
    """A configuration would need more memory than the package's limit.

    A :class:`MemoryError` and a :class:`ValueError` (it is raised for a
    parameter choice, before anything is allocated).
    """


def memory_limit():
    """The current limit in bytes (``None``: no limit)."""
    raw = os.environ.get(ENV_VAR, "").strip().lower()
    if not raw:
        return DEFAULT_LIMIT
    if raw in ("none", "0", "off", "inf"):
        return None
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)", raw)
    if m is None or m.group(2) not in _UNITS:
        raise ValueError(
            f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a memory size such as "
            "'512MiB', '16GiB' or 'none'."
        )
    return int(float(m.group(1)) * _UNITS[m.group(2)])


_HELD = contextvars.ContextVar("sklearn_difftrees_models_held", default=1)


@contextlib.contextmanager
def models_held(count):
    """Inside this block, :func:`check_memory` counts ``count`` models of the
    configuration it checks (thread- and task-local)."""
    token = _HELD.set(int(count))
    try:
        yield
    finally:
        _HELD.reset(token)


def _fmt(n):
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def check_memory(owner, n_bytes, what):
    """Raise :class:`MemoryLimitError` if ``n_bytes`` exceeds the limit.

    Parameters
    ----------
    owner : str
        The estimator or layer (for the message).
    n_bytes : int or float
        The estimated peak memory of the configuration.
    what : str
        The parameters that drive the estimate, e.g. ``"max_depth=16,
        n_trees=20"``: the message tells the user what to reduce.
    """
    limit = memory_limit()
    held = _HELD.get()
    n_bytes = n_bytes * held
    if held > 1:
        what = f"{what} ({held} models held at once)"
    if limit is not None and n_bytes > limit:
        raise MemoryLimitError(
            f"{owner} with {what} needs about {_fmt(n_bytes)}, above the memory "
            f"limit of {_fmt(limit)}. Reduce these parameters, or raise the limit "
            f"with the environment variable {ENV_VAR} (e.g. '16GiB', or 'none')."
        )
