"""The plan of one gradient-trained fit (:class:`_FitPlan`), what
:meth:`~sklearn_difftrees._core.base.BaseGradientModel._fit_setup` hands to the
training loop and, after it, to ``_fit_complete``. Torch-free."""

__all__ = ["_FitPlan"]


class _FitPlan:
    """What :meth:`BaseGradientModel._fit_setup` prepares for the training loop.

    ``module`` (built and seeded, on ``device``), ``train_data`` (tensors
    ``(X, Y, w)``), ``train_kwargs`` (the other arguments of
    :func:`~sklearn_difftrees._core._trainer.train`, ``validation_data`` and
    ``seed`` included), and what :meth:`~BaseGradientModel._fit_complete`
    needs to freeze the model: the validated ``X``, encoded ``Y``,
    ``sample_weight`` and the indices ``keep`` of the rows of nonzero weight;
    ``start_rows``: the numpy training rows ``(Z, Y, w)`` that
    ``_init_module`` started the module from (``None`` in a continuation);
    ``split``: the positions in ``keep`` of the training and the early-stopping
    validation rows, ``(tr, va)`` (``None`` without early stopping).
    """

    __slots__ = ("module", "train_data", "train_kwargs", "device", "X", "Y",
                 "sample_weight", "keep", "start_rows", "split")

    def __init__(self, module, train_data, train_kwargs, device, X, Y, sample_weight, keep,
                 start_rows=None, split=None):
        self.module, self.train_data, self.train_kwargs = module, train_data, train_kwargs
        self.device, self.X, self.Y = device, X, Y
        self.sample_weight, self.keep, self.start_rows = sample_weight, keep, start_rows
        self.split = split
