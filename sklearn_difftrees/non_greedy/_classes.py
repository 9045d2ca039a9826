"""Non-greedy oblique trees: ``NonGreedyObliqueTreeClassifier`` / ``...Regressor``."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils import check_random_state

from .._compat import Interval, RealNotInt, StrOptions
from .._core._warn import held, reissue
from .._core.atomic import fit_context
from .._core._guard import check_finite_model
from .._core._memory import check_memory
from .._core.categorical import CATEGORICAL_CONSTRAINT
from .._core.base import (BaseObliqueTree, TreeClassifierMixin, TreeRegressorMixin,
                          set_training_record)
from .._core.batching import resolve_batching
from .._core.greedy import (
    BINNED_MIN_ROWS,
    FLOOR_DEPTH,
    GREEDY_MAX_ROWS,
    FeatureBins,
    cv_depth,
    fit_cart,
    fit_score,
    floor_fallback,
    greedy_reference,
    row_subsample,
)
from .._core.embedding import cart_to_complete
from .._core.onnx_graph import hard_tree_outputs
from .._core.selection import (
    cross_check_applies,
    cross_checked_cart,
    paired_advantage,
    validation_check_applies,
)
from .._core.threads import single_blas_thread
from .._core.tree import ObliqueTree
from .._core.validation import (check_fit_data, constant_columns, fit_standardizer,
                                 normalize_weights, validation_split)
from ._docstrings import _DOC_ATTRS, _DOC_PARAMS, _DOC_REFS
from ._train import apply_leaves, co2_tree, leaf_targets, refit_leaf_params, sgd

#: Deepest tree ``max_depth="auto"`` considers.
AUTO_MAX_DEPTH = 12
#: Shallowest tree ``max_depth="auto"`` chooses: a single split cannot do
#: what two greedy levels do, whatever the CV says.
AUTO_MIN_DEPTH = 2
#: Folds of the cross-validation that chooses ``max_depth="auto"``.
AUTO_CV_FOLDS = 3
#: Shallower trees ``max_depth="auto"`` also trains (those below the
#: cross-validated depth): the depth a CART needs overstates an oblique
#: tree's where one hyperplane separates the classes.
SHALLOW_DEPTHS = (1, 2, 4)
#: Paired statistic on the validation rows above which a shallower tree
#: replaces the cross-validated depth's.
SHALLOW_Z = 3.0

__all__ = [
    "NonGreedyObliqueTree",
    "NonGreedyObliqueTreeClassifier",
    "NonGreedyObliqueTreeRegressor",
]


def _start_rows(batch_size, n, rng):
    """Rows of the start (depth choice, CART / CO2 tree): all, or one epoch's.

    With ``batch_size="auto"`` an epoch visits at most
    :data:`~sklearn_difftrees._core.batching.MAX_EPOCH_ROWS` rows; the greedy
    start, whose cost grows like ``n log n`` per level, is then computed on a
    random subsample of that size (SGD still visits every row). Returns a
    slice or sorted indices; draws from ``rng`` only when it subsamples.
    """
    return row_subsample(n, resolve_batching(batch_size, n, 128)[1], rng)


class _BaseNonGreedy(BaseObliqueTree):
    """Shared parameters and ``fit`` of the non-greedy oblique trees."""

    _parameter_constraints = {
        "categorical_features": CATEGORICAL_CONSTRAINT,
        "max_depth": [Interval(Integral, 1, 20, closed="both"), StrOptions({"auto"})],
        "nu": [Interval(Real, 0, None, closed="neither")],
        "inference": [StrOptions({"fast", "exact"})],
        "stable": ["boolean"],
        "co2_iter": [Interval(Integral, 0, None, closed="left")],
        "co2_oblique": ["boolean"],
        "refit_leaves": ["boolean"],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(RealNotInt, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "greedy_floor": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        nu=10.0,
        inference="fast",
        stable=False,
        co2_iter=5,
        co2_oblique=True,
        refit_leaves=False,
        max_iter=200,
        batch_size="auto",
        learning_rate=0.1,
        momentum=0.9,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-4,
        greedy_floor=True,
        categorical_features="auto",
        random_state=None,
        verbose=0,
    ):
        self.max_depth = max_depth
        self.nu = nu
        self.inference = inference
        self.stable = stable
        self.co2_iter = co2_iter
        self.co2_oblique = co2_oblique
        self.refit_leaves = refit_leaves
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.greedy_floor = greedy_floor
        self.categorical_features = categorical_features
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ the task
    def _embed_cart(self, cart, Z, Y, w, depth):
        """``(W, b, theta)`` of a complete tree of ``depth`` routing like ``cart``."""
        W, b, leaf_node = cart_to_complete(cart, depth, Z.shape[1], self.nu)
        # Leaf parameters of every CART leaf from the training samples the
        # embedded tree routes to it (float64, as the fitted tree routes);
        # every complete-tree leaf below a shallow CART leaf gets that leaf's.
        theta_cart, _ = leaf_targets(leaf_node[apply_leaves(Z, W, b)], Y, w,
                                     cart.tree_.node_count, self._loss, self._n_leaf_outputs)
        return W, b, theta_cart[leaf_node]

    def _init_cart(self, Z, Y, w, seed, depth, bins):
        """Greedy axis-aligned start: CART at ``depth`` (entropy / squared error),
        grown on the rows' codes of ``bins``."""
        cart = fit_cart(bins.transform(Z), Y, w, depth=depth,
                        classification=is_classifier(self), seed=seed, bins=bins)
        return self._embed_cart(cart, Z, Y, w, depth)

    def _train_score(self, Z, Y, w, W, b, theta):
        """Training score (accuracy / R^2) of a complete tree on ``(Z, Y, w)``."""
        return self._leaf_score(apply_leaves(Z, W, b), theta, Y, w)

    def _greedy_floor(self, Z, Y, w, grow, seed, depth, W, b, theta, bins, codes):
        """The tree to return: ``(W, b, theta)``, or a greedy tree if it fits worse.

        The reference is the core's greedy floor
        (:func:`~sklearn_difftrees._core.greedy.greedy_reference`: the
        better-fitting CART of depth ``min(depth, FLOOR_DEPTH)``; classifier:
        information gain or Gini) grown on the ``codes`` (of ``bins``) of the
        rows ``grow`` (all, or the start's subsample) of ``(Z, Y, w)``, or on
        their raw values below ``BINNED_MIN_ROWS`` rows (as the other
        families' floors), and scored as embedded in the complete tree. When
        ``(W, b, theta)`` scores below
        it on ``(Z, Y, w)``, the greedy tree of ``depth`` with the reference's
        criterion is returned instead (or the reference itself, should it fit
        better).
        Returns ``(W, b, theta, fell_back)``.
        """
        Zg, Yg, wg = Z[grow], Y[grow], w[grow]
        classification = is_classifier(self)
        if Zg.shape[0] < BINNED_MIN_ROWS:  # exact thresholds, as the other floors'
            bins = codes = None

        def embed(cart):
            return self._embed_cart(cart, Zg, Yg, wg, depth)

        ref = greedy_reference(
            Z, Y, w, depth=depth, classification=classification, seed=seed, grow=grow,
            score=lambda cart: self._train_score(Z, Y, w, *embed(cart)), bins=bins,
            codes=codes,
        )
        if self._train_score(Z, Y, w, W, b, theta) >= ref.score:
            return W, b, theta, False
        grown = Zg if codes is None else codes
        deep = [("deep", lambda: embed(fit_cart(grown, Yg, wg, depth=depth, seed=seed,
                                                classification=classification,
                                                criterion=ref.criterion, bins=bins)))]
        _, tree = floor_fallback(ref, lambda tree: self._train_score(Z, Y, w, *tree),
                                 (deep if depth > FLOOR_DEPTH else [])
                                 + [("reference", lambda: embed(ref.cart))])
        return (*tree, True)

    @fit_context(prefer_skip_nested_validation=True)
    @single_blas_thread
    def fit(self, X, y, sample_weight=None):
        """Grow CART, refine it with CO2, then optimize the surrogate bound by SGD.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; standardized internally (the fitted tree works on
            raw features).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Target values (class labels for the classifier).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each sample's loss and bound.
            Samples of zero weight are dropped before training.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, y, sample_weight = check_fit_data(
            self, X, y, sample_weight, multi_output=not is_classifier(self)
        )
        Y, sample_weight, n_out = self._prepare_target(y, sample_weight, False)
        self._n_leaf_outputs = n_out
        if self.max_depth != "auto":
            # Splits, leaves, their gradients, momentum, best copy and the fitted
            # tree (float64, ~8 copies), plus a few per-node vectors per batch.
            n_int = 2**self.max_depth - 1
            check_memory(
                type(self).__name__,
                64 * (n_int * (X.shape[1] + 1) + (n_int + 1) * n_out)
                + 8 * 4 * (2 * n_int + 1) * resolve_batching(self.batch_size, X.shape[0], 128)[0],
                f"max_depth={self.max_depth}, {X.shape[1]} features",
            )
        if not is_classifier(self):
            Y = Y.astype(np.float64)
        self._feature_mean, self._feature_scale = fit_standardizer(X, sample_weight)
        Z = (X - self._feature_mean) / self._feature_scale
        # Numerically constant columns carry nothing (_make_tree drops their
        # weights): exact zeros, so that no greedy tree splits on their noise.
        constant = constant_columns(X, sample_weight)
        Z[:, constant] = 0.0

        keep = np.flatnonzero(sample_weight > 0)  # zero weight == not in the data
        Z_fit, Y_fit, w_fit = Z[keep], Y[keep], sample_weight[keep]
        w_fit = normalize_weights(w_fit)
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        # All fit rows (before the early-stopping hold-out): the depth choice
        # and the greedy floor see them (a subsample of one epoch's rows under
        # batch_size="auto", drawn from ``rng`` only where max_depth="auto"
        # draws it, so that fixed depths keep their validation split).
        Z_all, Y_all, w_all = Z_fit, Y_fit, w_fit
        sub_all = _start_rows(self.batch_size, Z_fit.shape[0],
                              rng if self.max_depth == "auto" else np.random.RandomState(seed))
        # The greedy trees (depth choice, start, floor) grow on binned codes.
        bins = FeatureBins(Z_all[sub_all])
        codes_all = bins.transform(Z_all[sub_all])  # depth choice and greedy floor
        if self.max_depth == "auto":
            depth, self.depth_scores_ = cv_depth(
                codes_all, Y_all[sub_all], w_all[sub_all],
                max_depth=AUTO_MAX_DEPTH, min_depth=AUTO_MIN_DEPTH,
                classification=is_classifier(self), n_folds=AUTO_CV_FOLDS, seed=seed,
                bins=bins,
            )
        else:
            depth, self.depth_scores_ = self.max_depth, None
        self.max_depth_ = depth
        val = split = None
        if self.early_stopping:
            split = tr, va = validation_split(
                Z_fit.shape[0], self.validation_fraction, rng,
                stratify=Y_fit if is_classifier(self) else None,
            )
            val = (Z_fit[va], Y_fit[va], w_fit[va])
            Z_fit, Y_fit, w_fit = Z_fit[tr], Y_fit[tr], w_fit[tr]
        batch, epoch_rows = resolve_batching(self.batch_size, Z_fit.shape[0], 128)
        X_keep, w_keep = X[keep], sample_weight[keep]
        W, b, theta, record, start_tree = self._train_at(
            depth, Z_fit, Y_fit, w_fit, val, rng, np.random.RandomState(seed), seed, bins, n_out,
            batch, epoch_rows)
        if self.max_depth == "auto" and self.early_stopping:
            depth, (W, b, theta, record, start_tree) = self._shallower(
                depth, (W, b, theta, record, start_tree), Z_fit, Y_fit, w_fit, val, seed, bins,
                n_out, batch, epoch_rows)
            self.max_depth_ = depth
        self.init_tree_ = self._make_tree(*start_tree, X_keep, w_keep, constant)
        set_training_record(self, record)
        self.greedy_fallback_, tree = False, None
        if self.greedy_floor:  # never fit the rows worse than two greedy levels
            W, b, theta, self.greedy_fallback_ = self._greedy_floor(
                Z_all, Y_all, w_all, sub_all, seed, depth, W, b, theta, bins, codes_all)
            found = None
            small = cross_check_applies(keep.size)
            if small or (split is not None and validation_check_applies(keep.size)):
                # Out of fold on a small table (clones of this tree at its depth
                # against the depth-tuned CARTs: the core's cross_check), on a
                # larger one the tree itself on the validation rows.
                tree = self._make_tree(W, b, theta, X_keep, w_keep, constant)
                found = cross_checked_cart(
                    self, X[keep], Z_all, Y_all, w_all, classification=is_classifier(self),
                    max_depth=depth, seed=seed, clone_params={"max_depth": depth},
                    split=None if small else split, decision=tree.predict)
            if found is not None:
                W, b, theta = self._embed_cart(found[0], Z_all, Y_all, w_all, depth)
                self.greedy_fallback_, tree = True, None
        self.tree_ = (tree if tree is not None
                      else self._make_tree(W, b, theta, X_keep, w_keep, constant))
        self.n_active_leaves_ = self.tree_.n_leaves
        check_finite_model(self, X)
        return self

    def _train_at(self, depth, Z_fit, Y_fit, w_fit, val, rng, train_rng, seed, bins, n_out,
                  batch, epoch_rows):
        """The start of ``depth`` (CO2 or CART) trained by SGD with early
        stopping; returns ``(W, b, theta, record, start)``, the start as its
        ``(W, b, theta)`` before training."""
        sub = _start_rows(self.batch_size, Z_fit.shape[0], rng)
        if self.co2_iter > 0:
            W, b, theta = co2_tree(
                Z_fit[sub], Y_fit[sub], w_fit[sub], depth=depth, loss=self._loss,
                n_outputs=n_out, nu=self.nu, learning_rate=self.learning_rate,
                momentum=self.momentum, n_epochs=self.co2_iter,
                batch_size=batch, rng=train_rng, bins=bins,
                oblique=self.co2_oblique,
            )
        else:
            W, b, theta = self._init_cart(Z_fit[sub], Y_fit[sub], w_fit[sub], seed, depth, bins)
        start_tree = (W.copy(), b.copy(), theta.copy())
        # The start as early stopping evaluated it (closed-form leaves with
        # refit_leaves), in case the validation score prefers it in the end.
        start_theta = (refit_leaf_params(Z_fit, Y_fit, w_fit, W, b, theta, self._loss)
                       if self.refit_leaves else theta.copy())
        start = (W.copy(), b.copy(), start_theta)
        record = sgd(
            Z_fit, Y_fit, w_fit, W, b, theta, loss=self._loss, nu=self.nu,
            inference=self.inference, stable=self.stable,
            learning_rate=self.learning_rate, momentum=self.momentum,
            max_iter=self.max_iter, batch_size=batch, epoch_rows=epoch_rows,
            n_iter_no_change=self.n_iter_no_change, tol=self.tol, rng=train_rng,
            validation=val, score_fn=self._leaf_score, refit_leaves=self.refit_leaves,
            verbose=self.verbose,
            name=type(self).__name__,
        )
        if (val is not None and record.best_epoch > 0
                and record.validation_scores[0] > record.best_validation_score):
            # Early stopping keeps the epoch of least validation loss; between
            # it and the start, the validation score (accuracy / R^2) decides.
            W[...], b[...], theta[...] = start
            record.best_validation_score = record.validation_scores[0]
        return W, b, theta, record, start_tree

    def _row_losses(self, W, b, theta, Z, Y):
        """Per-row validation losses of a hard tree (standardized space): 0 / 1
        errors of its leaves' classes, or squared errors of the standardized
        targets summed over the outputs."""
        values = theta[apply_leaves(Z, W, b)]
        if is_classifier(self):
            return (values.argmax(axis=1) != Y).astype(np.float64)
        return ((values - Y.reshape(values.shape)) ** 2).sum(axis=1)

    def _shallower(self, depth, trained, Z_fit, Y_fit, w_fit, val, seed, bins, n_out, batch,
                   epoch_rows):
        """``max_depth="auto"``: trees of the :data:`SHALLOW_DEPTHS` below
        ``depth`` trained on the same rows (on a seeded subsample of
        ``GREEDY_MAX_ROWS`` of them beyond that many), one replacing the
        ``depth`` tree ``trained`` (``(W, b, theta, record, start)``) only when
        its validation advantage is clear (paired statistic above
        :data:`SHALLOW_Z`; of several, the largest; trained again on every row
        if it was on a subsample). Returns ``(depth, trained)`` of the kept
        tree; the warnings of the others are dropped."""
        Zv, Yv, wv = val
        base = self._row_losses(*trained[:3], Zv, Yv)
        sub = row_subsample(Z_fit.shape[0], GREEDY_MAX_ROWS, seed)
        rows = (Z_fit, Y_fit, w_fit) if isinstance(sub, slice) else (
            Z_fit[sub], Y_fit[sub], w_fit[sub])
        sub_batching = resolve_batching(self.batch_size, rows[0].shape[0], 128)
        best, best_z, kept_warnings = (depth, trained), SHALLOW_Z, []
        for d in SHALLOW_DEPTHS:
            if d >= depth:
                break
            with held() as caught:
                candidate = self._train_at(
                    d, *rows, val, np.random.RandomState(seed + d),
                    np.random.RandomState(seed + d), seed + d, bins, n_out, *sub_batching)
            _, z = paired_advantage(base, self._row_losses(*candidate[:3], Zv, Yv), wv)
            if z > best_z:
                best, best_z, kept_warnings = (d, candidate), z, caught
        if best[0] != depth and not isinstance(sub, slice):  # again, on every row
            d = best[0]
            with held() as kept_warnings:
                best = (d, self._train_at(
                    d, Z_fit, Y_fit, w_fit, val, np.random.RandomState(seed + d),
                    np.random.RandomState(seed + d), seed + d, bins, n_out, batch, epoch_rows))
        reissue(kept_warnings)
        return best

    def _make_tree(self, W, b, theta, X, sample_weight, constant):
        # Constant features (``constant``: constant_columns of the fit rows)
        # carry no information: their (untrained) weights are dropped so that
        # routing and importances do not depend on them.
        W = np.where(constant, 0.0, W)
        tree = ObliqueTree.from_standardized(
            W, b, self._leaf_values(theta), self._feature_mean, self._feature_scale
        )
        return tree.finalize(X, sample_weight)

    # ------------------------------------------------------------------ onnx
    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx`: the hard oblique ``tree_``."""
        hard_tree_outputs(graph, self, self.tree_)


