"""Docstring sections shared by the two LatentTree estimators (kept apart from the code)."""

from .._core.batching import batch_size_doc
from .._core.categorical import CATEGORICAL_ATTR_DOC, CATEGORICAL_PARAM_DOC

_DOC_PARAMS = """
    Parameters
    ----------
    max_depth : int or "auto", default="auto"
        Depth of the complete tree before pruning (``2**max_depth`` leaves,
        ``2**(max_depth + 1) - 1`` nodes); 1 to 10. ``"auto"``: depth 4,
        deepened only where a greedy tree clearly fits better: after
        training, a CART of the depth that cross-validates best on the
        training rows (3 folds, depth 1 to 12) is scored beside the tree on
        the validation rows, and where it is clearly better (paired
        statistic above 3) and deeper, a tree of its depth (at most 8) is
        trained from that depth's greedy start (whatever ``init`` says) and
        kept when its validation loss is lower (``max_depth_``; ``init_``
        is then ``"cart"``). A deeper tree that would exceed the memory
        limit or that diverges is dropped with a warning. Needs
        ``early_stopping`` (the validation rows) and ``head="linear"``;
        elsewhere it is 4.
    pruning : float, default=1e-2
        Pruning strength ``lambda`` **per training sample**: a batch of ``n``
        rows solves problem (4) of the paper with ``lambda * n``, so pruning
        learned on mini-batches holds on the full training set (on which the
        pruning vector is fixed after training). Larger values shrink the
        pruning vector ``a`` and prune more nodes.
    pruning_tol : float, default=1e-3
        After training, nodes whose pruning value (solved on the whole
        training set) is at most ``pruning_tol`` are pruned (``a_t`` set to
        0). Such a node changes the head's input by at most ``pruning_tol``
        (``z_t <= a_t``); an exact zero needs every training row to miss the
        node by a margin of 1/2, which gets rarer as the training set grows.
        ``0`` keeps only the exact zeros of problem (4).
    split : {"linear", "elu"}, default="linear"
        Split function: ``w . x + b`` or ``elu(w . x + b)`` (same hard
        routing; ``elu`` bounds the negative rewards at -1).
    head : {"linear", "mlp"}, default="linear"
        Prediction head ``f_phi``: one linear layer, or ``head_layers`` hidden
        layers of ``head_width`` units with ELU and ``dropout``. The linear
        head starts training fitted as a linear model (logistic regression,
        ``C=1``; ridge, ``alpha=1``) on the head's input of the starting
        tree (untrained, or the CART of ``init="cart"``), on at most 20,000
        training rows (``docs/latent_tree.md``).
    head_input : {"concat", "z"}, default="concat"
        Head input: ``[x, z]`` (standardized features and traversal, as in the
        authors' code) or ``z`` alone.
    head_layers : int, default=2
        Number of hidden layers when ``head="mlp"``.
    head_width : int, default=64
        Width of the hidden layers when ``head="mlp"``.
    dropout : float, default=0.0
        Dropout probability after each hidden layer (``head="mlp"``).
    init : {"auto", "random", "cart"}, default="auto"
        Start of training (``head="linear"``; with ``head="mlp"`` the random
        start). ``"random"``: random splits with their biases balanced on
        the training rows, the head fitted on their ``[x, z]`` (the linear
        start). ``"cart"``: the splits of the CART of depth ``max_depth_``
        grown on (at most 20,000 of) the training rows, each ``x_f <= t`` as
        the score ``10 (x_f - t)`` on the standardized features, the head
        fitted on that tree's ``[x, z]``; kept as the early-stopping
        candidate of epoch 0. ``"auto"``: train from both starts side by
        side, with the same validation rows (about 1.5 times the fit time),
        and keep the model trained from the greedy start only when its
        per-row validation losses are clearly lower (a paired statistic
        above 2), else the random start's; without ``early_stopping``, the
        random start alone. ``init_`` records which (see the user guide,
        "Two starts").
    max_iter : int, default=200
        Maximum number of epochs.
""" + batch_size_doc(128) + """    learning_rate : float, default=1e-2
        Learning rate.
    optimizer : {"adam", "rmsprop", "sgd"}, default="adam"
        Optimizer.
    momentum : float, default=0.0
        Momentum of RMSprop / SGD (ignored by Adam).
    lr_schedule : {"constant", "cosine"}, default="constant"
        Learning-rate schedule (``"cosine"``: warm restarts, 4 cycles).
    grad_clip : float or None, default=None
        Maximum global gradient norm (``None``: no clipping).
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the data, stop when the validation
        loss stops improving and restore the best weights.
    validation_fraction : float, default=0.1
        Fraction held out for early stopping.
    n_iter_no_change : int, default=20
        Patience of the stopping rule, in epochs.
    tol : float, default=1e-4
        Minimum improvement of the monitored loss.
""" + CATEGORICAL_PARAM_DOC + """    random_state : int, RandomState instance or None, default=None
        Seeds initialization, validation split and shuffling through private
        generators (global RNGs untouched).
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where to train. ``"auto"`` is the CPU: at the default depth one CPU
        thread trains faster than a GPU, whose steps are too small (on
        ``"cuda"`` the training batches go to the compiled PAV kernel on the
        host and back). Prediction is always numpy, without torch.
    verbose : int, default=0
        ``0`` is silent; ``1`` shows a progress bar over the epochs with the
        time left (one line per epoch without tqdm, see the ``progress``
        extra); ``>= 2`` adds the training loss, validation loss and
        validation score of every epoch.
    warm_start : bool, default=False
        Continue training the previous solution.
        ``False`` (default): after ``fit`` the trained network's weights are
        dropped, so the fitted estimator (and its pickle) holds only what
        prediction needs, and a later ``fit`` starts afresh. ``True`` keeps
        them on the estimator (and in its pickle: the split
        layer and the head, before pruning) so that the next
        ``fit`` continues from them.
    greedy_floor : bool, default=True
        On at most 5,000 training rows, where the early-stopping hold-out is
        too small to tell a model that overfits many features from one that
        generalizes, compare the fitted model with the depth-tuned CART (2 to 8
        levels under ``max_depth="auto"``, else to ``max_depth``) out of fold:
        three more fits of the estimator (with the depth and start this fit
        chose) and of that CART on two thirds of the rows each, scored on the
        third left out. Where the CART errs clearly less (paired statistic
        above 1.5 over all rows; squared errors for the regressor), the model
        becomes that CART (``greedy_fallback_``; or the depth-2 CART, should it
        fit the training rows worse): its splits route hard, every node is kept
        (``pruning_values_`` all 1) and the linear head reads only the leaf
        indicators. Costs two to three times the fit on those tables. A
        classifier's CART that errs less out of fold without clearing that bar
        is returned too where it fits the fit rows clearly better than the
        fitted model (the same statistic). On more rows, with early stopping,
        the fitted model is compared with the depth-tuned CART grown on the
        training part instead, row by row on the validation rows: that CART
        replaces it where its paired statistic there exceeds 1.5, or (a
        classifier) where it predicts them at least as well and fits the
        training rows better by that statistic (a few CART fits). Not with
        ``head="mlp"`` nor in a ``warm_start`` continuation, which trains on
        from the trained network (its depth), not from the CART; the training
        record (``n_iter_``, ...) describes that network too. ``False`` returns
        the trained model.
"""

