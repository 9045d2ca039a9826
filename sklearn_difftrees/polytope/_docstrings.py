"""The numpydoc sections the two ConvexPolytopeTree estimators share
(parameters, attributes, references), formatted per task in ``_classes``."""

from .._core.batching import batch_size_doc
from .._core.categorical import CATEGORICAL_ATTR_DOC, CATEGORICAL_PARAM_DOC

_DOC_PARAMS = """
    Parameters
    ----------
    max_depth : int or "auto", default="auto"
        Maximum depth of the greedily grown tree (1 to 12). ``"auto"`` grows
        up to depth 12 on the training part and keeps the depth whose hard tree
        scores best on the held-out ``validation_fraction`` ({score}); growth
        stops after 2 levels without improvement. The depth is never chosen
        on training data. A classifier keeps at least
        ``ceil(log2(n_classes))`` levels when growth reaches them (enough
        leaves for every class). Where the tree of the chosen depth predicts
        the validation rows no better than a constant, growth starts once
        more with stumps trained longer (at least ``64 * growth_max_iter``
        optimizer steps each), whose tree is kept where it validates clearly
        better.
    max_facets : int, default=10
        ``K``, the number of linear experts (polytope facets) per split before
        shrinkage (the paper uses up to 50). After training, each split keeps
        only the facets its prior pays for: facets are removed one by one
        while that lowers the node's MAP cost (the weighted impurity of its
        best hard threshold on the training rows reaching it, plus the
        gamma-process term of eq. 15). ``n_facets_`` counts the survivors.
    gamma0, c0 : float, default=9.0 and 0.01
        Gamma-process prior ``r_k ~ Gamma(gamma0 / K, 1 / c0)`` (eq. 15),
        negative log density ``-(gamma0 / K - 1) ln(r_k + 1e-6) + c0 r_k``
        (the ``1e-6`` keeps the objective bounded below when
        ``gamma0 / K < 1``). A smaller ``gamma0`` or a larger ``c0`` keeps
        fewer facets. The defaults are a weak prior: on the bundled sets
        (docs/polytope.md) the paper-style ``gamma0=1, c0=1`` kept about one
        facet per split and lost accuracy (e.g. segmentation 93.7% vs
        97.7%, vehicle 69.3% vs 79.5%).
    a_beta, b_beta : float, default=0.5 and 1.0
        Heavy-tailed (Student-t) shrinkage on every facet coefficient and
        intercept: ``(a_beta + 1/2) ln(1 + beta^2 / (2 b_beta))``. During
        training the whole prior is divided by the number of training rows
        (so that, added to the per-sample batch entropy or variance, the
        objective is the per-sample negative log posterior whatever ``n`` and
        the batch size) and switched on linearly over the first half of each
        training run.
    min_samples_split : int, default=10
        A node with fewer training samples is not split.
    min_samples_leaf : int, default=1
        Fewest training samples a split may leave on either side. Growth
        only considers such thresholds; after the final thresholds are set
        (either ``threshold`` mode), a split leaving fewer training rows on
        a side becomes a leaf, so every leaf of ``tree_`` holds at least this
        many training rows.
    min_weight_fraction_leaf : float, default=0.0
        Smallest fraction of the total training weight a split may leave on
        either side (as in scikit-learn's trees), enforced like
        ``min_samples_leaf``.
    min_impurity_decrease : float, default=0.0
        A node is split only if the weighted impurity decrease
        ``N_t / N * (I - N_L / N_t * I_L - N_R / N_t * I_R)`` reaches this
        value ({impurity}).
    threshold : "refit" or float in (0, 1), default="refit"
        After the joint refinement, ``"refit"`` re-chooses each node's
        threshold ``q_thr`` on the training rows reaching it (best {gain});
        a float ``q`` thresholds every node at ``P(yes | x) = q`` (``0.5`` is
        the paper's Algorithm 1), where ``q = 1/2`` is the greedy threshold
        whether or not the splits were refined (``max_iter=0``).
    growth_max_iter : int, default=20
        Epochs of each stump during growth (at least 50 optimizer steps for
        small nodes; stops early when the stump's loss stops improving).
        Under ``batch_size="auto"`` an epoch of a node of more than 16,384
        rows visits 16,384 of them, its epochs continuing through its
        shuffled rows.
    max_iter : int, default=100
        Epochs of the joint refinement of all splits (``0`` skips it). It is
        a budget: the prior is switched on over its first half, so the
        objective keeps moving and the refinement often uses all of it (with
        early stopping, the best validation epoch is kept). Reaching it is
        therefore not reported as a ``ConvergenceWarning``; ``n_iter_`` and
        ``loss_curve_`` show what happened. Under ``batch_size="auto"`` an
        epoch visits at most 16,384 training rows (larger training parts are
        visited over successive epochs).
""" + batch_size_doc(256, large=(
    " (here 16,384 rows per epoch of the refinement and of each stump),\n"
    "        the refinement's early stopping evaluates at most 32,768 validation\n"
    "        rows per epoch (one seeded subsample), and each node's facet\n"
    "        selection uses random subsamples of 16,384 rows")) + """        The same batch serves the stumps and the refinement (the entropy is
        estimated per batch, so very small batches make it noisy).
    learning_rate : float, default=5e-2
        Learning rate of both the stumps and the refinement.
    optimizer : {{"adam", "rmsprop", "sgd"}}, default="adam"
        Optimizer (the paper uses Adam).
    momentum : float, default=0.0
        Momentum of RMSprop / SGD (ignored by Adam).
    lr_schedule : {{"constant", "cosine"}}, default="constant"
        Learning-rate schedule (``"cosine"``: warm restarts, four cycles).
    grad_clip : float or None, default=None
        Maximum gradient norm (``None`` disables clipping).
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the data (stratified for
        classifiers) during the refinement, stop when the validation objective
        has not improved by ``tol`` for ``n_iter_no_change`` epochs, and keep
        the best epoch's weights. The validation rows then also choose the
        returned tree (``refined_``, ``threshold_``): the refined splits with
        ``threshold``, unless the refined splits with their trained
        thresholds (``q = 1/2``, when ``threshold="refit"``), the greedily
        grown tree, the refined or grown splits with every facet and their
        trained thresholds (or a float ``threshold``; ``n_facets_`` shows
        them), or the CART of the
        same depth or of the cross-validated depth score clearly better there
        (by three standard errors of the per-row differences), each frozen
        on the training part for the comparison. The thresholds and leaves
        are then set on all training rows (a chosen CART is regrown on them).
    validation_fraction : float, default=0.2
        Fraction held out for ``max_depth="auto"`` and early stopping.
    n_iter_no_change : int, default=10
        Patience (epochs) of the stopping rule, for stumps (training loss) and
        refinement.
    tol : float, default=1e-4
        Minimum improvement of the monitored objective.
    greedy_floor : bool, default=True
        Never return a tree that fits its training rows worse than two greedy
        levels. After training, the tree's training score on every training
        row, the validation part included ({score_floor}), is compared with
        that of the better-fitting CART of depth ``min(D, 2)`` grown on the
        same rows (a random subsample of 16,384 of them when there are more;
        {floor_criteria}), where ``D = max(max_depth_, 2)``, at most an int
        ``max_depth``. If it is lower, the greedily grown tree before the joint
        refinement is returned if it reaches that score, else the CART of depth
        ``D`` with the reference's criterion, written as a polytope tree with
        one facet per split (``greedy_fallback_`` says which). The floor's
        CARTs respect ``min_samples_split``, ``min_samples_leaf`` and
        ``min_weight_fraction_leaf`` (not ``min_impurity_decrease``, whose
        units are the polytope criterion's). Costs {n_carts} CART fits of depth
        at most ``D``. On at most 5,000 training rows, where the validation
        part is too small to tell a tree that overfits many features from one
        that generalizes, ``fit`` then also compares the tree with the
        depth-tuned CART (2 to 12 levels, or to an int ``max_depth``) out of
        fold: three more fits of the estimator and of that CART on two thirds
        of the rows each, scored on the third left out; where the CART errs
        clearly less (paired statistic above 1.5 over all rows), it is returned
        (``greedy_fallback_="cart"``). This costs about three times the fit. A
        classifier's CART that errs less out of fold without clearing that bar
        is returned too where it fits the fit rows clearly better than the
        fitted model (the same statistic). On more rows (with validation rows:
        ``max_depth="auto"`` or early stopping), the fitted tree is compared
        with the depth-tuned CART grown on the training part instead, row by
        row on the validation rows: that CART replaces it where its paired
        statistic there exceeds 1.5, or (a classifier) where it predicts them
        at least as well and fits the training rows better by that statistic (a
        few CART fits). ``False`` returns the trained tree whatever its fit
        (the paper's procedure).
""" + CATEGORICAL_PARAM_DOC + """    random_state : int, RandomState instance or None, default=None
        Seeds the initializations, the validation split and the shuffling
        through private generators (global numpy / torch RNGs untouched).
    device : {{"auto", "cpu", "cuda"}}, default="auto"
        Where to train. ``"auto"`` is CUDA when torch sees a GPU and the fit
        has at least 1,000,000 training rows (on smaller tables a GPU is slower
        than the CPU), else the CPU. Prediction is always on the CPU, without
        torch.
    verbose : int, default=0
        ``0`` is silent; ``1`` shows progress bars with the time left, over
        the levels of the greedy growth and over the epochs of the joint
        refinement (one line per level / epoch without tqdm, see the
        ``progress`` extra); ``2`` adds the splits made per level and the
        losses and validation score per epoch; ``>= 3`` also the epochs of
        every stump trained during growth.
"""

