"""The numpydoc sections the two NonGreedy estimators share (parameters,
attributes, references), kept apart from the code."""

from .._core.batching import batch_size_doc
from .._core.categorical import CATEGORICAL_ATTR_DOC, CATEGORICAL_PARAM_DOC

_DOC_PARAMS = """
    Parameters
    ----------
    max_depth : int or "auto", default="auto"
        Depth of the complete tree (``2**max_depth`` leaves), 1 to 20. The
        bound's regularization (``nu``) prunes leaves during training, so a
        deep tree need not use all of them (``n_active_leaves_``).
        ``"auto"`` chooses the depth from the data before training: a CART
        (the start's criterion: entropy / squared error) is grown to depth
        12 on each of 3 cross-validation folds of the training data and cut
        at every depth 1..12, and the depth 2..12 with the best mean
        validation accuracy (R^2) is used (ties: the shallower;
        ``depth_scores_``). The
        non-greedy tree starts from the greedy tree at that depth, so small
        noisy sets get shallow trees with few leaves and large many-class
        sets deep ones. Costs three CART fits. Every greedy tree of the fit
        (these, the start, the greedy floor's) is grown on binned features:
        at most 256 codes per standardized column, as HistGradientBoosting
        bins them, with the thresholds mapped back to raw values (exact on
        columns of at most 256 distinct values). With early stopping,
        ``"auto"`` also trains the depths 1, 2 and 4 below that depth on the
        same rows (on 16,384 of them beyond that many) and keeps one of them
        only when it is clearly better on the validation rows (paired
        statistic above 3): one oblique split can separate what a CART needs
        ten levels for. ``max_depth_`` is the depth kept.
    nu : float, default=10.0
        Bound ``||[w_i, b_i]||_2 <= nu`` on every split's weights (on the
        standardized inputs, bias included), enforced by projection after
        every step (eq. 9). Small values force large margins and prune the
        tree (fewer active leaves); large values make the bound tight but
        nearly piecewise constant. The paper tunes it over
        {0.1, 1, 4, 10, 43, 100}.
    inference : {"fast", "exact"}, default="fast"
        Loss-augmented inference. ``"fast"`` maximizes over the codes within
        Hamming distance 1 of the tree's decisions (the bound of eq. 13,
        O(depth^2 p) per sample); ``"exact"`` over all leaves (eq. 7,
        O(2^depth p) per sample).
    stable : bool, default=False
        Stable SGD (SSGD, eq. 14): the leaf assignment of every training
        sample is frozen and refreshed only when the epoch's mean bound
        improves by less than ``tol`` (relative, for bounds above 1).
    co2_iter : int, default=5
        Epochs of CO2 per tree level. The start is then the greedy CO2 tree:
        top-down, each node starts from the best axis-aligned split
        (information gain) of the samples reaching it and optimizes the
        depth-1 surrogate bound; the refined split is kept where it lowers
        the node's training loss. ``0`` starts SGD from CART itself
        (``criterion="entropy"``, or squared error, at ``max_depth``). The
        axis-aligned splits of a level are found together on binned
        features (see ``max_depth``; ties between equally good splits keep
        the first feature).
    co2_oblique : bool, default=True
        With ``co2_iter > 0``, every CO2 node of at least ``max(20, 3 p)``
        rows of positive weight also tries an oblique split: along the top
        discriminant direction of its rows (classifier: shrunk LDA, the
        threshold of best information gain) or the direction of the shrunk
        least-squares fit of its targets (regressor: the threshold of least
        squared error). It starts the node instead of the axis-aligned split
        where it raises the node's training log-likelihood (log loss, or
        Gaussian on the squared error) by more than one nat per extra weight
        (Akaike's criterion). ``False``: axis-aligned starts only, as in the
        paper.
    refit_leaves : bool, default=False
        Evaluate (for early stopping) and return the tree with closed-form
        leaves for its splits: smoothed class proportions (classifier) or
        mean targets (regressor) of the training samples each leaf receives.
        SGD itself still moves its own leaf parameters along the gradient at
        the loss-augmented leaf (Algorithm 1, line 10). ``False`` (the
        paper's procedure) returns those trained leaves; on eight bundled
        classification sets neither choice was better on most of them.
    max_iter : int, default=200
        Maximum number of SGD epochs (0 keeps the CART / CO2 start).
""" + batch_size_doc(128, large=(
    ", and the greedy start (``max_depth=\"auto\"``'s cross-validation and\n"
    "        the CART / CO2 tree) is computed on a random subsample of that many\n"
    "        rows")) + """    learning_rate : float, default=0.1
        Step size of the splits and the leaf parameters.
    momentum : float, default=0.9
        Momentum of the SGD steps.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training data (stratified for
        the classifier; CART is grown without it), stop when the validation
        loss of the hard tree has not improved by ``tol`` for
        ``n_iter_no_change`` epochs, and keep the parameters of least
        validation loss, or the starting tree where its validation score
        (accuracy / R^2) is higher than theirs. When False, the training
        bound is monitored and the last parameters are kept.
    validation_fraction : float, default=0.1
        Fraction of the training data held out for early stopping.
    n_iter_no_change : int, default=10
        Patience of the stopping rule, in epochs.
    tol : float, default=1e-4
        Minimum improvement of the monitored loss (and, with ``stable``, of
        the bound before the assignments are refreshed).
    greedy_floor : bool, default=True
        Never return a tree that fits its training rows worse than two greedy
        levels. After training, the tree's training score (accuracy / R^2 on
        every training row, the early-stopping hold-out included) is compared
        with that of a CART of depth ``min(max_depth_, 2)`` grown on the same
        rows (the better of the information-gain and Gini trees for the
        classifier; squared error for the regressor; under
        ``batch_size="auto"``, grown on the start's subsample). If it is lower,
        the CART of depth ``max_depth_`` with that criterion is returned
        instead (``greedy_fallback_``), or the shallow CART itself should it
        fit better. Costs two (regressor: one) depth-2 CART fits. On at most
        5,000 fit rows it also runs the out-of-fold cross-check: three clones
        of the estimator at ``max_depth_`` and the depth-tuned CARTs (2 to
        ``max_depth_`` levels), each fitted on two thirds of the rows and
        scored on the third; where the CART clearly predicts the held-out rows
        better (paired statistic above 1.5), that CART, embedded in the
        complete tree, is returned (``greedy_fallback_``). About two to three
        times the fit. A classifier's CART that errs less out of fold without
        clearing that bar is returned too where it fits the fit rows clearly
        better than the fitted model (the same statistic). On more rows, with
        early stopping, the fitted tree is compared with the depth-tuned CART
        grown on the training part instead, row by row on the validation rows:
        that CART replaces it where its paired statistic there exceeds 1.5, or
        (a classifier) where it predicts them at least as well and fits the
        training rows better by that statistic (a few CART fits). ``False``
        returns the trained tree whatever its fit (the paper's procedure).
""" + CATEGORICAL_PARAM_DOC + """    random_state : int, RandomState instance or None, default=None
        Seeds CART, the validation split and the shuffling through private
        generators (the global RNG is left untouched).
    verbose : int, default=0
        ``0`` is silent; ``1`` shows a progress bar over the epochs with the
        time left (one line per epoch without tqdm, see the ``progress``
        extra); ``>= 2`` adds the training surrogate bound, validation loss and
        validation score of every epoch.
"""

