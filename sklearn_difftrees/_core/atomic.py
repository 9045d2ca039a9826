"""``fit_context``: the decorator of every ``fit`` of the package.

It is scikit-learn's ``_fit_context`` (parameter validation, nested
validation skipped), and it makes a fit all or nothing: a fit that raises
(divergence, the memory limit, a refused input found late, a
``KeyboardInterrupt``) leaves the estimator as it was before the call. The
attributes a fit sets one after another (``n_features_in_``, ``classes_``, the
standardization, then the tree) would otherwise be left half replaced: a
fresh estimator raised ``AttributeError`` instead of ``NotFittedError`` at
``predict``, and a fitted one mixed the new ``classes_`` or target scale with
the old tree (wrong labels, an ``IndexError``, or predictions on another
scale). The snapshot is shallow, which is enough because a fit assigns its
fitted attributes instead of editing them in place.
"""

import functools

from .._compat import _fit_context

__all__ = ["fit_context", "keeps_state"]


def keeps_state(method, drop=()):
    """``method`` made all or nothing: a call that raises leaves the object's
    attributes as they were (a shallow snapshot), and removes the ``drop``
    attributes (live caches that the failed call may have advanced)."""

    @functools.wraps(method)
    def wrapper(obj, *args, **kwargs):
        before = dict(obj.__dict__)
        try:
            return method(obj, *args, **kwargs)
        except BaseException:
            obj.__dict__.clear()
            obj.__dict__.update(before)
            for name in drop:
                obj.__dict__.pop(name, None)
            raise

    return wrapper


def fit_context(*, prefer_skip_nested_validation=True):
    """Decorate ``fit``: scikit-learn's ``_fit_context``, restored on failure.

    Parameters
    ----------
    prefer_skip_nested_validation : bool, default=True
        Passed to scikit-learn's ``_fit_context``.

    Returns
    -------
    decorator : callable
        Wraps a ``fit(self, ...)`` method.
    """

    def decorator(fit):
        validated = _fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)(fit)
        return functools.wraps(fit)(keeps_state(validated))

    return decorator
