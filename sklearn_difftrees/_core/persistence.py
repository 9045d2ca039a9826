"""The version stamp every estimator carries in its pickle (and skops file).

:class:`VersionedStateMixin` sits in front of scikit-learn's ``BaseEstimator``
in the core base classes: ``__getstate__`` records the version of
sklearn_difftrees that saves the estimator, and ``__setstate__`` warns with
:class:`~sklearn_difftrees.exceptions.InconsistentVersionWarning` when another
version loads it (as scikit-learn does for its own estimators). What an
estimator pickles is its own business (see ``warm_start`` in the estimators'
docstrings); the stamp is added to whatever that is.
"""

import warnings

from .._version import __version__
from ..exceptions import InconsistentVersionWarning

__all__ = ["VERSION_KEY", "VersionedStateMixin"]

#: Key of the version in the pickled state.
VERSION_KEY = "_sklearn_difftrees_version"


class VersionedStateMixin:
    """Stamp the package version into the pickled state; warn on a mismatch.

    Put it on the left of ``BaseEstimator``. Subclasses that override
    ``__getstate__`` / ``__setstate__`` call ``super()``.
    """

    def __getstate__(self):
        state = super().__getstate__()
        if state is None:  # an object without attributes (Python >= 3.11)
            state = {}
        state = dict(state)
        state[VERSION_KEY] = __version__
        return state

    def __setstate__(self, state):
        state = dict(state)
        saved = state.pop(VERSION_KEY, "unknown (before 0.1.0)")
        if saved != __version__:
            warnings.warn(
                InconsistentVersionWarning(
                    estimator_name=type(self).__name__,
                    current_version=__version__,
                    original_version=saved,
                ),
                stacklevel=2,
            )
        super().__setstate__(state)
