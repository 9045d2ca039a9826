"""DGT estimators: ``DGTClassifier`` and ``DGTRegressor``."""

from numbers import Integral, Real

import numpy as np

from .._compat import Interval, StrOptions
from .._core.base import BaseGradientTree, TreeClassifierMixin, TreeRegressorMixin
from .._core.categorical import (CATEGORICAL_ATTR_DOC, CATEGORICAL_CONSTRAINT,
                                 CATEGORICAL_PARAM_DOC)
from .._core.onnx_graph import hard_tree_outputs
from .._core.batching import batch_size_doc
from .._core.greedy import GREEDY_MAX_ROWS
from .._core.validation import check_warm_depth
from ._start import CART_ROW_NORM

__all__ = ["DGTClassifier", "DGTRegressor", "auto_depth"]

# Table 12 of the DGT paper (hidden width of both hidden layers by depth),
# interpolated for the depths it does not list and capped (see _hidden_sizes).
_TABLE12_DEPTH = [2, 4, 6, 8, 10]
_TABLE12_WIDTH = [240, 600, 1008, 1530, 2046]
#: Cap on the automatic hidden width: the collapsed tree is the same model
#: class whatever the width, and beyond this the CPU cost of an epoch grows
#: quadratically for no measured accuracy gain (see docs/benchmarks.md).
AUTO_WIDTH_CAP = 256
#: Deepest tree ``max_depth="auto"`` chooses. An epoch costs about twice as
#: much per level, and the classifier's former fixed depth was 6: the cap
#: keeps the default fit within about twice its former time.
AUTO_MAX_DEPTH = 8
#: Shallowest tree ``max_depth="auto"`` chooses (the former fixed default).
#: A DGT tree fits its training rows less closely than a greedy tree of the
#: same depth (glass, yeast: 0.66-0.76 / 0.51-0.58 training accuracy at
#: depths 3-8, best at 6-8), so the search starts at the former default:
#: the choice only ever deepens the tree.
AUTO_MIN_DEPTH = 6
#: Folds of the cross-validation that chooses ``max_depth="auto"``.
AUTO_CV_FOLDS = 3
#: Most rows that cross-validation sees (a seeded subsample beyond), and that
#: grow the greedy floor's reference CARTs: the core's ``GREEDY_MAX_ROWS``.
AUTO_CV_MAX_ROWS = GREEDY_MAX_ROWS


def auto_depth(Z, Y, w, n_classes, seed):
    """The depth of ``max_depth="auto"`` (a single tree's, or every member's of
    a forest) and the mean CV score of every depth.

    The depth between :data:`AUTO_MIN_DEPTH` (at least ``ceil(log2(n_classes))``
    for a classifier, so that every class can own a leaf) and
    :data:`AUTO_MAX_DEPTH` at which a greedy tree (CART) scores best in
    :data:`AUTO_CV_FOLDS`-fold cross-validation on the rows ``Z, Y, w``
    (:func:`~sklearn_difftrees._core.greedy.cv_depth`; at most
    :data:`AUTO_CV_MAX_ROWS` of them, drawn with ``seed``). ``n_classes`` is
    None for a regressor.
    """
    from .._core.greedy import cv_depth, row_subsample

    rows = row_subsample(Z.shape[0], AUTO_CV_MAX_ROWS, seed)
    low = AUTO_MIN_DEPTH
    if n_classes is not None:
        low = max(low, int(np.ceil(np.log2(max(n_classes, 2)))))
    low = min(low, AUTO_MAX_DEPTH)
    return cv_depth(
        np.asarray(Z[rows], dtype=np.float64), Y[rows], w[rows],
        max_depth=AUTO_MAX_DEPTH, min_depth=low,
        classification=n_classes is not None, n_folds=AUTO_CV_FOLDS, seed=seed,
    )


