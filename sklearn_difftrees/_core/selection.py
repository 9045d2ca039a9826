"""Paired choice between two fitted models on the same validation rows.

A method that has a default model and an alternative (a refined tree and
the greedy tree it grew from; a tree trained from a random start and one
trained from a greedy start) scores both row by row on the same held-out
rows and switches only when the alternative's advantage is clearly larger
than its noise. :func:`paired_advantage` is that statistic: with per-row
differences ``d_i = loss_default_i - loss_alternative_i`` (positive where
the alternative does better) and weights ``w``, the mean advantage
``gain = sum(w d) / sum(w)`` and ``z = gain / sqrt(mean_w(d**2) / n_eff)``
(``n_eff`` the effective number of rows of the weights). For 0 / 1 losses
``z`` is the sign test's ``(wins - losses) / sqrt(wins + losses)``; the
second moment instead of the variance makes it conservative. The method
picks the threshold (ConvexPolytopeTree 3 among up to two alternatives,
DGT 2 for its one).

On a small table the early-stopping hold-out is a few dozen rows, too few
for the statistic to tell a tree that generalizes from one that overfits
(an oblique split over 200 features fits any 300 rows). There
:func:`cross_check` compares the method's own fit with the depth-tuned
CART *out of fold*: the method (its parameters, its cross-check off) and
the CART are fitted on :data:`CROSS_CHECK_FOLDS` - 1 folds and score the
held-out fold, so every row is scored once, and the statistic is taken over
all rows. A method whose CART clearly wins (above :data:`CROSS_CHECK_Z`)
returns that CART in its own fitted format. On more rows, where the
early-stopping hold-out holds about 500 or more of them, :func:`validation_check`
asks the same question of the fitted model itself on those rows: the
depth-tuned CART grown on the training part against the model, row by row
(a table whose classes follow a few thresholds on skewed features, as a
thyroid screen, is one on which a trained oblique tree can fall a point or
two short of the CART). For a classifier, where the CART is better without
clearing the bar (out of fold) or ties (on the validation rows), the
model's fit of its own rows decides (:func:`cross_checked_cart`,
:func:`validation_check`).

Nothing here imports torch or knows a method.
"""

import contextlib
import math
from collections import namedtuple

import numpy as np

from ._warn import ignore_sklearn, in_internal_fit, internal_fit, quiet

__all__ = ["CROSS_CHECK_FOLDS", "CROSS_CHECK_MAX_ROWS", "CROSS_CHECK_Z", "CrossCheck",
           "cross_check", "cross_check_applies", "cross_check_depth", "cross_checked_cart",
           "cross_checked_plan", "paired_advantage", "validation_check",
           "validation_check_applies"]

#: Folds of :func:`cross_check`: its fits see two thirds of the rows, as the
#: depth's cross-validation (:func:`~.greedy.cv_depth`).
CROSS_CHECK_FOLDS = 3
#: How clearly the CART must beat the method out of fold to be returned: a
#: false switch about 7% of the time when the two predict equally well,
#: which then costs nothing (the CART is as good, and smaller); a lower bar
#: than ``init="auto"``'s 2, since the out-of-fold statistic of an
#: overfitting tree moves by about 1 with the folds' draw (measured on a
#: 400 x 200 table: 1.9 to 4.1 over four draws).
CROSS_CHECK_Z = 1.5
#: Most rows on which :func:`cross_check` runs. Its
#: ``CROSS_CHECK_FOLDS`` fits on two thirds of the rows and their CARTs make
#: a fit two to three and a half times as long (a few seconds at most here);
#: on more rows, the 10% early-stopping hold-out holds at least 500 rows, on
#: which :func:`validation_check` compares the fitted model with the CART.
CROSS_CHECK_MAX_ROWS = 5_000

#: What :func:`cross_check` returns: the CART's mean advantage ``gain`` and
#: statistic ``z`` over the method out of fold, and the CART's ``criterion``.
CrossCheck = namedtuple("CrossCheck", ["gain", "z", "criterion"])