_DOC_ATTRS = """
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only for string column names).
""" + CATEGORICAL_ATTR_DOC + """    tree_ : PolytopeTree
        The fitted hard tree (numpy arrays): per split node its facets
        ``beta_k, b_k, r_k`` in the raw input space and its threshold
        ``tau = -ln(1 - q_thr)`` (left iff
        ``sum_k r_k softplus(beta_k . x + b_k) <= tau``), per node its value.
    max_depth_ : int
        Depth of the grown tree (chosen on validation data for ``"auto"``),
        or of the CART that replaced it (``greedy_fallback_ == "cart"``).
    greedy_fallback_ : False, "unrefined" or "cart"
        What ``greedy_floor`` returned: ``False`` the trained tree,
        ``"unrefined"`` the greedily grown tree before the joint refinement
        (which had lowered the training score below two greedy levels),
        ``"cart"`` a CART (of depth ``D``, or the depth-tuned one that
        predicted held-out rows better) (``tree_`` holds each of its splits
        ``x_j <= t`` as one facet with ``r = 1`` and ``beta`` zero but on
        feature ``j``, thresholded at ``tau = ln 2 = softplus(0)``: the same
        routing, and the same prediction path and exports as any fitted
        tree). Truthy exactly when the trained tree was replaced.
    refined_ : bool
        Whether ``tree_`` holds the jointly refined splits: False with
        ``max_iter=0`` or no split to refine, when the validation rows
        preferred the greedily grown tree or the CART of the same depth
        (one facet per split; see ``early_stopping``), or when
        ``greedy_floor`` replaced the tree.
    threshold_ : "refit" or float
        The thresholding of ``tree_``: ``threshold``, or ``0.5`` where the
        validation rows preferred the trained thresholds to a refit.
    n_facets_ : ndarray of shape (2**max_depth_ - 1,)
        Effective number of facets of every heap node (0 where the node does
        not split).
    n_iter_ : int
        Number of refinement epochs run.
    loss_curve_ : list of float
        Refinement objective (batch {objective} plus prior) per epoch.
    best_loss_ : float or None
        Smallest refinement objective seen.
    validation_scores_ : list of float or None
        Minus the validation {objective} per refinement epoch (``None``
        without early stopping).
    best_validation_score_ : float or None
        The score of the epoch whose weights were kept.
    device_ : str
        Device the model was trained on.
    feature_importances_ : ndarray of shape (n_features_in_,)
        See :attr:`feature_importances_`.
"""

_DOC_REF = """
    References
    ----------
    M. Armandpour, A. Sadeghian, M. Zhou. "Convex Polytope Trees".
    NeurIPS 2021.
"""