class _BaseDGT(BaseGradientTree):
    """Shared parameters and model of the DGT estimators.

    The defaults here are :class:`DGTRegressor`'s; :class:`DGTClassifier`
    overrides ``max_depth`` (``"auto"``) and adds ``class_weight``.
    """

    _parameter_constraints = {
        **BaseGradientTree._parameter_constraints,
        "categorical_features": CATEGORICAL_CONSTRAINT,
        "max_depth": [Interval(Integral, 1, 12, closed="both"), StrOptions({"auto"})],
        "n_layers": [Interval(Integral, 1, None, closed="left")],
        "hidden_width": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "alpha_l1": [Interval(Real, 0, None, closed="left")],
        "alpha_l2": [Interval(Real, 0, None, closed="left")],
        "refit_leaves": ["boolean"],
        "init": [StrOptions({"auto", "cart", "random"})],
        "greedy_floor": ["boolean"],
    }

    def __init__(
        self,
        *,
        max_depth=8,
        n_layers=1,
        hidden_width="auto",
        alpha_l1=0.0,
        alpha_l2=0.0,
        refit_leaves=True,
        init="auto",
        max_iter=200,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="rmsprop",
        momentum=0.0,
        lr_schedule="cosine",
        grad_clip=1e-2,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=50,
        tol=1e-4,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
        warm_start=False,
        greedy_floor=True,
    ):
        self.max_depth = max_depth
        self.n_layers = n_layers
        self.hidden_width = hidden_width
        self.alpha_l1 = alpha_l1
        self.alpha_l2 = alpha_l2
        self.refit_leaves = refit_leaves
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.momentum = momentum
        self.lr_schedule = lr_schedule
        self.grad_clip = grad_clip
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.categorical_features = categorical_features
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.warm_start = warm_start
        self.greedy_floor = greedy_floor

    def _choose_structure(self, Z, Y, w, seed):
        """``max_depth_``: ``max_depth``, or the depth chosen by ``"auto"``
        (:func:`auto_depth`). ``depth_scores_`` keeps the mean CV score of
        every depth (None for an int ``max_depth``)."""
        from sklearn.base import is_classifier

        if self.max_depth != "auto":
            self.max_depth_, self.depth_scores_ = self.max_depth, None
            return
        n_classes = len(self.classes_) if is_classifier(self) else None
        self.max_depth_, self.depth_scores_ = auto_depth(Z, Y, w, n_classes, seed)

    def _hidden_sizes(self):
        """Widths of the ``n_layers - 1`` hidden layers."""
        if self.hidden_width == "auto":
            width = int(np.interp(self.max_depth_, _TABLE12_DEPTH, _TABLE12_WIDTH))
            width = min(width, AUTO_WIDTH_CAP)
        else:
            width = self.hidden_width
        return (width,) * (self.n_layers - 1)

    def _build_module(self, n_features, n_outputs, device):
        from ._module import DGTModule

        return DGTModule(n_features, check_warm_depth(self), n_outputs, self._hidden_sizes(),
                         owner=getattr(self, "_owner_name", type(self).__name__))

    def _init_module(self, module, Z, Y, w, seed):
        """Greedy start of ``init="cart"`` (:func:`~._start.cart_start`), kept as
        the early-stopping candidate of epoch 0. Under ``"auto"``,
        :meth:`_train` trains it as a second start (from ``plan.start_rows``)."""
        if self.init != "cart":
            return False
        from ._start import cart_start

        cart_start(self, module, Z, Y, w, seed)
        return True

    def _train(self, plan):
        from .._core.starts import train_starts
        from ._start import cart_start

        return train_starts(self, plan, self.warm_start and hasattr(self, "_module_state"),
                            plan.module.leaf.shape[1], cart_start)

    def _penalty(self, module):
        if not (self.alpha_l1 or self.alpha_l2):
            return None
        total = 0.0
        for layer in module.layers:
            if self.alpha_l1:
                total = total + self.alpha_l1 * layer.weight.abs().sum()
            if self.alpha_l2:
                total = total + self.alpha_l2 * (layer.weight**2).sum()
        return total

    def _module_to_splits(self, module):
        return module.collapse()

    def _freeze(self, module, X, Y, sample_weight, keep):
        super()._freeze(module, X, Y, sample_weight, keep)
        self.greedy_fallback_ = False
        if self.greedy_floor:  # never fit the rows worse than two greedy levels
            from ._floor import apply_greedy_floor

            self.greedy_fallback_ = apply_greedy_floor(self, X, Y, sample_weight, keep,
                                                       CART_ROW_NORM, AUTO_CV_MAX_ROWS)

    def _check_fitted_model(self, plan):
        if self.greedy_floor:  # the CART on held-out rows: see greedy_floor
            from ._floor import apply_cross_check

            if apply_cross_check(self, plan, CART_ROW_NORM):
                self.greedy_fallback_ = True

    # ------------------------------------------------------------------ onnx
    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx`: the hard oblique ``tree_``."""
        hard_tree_outputs(graph, self, self.tree_)


# The docstrings are assembled from these pieces; the forests of _forest.py
# reuse _DOC_TREE_PARAMS for the parameters they pass to their members.
#: The single trees' entry of ``max_depth``; the forests keep an int (one
#: depth for every member) and document it with ``_FOREST_DOC_MAX_DEPTH``.
_DOC_MAX_DEPTH = """    max_depth : int or "auto", default="auto" (classifier) or 8 (regressor)
        Height of the complete tree (``2**max_depth`` leaves); 1 to 12.
        ``"auto"`` chooses it from the data: of the depths 6 to 8, the one
        at which a greedy tree (CART) scores best in 3-fold cross-validation
        on the training rows (never shallower than 6: a DGT tree fits less
        closely than a greedy tree of its depth); the choice is
        ``max_depth_``. Regression keeps a fixed default of 8: a
        piecewise-constant fit needs more leaves than a greedy tree's CV
        suggests (see the DGT guide, "Depth chosen from the data").
"""
_FOREST_DOC_MAX_DEPTH = """    max_depth : int or "auto", default="auto" (classifier) or 8 (regressor)
        Height of every member's complete tree (``2**max_depth`` leaves); 1
        to 12. All members share one depth (they train as one batched
        model): ``"auto"`` chooses it once, before the members train, as a
        single tree's ``"auto"`` does (of the depths 6 to 8, the one at which
        a CART scores best in 3-fold cross-validation), on the forest's
        training rows; the choice is ``max_depth_``. Regression keeps a fixed
        default of 8, as the single tree does.
"""
#: The ``"auto"`` part of the ``init`` entry (the forests, whose members have
#: one start each, drop it).
_INIT_AUTO_DOC = """        ``"auto"``: train from both starts, with the same validation rows
        (about 1.6 to 1.8 times the fit time), and keep the tree trained from
        the greedy start only when its per-row validation losses are clearly
        lower (a paired statistic above 2), else the random start's; without
        ``early_stopping``, the random start alone. ``init_`` records which
        (see the user guide, "Two starts").
"""

_DOC_TREE_PARAMS = """    n_layers : int, default=1
        Number ``L`` of linear layers of the over-parameterization
        ``W_L ... W_1`` (``L - 1`` hidden layers); ``1`` trains the node
        weights directly. The product is collapsed (in float64) into one
        oblique split per node at the end of fit. With strongly correlated
        features the over-parameterized product (the paper's ``L = 3``)
        amplifies the ill-conditioning, and training often stalls in a poor
        tree whose quality depends on the seed, so the single trees default
        to ``L = 1`` (see the user guide, "Why these defaults"), which is
        also about twice as fast per epoch.
    hidden_width : int or "auto", default="auto"
        Width of every hidden layer. ``"auto"`` follows the paper's Table 12
        (240, 600, 1008, 1530, 2046 for depths 2, 4, 6, 8, 10, interpolated in
        between) capped at 256 so that a default fit stays fast on a CPU.
    alpha_l1, alpha_l2 : float, default=0.0
        L1 / L2 penalties on the over-parameterized node weights.
    refit_leaves : bool, default=False (classifier) or True (regressor)
        After training, with the splits frozen, set every leaf to the exact
        minimizer of the training loss for the samples it receives: smoothed
        weighted class proportions (classifier) or the weighted mean target
        (regressor). When False, the leaves keep the values trained by
        gradient descent (the paper's procedure). Measured on the shared
        benchmark sets (docs/benchmarks.md), the refit lowers regression error
        markedly but slightly lowers classification accuracy, hence the
        different defaults.
    init : {"auto", "random", "cart"}, default="auto"
        Start of training. ``"random"``: random node weights, zero biases and
        small random leaves (the paper's start). ``"cart"``: the greedy tree,
        a CART of depth ``max_depth_`` grown on the training rows (validation
        rows excluded; at most 131,072 of them, a seeded subsample, under
        ``batch_size="auto"``) and embedded into the complete tree, its leaves set to
        the training loss's minimizer for their rows. With ``early_stopping``
        this start is the candidate of epoch 0, so the kept weights'
        validation loss is never above that CART's (see the user guide,
        "Greedy start").
""" + _INIT_AUTO_DOC + """    max_iter : int, default=200
        Maximum number of epochs.
""" + batch_size_doc(128) + """    learning_rate : float, default=1e-2
        Initial learning rate.
    optimizer : {"rmsprop", "adam", "sgd"}, default="rmsprop"
        Optimizer (RMSprop with ``eps=1e-5`` as in the authors' code).
    momentum : float, default=0.0
        Momentum of RMSprop / SGD (ignored by Adam).
    lr_schedule : {"cosine", "constant"}, default="cosine"
        ``"cosine"``: cosine annealing with warm restarts, four cycles over
        ``max_iter`` epochs (three restarts, as in the paper).
    grad_clip : float or None, default=1e-2
        Maximum gradient norm (``None`` disables clipping).
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training data (stratified for
        classifiers), stop when the validation loss has not improved by
        ``tol`` for ``n_iter_no_change`` epochs, and restore the weights of the
        best epoch. When False, the training loss is monitored instead and
        the last weights are kept.
    validation_fraction : float, default=0.1
        Fraction of the training data held out for early stopping.
    n_iter_no_change : int, default=50
        Patience of the stopping rule, in epochs. The single trees' 50 spans
        one cycle of the cosine schedule (``max_iter / 4`` epochs at the
        default ``max_iter``), so that the loss bump after a warm restart
        does not stop a run before the cycle's low-learning-rate end, where
        the tree usually improves.
    tol : float, default=1e-4
        Minimum improvement of the monitored loss.
"""

_DOC_PARAMS = (
    """
    Parameters
    ----------
"""
    + _DOC_MAX_DEPTH
    + _DOC_TREE_PARAMS
    + CATEGORICAL_PARAM_DOC + """    random_state : int, RandomState instance or None, default=None
        Seeds the initialization, the validation split and the shuffling
        through private generators (the global RNGs of numpy and torch are
        left untouched). Two fits with the same integer give identical trees.
    device : {"auto", "cpu", "cuda"}, default="auto"
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
        Continue training the previous solution (same classes / outputs and
        the same input scaling) instead of starting afresh.
        ``False`` (default): after ``fit`` the trained network's weights are
        dropped, so the fitted estimator (and its pickle) holds only what
        prediction needs, and a later ``fit`` starts afresh. ``True`` keeps
        them on the estimator (and in its pickle: the layers of the
        over-parameterized network, many times the tree for ``n_layers > 1``)
        so that the next ``fit`` continues from them.
    greedy_floor : bool, default=True
        Never return a tree that fits its training rows (the early-stopping
        hold-out included) worse than a depth-2 CART, the better of information
        gain and Gini (squared error for the regressor): such a tree is
        replaced by the CART of depth ``max_depth_`` with that criterion,
        embedded in the complete tree with closed-form leaves
        (``greedy_fallback_``). A single tree's ``fit`` on at most 5,000 rows
        (not a ``warm_start`` continuation) then also compares the tree with
        the depth-tuned CART (2 to ``max_depth_`` levels) out of fold, where
        the early-stopping hold-out is too small to tell a tree that overfits
        many features from one that generalizes: three more fits of the
        estimator and of that CART on two thirds of the rows each, scored on
        the third left out; where the CART errs clearly less (paired statistic
        above 1.5 over all rows; squared errors for the regressor), it is
        returned, embedded as above (or, should it fit the training rows worse,
        the depth-2 CART). This costs two to three times the fit. A
        classifier's CART that errs less out of fold without clearing that bar
        is returned too where it fits the fit rows clearly better than the
        fitted model (the same statistic). On more rows, with early stopping,
        the fitted tree is compared with the depth-tuned CART grown on the
        training part instead, row by row on the validation rows: that CART
        replaces it where its paired statistic there exceeds 1.5, or (a
        classifier) where it predicts them at least as well and fits the
        training rows better by that statistic (a few CART fits). The training
        record (``n_iter_``, ``loss_curve_``, ...) still describes the trained
        network, and a ``warm_start`` continuation starts from that network,
        not from the CART. The forests' members always apply the floor, never
        the comparison.
"""
)

_DOC_ATTRS = """
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only when X has string column
        names).
""" + CATEGORICAL_ATTR_DOC + """    tree_ : ObliqueTree
        The fitted hard oblique tree (plain numpy arrays: node weights in the
        input space, biases, leaf values, active-node mask).
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
    greedy_fallback_ : bool
        Whether ``greedy_floor`` replaced the trained tree by a CART (the
        training-rows floor, or the comparison on held-out rows).
    init_ : {{"random", "cart"}}
        The start the returned tree was trained from (``init="auto"``
        chooses one of the two).
    max_depth_ : int
        Depth of the trained tree: ``max_depth``, or the depth ``"auto"``
        chose.
    depth_scores_ : ndarray of shape (8,) or None
        With ``max_depth="auto"``: mean cross-validated score (weighted
        accuracy / minus the weighted mean squared error of the standardized
        targets) of the greedy tree at depths 1 to 8.
        ``None`` otherwise.
    feature_importances_ : ndarray of shape (n_features_in_,)
        See :attr:`BaseObliqueTree.feature_importances_`.
"""


class DGTClassifier(TreeClassifierMixin, _BaseDGT):
    __doc__ = (
        """Dense Gradient Tree classifier: a hard oblique tree trained end to end.

    Trains a complete oblique tree of depth ``max_depth`` by quantized gradient
    descent (Karthikeyan et al., TMLR 2022): hard ``sign`` decisions forward,
    straight-through gradients through the sum-form path function and a
    softmax over paths backward, a linear over-parameterization of the node
    weights, and cross-entropy on the reached leaf's logits. The fitted model
    is a plain oblique tree; ``predict_proba`` returns the softmax of the
    reached leaf's logits, computed without torch.

    Inputs are standardized internally (the scaling is folded into the fitted
    splits), so raw features can be passed directly.

    Read more in the :doc:`User Guide </dgt>`.
"""
        + _DOC_PARAMS
        + """    class_weight : dict, "balanced" or None, default=None
        Weights associated with classes, multiplied into ``sample_weight``
        (as in :class:`~sklearn.tree.DecisionTreeClassifier`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_classes_ : int
        Number of classes.
    n_outputs_ : int
        Always 1."""
        + _DOC_ATTRS.format(score="accuracy")
        + """
    See Also
    --------
    DGTRegressor : The regression counterpart.
    sklearn.tree.DecisionTreeClassifier : Greedy axis-aligned tree.

    References
    ----------
    A. Karthikeyan, N. Jain, N. Natarajan, P. Jain. "Learning Accurate
    Decision Trees with Bandit Feedback via Quantized Gradient Descent".
    TMLR, 2022.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_difftrees import DGTClassifier
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> clf = DGTClassifier(max_depth=3, max_iter=20, random_state=0).fit(X, y)
    >>> clf.predict(X[:5]).shape
    (5,)
    >>> clf.get_n_leaves() <= 8
    True
"""
    )

    _parameter_constraints = {
        **_BaseDGT._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        n_layers=1,
        hidden_width="auto",
        alpha_l1=0.0,
        alpha_l2=0.0,
        refit_leaves=False,
        init="auto",
        max_iter=200,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="rmsprop",
        momentum=0.0,
        lr_schedule="cosine",
        grad_clip=1e-2,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=50,
        tol=1e-4,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
        warm_start=False,
        greedy_floor=True,
        class_weight=None,
    ):
        super().__init__(
            max_depth=max_depth,
            n_layers=n_layers,
            hidden_width=hidden_width,
            alpha_l1=alpha_l1,
            alpha_l2=alpha_l2,
            refit_leaves=refit_leaves,
            init=init,
            max_iter=max_iter,
            batch_size=batch_size,
            learning_rate=learning_rate,
            optimizer=optimizer,
            momentum=momentum,
            lr_schedule=lr_schedule,
            grad_clip=grad_clip,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change,
            tol=tol,
            categorical_features=categorical_features,
            random_state=random_state,
            device=device,
            verbose=verbose,
            warm_start=warm_start,
            greedy_floor=greedy_floor,
        )
        self.class_weight = class_weight


class DGTRegressor(TreeRegressorMixin, _BaseDGT):
    __doc__ = (
        """Dense Gradient Tree regressor: a hard oblique tree trained end to end.

    Same model and training as :class:`DGTClassifier`, with a squared loss on
    standardized targets (one value per leaf and output, multi-output
    supported). The fitted model is a plain oblique tree whose leaves hold
    the (unscaled) predictions.

    Read more in the :doc:`User Guide </dgt>`.
"""
        + _DOC_PARAMS
        + """
    Attributes
    ----------
    n_outputs_ : int
        Number of targets."""
        + _DOC_ATTRS.format(score="R^2")
        + """
    See Also
    --------
    DGTClassifier : The classification counterpart.
    sklearn.tree.DecisionTreeRegressor : Greedy axis-aligned tree.

    References
    ----------
    A. Karthikeyan, N. Jain, N. Natarajan, P. Jain. "Learning Accurate
    Decision Trees with Bandit Feedback via Quantized Gradient Descent".
    TMLR, 2022.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_difftrees import DGTRegressor
    >>> X, y = make_regression(n_samples=300, n_features=5, random_state=0)
    >>> reg = DGTRegressor(max_depth=3, max_iter=20, random_state=0).fit(X, y)
    >>> reg.predict(X[:2]).shape
    (2,)
"""
    )