_DOC_ATTRS = """
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only when X has string column
        names).
""" + CATEGORICAL_ATTR_DOC + """    tree_ : ObliqueTree
        The routing: node splits in the input space (right iff
        ``w . x + b > 0``) and ``active``, which marks the nodes that are not
        pruned (``a_t > 0``) and that training samples reach. ``tree_.value``
        holds the mean prediction of the training samples per leaf, for
        display only.
    max_depth_ : int
        Depth of the fitted tree (``max_depth``, or the depth ``"auto"``
        chose; the CART's depth when ``greedy_fallback_``).
    pruning_values_ : ndarray of shape (2**(max_depth_ + 1) - 1,)
        Pruning vector ``a`` (heap order, ``0 <= a_child <= a_parent <= 1``)
        solved on the whole training set after training, values at most
        ``pruning_tol`` set to 0; ``a_t = 0`` means node ``t`` is pruned.
    active_fraction_ : float
        Fraction of the nodes with ``a_t > 0``.
    node_values_ : ndarray of shape (2**(max_depth_ + 1) - 1, n_values)
        Mean prediction of the training samples reaching each node.
    init_ : {{"random", "cart"}}
        The start the returned model was trained from (``init="auto"``
        chooses; ``"random"`` whenever ``head="mlp"``).
    greedy_fallback_ : bool
        Whether ``greedy_floor`` replaced the trained model by a CART.
    n_iter_ : int
        Number of epochs run.
    loss_curve_ : list of float
        Mean training loss of every epoch.
    best_loss_ : float
        Smallest training loss seen.
    validation_scores_ : list of float or None
        Validation score of every epoch ({score}), ``None`` without early
        stopping.
    best_validation_score_ : float or None
        Validation score of the epoch whose weights were kept.
    device_ : str
        Device the model was trained on.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Importances of the routing splits (the head's direct use of ``x``
        with ``head_input="concat"`` is not counted).
"""

_REFERENCE = """
    References
    ----------
    V. Zantedeschi, M. J. Kusner, V. Niculae. "Learning Binary Decision Trees
    by Argmin Differentiation". ICML, 2021.
"""
