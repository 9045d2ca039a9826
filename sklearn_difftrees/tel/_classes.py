"""TEL estimators: ``TreeEnsembleLayerClassifier`` and ``TreeEnsembleLayerRegressor``.

The fitted model is an additive ensemble of smooth-step soft trees held as
plain numpy arrays (``weights_``, ``biases_``, ``leaf_values_``, in the raw
input space) and evaluated by the compiled conditional forward pass: fitting
needs torch, predicting and unpickling do not.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions
from .._core.batching import MAX_BATCH
from .._core.base import BaseGradientModel, TreeClassifierMixin, TreeRegressorMixin
from .._core.categorical import CATEGORICAL_CONSTRAINT, split_importances, term_spread
from .._core.validation import check_predict_data, constant_columns
from .._core._memory import check_memory
from ._docstrings import _DOC_ATTRS, _DOC_PARAMS, _DOC_REFS
from ._export import _TELExportMixin
from ._kernels import MAX_DEPTH, ensemble_memory, tel_forward
from ._onnx import tel_graph

__all__ = ["TreeEnsembleLayerClassifier", "TreeEnsembleLayerRegressor"]


def _node_statistics(Z, W, b, O, gamma, weight=None, max_entries=2**21):
    """Per-node training statistics of a fitted ensemble (standardized ``Z``).

    Returns ``reach`` (n_trees, n_nodes): fraction of the rows reaching each
    node with a nonzero probability; ``mass`` (n_trees, n_nodes): mean
    ``P(x -> node)``, weighted by ``weight`` (the rows' training weights;
    None: equal), i.e. the expected share of the training weight the node
    carries; ``soft`` (n_trees, n_internal): among the rows reaching an
    internal node, the fraction whose activation there is fractional
    (0 < S < 1); ``split`` (n_trees, n_internal): the training weight an
    internal node's split divides (``feature_importances_``), its ``mass``
    times the variance of its right-probability ``S`` over the rows weighted
    by ``weight * P(x -> node)``: ``m_L m_R / m - mean(weight P(x -> node)
    S (1 - S))`` from its children's masses ``m_L``, ``m_R`` (hard routing:
    ``m p_L p_R``; 0 for a node sending every row one way, or every row
    with the same probability).

    Conditional, like the layer: the compiled forward pass records, per row,
    only its fractional nodes and reachable leaves, so the work and the
    temporary memory grow with the nodes the rows actually reach, not with
    ``2**depth`` (the outputs are one number per node, like the parameters).
    A node is reached iff it is an ancestor of a reachable leaf, its mass
    (per row: ``P(x -> node)``) is the sum of the masses of the leaves below
    it, and a row is fractional at a node iff it reaches both children
    (then ``P S (1 - S) = P_L P_R / (P_L + P_R)``). Rows are processed in
    chunks sized so that a chunk's record buffers hold about ``max_entries``
    entries (rows that reach many leaves get smaller chunks).
    """
    n_trees, n_int, _ = W.shape
    depth = int(round(np.log2(n_int + 1)))
    n_nodes = 2 * n_int + 1
    size = n_trees * n_nodes
    reach = np.zeros(size)
    mass = np.zeros(size)
    soft = np.zeros(size)
    fractional = np.zeros(size)  # sum of weight * P(x -> node) * S * (1 - S)
    weight = np.ones(Z.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    start, chunk, capacity, longest = 0, 16, 16, 1
    while start < Z.shape[0]:
        z, w = Z[start : start + chunk], weight[start : start + chunk]
        start += z.shape[0]
        _, _, rec = tel_forward(z, W, b, O, gamma, record=True, capacity=capacity)
        # The next chunks' rows are alike: twice the longest record so far
        # (a longer one runs again alone, into a wider record).
        longest = max(longest, int(rec.length.max()))
        capacity = 2 * longest
        chunk = int(np.clip(max_entries // capacity, 1, 4096))
        # The entries of every row, row by row (not the unused capacity).
        row = np.repeat(np.arange(z.shape[0]), rec.length)
        col = np.arange(row.size) - np.repeat(np.cumsum(rec.length) - rec.length, rec.length)
        ids = rec.node[row, col].astype(np.int64)
        node = ids % n_nodes
        is_leaf = node >= n_int
        prob = rec.value[row, col][is_leaf]  # P(x -> leaf)
        mass += np.bincount(ids[is_leaf], weights=prob * w[row[is_leaf]], minlength=size)
        soft += np.bincount(ids[~is_leaf], minlength=size)
        # Every ancestor of a reachable leaf is reached (once per row). A
        # row's leaves come tree by tree, left to right, so the ancestors of
        # one level are sorted within the row: a new one is where it changes.
        base = ids[is_leaf] - node[is_leaf]  # tree * n_nodes
        leaf, lrow = node[is_leaf], row[is_leaf]
        first = np.ones(leaf.size, dtype=bool)
        for level in range(depth + 1):
            anc = base + ((leaf + 1) >> (depth - level)) - 1
            first[1:] = (anc[1:] != anc[:-1]) | (lrow[1:] != lrow[:-1])
            reach += np.bincount(anc[first], minlength=size)
            if level:  # siblings both reached: the row is fractional at their parent
                starts = np.flatnonzero(first)
                p_anc, a, r = np.add.reduceat(prob, starts), anc[starts], lrow[starts]
                k = np.flatnonzero((a[:-1] % n_nodes % 2 == 1) & (a[1:] == a[:-1] + 1)
                                   & (r[1:] == r[:-1]))
                pl, pr = p_anc[k], p_anc[k + 1]
                parent = a[k] - (a[k] % n_nodes) + (a[k] % n_nodes - 1) // 2
                fractional += np.bincount(parent, weights=w[r[k]] * pl * pr / (pl + pr),
                                          minlength=size)
    reach, mass, soft, fractional = (a.reshape(n_trees, n_nodes)
                                     for a in (reach, mass, soft, fractional))
    for level in range(depth - 1, -1, -1):  # internal masses: sums of the leaves below
        nodes = np.arange(2**level - 1, 2 ** (level + 1) - 1)
        mass[:, nodes] = mass[:, 2 * nodes + 1] + mass[:, 2 * nodes + 2]
    soft = soft[:, :n_int] / np.maximum(reach[:, :n_int], 1)  # 0 where no row reaches
    m, m_left, m_right = mass[:, :n_int], mass[:, 1::2], mass[:, 2::2]
    split = m_left * m_right / np.where(m > 0, m, 1.0) - fractional[:, :n_int]
    split = np.where(split > 1e-12 * m, split, 0.0)  # not rounding: every row one way
    total = weight.sum()
    return reach / Z.shape[0], mass / total, soft, split / total


class _BaseTEL(_TELExportMixin, BaseGradientModel):
    """Shared parameters, model and export of the TEL estimators.

    ``fit`` is :class:`BaseGradientModel`'s (validation, standardization,
    validation split, seeding, the shared training loop); this class supplies
    the module (:class:`TreeEnsembleLayer`), the L2 penalty and ``_freeze``,
    which folds the standardization into raw-space numpy arrays.
    """

    @property
    def _auto_cuda(self):
        """``device="auto"`` may pick a GPU unless the backend is CPU-only."""
        return self.backend != "conditional"

    _parameter_constraints = {
        **BaseGradientModel._parameter_constraints,
        "categorical_features": CATEGORICAL_CONSTRAINT,
        "n_trees": [Interval(Integral, 1, None, closed="left")],
        "max_depth": [Interval(Integral, 1, MAX_DEPTH, closed="both")],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "backend": [StrOptions({"auto", "conditional", "dense"})],
        "alpha_splits": [Interval(Real, 0, None, closed="left")],
        "alpha_leaves": [Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"auto", "cart", "random"})],
        "greedy_floor": ["boolean"],
    }

    def __init__(
        self,
        *,
        n_trees=20,
        max_depth=4,
        gamma=2.0,
        backend="auto",
        alpha_splits=0.0,
        alpha_leaves=0.0,
        init="auto",
        max_iter=100,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-4,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
        warm_start=False,
        greedy_floor=True,
    ):
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.gamma = gamma
        self.backend = backend
        self.alpha_splits = alpha_splits
        self.alpha_leaves = alpha_leaves
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

    # ------------------------------------------------------------------ fit
    def _penalty(self, module):
        if not (self.alpha_splits or self.alpha_leaves):
            return None
        total = 0.0
        if self.alpha_splits:
            total = total + self.alpha_splits * (module.weight**2).sum()
        if self.alpha_leaves:
            total = total + self.alpha_leaves * (module.leaf**2).sum()
        return total

    def _init_module(self, module, Z, Y, w, seed):
        """The greedy start of ``init="cart"`` (boosted CARTs,
        :func:`~._start.boosted_start`), an early-stopping candidate; under
        ``init="auto"``, :meth:`_train` trains it as a second start (from
        ``plan.start_rows``); ``"random"``: the layer's own initialization."""
        if self.init == "cart":
            from ._start import boosted_start

            boosted_start(self, module, Z, Y, w, seed)
            return True
        return False

    def _train(self, plan):
        from .._core.starts import train_starts
        from ._start import boosted_start

        return train_starts(self, plan, self.warm_start and hasattr(self, "_module_state"),
                            plan.module.out_features, boosted_start)

    def _fit_setup(self, X, y, sample_weight):
        """The shared set-up, plus the training loop's ``loss_ceiling``: the
        training loss of a depth-2 CART on the training part. An epoch that
        fits its rows worse is no early-stopping candidate, so that a small
        validation set cannot keep an ensemble that has learned less than
        two greedy levels (``docs/tel.md``, early stopping)."""
        plan = super()._fit_setup(X, y, sample_weight)
        if plan.train_kwargs["validation_data"] is not None and self.early_stopping:
            from .._core.greedy import greedy_loss

            Z, Y, w = (t.cpu().numpy() for t in plan.train_data)
            plan.train_kwargs["loss_ceiling"] = greedy_loss(
                Z.astype(np.float64), Y, w.astype(np.float64),
                classification=is_classifier(self), seed=plan.train_kwargs["seed"])
        return plan

    def _build_module(self, n_features, n_outputs, device):
        from ._layer import TreeEnsembleLayer

        if self.backend == "conditional" and device.type != "cpu":
            raise ValueError(
                "backend='conditional' runs on the CPU; use device='cpu' or "
                "backend='auto' / 'dense'."
            )
        state = getattr(self, "_module_state", None)
        if self.warm_start and state is not None and state["weight"].shape != (
            self.n_trees, 2**self.max_depth - 1, n_features
        ):
            raise ValueError(
                "warm_start=True requires the n_trees, max_depth and number of "
                "features of the first fit."
            )
        dense = self.backend == "dense" or (
            self.backend == "auto" and device.type != "cpu"
        )
        # Dense training evaluates a batch (at most MAX_BATCH rows under
        # "auto"), validation in chunks of 1024 rows.
        batch = MAX_BATCH if self.batch_size == "auto" else self.batch_size
        rows = max(batch, 1024) if dense else 0
        check_memory(
            type(self).__name__,
            ensemble_memory(self.n_trees, self.max_depth, n_features, n_outputs, rows),
            f"n_trees={self.n_trees}, max_depth={self.max_depth}, {n_features} features"
            + (", backend='dense'" if dense else ""),
        )
        return TreeEnsembleLayer(
            n_features, n_outputs, n_trees=self.n_trees, depth=self.max_depth,
            gamma=float(self.gamma), backend=self.backend,
        )

    def _freeze(self, module, X, Y, sample_weight, keep):
        self._set_ensemble(self._module_state["weight"].astype(np.float64),
                           self._module_state["bias"].astype(np.float64),
                           self._module_state["leaf"].astype(np.float64),
                           X, sample_weight, keep)
        self.greedy_fallback_ = False

    def _check_fitted_model(self, plan):
        if self.greedy_floor:  # the CART on held-out rows (out of fold, or validation)
            from ._floor import apply_cross_check

            self.greedy_fallback_ = apply_cross_check(self, plan)

    def _set_ensemble(self, W, b, O, X, sample_weight, keep):
        """The fitted arrays from standardized-space ``W``, ``b`` and leaves
        ``O`` (float64): the standardization folded into raw-space arrays."""
        # A feature constant over the training rows was never trained (its
        # standardized column is ~0): drop its weights.
        W = np.where(constant_columns(X, sample_weight), 0.0, W)
        self.weights_ = W / self._feature_scale
        self.biases_ = b - self.weights_ @ self._feature_mean
        self.leaf_values_, self.intercept_ = self._output_scaling(O)
        Z = (X[keep] - self._feature_mean) / self._feature_scale
        _, n_leaves, _ = tel_forward(Z, W, b, O, float(self.gamma))
        self.n_reachable_leaves_ = float(n_leaves.mean()) / self.n_trees
        (self._node_reach, self._node_mass, self._node_soft,
         self._node_split) = _node_statistics(Z, W, b, O, float(self.gamma),
                                              weight=sample_weight[keep])

    # -------------------------------------------------------------- predict
    def _raw_output(self, X):
        """Sum of the trees' outputs (+ intercept) for validated ``X``."""
        out, _, _ = tel_forward(
            np.asarray(X, dtype=np.float64), self.weights_, self.biases_,
            self.leaf_values_, float(self.gamma),
        )
        return out + self.intercept_

    def reachable_leaves(self, X):
        """Number of reachable leaves of every sample, per tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        n_leaves : ndarray of shape (n_samples,)
            Mean over the trees of the number of leaves each sample reaches
            with a nonzero probability (1 means every tree routes it hard).
        """
        check_is_fitted(self)
        X = check_predict_data(self, X)
        _, n_leaves, _ = tel_forward(
            np.asarray(X, dtype=np.float64), self.weights_, self.biases_,
            self.leaf_values_, float(self.gamma),
        )
        return n_leaves / self.n_trees

    @property
    def feature_importances_(self):
        """Normalized split importances, shape (n_features_in_,).

        The oblique trees' definition for soft splits: every internal node of
        every tree divides its feature weights ``|w_j| * std_j`` (standardized
        scale; a feature with indicator columns: the spread of its whole term
        over the training rows) among the features in proportion, weighted by
        the training weight the node divides: its expected share of the
        (weighted) training rows times the variance of its right-probability
        over them (routed hard: ``p * p_left * p_right``; a node sending
        every row one way, or every row with the same probability, counts
        zero). Summed over all trees and normalized to add up to one; all
        zeros without such a split. From the statistics ``fit`` records;
        after ``greedy_fallback_``, those of the CART's splits.
        """
        check_is_fitted(self)
        n_int = self.weights_.shape[1]
        split = getattr(self, "_node_split", None)
        if split is None:  # pickled before it was recorded: routing taken as hard
            m = self._node_mass
            split = m[:, 1:2 * n_int:2] * m[:, 2::2] / np.where(m[:, :n_int] > 0, m[:, :n_int], 1)
        used = split > 0
        return split_importances(self, term_spread(self, self.weights_[used]), split[used])

    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx` (every soft tree, densely)."""
        tel_graph(graph, self)


class TreeEnsembleLayerClassifier(TreeClassifierMixin, _BaseTEL):
    __doc__ = (
        """Tree Ensemble Layer classifier: jointly trained smooth-step soft trees.

    An additive ensemble of ``n_trees`` oblique soft trees (Hazimeh et al.,
    2020) trained end to end with cross-entropy on the softmax of the summed
    leaf vectors. Each node routes with the smooth-step activation, which is
    exactly 0 or 1 outside a band of width ``gamma``: most samples follow one
    hard path per tree, and training and prediction only visit the reachable
    nodes (compiled conditional forward and backward passes).

    Inputs are standardized internally (the paper's batch-norm before the
    layer); the scaling is folded into the fitted splits. Prediction runs the
    compiled conditional forward pass on numpy arrays, without torch.

    Read more in the :doc:`User Guide </tel>`.
"""
        + _DOC_PARAMS.format(n_trees=20, max_depth=4)
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
        + _DOC_ATTRS.format(
            leaf_dim="n_classes", leaf_note=" (class logits)",
            intercept_note=" (zeros for the classifier)", score="accuracy",
        )
        + """
    See Also
    --------
    TreeEnsembleLayerRegressor : The regression counterpart.
    TreeEnsembleLayer : The torch module, for use inside a network.
"""
        + _DOC_REFS
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_difftrees import TreeEnsembleLayerClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = TreeEnsembleLayerClassifier(n_trees=5, max_iter=10, random_state=0)
    >>> clf.fit(X, y).predict_proba(X[:3]).shape
    (3, 2)
"""
    )

    _parameter_constraints = {
        **_BaseTEL._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        *,
        n_trees=20,
        max_depth=4,
        gamma=2.0,
        backend="auto",
        alpha_splits=0.0,
        alpha_leaves=0.0,
        init="auto",
        max_iter=100,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=10,
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
            n_trees=n_trees, max_depth=max_depth, gamma=gamma, backend=backend,
            alpha_splits=alpha_splits, alpha_leaves=alpha_leaves, init=init, max_iter=max_iter,
            batch_size=batch_size, learning_rate=learning_rate, optimizer=optimizer,
            momentum=momentum, lr_schedule=lr_schedule, grad_clip=grad_clip,
            early_stopping=early_stopping, validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, tol=tol, random_state=random_state,
            categorical_features=categorical_features,
            device=device, verbose=verbose, warm_start=warm_start, greedy_floor=greedy_floor,
        )
        self.class_weight = class_weight

    def _output_scaling(self, leaf):
        return leaf, np.zeros(leaf.shape[2])

    def decision_function(self, X):
        """Summed logits of the trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            The logits (columns: ``classes_``); for two classes their difference.
        """
        check_is_fitted(self)
        logits = self._raw_output(check_predict_data(self, X))
        return logits[:, 1] - logits[:, 0] if self.n_classes_ == 2 else logits

    def predict_proba(self, X):
        """Class probabilities: softmax of the summed leaf vectors.

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
        z = self._raw_output(check_predict_data(self, X))
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable class of every sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The predicted classes.
        """
        check_is_fitted(self)
        logits = self._raw_output(check_predict_data(self, X))
        return self.classes_.take(np.argmax(logits, axis=1))


class TreeEnsembleLayerRegressor(TreeRegressorMixin, _BaseTEL):
    __doc__ = (
        """Tree Ensemble Layer regressor: jointly trained smooth-step soft trees.

    Same model and training as :class:`TreeEnsembleLayerClassifier` with a
    squared loss on standardized targets (multi-output supported). The
    prediction is the sum of the trees' expected leaf values plus
    ``intercept_``.

    Read more in the :doc:`User Guide </tel>`.
"""
        + _DOC_PARAMS.format(n_trees=20, max_depth=4)
        + """
    Attributes
    ----------
    n_outputs_ : int
        Number of targets."""
        + _DOC_ATTRS.format(
            leaf_dim="n_outputs", leaf_note=" (in target units)",
            intercept_note=" (the training target mean)", score="R^2",
        )
        + """
    See Also
    --------
    TreeEnsembleLayerClassifier : The classification counterpart.
    TreeEnsembleLayer : The torch module, for use inside a network.
"""
        + _DOC_REFS
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_difftrees import TreeEnsembleLayerRegressor
    >>> X, y = make_regression(n_samples=200, n_features=5, random_state=0)
    >>> reg = TreeEnsembleLayerRegressor(n_trees=5, max_iter=10, random_state=0)
    >>> reg.fit(X, y).predict(X[:2]).shape
    (2,)
"""
    )

    def _output_scaling(self, leaf):
        return leaf * self._output_scale, np.asarray(self._target_mean, dtype=np.float64)

    def predict(self, X):
        """Predicted target: sum of the trees' expected leaf values.

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
        pred = self._raw_output(check_predict_data(self, X))
        return pred[:, 0] if self.n_outputs_ == 1 else pred
