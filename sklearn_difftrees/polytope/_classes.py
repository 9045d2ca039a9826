"""ConvexPolytopeTree estimators: the classifier and the regressor."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin, is_classifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, RealNotInt, StrOptions
from .._core.atomic import fit_context
from .._core.threads import single_thread
from .._core._guard import check_finite_model
from .._core._memory import check_memory
from .._core.base import TRAINING_PARAMETER_CONSTRAINTS, BaseObliqueTree
from .._core.optional import require_torch
from .._core.batching import resolve_batching, validation_subsample
from .._core.categorical import CATEGORICAL_CONSTRAINT, split_importances, term_spread
from .._core.greedy import row_subsample, weighted_r2
from .._core.validation import (check_fit_data, check_predict_data, constant_columns,
                                 encode_classification_target, fit_standardizer,
                                 normalize_weights, validation_split)
from ._criterion import _Criterion
from ._docstrings import _DOC_ATTRS, _DOC_PARAMS, _DOC_REF
from ._floor import _GreedyFloorMixin
from ._freeze import _FreezeMixin
from ._growth import _GreedyGrowthMixin
from ._onnx import polytope_graph

__all__ = ["ConvexPolytopeTreeClassifier", "ConvexPolytopeTreeRegressor"]

#: Weight of the Brier score (at most 2 per row) beside the 0/1 error in the
#: classifier's depth-selection score: small enough that it only decides
#: between trees of equal validation accuracy (below 500,000 validation rows,
#: one misclassified row outweighs any Brier difference), large enough to
#: stay far above float rounding (``_grow`` needs an improvement of 1e-12).
BRIER_TIE_BREAK = 1e-6


class _BaseConvexPolytopeTree(_GreedyGrowthMixin, _FreezeMixin, _GreedyFloorMixin,
                              BaseObliqueTree):
    """Parameters and ``fit`` shared by both tasks: greedy growth
    (:mod:`._growth`), joint refinement (:mod:`._training`), facet selection
    and the fitted tree (:mod:`._freeze`), the greedy floor (:mod:`._floor`)."""

    #: The batch of ``batch_size="auto"`` on small data (``resolve_batching``
    #: of the core's batching); larger: the entropy is estimated per batch.
    _base_batch_size = 256

    _parameter_constraints = {
        **{k: v for k, v in TRAINING_PARAMETER_CONSTRAINTS.items() if k != "warm_start"},
        "categorical_features": CATEGORICAL_CONSTRAINT,
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "max_depth": [Interval(Integral, 1, 12, closed="both"), StrOptions({"auto"})],
        "max_facets": [Interval(Integral, 1, None, closed="left")],
        "gamma0": [Interval(Real, 0, None, closed="neither")],
        "c0": [Interval(Real, 0, None, closed="left")],
        "a_beta": [Interval(Real, -0.5, None, closed="left")],
        "b_beta": [Interval(Real, 0, None, closed="neither")],
        "min_samples_split": [Interval(Integral, 2, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_weight_fraction_leaf": [Interval(Real, 0.0, 0.5, closed="both")],
        "min_impurity_decrease": [Interval(Real, 0, None, closed="left")],
        "threshold": [StrOptions({"refit"}), Interval(RealNotInt, 0, 1, closed="neither")],
        "growth_max_iter": [Interval(Integral, 1, None, closed="left")],
        "greedy_floor": ["boolean"],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        max_facets=10,
        gamma0=9.0,
        c0=0.01,
        a_beta=0.5,
        b_beta=1.0,
        min_samples_split=10,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        min_impurity_decrease=0.0,
        threshold="refit",
        growth_max_iter=20,
        max_iter=100,
        batch_size="auto",
        learning_rate=5e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.2,
        n_iter_no_change=10,
        tol=1e-4,
        greedy_floor=True,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.max_depth = max_depth
        self.max_facets = max_facets
        self.gamma0 = gamma0
        self.c0 = c0
        self.a_beta = a_beta
        self.b_beta = b_beta
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.threshold = threshold
        self.growth_max_iter = growth_max_iter
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
        self.greedy_floor = greedy_floor
        self.categorical_features = categorical_features
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    @fit_context(prefer_skip_nested_validation=True)
    @single_thread
    def fit(self, X, y, sample_weight=None):
        """Grow the tree greedily, refine it jointly, and freeze it into ``tree_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; standardized internally (the fitted tree works on
            raw features).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels (classifier) or targets (regressor).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; rows of zero weight are dropped.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        classification = is_classifier(self)
        X, y, sample_weight = check_fit_data(self, X, y, sample_weight,
                                             multi_output=not classification)
        Y, sample_weight = self._prepare_target(y, sample_weight)
        mean, scale = fit_standardizer(X, sample_weight)
        constant = constant_columns(X, sample_weight)
        keep = np.flatnonzero(sample_weight > 0)
        X_fit, Y_fit = X[keep], Y[keep]
        w_fit = normalize_weights(sample_weight[keep])
        Z = ((X_fit - mean) / scale).astype(np.float32)
        Z[:, constant] = 0.0
        self._feature_mean, self._feature_scale = mean, scale
        # Where plot_polytope_regions holds the features it does not draw.
        self._feature_median = np.median(X_fit, axis=0)

        rng = check_random_state(self.random_state)
        auto = self.max_depth == "auto"
        n = Z.shape[0]
        # Growth projects every row of a node on each of its facets (float64
        # and float32 copies: ~32 bytes per row and facet, measured).
        check_memory(type(self).__name__, 32 * n * self.max_facets,
                     f"max_facets={self.max_facets} on {n} training rows")
        use_val = (auto or self.early_stopping) and n >= 4
        if use_val:
            tr, va = validation_split(
                n, self.validation_fraction, rng, stratify=Y_fit if classification else None
            )
        else:
            tr, va = np.arange(n), np.arange(0)

        # The only place a fit imports torch (through the training modules).
        require_torch(f"{type(self).__name__}.fit")
        from .._core._trainer import resolve_device
        from . import _training

        device = resolve_device(self.device, tr.size)
        crit = _Criterion(classification, getattr(self, "n_classes_", None))
        prior = dict(gamma0=self.gamma0, c0=self.c0, a_beta=self.a_beta, b_beta=self.b_beta)
        batch, epoch_rows = resolve_batching(self.batch_size, tr.size, self._base_batch_size)
        settings = dict(
            batch_size=batch,
            epoch_rows=epoch_rows,
            learning_rate=self.learning_rate,
            optimizer=self.optimizer,
            momentum=self.momentum,
            lr_schedule=self.lr_schedule,
            grad_clip=self.grad_clip,
            n_iter_no_change=self.n_iter_no_change,
            tol=self.tol,
            verbose=max(0, self.verbose - 2),  # the stumps' epochs: only at verbose >= 3
        )
        ctx = dict(crit=crit, prior=prior, settings=settings, device=device, rng=rng,
                   n_train=tr.size, name=type(self).__name__,
                   training=_training, classification=classification)
        params, depth = self._grow(Z, Y_fit, w_fit, tr, va, ctx, auto)
        self.max_depth_ = depth

        # Each node's scores are rescaled so that its greedy threshold sits
        # at q = 1/2 (s = ln 2; a common scaling of r and tau leaves the hard
        # split unchanged). The joint refinement (Algorithm 1) then starts
        # from a probabilistic tree routing like the hard one, and a float
        # ``threshold`` means the same with or without refinement.
        params = {v: (b, c, r * math.log(2.0) / tau, math.log(2.0))
                  for v, (b, c, r, tau) in params.items()}
        self.n_iter_, self.loss_curve_, self.best_loss_ = 0, [], None
        self.refined_, self.threshold_ = False, self.threshold
        self.validation_scores_ = self.best_validation_score_ = None
        grown = None  # the greedy tree, kept for the floor when refinement changes it
        if params and self.max_iter > 0:
            grown = params
            scaled = {v: p[:3] for v, p in params.items()}
            seed = int(rng.randint(np.iinfo(np.int32).max))
            val = None
            if self.early_stopping and va.size:
                # Every epoch evaluates at most MAX_VALIDATION_ROWS of them.
                vs = va[validation_subsample(va.size, self.batch_size, seed)]
                val = (Z[vs], Y_fit[vs], w_fit[vs])
            refined, history = _training.refine(
                sorted(params), scaled, Z[tr], Y_fit[tr], w_fit[tr], val,
                classification=classification, prior=prior, capped=self.batch_size == "auto",
                settings={**settings, "verbose": self.verbose},
                max_iter=self.max_iter, early_stopping=val is not None,
                seed=seed, device=device, name=type(self).__name__,
            )
            params = {v: (*refined[v], math.log(2.0)) for v in refined}
            self.n_iter_ = history.n_iter
            self.loss_curve_ = history.loss_curve
            self.best_loss_ = history.best_loss
            self.refined_ = True
            if val is not None:
                # The trainer's score without score_fn: minus the validation objective.
                self.validation_scores_ = history.validation_scores
                self.best_validation_score_ = history.best_validation_score
        self.device_ = str(device)

        def build(params, depth, refit=True, rows=slice(None), threshold=None, selected=False):
            """Trained splits frozen on the fit rows ``rows`` (facet selection unless
            ``selected``, ``threshold``, leaves), or (``refit=False``) a CART's as they are."""
            if refit:
                Zr, Xr, Yr, wr = Z[rows], X_fit[rows], Y_fit[rows], w_fit[rows]
                params = params if selected else self._drop_facets(params, Zr, Yr, wr, crit)
                return self._build_tree(params, depth, mean, scale, constant, Xr, Yr, wr, crit,
                                        threshold=threshold)
            tree = self._assemble(params, depth, mean, scale, constant, X_fit.shape[1],
                                  self._leaf_targets(Y_fit[:1]).shape[1])
            return tree.finalize(X_fit, self._leaf_targets(Y_fit), w_fit)

        refit, every = True, False  # unless the validation rows choose a CART / every facet
        if self.validation_scores_ is not None:  # the validation rows choose the tree
            params, refit, depth, every = self._validation_choice(
                params, grown, build, depth, Z, X_fit, Y_fit, w_fit, crit,
                tr[row_subsample(tr.size, epoch_rows, seed)], vs)
        self.tree_ = build(params, depth, refit=refit, threshold=self.threshold_, selected=every)
        self.greedy_fallback_ = False
        if self.greedy_floor:  # never fit the rows worse than two greedy levels
            self.tree_, self.greedy_fallback_ = self._greedy_floor(
                self.tree_, grown, build, Z, X_fit, Y_fit, w_fit, (tr, va),
                seed=int(rng.randint(np.iinfo(np.int32).max)))
        self.max_depth_ = self.tree_.max_depth  # D (another) where a CART replaced the tree
        self.n_facets_ = self.tree_.n_facets
        check_finite_model(self, X)
        return self

    # apply, decision_path, get_depth, get_n_leaves: BaseObliqueTree's, which
    # only ask ``tree_`` (here a PolytopeTree, whose leaves sit at any depth).

    @property
    def feature_importances_(self):
        """Normalized polytope-split importances, shape (n_features,).

        For every split, its facets' absolute coefficients on the
        standardized scale (``|beta_kj| * std_j``; for a feature with indicator
        columns, the spread over the training rows of its whole term) weighted
        by their ``r_k``, as shares of the split (its scale does not count),
        weighted by its impurity decrease ``p * p_left * p_right * ||v_left -
        v_right||^2`` (``v``: class proportions or means), normalized.
        """
        check_is_fitted(self)
        tree = self.tree_
        nodes = np.flatnonzero(tree.is_split)
        spread = [tree.facet_weight[tree.facet_ptr[v]:tree.facet_ptr[v + 1]] @ term_spread(
            self, tree.facet_coef[tree.facet_ptr[v]:tree.facet_ptr[v + 1]]) for v in nodes]
        spread = np.reshape(spread, (nodes.size, self.n_features_in_))
        return split_importances(self, spread, tree.split_gains()[nodes])

    # ------------------------------------------------------------------ onnx
    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx`: the polytope scores and the hard walk."""
        polytope_graph(graph, self)


class ConvexPolytopeTreeClassifier(ClassifierMixin, _BaseConvexPolytopeTree):
    __doc__ = (
        """Convex polytope tree classifier (CPT, Armandpour et al., NeurIPS 2021).

    Every split is the noisy-OR of ``K`` linear experts,
    ``P(yes | x) = 1 - exp(-sum_k r_k softplus(beta_k . x + b_k))``, so its
    left region is a smooth convex set confined by a polytope with one facet
    per expert. A gamma-process prior on the expert weights ``r_k`` shrinks
    the number of facets per node. The tree is grown greedily (a stump
    trained by maximizing the mutual information between labels and leaves
    on each node's data, thresholded where the information gain is largest),
    then all splits are refined jointly on the probabilistic tree, the
    thresholds are re-chosen and the leaves set to the class proportions of
    the training rows reaching them. Prediction is a hard tree walk in
    compiled code, without torch.

    Inputs are standardized internally (folded into the fitted splits).

    Read more in the :doc:`User Guide </polytope>`.
"""
        + _DOC_PARAMS.format(score="accuracy, ties broken by the Brier score of the leaves' "
                             "smoothed class proportions", impurity="entropy, in nats",
                             gain="information gain", score_floor="weighted accuracy",
                             floor_criteria="information gain or Gini", n_carts="two to three")
        + """    class_weight : dict, "balanced" or None, default=None
        Weights associated with classes, multiplied into ``sample_weight``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_classes_ : int
        Number of classes.
    n_outputs_ : int
        Number of outputs (always 1: one class label per sample)."""
        + _DOC_ATTRS.format(objective="conditional entropy")
        + """
    See Also
    --------
    ConvexPolytopeTreeRegressor : The regression counterpart.
    sklearn_difftrees.polytope.plot_polytope_regions : Decision regions of 2-D models.
"""
        + _DOC_REF
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_difftrees import ConvexPolytopeTreeClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = (np.hypot(X[:, 0], X[:, 1]) < 0.6).astype(int)
    >>> clf = ConvexPolytopeTreeClassifier(max_depth=1, max_iter=10, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    >>> clf.get_n_leaves()
    2
    """
    )

    _parameter_constraints = {
        **_BaseConvexPolytopeTree._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        max_facets=10,
        gamma0=9.0,
        c0=0.01,
        a_beta=0.5,
        b_beta=1.0,
        min_samples_split=10,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        min_impurity_decrease=0.0,
        threshold="refit",
        growth_max_iter=20,
        max_iter=100,
        batch_size="auto",
        learning_rate=5e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.2,
        n_iter_no_change=10,
        tol=1e-4,
        greedy_floor=True,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
        class_weight=None,
    ):
        super().__init__(
            max_depth=max_depth, max_facets=max_facets, gamma0=gamma0, c0=c0, a_beta=a_beta,
            b_beta=b_beta, min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            min_impurity_decrease=min_impurity_decrease,
            threshold=threshold, growth_max_iter=growth_max_iter, max_iter=max_iter,
            batch_size=batch_size, learning_rate=learning_rate, optimizer=optimizer,
            momentum=momentum, lr_schedule=lr_schedule, grad_clip=grad_clip,
            early_stopping=early_stopping, validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, tol=tol, greedy_floor=greedy_floor,
            random_state=random_state, device=device, verbose=verbose,
            categorical_features=categorical_features,
        )
        self.class_weight = class_weight

    def _prepare_target(self, y, sample_weight):
        y_enc, sample_weight = encode_classification_target(self, y, sample_weight)
        self.n_outputs_ = 1
        return y_enc, sample_weight

    def _leaf_targets(self, Y):
        T = np.zeros((Y.shape[0], self.n_classes_))
        T[np.arange(Y.shape[0]), Y] = 1.0
        return T

    def _leaf_score(self, leaves, ntr, nva, Ytr, wtr, Yva, wva):
        """Validation accuracy of the hard tree, ties broken by its Brier score:
        minus ``error rate + BRIER_TIE_BREAK * Brier score`` of the leaves'
        smoothed training class proportions (:meth:`_leaf_losses`). On
        imbalanced data every shallow tree may predict the majority everywhere;
        the tie-break keeps the one whose leaves concentrate the minority class.
        """
        loss = self._leaf_losses(leaves, ntr, nva, Ytr, wtr, Yva)
        return -float((wva * loss).sum() / wva.sum())

    def _leaf_losses(self, leaves, ntr, nva, Ytr, wtr, Yva, proper=False):
        """Per validation row, the loss of :meth:`_leaf_score`: error (0 / 1)
        + ``BRIER_TIE_BREAK`` * Brier score, each leaf predicting its training
        class proportions ``(counts + prior) / (W_leaf + 1)`` (one pseudo-row
        distributed as the training proportions ``prior``; ``prior`` where no
        training row reached the leaf). ``proper``: the Brier score alone."""
        counts = np.zeros((leaves.size, self.n_classes_))
        pos = np.searchsorted(leaves, ntr)
        np.add.at(counts, (pos, Ytr), wtr)
        prior = np.bincount(Ytr, weights=wtr, minlength=self.n_classes_) / wtr.sum()
        proba = (counts + prior) / (counts.sum(1, keepdims=True) + 1.0)
        pos_va = np.minimum(np.searchsorted(leaves, nva), leaves.size - 1)
        found = leaves[pos_va] == nva
        P = np.where(found[:, None], proba[pos_va], prior)
        wrong = P.argmax(1) != Yva
        P[np.arange(Yva.size), Yva] -= 1.0
        brier = (P**2).sum(1)
        return brier if proper else wrong + BRIER_TIE_BREAK * brier

    def predict_proba(self, X):
        """Class proportions of the training rows in the leaf each sample reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        check_is_fitted(self)
        return self.tree_.predict(check_predict_data(self, X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log class proportions, columns in the order of ``classes_``
            (``-inf`` where a proportion is zero).
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Predict the class of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The most frequent training class of the leaf each sample reaches.
        """
        check_is_fitted(self)
        leaves = self.tree_.apply(check_predict_data(self, X))
        return self.classes_.take(np.argmax(self.tree_.value, axis=1)[leaves])


class ConvexPolytopeTreeRegressor(RegressorMixin, _BaseConvexPolytopeTree):
    __doc__ = (
        """Convex polytope tree regressor (CPT, Armandpour et al., NeurIPS 2021).

    Same model and training as :class:`ConvexPolytopeTreeClassifier`, with the
    weighted variance criterion of eqs. (16)–(17) instead of the conditional
    entropy (on internally standardized targets; several outputs are averaged)
    and leaves set to the mean target of the training rows reaching them.

    Read more in the :doc:`User Guide </polytope>`.
"""
        + _DOC_PARAMS.format(score="R^2", impurity="variance of the standardized targets",
                             gain="variance reduction", score_floor="weighted R^2",
                             floor_criteria="squared error", n_carts="one to two")
        + """
    Attributes
    ----------
    n_outputs_ : int
        Number of targets."""
        + _DOC_ATTRS.format(objective="weighted variance")
        + """
    See Also
    --------
    ConvexPolytopeTreeClassifier : The classification counterpart.
"""
        + _DOC_REF
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_difftrees import ConvexPolytopeTreeRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = np.where(np.hypot(X[:, 0], X[:, 1]) < 0.6, 2.0, 0.0)
    >>> reg = ConvexPolytopeTreeRegressor(max_depth=1, max_iter=10, random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.8
    True
    """
    )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _prepare_target(self, y, sample_weight):
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            y = y[:, None]
        self.n_outputs_ = y.shape[1]
        self._target_mean, self._target_scale = fit_standardizer(y, sample_weight)
        return (y - self._target_mean) / self._target_scale, sample_weight

    def _leaf_targets(self, Y):
        return Y * self._target_scale + self._target_mean

    def _leaf_predictions(self, leaves, ntr, nva, Ytr, wtr):
        """Each validation row's prediction: the weighted mean (standardized)
        target of the training rows in its leaf (the training mean where no
        training row reached it)."""
        k = Ytr.shape[1]
        sums = np.zeros((leaves.size, k))
        pos = np.searchsorted(leaves, ntr)
        np.add.at(sums, pos, wtr[:, None] * Ytr)
        wsum = np.bincount(pos, weights=wtr, minlength=leaves.size)
        means = sums / np.maximum(wsum, 1e-300)[:, None]
        pos_va = np.minimum(np.searchsorted(leaves, nva), leaves.size - 1)
        found = leaves[pos_va] == nva
        glob = (wtr[:, None] * Ytr).sum(0) / wtr.sum()
        return np.where(found[:, None], means[pos_va], glob)

    def _leaf_score(self, leaves, ntr, nva, Ytr, wtr, Yva, wva):
        pred = self._leaf_predictions(leaves, ntr, nva, Ytr, wtr)
        return weighted_r2(Yva, pred, wva)

    def _leaf_losses(self, leaves, ntr, nva, Ytr, wtr, Yva, proper=False):
        """Per validation row, the squared error of the standardized targets (any ``proper``)."""
        return ((self._leaf_predictions(leaves, ntr, nva, Ytr, wtr) - Yva) ** 2).mean(1)

    def predict(self, X):
        """Predicted target: the training mean of the leaf each sample reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predicted values.
        """
        check_is_fitted(self)
        pred = self.tree_.predict(check_predict_data(self, X))
        return pred[:, 0] if self.n_outputs_ == 1 else pred
