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

__all__ = ["fit_context"]


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

        @functools.wraps(fit)
        def wrapper(estimator, *args, **kwargs):
            before = dict(estimator.__dict__)
            try:
                return validated(estimator, *args, **kwargs)
            except BaseException:
                estimator.__dict__.clear()
                estimator.__dict__.update(before)
                raise

        return wrapper

    return decorator
