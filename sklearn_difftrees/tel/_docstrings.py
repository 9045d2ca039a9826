"""Docstring sections shared by the two TEL estimators (kept apart from the code)."""

from .._core.batching import batch_size_doc
from .._core.categorical import CATEGORICAL_ATTR_DOC, CATEGORICAL_PARAM_DOC

_DOC_PARAMS = """
    Parameters
    ----------
    n_trees : int, default={n_trees}
        Number of trees, trained jointly (their outputs are summed).
    max_depth : int, default={max_depth}
        Depth of every tree (``2**max_depth`` leaves), 1 to 24.
    gamma : float, default=2.0
        Width of the fractional band of the smooth-step activation, on the
        scale of the standardized inputs: a node routes a sample fractionally
        only when its score is within ``gamma / 2`` of zero, and hard (exactly
        like a classical oblique tree) otherwise. Smaller values give fewer
        reachable leaves (faster, harder trees); larger ones smoother models.
        The default was chosen on the shared benchmark sets (the paper tunes
        ``gamma`` in ``[1e-4, 1]`` per dataset).
    backend : {{"auto", "conditional", "dense"}}, default="auto"
        How training evaluates the layer: ``"conditional"`` runs the compiled
        conditional forward/backward passes (CPU; cost proportional to the
        reachable nodes), ``"dense"`` evaluates every node with torch ops
        (any device), ``"auto"`` uses dense on a GPU and, on the CPU, before
        every pass the backend a cost model predicts faster for the depth,
        the number of features and the sparsity measured in the previous
        pass (conditional while most leaves are unreachable, dense for wide
        inputs with most leaves reachable); the choice never depends on
        timing, so seeded fits repeat. Prediction always uses the compiled
        conditional pass, without torch.
    alpha_splits : float, default=0.0
        L2 penalty on the split weights (standardized scale).
    alpha_leaves : float, default=0.0
        L2 penalty on the leaf vectors.
    init : {{"auto", "random", "cart"}}, default="auto"
        Start of training. ``"random"``: the paper's random splits and
        leaves. ``"cart"``: the ensemble set to a short gradient boosting of
        CARTs of depth ``max_depth`` (one multi-output tree per round,
        shrinkage 0.3, grown on at most 20,000 of the training rows), every
        split ``x_f <= t`` as the score ``10 (x_f - t)`` on the standardized
        features, kept as the early-stopping candidate of epoch 0.
        ``"auto"``: train from both starts side by side, with the same
        validation rows, and keep the ensemble trained from the greedy
        start only when its per-row validation losses are clearly lower (a
        paired statistic above 2), else the random start's; without
        ``early_stopping``, the random start alone. ``init_`` records which
        (see the user guide, "Two starts").
    max_iter : int, default=100
        Maximum number of epochs.
""" + batch_size_doc(128) + """    learning_rate : float, default=1e-2
        Learning rate.
    optimizer : {{"adam", "rmsprop", "sgd"}}, default="adam"
        Optimizer (the paper uses Adam).
    momentum : float, default=0.0
        Momentum of RMSprop / SGD (ignored by Adam).
    lr_schedule : {{"constant", "cosine"}}, default="constant"
        Learning-rate schedule (``"cosine"``: warm restarts, four cycles).
    grad_clip : float or None, default=None
        Maximum global gradient norm (``None``: no clipping).
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training data (stratified for
        classifiers), stop when the validation loss has not improved by
        ``tol`` for ``n_iter_no_change`` epochs and restore the best weights.
    validation_fraction : float, default=0.1
        Fraction of the training data held out for early stopping.
    n_iter_no_change : int, default=10
        Patience of the stopping rule, in epochs.
    tol : float, default=1e-4
        Minimum improvement of the monitored loss.
""" + CATEGORICAL_PARAM_DOC + """    random_state : int, RandomState instance or None, default=None
        Seeds the initialization (every tree drawn independently), the
        validation split and the shuffling through private generators.
    device : {{"auto", "cpu", "cuda"}}, default="auto"
        Where to train. ``"auto"`` is CUDA when torch sees a GPU and the fit
        has at least 1,000,000 training rows (on smaller tables a GPU is slower
        than the CPU), else the CPU. Prediction is always on the CPU, without
        torch.
    verbose : int, default=0
        ``0`` is silent; ``1`` shows a progress bar over the epochs with the
        time left (one line per epoch without tqdm, see the ``progress``
        extra); ``>= 2`` adds the training loss, validation loss and
        validation score of every epoch.
    warm_start : bool, default=False
        Continue training the previous ensemble (same ``n_trees``,
        ``max_depth``, classes / outputs and input scaling).
        ``False`` (default): after ``fit`` the trained network's weights are
        dropped, so the fitted estimator (and its pickle) holds only what
        prediction needs, and a later ``fit`` starts afresh. ``True`` keeps
        them on the estimator (and in its pickle: the
        ensemble's arrays in the standardized space, a second copy) so that the next
        ``fit`` continues from them.
    greedy_floor : bool, default=True
        On at most 5,000 training rows, where the early-stopping hold-out is
        too small to tell an ensemble that overfits many features from one that
        generalizes, compare the fitted ensemble with the depth-tuned CART (2
        to ``max_depth`` levels) out of fold: three more fits of the estimator
        (with the start this fit chose) and of that CART on two thirds of the
        rows each, scored on the third left out. Where the CART errs clearly
        less (paired statistic above 1.5 over all rows; squared errors for the
        regressor), the ensemble becomes that CART (``greedy_fallback_``; or
        the depth-2 CART, should it fit the training rows worse): its first
        tree holds the CART's splits, routing every row hard, and leaf values;
        the other trees send every row to one leaf of value 0. Costs two to
        three times the fit on those tables. A classifier's CART that errs less
        out of fold without clearing that bar is returned too where it fits the
        fit rows clearly better than the fitted model (the same statistic). On
        more rows, with early stopping, the fitted ensemble is compared with
        the depth-tuned CART grown on the training part instead, row by row on
        the validation rows: that CART replaces it where its paired statistic
        there exceeds 1.5, or (a classifier) where it predicts them at least as
        well and fits the training rows better by that statistic (a few CART
        fits). Not in a ``warm_start`` continuation, which trains on from the
        trained ensemble, not from the CART; the training record (``n_iter_``,
        ...) describes that ensemble too. ``False`` returns the trained
        ensemble.
"""

