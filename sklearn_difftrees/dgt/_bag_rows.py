"""What a forest member trains on, beyond its own ``fit``: the rows of its
bootstrap sample, early stopping on its out-of-bag rows
(``validation_fraction="oob"``), a greedy start that draws ``max_features``
features per split, and the out-of-bag score of the fitted forest.

A member's ``_fit_setup`` prepares it as its own ``fit`` would (its
standardization, its validation split of ``validation_fraction`` of its
sample, its CART start); :func:`use_bag_rows` then, before training, gives
it all the rows of its sample to train on and its out-of-bag rows to stop
on, and grows its start again on those training rows with ``max_features``
features per split (docs/dgt.md, "Forest defaults").
"""

from numbers import Integral

import numpy as np
from sklearn.base import is_classifier
from sklearn.metrics import accuracy_score, r2_score

from .._core.validation import normalize_weights

__all__ = ["MEMBER_VALIDATION_FRACTION", "oob_score", "resolve_max_features", "use_bag_rows"]

#: The members' own ``validation_fraction`` under ``"oob"``: what a member
#: without out-of-bag rows (``bootstrap=False``, or fewer than two) holds out.
MEMBER_VALIDATION_FRACTION = 0.1


def resolve_max_features(max_features, n_features):
    """The number of features of ``max_features`` (scikit-learn's forests'
    reading): ``"sqrt"`` / ``"log2"`` of ``n_features`` (at least 1), a
    float a fraction of them (at least 1), an int a count (at most
    ``n_features``), ``None`` all of them."""
    if max_features is None:
        return n_features
    if max_features == "sqrt":
        return max(1, int(np.sqrt(n_features)))
    if max_features == "log2":
        return max(1, int(np.log2(n_features)))
    if isinstance(max_features, Integral):
        if max_features > n_features:
            raise ValueError(f"max_features={max_features} exceeds the {n_features} features "
                             "the members see; pass at most that, or a fraction.")
        return int(max_features)
    return max(1, int(max_features * n_features))


def use_bag_rows(member, plan, counts_weight, forest_weight, *, oob, max_features):
    """Change ``plan`` (from ``member._fit_setup``, before training) in place.

    With ``oob`` and early stopping, when the member has at least two
    out-of-bag rows (rows of positive ``forest_weight`` that its
    ``counts_weight`` leaves at zero), it trains on every row of its sample
    and stops on its out-of-bag rows (weighted by ``forest_weight``); else
    it keeps its own split. A member started from its CART (``init="cart"``)
    is started again from the CART of its training rows, grown with
    ``max_features`` features drawn at each split (an int), when its rows
    changed or that is fewer than all its features.
    """
    from .._core._trainer import to_tensor
    from ._start import cart_start

    X, Y = plan.X, plan.Y
    oob_rows = np.flatnonzero((counts_weight == 0) & (forest_weight > 0))
    moved = oob and member.early_stopping and oob_rows.size >= 2
    if moved:
        import torch

        Z = ((X - member._feature_mean) / member._feature_scale).astype(np.float32)
        ydtype = torch.long if is_classifier(member) else torch.float32

        def pack(rows, w):
            return (to_tensor(Z[rows], plan.device), to_tensor(Y[rows], plan.device, ydtype),
                    to_tensor(w, plan.device))

        keep = plan.keep  # every row of the sample: the member's training rows
        w_fit = normalize_weights(plan.sample_weight[keep])
        plan.train_data = pack(keep, w_fit)
        plan.train_kwargs["validation_data"] = pack(oob_rows,
                                                    normalize_weights(forest_weight[oob_rows]))
        plan.start_rows = (Z[keep], Y[keep], w_fit)
        plan.split = None  # its rows are no longer the member's own split's
    if member.init == "cart" and (moved or max_features < X.shape[1]):
        # The start is set on the CPU, as in the member's own _fit_setup
        # (which has already moved the module to its training device).
        plan.module.cpu()
        cart_start(member, plan.module, *plan.start_rows, plan.train_kwargs["seed"],
                   max_features=max_features)
        plan.module.to(plan.device)


def oob_score(forest, X, y, user_weight, in_data, counts):
    """Set ``forest.oob_score_`` and its out-of-bag predictions: each row's
    predictions averaged over the members that did not draw it.

    Rows of zero weight (``~in_data``) are not in the data: they are never
    out of bag. Under ``validation_fraction="oob"`` the members also stopped
    on these rows, so the score is somewhat optimistic.
    """
    import warnings

    n_samples = X.shape[0]
    width = forest.n_classes_ if is_classifier(forest) else forest.n_outputs_
    total = np.zeros((n_samples, width))
    n_pred = np.zeros(n_samples)
    for k, count in enumerate(counts):
        oob = (count == 0) & in_data
        if oob.any():
            total[oob] += forest._member_output(k, X[oob])
            n_pred[oob] += 1
    scored = n_pred > 0
    if not scored[in_data].all():
        warnings.warn(
            "Some inputs do not have OOB scores. This probably means too few trees "
            "were used to compute any reliable OOB estimates; their OOB prediction "
            "is NaN and oob_score_ leaves them out.",
            UserWarning,
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        oob_pred = total / n_pred[:, None]
    if not scored.any():
        forest.oob_score_ = np.nan
    elif callable(forest.oob_score):  # scikit-learn's forests: metric(y_true, y_pred)
        pred = oob_pred[scored]
        forest.oob_score_ = forest.oob_score(
            y[scored], pred.argmax(axis=1) if is_classifier(forest)
            else pred if y.ndim == 2 else pred[:, 0])
    elif is_classifier(forest):
        forest.oob_score_ = accuracy_score(y[scored], oob_pred[scored].argmax(axis=1),
                                           sample_weight=user_weight[scored])
    else:
        forest.oob_score_ = r2_score(y[scored], oob_pred[scored] if y.ndim == 2
                                     else oob_pred[scored, 0], sample_weight=user_weight[scored])
    forest._set_oob_attribute(oob_pred)
