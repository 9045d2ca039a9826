"""The one consistency check between fitted arrays and the compiled kernels.

Kernels are dumb: they index arrays by the sizes they are told and would read
out of bounds (and crash the process) if, say, a tree's depth no longer
matched its weight matrix. A fitted model's arrays are plain, public numpy
attributes, so they can be edited after fitting or arrive from a hand-made
or corrupted pickle. Every path into a kernel therefore goes through
:func:`check_fitted_arrays` first, which checks in O(size of the model), far
less than routing itself costs:

* each array is a numpy array of the expected dtype, C-contiguous,
* its shape matches the sizes derived from the other arrays (depth, number of
  features, outputs, facets),
* float arrays are finite where the kernel would otherwise compute garbage,
* index arrays stay within the bounds the kernel will use them for.

A failed check raises :class:`ValueError` naming the array and what was
expected; nothing is reached that could crash. The derived sizes
(``max_depth``, ``n_features``, ``n_outputs``) are read-only properties of the
fitted trees, computed from the arrays, so they can never disagree with them.

:func:`check_finite_model` is the last step of every ``fit``: a model whose
predictions on its own training data are not finite is never returned.
:func:`check_layer_size` and :func:`check_layer_input` are the argument and
input checks shared by the public torch layers.
"""

import numpy as np

from ._warn import without_feature_names

__all__ = [
    "check_finite_model",
    "check_fitted_arrays",
    "check_layer_input",
    "check_layer_size",
]


def _describe(a):
    if not isinstance(a, np.ndarray):
        return type(a).__name__
    order = "C-contiguous" if a.flags.c_contiguous else "non-contiguous"
    return f"{a.dtype} array of shape {a.shape} ({order})"


def check_fitted_arrays(owner, specs):
    """Check fitted arrays before they are handed to a compiled kernel.

    Parameters
    ----------
    owner : str
        Name of the fitted object (used in the message).
    specs : iterable of ``(name, array, dtype, shape, finite)``
        ``shape`` is a tuple whose entries are ints (required size) or
        ``None`` (any size); ``finite`` asks for finite values.

    Raises
    ------
    ValueError
        When an array has the wrong type, dtype, shape or memory layout, or
        holds non-finite values where finite ones are required.
    """
    for name, a, dtype, shape, finite in specs:
        ok = (
            isinstance(a, np.ndarray)
            and a.dtype == dtype
            and a.ndim == len(shape)
            and all(s is None or s == d for s, d in zip(shape, a.shape))
            and a.flags.c_contiguous
        )
        if not ok:
            want = tuple("*" if s is None else s for s in shape)
            raise ValueError(
                f"Inconsistent fitted {owner}: {name} is a {_describe(a)}, expected a "
                f"C-contiguous {np.dtype(dtype)} array of shape {want}. Fitted arrays "
                "must keep the sizes they were fitted with; refit the estimator or "
                "build a new tree through its constructor."
            )
        if finite and not np.isfinite(a).all():
            raise ValueError(
                f"Inconsistent fitted {owner}: {name} holds non-finite values."
            )


def check_finite_model(estimator, X):
    """Raise if a just-fitted model predicts non-finite values on ``X``.

    The last step of every ``fit`` (``X`` is the validated training input):
    whatever went wrong in training (an overflow the loss did not show, a
    target scale beyond float64), the caller never gets a model that returns
    NaN or infinity.
    """
    # The first n_features_in_ columns: without the indicator columns of
    # categorical features, which prediction appends itself.
    X = X[: min(X.shape[0], 4096), : getattr(estimator, "n_features_in_", X.shape[1])]
    name = type(estimator).__name__
    for method in ("predict_proba", "predict", "transform"):
        fn = getattr(estimator, method, None)
        if fn is None or (method == "predict" and hasattr(estimator, "predict_proba")):
            continue
        with without_feature_names(estimator):
            # X is fit's validated array: it has no feature names by design.
            out = np.asarray(fn(X))
        if out.dtype.kind in "fc" and not np.isfinite(out).all():
            raise FloatingPointError(
                f"{name} produced non-finite {method} values on its own training "
                "data (the inputs or targets are too large to represent after "
                "scaling, or training diverged). Rescale X / y to moderate "
                "magnitudes or try a smaller learning_rate."
            )
        break


def check_layer_size(layer, name, value, low=1, high=None):
    """An integer size argument of a public torch layer, as a Python ``int``.

    Floats (even integral ones such as ``4.0``), booleans and values outside
    ``[low, high]`` raise :class:`ValueError`: a size is never silently
    truncated.
    """
    import numbers

    if (
        not isinstance(value, numbers.Integral)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{layer}: {name} must be an integer {bound}; got {value!r}.")
    return int(value)


def check_layer_input(layer, x, in_features):
    """The input of a public torch layer: a finite ``(n, in_features)`` tensor.

    Uses tensor methods only, so this module does not import torch. NaN or
    infinite inputs raise :class:`ValueError` (a layer would otherwise route
    them somewhere arbitrary and return numbers that look valid).
    """
    if not (hasattr(x, "dim") and hasattr(x, "is_floating_point")):  # torch.Tensor's methods
        raise TypeError(f"{layer} expects a torch.Tensor input; got {type(x).__name__} "
                        "(convert it with torch.as_tensor(x, dtype=torch.float32)).")
    if x.dim() != 2 or x.shape[1] != in_features:
        raise ValueError(
            f"{layer} expects input of shape (n, {in_features}); got {tuple(x.shape)}."
        )
    if x.is_floating_point() and not bool(x.detach().isfinite().all()):
        raise ValueError(f"{layer} received NaN or infinite input values.")