_DOC_ATTRS = """
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only when X has string column
        names).
""" + CATEGORICAL_ATTR_DOC + """    weights_ : ndarray of shape (n_trees, 2**max_depth - 1, n_columns)
        Split weights of every tree in the raw input space (heap order); a
        node sends ``x`` right with probability ``S(weights_[t, i] @ x +
        biases_[t, i])``. ``n_columns`` is ``n_features_in_`` plus one per
        indicator column (``categories_``), which ``x`` holds after the
        features.
    biases_ : ndarray of shape (n_trees, 2**max_depth - 1)
        Split biases in the raw input space.
    leaf_values_ : ndarray of shape (n_trees, 2**max_depth, {leaf_dim})
        Leaf vectors, leaves left to right{leaf_note}.
    intercept_ : ndarray of shape ({leaf_dim},)
        Constant added to the sum of the trees{intercept_note}.
    n_reachable_leaves_ : float
        Mean number of leaves a training sample reaches with a nonzero
        probability, per tree (1 means hard routing everywhere).
    init_ : {{"random", "cart"}}
        The start the returned ensemble was trained from (``init="auto"``
        chooses).
    greedy_fallback_ : bool
        Whether ``greedy_floor`` replaced the trained ensemble by a CART.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Split importances, adding up to one (all zeros when no split divides
        the training rows): each split's weights on the standardized scale,
        ``|w_j| * std_j`` (a feature's indicator columns counted with it: the
        spread of its whole term), as shares of the split, weighted by the
        training weight the split divides, its expected share of the
        (weighted) training rows times the variance of its right-probability
        over them (routed hard: ``p * p_left * p_right``), summed over the
        nodes of all trees. After ``greedy_fallback_``, the CART's splits.
        See the user guide, "Feature importances".
    n_iter_ : int
        Number of epochs run.
    loss_curve_ : list of float
        Mean training loss (with penalties) of every epoch.
    best_loss_ : float
        Smallest training loss seen.
    validation_scores_ : list of float or None
        Validation score of every epoch ({score}), ``None`` without early
        stopping.
    best_validation_score_ : float or None
        Validation score of the epoch whose weights were kept.
    device_ : str
        Device the model was trained on.
"""

_DOC_REFS = """
    References
    ----------
    H. Hazimeh, N. Ponomareva, P. Mol, Z. Tan, R. Mazumder. "The Tree Ensemble
    Layer: Differentiability meets Conditional Computation". ICML, 2020.
"""
