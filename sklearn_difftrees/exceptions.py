"""Warnings and errors of the package."""

from sklearn.exceptions import InconsistentVersionWarning as _SklearnInconsistentVersionWarning

__all__ = ["InconsistentVersionWarning"]


class InconsistentVersionWarning(_SklearnInconsistentVersionWarning):
    """An estimator is loaded by another version of sklearn_difftrees.

    Raised when a pickle (or a skops file) written by one version of the
    package is loaded by another. It subclasses scikit-learn's
    :class:`sklearn.exceptions.InconsistentVersionWarning`, so a filter on
    that warning covers this one too.

    Parameters
    ----------
    estimator_name : str
        Class name of the loaded estimator.
    current_version : str
        The version of sklearn_difftrees loading the estimator.
    original_version : str
        The version that saved it (``"unknown"`` for models saved before
        versions were recorded).
    """

    def __init__(self, *, estimator_name, current_version, original_version):
        self.estimator_name = estimator_name
        self.current_version = current_version
        self.original_version = original_version
        # scikit-learn's attribute names, for code that reads them.
        self.current_sklearn_version = current_version
        self.original_sklearn_version = original_version

    def __str__(self):
        return (
            f"Loading {self.estimator_name} saved by sklearn_difftrees "
            f"{self.original_version} with sklearn_difftrees {self.current_version}. "
            "Fitted state may differ between versions, so predictions may be wrong "
            "or loading may fail later. Refit the model with this version, or load "
            "it with the version that saved it (see docs/deploy.md)."
        )
