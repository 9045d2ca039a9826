"""Every private scikit-learn import of the package lives here.

scikit-learn >= 1.6 is required (``validate_data`` and ``__sklearn_tags__``).
If a private helper moves in a later release, only this module changes.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import (
    Hidden,
    Interval,
    Options,
    RealNotInt,
    StrOptions,
    validate_params,
)
from sklearn.utils.validation import _check_sample_weight, validate_data

__all__ = [
    "Hidden",
    "Interval",
    "Options",
    "RealNotInt",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "validate_data",
    "validate_params",
]