# What cross_check's clones change: X and w are the fit rows as the method
# trains on them, and the clones are silent.
_CLONE_PARAMS = {"categorical_features": None, "class_weight": None, "verbose": 0}

def paired_advantage(loss_default, loss_alternative, w=None):
    """``(gain, z)`` of the alternative over the default (see the module).

    ``z`` is 0 when every difference is 0.
    """
    d = np.asarray(loss_default, dtype=np.float64) - np.asarray(loss_alternative,
                                                                 dtype=np.float64)
    w = np.ones_like(d) if w is None else np.asarray(w, dtype=np.float64)
    W = float(w.sum())
    gain = float((w * d).sum() / W)
    second = float((w * d**2).sum() / W)
    if second <= 0.0:
        return gain, 0.0
    n_eff = W**2 / float((w**2).sum())
    return gain, gain / math.sqrt(second / n_eff)


def cross_check_applies(n_rows):
    """Whether a fit on ``n_rows`` rows runs :func:`cross_check` (not one of
    its own fits, and at most :data:`CROSS_CHECK_MAX_ROWS` rows)."""
    return not in_internal_fit() and n_rows <= CROSS_CHECK_MAX_ROWS


def validation_check_applies(n_rows):
    """Whether a fit on ``n_rows`` rows runs :func:`validation_check` instead
    (not one of a check's fits, and more than :data:`CROSS_CHECK_MAX_ROWS`
    rows)."""
    return not in_internal_fit() and n_rows > CROSS_CHECK_MAX_ROWS


def _row_losses(pred, Y, classification):
    """0 / 1 errors, or squared errors averaged over the outputs."""
    if classification:
        return (np.asarray(pred) != Y).astype(np.float64)
    err = np.reshape(pred, Y.shape).astype(np.float64) - Y
    return (err.reshape(Y.shape[0], -1) ** 2).mean(axis=1)


def cross_check_depth(X, Y, w, *, classification, max_depth, seed):
    """Depth of the CART that :func:`cross_check` compares a method with: the
    depth from ``FLOOR_DEPTH`` (2) to ``max_depth`` at which a CART
    cross-validates best (:func:`~.greedy.tuned_depth`): never shallower
    than the greedy floor's reference, which a returned tree must fit as
    well as (and the tuned CART of the project's baseline, depths 2 to 12)."""
    return _tuned(X, Y, w, classification=classification, max_depth=max_depth, seed=seed)[0]


def _tuned(X, Y, w, *, classification, max_depth, seed):
    """:func:`cross_check_depth` and the rows it was tuned on (at most the
    core's ``GREEDY_MAX_ROWS``: :func:`~.greedy.tuned_depth`)."""
    from .greedy import FLOOR_DEPTH, tuned_depth

    return tuned_depth(X, Y, w, classification=classification, max_depth=max_depth,
                       min_depth=min(FLOOR_DEPTH, max_depth), seed=seed)