class NonGreedyObliqueTreeClassifier(TreeClassifierMixin, _BaseNonGreedy):
    __doc__ = (
        """Non-greedy oblique decision tree classifier (Norouzi et al., 2015).

    All oblique splits and softmax leaves of a complete tree are optimized
    jointly by stochastic gradient descent on a convex-concave upper bound of
    the empirical log loss (the surrogate objective of eq. 9), starting from a
    greedy tree: CO2 (each node's best axis-aligned information-gain split,
    refined on the bound of a depth-1 tree, top-down) or CART itself. Each step solves a loss-augmented
    inference problem in compiled code, O(depth^2 p) per sample with the
    default ``inference="fast"``. The norm bound ``nu`` on the splits
    regularizes the tree and prunes unused leaves.

    Training uses numpy and compiled kernels only (no torch); the fitted
    model is a plain oblique tree predicting through the compiled router.
    Inputs are standardized internally.

    Read more in the :doc:`User Guide </non_greedy>`.
"""
        + _DOC_PARAMS
        + """    class_weight : dict, "balanced" or None, default=None
        Weights associated with classes, multiplied into ``sample_weight``.

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
    NonGreedyObliqueTreeRegressor : The regression counterpart.
    sklearn.tree.DecisionTreeClassifier : The greedy axis-aligned start.
"""
        + _DOC_REFS
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_difftrees import NonGreedyObliqueTreeClassifier
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> clf = NonGreedyObliqueTreeClassifier(max_depth=3, max_iter=10, random_state=0)
    >>> clf.fit(X, y).predict(X[:5]).shape
    (5,)
    >>> clf.n_active_leaves_ <= 8
    True
"""
    )

    _loss = "log"
    _parameter_constraints = {
        **_BaseNonGreedy._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        nu=10.0,
        inference="fast",
        stable=False,
        co2_iter=5,
        co2_oblique=True,
        refit_leaves=False,
        max_iter=200,
        batch_size="auto",
        learning_rate=0.1,
        momentum=0.9,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-4,
        greedy_floor=True,
        categorical_features="auto",
        random_state=None,
        verbose=0,
        class_weight=None,
    ):
        super().__init__(
            max_depth=max_depth,
            nu=nu,
            inference=inference,
            stable=stable,
            co2_iter=co2_iter,
            co2_oblique=co2_oblique,
            refit_leaves=refit_leaves,
            max_iter=max_iter,
            batch_size=batch_size,
            learning_rate=learning_rate,
            momentum=momentum,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change,
            tol=tol,
            greedy_floor=greedy_floor,
            categorical_features=categorical_features,
            random_state=random_state,
            verbose=verbose,
        )
        self.class_weight = class_weight

    @staticmethod
    def _leaf_score(leaves, theta, y, w):
        return fit_score(theta[leaves].argmax(axis=1), y, w, True)


class NonGreedyObliqueTreeRegressor(TreeRegressorMixin, _BaseNonGreedy):
    __doc__ = (
        """Non-greedy oblique decision tree regressor (Norouzi et al., 2015).

    Same model and training as :class:`NonGreedyObliqueTreeClassifier` with
    the squared loss ``||theta - y||^2`` on standardized targets (eq. 3; one
    value per leaf and output, multi-output supported) and a CART regressor
    (squared error) as the greedy start.

    Read more in the :doc:`User Guide </non_greedy>`.
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
    NonGreedyObliqueTreeClassifier : The classification counterpart.
    sklearn.tree.DecisionTreeRegressor : The greedy axis-aligned start.
"""
        + _DOC_REFS
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_difftrees import NonGreedyObliqueTreeRegressor
    >>> X, y = make_regression(n_samples=300, n_features=5, random_state=0)
    >>> reg = NonGreedyObliqueTreeRegressor(max_depth=3, max_iter=10, random_state=0)
    >>> reg.fit(X, y).predict(X[:2]).shape
    (2,)
"""
    )

    _loss = "squared"

    @staticmethod
    def _leaf_score(leaves, theta, y, w):
        return fit_score(theta[leaves], y, w, False)


#: The design brief's name for the method: the classifier.
NonGreedyObliqueTree = NonGreedyObliqueTreeClassifier
