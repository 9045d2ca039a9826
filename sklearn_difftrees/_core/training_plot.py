"""``plot_training_history``: the training record of a fitted estimator, per epoch."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._compat import validate_params

__all__ = ["plot_training_history"]


@validate_params({"estimator": [object], "ax": "no_validation"},
                 prefer_skip_nested_validation=True)
def plot_training_history(estimator, *, ax=None):
    """Plot the training loss and the validation score of a fit, per epoch.

    Draws ``loss_curve_`` (left axis) and, when the fit held out a
    validation set, ``validation_scores_`` (right axis; accuracy for
    classifiers, R² for regressors) against the epoch, and marks the epoch
    whose model was kept (``best_validation_score_``). This is the record of
    one fit over its epochs, not scikit-learn's
    :func:`~sklearn.model_selection.learning_curve` (scores against training
    set sizes). For a forest (``estimators_``), every member's curves are
    drawn.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator with ``loss_curve_`` (every gradient-trained
        estimator of this package, or an ensemble of them).
    ax : matplotlib Axes, default=None
        Axes of the loss; the score gets a twin axis on the right. A new
        figure when ``None``.

    Returns
    -------
    axes : tuple of matplotlib Axes
        ``(loss_ax, score_ax)``; ``score_ax`` is ``None`` without validation
        scores.
    """
    check_is_fitted(estimator)
    members = getattr(estimator, "estimators_", None)
    runs = list(members) if members is not None else [estimator]
    if not all(hasattr(m, "loss_curve_") for m in runs):
        raise TypeError(
            f"{type(estimator).__name__} has no loss_curve_: plot_training_history draws the "
            "training record of a gradient-trained estimator."
        )
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_training_history requires matplotlib: pip install 'sklearn-difftrees[plot]'."
        ) from exc
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    single = len(runs) == 1
    alpha = 1.0 if single else max(0.25, 1.0 / np.sqrt(len(runs)))
    score_ax = None
    for k, run in enumerate(runs):
        loss = np.asarray(run.loss_curve_, dtype=float)
        epochs = np.arange(1, loss.size + 1)
        ax.plot(epochs, loss, color="C0", alpha=alpha,
                label="training loss" if k == 0 else None)
        scores = getattr(run, "validation_scores_", None)
        if scores is not None and len(scores):
            if score_ax is None:
                score_ax = ax.twinx()
            s = np.asarray(scores, dtype=float)
            score_ax.plot(np.arange(1, s.size + 1), s, color="C1", alpha=alpha,
                          label="validation score" if k == 0 else None)
            best = getattr(run, "best_validation_score_", None)
            if single and best is not None and np.isfinite(best):
                hit = np.flatnonzero(np.isclose(s, best))
                if hit.size:
                    score_ax.axvline(hit[0] + 1, color="0.5", linestyle=":", linewidth=1)
                    score_ax.plot([hit[0] + 1], [best], "o", color="C1",
                                  label=f"kept (epoch {hit[0] + 1})")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss", color="C0")
    handles, labels = ax.get_legend_handles_labels()
    if score_ax is not None:
        score_ax.set_ylabel("validation score", color="C1")
        h2, l2 = score_ax.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, loc="best", fontsize="small")
    ax.set_title(f"{type(estimator).__name__}: training history")
    return ax, score_ax