def cross_check(est, X, Y, w, *, classification, max_depth, seed, clone_params=None,
                cart_params=None):
    """How much better the depth-tuned CART predicts held-out rows than ``est``.

    ``X`` are the fit rows, ``Y`` their encoded target (class codes, or the
    standardized target of a regressor: ``est``'s clones are fitted on it
    and predict in its terms), ``w`` their weights (class weights folded
    in: the clones get ``class_weight=None``, and ``categorical_features=None``
    since ``X`` holds the expanded columns). For each of
    :data:`CROSS_CHECK_FOLDS` (stratified for a classifier) folds, a clone
    of ``est`` is fitted on the other folds and so are the depth-tuned CARTs
    of those rows (their depth, 2 to ``max_depth``, by
    :func:`cross_check_depth`; information gain and Gini, or squared error:
    the CART the method would return); all score
    the fold (0 / 1 errors, squared errors). ``clone_params`` are set on
    the clones (e.g. the depth and start ``est`` chose, so that a clone
    trains the model as chosen once, not the choice again); ``cart_params``
    are more arguments of the CARTs (e.g. the method's leaf-size limits).

    Returns :data:`CrossCheck` ``(gain, z, criterion)``: the criterion whose
    CART erred less over all rows, and :func:`paired_advantage` of that CART
    over the clones (positive: the CART does better); or ``None`` when the
    folds cannot be drawn or a clone's fit refuses its rows (``ValueError``,
    ``FloatingPointError``, ``MemoryError``: the check is then skipped; an
    error of the CARTs' or the losses' code propagates). The clones' warnings and
    output are silenced. The CARTs grow on ``X`` standardized (the core's
    ``fit_standardizer``, as the methods' own CARTs): their splits do not
    depend on it, but scikit-learn casts their input to float32, whose
    range and resolution raw features may exceed.
    """
    from sklearn.base import clone
    from sklearn.model_selection import KFold, StratifiedKFold

    from .greedy import fit_cart
    from .validation import fit_standardizer

    criteria = ("entropy", "gini") if classification else ("squared_error",)
    splitter = (StratifiedKFold if classification else KFold)(
        CROSS_CHECK_FOLDS, shuffle=True, random_state=seed)
    mine = np.empty(X.shape[0])
    cart = {criterion: np.empty(X.shape[0]) for criterion in criteria}
    # internal_fit: the clones do not cross-check themselves, nor warn about
    # their part of the rows; quiet: their warnings (this thread's only).
    with internal_fit(), quiet():
        # The CARTs' rows: scikit-learn's trees cast X to float32, whose range
        # and resolution raw features may exceed (X * 1e200, X + 1e9).
        mean, scale = fit_standardizer(X, w)
        Z = (X - mean) / scale
        # A class of fewer rows than folds: scikit-learn's "least populated
        # class" warning is filtered (then only), under ignore_sklearn's lock.
        rare = (classification
                and np.unique(Y, return_counts=True)[1].min() < CROSS_CHECK_FOLDS)
        try:  # ValueError: fewer rows, or members of every class, than folds
            with (ignore_sklearn(message="The least populated class", category=UserWarning)
                  if rare else contextlib.nullcontext()):
                folds = list(splitter.split(X, Y if classification else None))
        except ValueError:
            return None
        for a, b in folds:
            model = clone(est)
            # The rows as the method trains on them: category columns
            # already encoded and expanded, class weights already in w.
            model.set_params(**{k: v for k, v in _CLONE_PARAMS.items()
                                if k in model.get_params()}, **(clone_params or {}))
            try:  # what the method refuses on a fold (one class left, divergence,
                # its memory limit) skips the check; the CARTs' errors are bugs
                model.fit(X[a], Y[a], sample_weight=w[a])
                pred = model.predict(X[b])
            except (ValueError, FloatingPointError, MemoryError):
                return None
            mine[b] = _row_losses(pred, Y[b], classification)
            depth = cross_check_depth(Z[a], Y[a], w[a], classification=classification,
                                      max_depth=max_depth, seed=seed)
            for criterion, losses in cart.items():
                tree = fit_cart(Z[a], Y[a], w[a], depth=depth, criterion=criterion,
                                classification=classification, seed=seed,
                                **(cart_params or {}))
                losses[b] = _row_losses(tree.predict(Z[b]), Y[b], classification)
    criterion = min(criteria, key=lambda c: float(np.average(cart[c], weights=w)))
    return CrossCheck(*paired_advantage(mine, cart[criterion], w), criterion)


def _model_losses(est, decision, X, Y, classification):
    """Per row of ``X``, the fitted model's loss (:func:`_row_losses`) from its
    ``decision`` (see :func:`validation_check`)."""
    out = np.asarray(decision(X), dtype=np.float64)
    if classification:
        return (out.argmax(axis=1) != Y).astype(np.float64)
    return _row_losses((out - est._target_mean) / est._target_scale, Y, False)


