"""Optional dependencies: one clear ``ImportError`` for each.

The base install (numpy, scipy, scikit-learn, joblib) fits
:class:`~sklearn_difftrees.NonGreedyObliqueTreeClassifier` /
``...Regressor`` and loads and predicts with every fitted estimator. Torch
(training of the other families, the torch layers), ``onnx`` (export) and
``skops`` (safe persistence) are extras; everything that needs one of them
imports it through :func:`require`, so that a missing extra gives one message
that says what to install. What only gets better with a package, and works
without it, imports it through :func:`try_import` (onnxruntime: ``to_onnx``
of a Pipeline runs the exported model when it can).
"""

import importlib

__all__ = ["TORCH_CPU_INDEX_URL", "require", "require_torch", "try_import"]

#: PyTorch's index of CPU-only wheels (no CUDA packages, a fraction of the size).
TORCH_CPU_INDEX_URL = "https://download.pytorch.org/whl/cpu"

_EXTRA_OF = {"torch": "torch", "onnx": "onnx", "skl2onnx": "onnx", "skops": "skops"}


def require(module, purpose, *, extra=None):
    """Import and return ``module``, or raise an ``ImportError`` saying how to get it.

    Parameters
    ----------
    module : str
        Name of the module to import (``"torch"``, ``"onnx"``, ...).
    purpose : str
        What needs it, e.g. ``"DGTClassifier.fit"``; starts the message.
    extra : str, default=None
        The extra of ``sklearn-difftrees`` that installs it (by default the
        one named after the top-level package of ``module``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = extra or _EXTRA_OF.get(top, top)
        msg = (
            f"{purpose} needs {top!r}, which cannot be imported ({exc}). Install the "
            f"'{extra}' extra: pip install \"sklearn-difftrees[{extra}]\""
        )
        if top == "torch":
            msg += (
                f". For the CPU-only build of torch (no CUDA packages), install torch "
                f"first from PyTorch's CPU index: pip install torch --index-url "
                f"{TORCH_CPU_INDEX_URL}"
            )
        msg += ". Loading fitted models and predicting need none of the extras."
        raise ImportError(msg, name=top) from exc


def require_torch(purpose):
    """``import torch`` for ``purpose``, or the ImportError of :func:`require`."""
    return require("torch", purpose)


def try_import(module):
    """``module``, or None when it cannot be imported (for a check or an
    improvement that is skipped without it, never for what needs it)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
