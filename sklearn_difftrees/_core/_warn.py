"""The package's warnings, held or silenced without touching the process's filters.

``warnings.catch_warnings`` saves the process's whole filter list on entry
and restores it on exit (and ``record=True`` swaps the function that shows
warnings). Two threads whose blocks overlap (two fits under joblib's
threading backend, a web server fitting per request) restore each other's
lists out of order: one thread's ``"ignore"`` stays in the process for good.
Measured on Python 3.11 (2026-11-27): two threads each fitting a
``DGTRegressor`` left a filter behind in 9 of 10 tries, and the user's own
``warnings.warn`` afterwards was silenced in 9 of 10; scikit-learn's
``DecisionTreeRegressor`` in 0 of 10.

So the package's own warnings go through :func:`warn`, and what a fit holds
back (:func:`held`) or silences (:func:`quiet`) is decided by a context
variable, which is private to each thread: nothing global changes. Warnings
raised inside scikit-learn (a ``LogisticRegression`` start that stops at its
``max_iter``, a CART on a leaf's rows of many classes) still need a filter:
:func:`ignore_sklearn` takes a process-wide lock around ``catch_warnings``,
so that the package's own blocks never interleave; callers keep such blocks
to the one scikit-learn call and enter them only when the warning can occur.
"""

import contextlib
import contextvars
import threading
import warnings

__all__ = ["held", "ignore_sklearn", "in_internal_fit", "internal_fit", "quiet", "reissue",
           "warn", "without_feature_names"]

#: The list that collects the package's warnings in this context, or None (shown).
_SINK = contextvars.ContextVar("sklearn_difftrees_warning_sink", default=None)
#: True inside a fit on part of the user's rows (the cross-check's clones):
#: scikit-learn's warnings about those rows are not the user's.
_INTERNAL = contextvars.ContextVar("sklearn_difftrees_internal_fit", default=False)
#: Serializes the package's ``catch_warnings`` blocks across threads.
_FILTER_LOCK = threading.RLock()


def warn(message, category=UserWarning, stacklevel=1):
    """``warnings.warn`` of the package: appended to the innermost :func:`held`
    list when one is open in this context, else shown (``stacklevel`` as for
    ``warnings.warn``, counted from the caller)."""
    sink = _SINK.get()
    if sink is not None:
        sink.append((str(message), category))
        return
    warnings.warn(message, category, stacklevel=stacklevel + 1)


@contextlib.contextmanager
def held():
    """Collect the package's warnings raised inside (in this thread or
    context only) in the list it yields, as ``(message, category)`` pairs,
    instead of showing them; :func:`reissue` shows them later."""
    sink = []
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


@contextlib.contextmanager
def quiet(category=Warning):
    """Drop the package's warnings of ``category`` raised inside (this thread
    or context only); the others are shown (or held) as usual on exit."""
    with held() as caught:
        yield
    reissue([(m, c) for m, c in caught if not issubclass(c, category)], stacklevel=3)


def reissue(caught, rename=None, stacklevel=1):
    """Show (or pass to an enclosing :func:`held`) the warnings that
    :func:`held` collected; ``rename``: ``(old, new)`` replaced in every
    message."""
    for message, category in caught:
        if rename is not None:
            message = message.replace(*rename)
        warn(message, category, stacklevel=stacklevel + 1)


@contextlib.contextmanager
def ignore_sklearn(message="", category=Warning):
    """Ignore a warning that scikit-learn raises inside: ``catch_warnings``
    under a process-wide lock, so that no two threads' blocks of this package
    interleave and leave a filter behind. Keep the block short (one
    scikit-learn call) and never start threads inside it.

    The lock cannot order scikit-learn's own ``catch_warnings`` blocks in
    other threads (``check_array`` opens one): one that starts inside this
    block and ends after it restores this block's filter for good. So the
    filter is as narrow as it can be: the warning's category and message,
    attributed to a module of scikit-learn or of this package (scikit-learn's
    ``stacklevel`` points at its caller, e.g. ``_core/validation.py``), never
    to the user's own code."""
    with _FILTER_LOCK, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=message, category=category,
                                module="sklearn")  # also sklearn_difftrees
        yield


@contextlib.contextmanager
def without_feature_names(estimator):
    """Predict with ``estimator`` on fit's validated array without
    scikit-learn's "X does not have valid feature names" (raised by
    ``validate_data`` when the fit saw a frame): ``feature_names_in_`` is set
    aside for the block (the estimator is the one being fitted, in this
    thread) and put back after it, also on an error."""
    names = estimator.__dict__.pop("feature_names_in_", None)
    try:
        yield
    finally:
        if names is not None:
            estimator.feature_names_in_ = names


@contextlib.contextmanager
def internal_fit():
    """Mark the fits inside (this thread or context only) as fits on part of
    the user's rows (:func:`in_internal_fit`)."""
    token = _INTERNAL.set(True)
    try:
        yield
    finally:
        _INTERNAL.reset(token)


def in_internal_fit():
    """Whether this is a fit on part of the user's rows (a cross-check's
    clone), whose warnings about those rows the user has already had."""
    return _INTERNAL.get()