def validation_check(est, decision, X, Z, Y, w, tr, va, *, classification, max_depth, seed,
                     cart_params=None):
    """How much better the depth-tuned CART predicts the validation rows than ``est``.

    The question of :func:`cross_check` on a table too large for it, asked of
    the fitted ``est`` itself: ``X``, ``Z``, ``Y`` and ``w`` are the fit rows
    (as the method trains on them, raw, standardized; encoded target and
    weights, as there) and ``tr``, ``va`` the positions of the training and
    the early-stopping validation rows among them. ``decision(X)`` is the
    fitted model's output on such rows: class scores (their argmax is the
    class code) or predictions in the target's units (standardized here by
    ``est._target_mean`` and ``est._target_scale``). The CARTs of both
    criteria (or squared error) are grown on ``Z[tr]`` (at most the core's
    ``GREEDY_MAX_ROWS`` of them, the rows the depth is tuned on) at the
    depth :func:`cross_check_depth` tunes on those rows; they and the model score
    every fit row (0 / 1 errors, squared errors), and the criterion whose
    CART erred less on the validation rows is compared (losses equal up to
    rounding count as equal). Returns :data:`CrossCheck` ``(gain, z,
    criterion)``: the CART's advantage on the validation rows; for a
    classifier, ``z`` is raised to the statistic on the training rows where
    the CART predicts the validation rows at least as well (``gain >= 0``)
    and fits the training rows better: a CART that is then no worse on any
    row the fit saw, and smaller, dominates (not for a regressor, whose
    leaves, shrunk towards the mean or fitted on every row, would always fit
    the training rows worse than the CART's means of them). ``est`` chose its
    epoch (and its start) on the validation rows, so its score there is, if
    anything, optimistic.
    """
    from .greedy import fit_cart

    mine = _model_losses(est, decision, X, Y, classification)
    # Tuned and grown on at most GREEDY_MAX_ROWS training rows (the CARTs of
    # both criteria on all 90,000 of the 100k x 50 table's took 6 s).
    depth, grow = _tuned(Z[tr], Y[tr], w[tr], classification=classification,
                         max_depth=max_depth, seed=seed)
    grow = tr[grow]
    cart = {}
    with internal_fit(), quiet():
        for criterion in (("entropy", "gini") if classification else ("squared_error",)):
            tree = fit_cart(Z[grow], Y[grow], w[grow], depth=depth, criterion=criterion,
                            classification=classification, seed=seed, **(cart_params or {}))
            cart[criterion] = _row_losses(tree.predict(Z), Y, classification)
    criterion = min(cart, key=lambda c: float(np.average(cart[c][va], weights=w[va])))
    theirs = _settled(mine, cart[criterion])
    gain, z = paired_advantage(mine[va], theirs[va], w[va])
    if classification and gain >= 0:
        z = max(z, paired_advantage(mine[tr], theirs[tr], w[tr])[1])
    return CrossCheck(gain, z, criterion)


def _settled(mine, theirs):
    """``theirs`` with the losses that equal ``mine`` up to rounding set to
    ``mine`` (a relative 1e-9, or 1e-12 of the squared standardized target:
    errors a millionth of its spread): a regressor that predicts what the
    CART does, up to float noise, does not lose to it (the paired statistic
    is scale-free). 0 / 1 losses are unchanged."""
    close = np.abs(theirs - mine) <= 1e-9 * (np.abs(mine) + np.abs(theirs)) + 1e-12
    return np.where(close, mine, theirs)