_DOC_ATTRS = """
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only when X has string column
        names).
""" + CATEGORICAL_ATTR_DOC + """    tree_ : ObliqueTree
        The fitted hard oblique tree (node weights in the input space,
        biases, leaf values). ``tree_.active`` marks the nodes that training
        samples reach; the other leaves are the inactive leaves of the paper.
    init_tree_ : ObliqueTree
        The tree SGD started from (the CO2 tree, or CART when
        ``co2_iter=0``), in the same format, for comparison.
    max_depth_ : int
        Depth of the fitted complete tree (``max_depth``, or the depth
        chosen by ``"auto"``).
    depth_scores_ : ndarray of shape (12,) or None
        With ``max_depth="auto"``: mean cross-validated score of CART cut at
        depths 1..12 (accuracy; for the regressor minus the mean squared
        error of the targets as the estimator trains on them); ``None``
        otherwise.
    n_active_leaves_ : int
        Number of leaves that training samples reach (paper, Figure 3).
    greedy_fallback_ : bool
        Whether ``greedy_floor`` (the training-rows floor or the
        cross-check) replaced the trained tree by a CART (``tree_`` is then
        that CART as a complete oblique tree).
    n_iter_ : int
        Number of SGD epochs run.
    loss_curve_ : list of float
        Mean surrogate bound (eq. 9, or 13 / 14) of every epoch.
    best_loss_ : float
        Smallest mean bound seen.
    validation_scores_ : list of float or None
        Validation score of every epoch ({score}), ``None`` without early
        stopping.
    best_validation_score_ : float or None
        Validation score of the kept parameters.
    feature_importances_ : ndarray of shape (n_features_in_,)
        See :attr:`BaseObliqueTree.feature_importances_`.
"""

_DOC_REFS = """
    References
    ----------
    M. Norouzi, M. D. Collins, M. Johnson, D. J. Fleet, P. Kohli. "Efficient
    Non-greedy Optimization of Decision Trees". NeurIPS, 2015.
"""