def cross_checked_cart(est, X, Z, Y, w, *, classification, max_depth, seed, clone_params=None,
                       cart_params=None, split=None, decision=None):
    """``(cart, depth)`` that replaces ``est``'s fitted model, or ``None``.

    :func:`cross_check` of ``est`` on the fit rows ``X`` (raw, as ``fit``
    validated them; ``Y``, ``w``, ``max_depth``, ``seed``, ``clone_params``
    and ``cart_params`` as there), or with ``split = (tr, va)`` (positions
    of the training and validation rows among them) :func:`validation_check`
    of the fitted model's ``decision``. For a classifier out of fold, where
    the CART's advantage is positive but its statistic at most
    :data:`CROSS_CHECK_Z`, and ``decision`` is given, the statistic becomes
    that of the CART below over the fitted model on every fit row (their
    fit: a CART better out of fold that fits the rows clearly better
    dominates). Where the statistic exceeds
    :data:`CROSS_CHECK_Z`, the CART of the criterion that erred less, grown
    on ``Z`` (the same rows as the method's splits see them, e.g.
    standardized) at the depth :func:`cross_check_depth` tunes on them,
    and that depth; should that CART fit the rows worse than the greedy
    floor's reference (:func:`~.greedy.greedy_reference`: the better of the
    depth-2 CARTs of both criteria, which a returned tree must fit as well
    as), that reference and depth 2. ``est.verbose`` prints the switch.
    """
    from .greedy import FLOOR_DEPTH, fit_cart, fit_score, greedy_reference

    if split is None:
        result = cross_check(est, X, Y, w, classification=classification,
                             max_depth=max_depth, seed=seed,
                             clone_params=clone_params, cart_params=cart_params)
    else:
        result = validation_check(est, decision, X, Z, Y, w, *split,
                                  classification=classification, max_depth=max_depth,
                                  seed=seed, cart_params=cart_params)
    if result is None:
        return None
    def tuned_cart():
        """``(depth, CART)`` tuned and grown on every fit row."""
        depth = cross_check_depth(Z, Y, w, classification=classification,
                                  max_depth=max_depth, seed=seed)
        return depth, fit_cart(Z, Y, w, depth=depth, criterion=result.criterion,
                               classification=classification, seed=seed,
                               **(cart_params or {}))

    z, cart, where = result.z, None, "out-of-fold" if split is None else "validation"
    if (classification and split is None and decision is not None and result.gain > 0
            and z <= CROSS_CHECK_Z):
        # Better out of fold, not clearly: the CART also dominates where it fits
        # the fit rows clearly better than the fitted model (a model whose own
        # training ended worse than its clones'; a gain of exactly 0, as where
        # the clones fall back to a CART themselves, says nothing of it).
        depth, cart = tuned_cart()
        z = paired_advantage(_model_losses(est, decision, X, Y, classification),
                             _row_losses(cart.predict(Z), Y, classification), w)[1]
        where = "fit-rows"
    if z <= CROSS_CHECK_Z:
        return None
    if cart is None:
        depth, cart = tuned_cart()
    if getattr(est, "verbose", 0):
        print(f"{type(est).__name__}: a depth-{depth} CART ({result.criterion}) replaces "
              f"the fitted model ({where} check, paired statistic {z:.2f} > "
              f"{CROSS_CHECK_Z})")
    ref = greedy_reference(Z, Y, w, depth=depth, classification=classification, seed=seed,
                           **(cart_params or {}))
    if fit_score(cart.predict(Z), Y, w, classification) < ref.score:
        return ref.cart, min(depth, FLOOR_DEPTH)
    return cart, depth


def cross_checked_plan(est, plan, *, max_depth, clone_params=None, decision=None):
    """:func:`cross_checked_cart` after a torch-trained model's fit.

    ``plan`` is the fit's :class:`~._plan._FitPlan` (its validated ``X``,
    encoded ``Y``, weights, rows ``keep``, validation ``split`` and seed);
    the CART grows on the standardized fit rows
    (:func:`~.validation.fit_rows`). On more than :data:`CROSS_CHECK_MAX_ROWS`
    rows the check is :func:`validation_check` of ``decision`` (the fitted
    model's output on the fit rows) on the early-stopping split (none
    without early stopping or ``decision``). Returns ``None`` (no check, inside
    another check; or the model is kept), else ``(cart, depth, rows)`` with
    ``rows = (X, Z, Y, w)`` of the fit rows.
    """
    from sklearn.base import is_classifier

    from .validation import fit_rows

    split = None
    if not cross_check_applies(plan.keep.size):
        if (not validation_check_applies(plan.keep.size) or decision is None
                or plan.split is None or not plan.split[1].size):
            return None
        split = plan.split
    rows = fit_rows(est, plan.X, plan.Y, plan.sample_weight, plan.keep)
    found = cross_checked_cart(est, *rows, classification=is_classifier(est),
                               max_depth=max_depth, seed=plan.train_kwargs["seed"],
                               clone_params=clone_params, split=split, decision=decision)
    return None if found is None else (*found, rows)
