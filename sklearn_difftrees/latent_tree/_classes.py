"""LatentTree estimators: ``LatentTreeClassifier`` and ``LatentTreeRegressor``.

Training runs the shared loop of :class:`~sklearn_difftrees._core.base.BaseGradientTree`
on :class:`~sklearn_difftrees.latent_tree._module._LatentTreeNet` (the
differentiable pruned tree + a head on ``[x, z]``). At the end of ``fit``
everything the prediction needs is turned into numpy arrays:

* ``tree_``: the oblique splits (standardization folded in), with pruned
  nodes (``a_t = 0``) and nodes no training row reaches marked inactive;
* ``pruning_values_``: the pruning vector ``a`` solved once on the whole
  training set (torch-free, compiled kernel), fixed from then on;
* the head's weights.

``predict`` computes, row by row, ``q`` from the splits, ``z = clip(q + 1/2,
0, a)`` and the head, in numpy: a row's prediction does not depend on the
other rows of the batch, and torch is not imported.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, _check_sample_weight
from .._core import topology
from .._core.base import BaseGradientTree, TreeClassifierMixin, TreeRegressorMixin
from .._core.categorical import CATEGORICAL_CONSTRAINT
from .._core.validation import check_predict_data, check_warm_depth, constant_columns
from ._docstrings import _DOC_ATTRS, _DOC_PARAMS, _REFERENCE
from ._deepen import AUTO_DEPTH, AUTO_MAX_DEPTH, deepen
from ._forward import INPUT_CLIP, _elu, _rowwise_matmul, node_rewards_numpy
from ._onnx import latent_tree_graph
from ._pav import tree_isotonic_forward
from ._pruned import _PrunedTreeMixin

__all__ = ["LatentTreeClassifier", "LatentTreeRegressor"]


class _BaseLatentTree(_PrunedTreeMixin, BaseGradientTree):
    """Shared parameters, model and prediction of the LatentTree estimators."""

    #: ``device="auto"`` trains on the CPU: at the default depth one thread
    #: was faster than an H200 at 100,000 rows (docs/benchmarks.md, section 13).
    _auto_cuda = False

    _parameter_constraints = {
        **BaseGradientTree._parameter_constraints,
        "categorical_features": CATEGORICAL_CONSTRAINT,
        "max_depth": [Interval(Integral, 1, 10, closed="both"), StrOptions({"auto"})],
        "pruning": [Interval(Real, 0, None, closed="left")],
        "pruning_tol": [Interval(Real, 0, 1, closed="both")],
        "split": [StrOptions({"linear", "elu"})],
        "head": [StrOptions({"linear", "mlp"})],
        "head_input": [StrOptions({"concat", "z"})],
        "head_layers": [Interval(Integral, 1, None, closed="left")],
        "head_width": [Interval(Integral, 1, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "init": [StrOptions({"auto", "cart", "random"})],
        "greedy_floor": ["boolean"],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        pruning=1e-2,
        pruning_tol=1e-3,
        split="linear",
        head="linear",
        head_input="concat",
        head_layers=2,
        head_width=64,
        dropout=0.0,
        init="auto",
        max_iter=200,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=20,
        tol=1e-4,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
        warm_start=False,
        greedy_floor=True,
    ):
        self.max_depth = max_depth
        self.pruning = pruning
        self.pruning_tol = pruning_tol
        self.split = split
        self.head = head
        self.head_input = head_input
        self.head_layers = head_layers
        self.head_width = head_width
        self.dropout = dropout
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

    # ------------------------------------------------------------ training
    def _build_module(self, n_features, n_outputs, device):
        from ._module import _LatentTreeNet

        state = getattr(self, "_module_state", None)
        if self.warm_start and state is not None:
            # A continuation trains the stored network, whose depth the CART
            # of the cross-check (greedy_floor) may not share.
            self.max_depth_ = int(np.log2(state["tree.split.weight"].shape[0] + 1))
        return _LatentTreeNet(
            n_features,
            n_outputs,
            check_warm_depth(self),  # a warm_start continuation keeps its depth
            self.pruning,
            self.split,
            self.head_input,
            self.head_layers if self.head == "mlp" else 0,
            self.head_width,
            self.dropout,
        )

    #: Start from the fitted linear head (:meth:`_init_module`); the
    #: clusterer's inner regressor turns it off (its clusters are the tree's).
    _linear_start = True
    #: Start from a top-down 2-means hierarchy (:func:`~._start.bisect_start`):
    #: the clusterer's inner regressor under ``init="bisect"``.
    _bisect_start = False

    def _init_module(self, module, Z, Y, w, seed):
        """The start of training (``head="linear"``): the greedy start of
        ``init="cart"`` (:func:`~._start.cart_start`), an early-stopping
        candidate (returns True); otherwise the linear start: the split
        biases balanced on the training rows (at most 20,000), then the head
        fitted on the features ``[x, z]`` of that (untrained) tree by
        logistic regression / ridge (:func:`~._start.linear_start`), not a
        candidate (from it, the fitted tree is always a trained one). Under
        ``init="auto"``, :meth:`_train` trains the greedy start as a second
        start (from ``plan.start_rows``)."""
        if self._bisect_start:  # LatentTreeClusterer's init="bisect": a candidate
            from ._start import bisect_start

            bisect_start(self, module, Z, Y, w, seed)
            return True
        if self.head != "linear" or not self._linear_start:
            return False
        from sklearn.base import is_classifier

        from ._start import cart_start, linear_start

        if self.init == "cart":
            cart_start(self, module, Z, Y, w, seed)
            return True
        linear_start(module, Z, Y, w, is_classifier(self), seed)
        return False

    def _choose_structure(self, Z, Y, w, seed):
        # max_depth="auto" starts at AUTO_DEPTH; _train may deepen it.
        self.max_depth_ = AUTO_DEPTH if self.max_depth == "auto" else self.max_depth

    def _train(self, plan):
        from .._core.starts import train_starts
        from ._start import cart_start

        warm = self.warm_start and hasattr(self, "_module_state")
        if not warm and (self.head != "linear" or not self._linear_start):
            self.init_ = "random"  # head="mlp", the clusterer's regressor: one start
            return super()._train(plan)
        history = train_starts(self, plan, warm, plan.module.head[-1].out_features, cart_start)
        if warm or self.max_depth != "auto":
            return history
        return deepen(self, plan, history)

    def _freeze(self, module, X, Y, sample_weight, keep):
        # The head (numpy, float64) first: the leaf parameters need its shape.
        self._head_params = module.head_weights()
        super()._freeze(module, X, Y, sample_weight, keep)
        self._finalize_latent(X, sample_weight)
        self.greedy_fallback_ = False

    def _check_fitted_model(self, plan):
        # The CART on held-out rows (greedy_floor); the clusterer's
        # regressor (no linear start) and an MLP head are left as trained.
        if self.greedy_floor and self.head == "linear" and self._linear_start:
            from ._floor import apply_cross_check

            deepest = AUTO_MAX_DEPTH if self.max_depth == "auto" else self.max_depth
            self.greedy_fallback_ = apply_cross_check(self, plan, deepest)

    def _module_to_splits(self, module):
        W = module.tree.split.weight.detach().cpu().double().numpy()
        b = module.tree.split.bias.detach().cpu().double().numpy()
        return W, b

    def _module_to_leaf_params(self, module):
        # The prediction is the head's output, not a leaf constant; the leaf
        # values of tree_ are set in _finalize_latent (mean predictions).
        n_out = self._head_params[-1][0].shape[0]
        return np.zeros((topology.n_leaves(self.max_depth_), n_out))

    def _finalize_latent(self, X, sample_weight, pruning_values=None):
        """Fix the pruning vector from the training data (or to
        ``pruning_values``); set ``tree_`` fields."""
        # X is fit's validated array (no feature names: validating it again
        # would warn that it lacks the names the estimator was fitted with).
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        keep = sw > 0
        Xk, wk = X[keep], sw[keep]
        # A feature constant over the training rows has standardized value 0
        # on all of them: its head weights were never trained; drop them.
        constant = constant_columns(X, sw)
        if self.head_input == "concat":
            W0, b0 = self._head_params[0]
            W0 = W0.copy()
            W0[:, : X.shape[1]][:, constant] = 0.0
            self._head_params[0] = (W0, b0)
        q = self._rewards(Xk)
        if pruning_values is None:
            a, _, _ = tree_isotonic_forward(q, self.pruning * Xk.shape[0])
            # Exact zeros need every training row to miss a node by a margin of
            # 1/2, which gets rarer as the training set grows; nodes whose a_t is
            # at most pruning_tol (so that z_t <= pruning_tol) are pruned too.
            # Thresholding keeps 0 <= a_child <= a_parent.
            a = np.where(a > self.pruning_tol, a, 0.0)
        else:
            a = np.asarray(pruning_values, dtype=np.float64)
        self.pruning_values_ = a
        self.active_fraction_ = float(np.mean(a > 0))

        # tree_.value: the mean prediction of the training rows reaching each
        # leaf (what export_text / plot_tree show; never used to predict).
        tree = self.tree_
        out = self._output_values(self._head_output(Xk, q))
        leaves = tree.apply(Xk) - tree.n_internal
        n_leaves = topology.n_leaves(tree.max_depth)
        wsum = np.bincount(leaves, weights=wk, minlength=n_leaves)
        sums = np.stack(
            [
                np.bincount(leaves, weights=wk * out[:, k], minlength=n_leaves)
                for k in range(out.shape[1])
            ],
            axis=1,
        )
        node_w = topology.subtree_sums(wsum)
        node_sums = topology.subtree_sums(sums)
        overall = sums.sum(0) / wsum.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            node_value = np.where(node_w[:, None] > 0, node_sums / node_w[:, None], overall)
        tree.value = np.ascontiguousarray(node_value[tree.n_internal :])
        tree.finalize(X, sw)
        tree.active &= a > 0
        tree.active[0] = True  # the root always predicts
        self.node_values_ = node_value

    # ---------------------------------------------------------- prediction
    def _input_bounds(self):
        """``(low, high)`` per input column: the training mean -/+
        :data:`INPUT_CLIP` standard deviations (the ONNX graph clips alike)."""
        reach = INPUT_CLIP * np.asarray(self._feature_scale, dtype=np.float64)
        mean = np.asarray(self._feature_mean, dtype=np.float64)
        return mean - reach, mean + reach

    def _clip_input(self, X):
        """Validated ``X`` clipped to :meth:`_input_bounds` (float64): the split
        scores and the linear head extrapolate linearly, and beyond the bounds
        they overflowed (1e308 gave NaN probabilities); training rows lie within."""
        low, high = self._input_bounds()
        return np.clip(np.asarray(X, dtype=np.float64), low, high)

    def _rewards(self, X):
        tree = self.tree_
        s = _rowwise_matmul(self._clip_input(X), tree.weights) + tree.bias
        if self.split == "elu":
            s = _elu(s)
        return node_rewards_numpy(s, tree.max_depth)

    def _head_output(self, X, q=None):
        """Raw head output (logits / standardized targets) for validated ``X``."""
        if q is None:
            q = self._rewards(X)
        z = np.minimum(np.maximum(q + 0.5, 0.0), self.pruning_values_)
        if self.head_input == "concat":
            Xs = (self._clip_input(X) - self._feature_mean) / self._feature_scale
            h = np.hstack((Xs, z))
        else:
            h = z
        last = len(self._head_params) - 1
        for k, (W, b) in enumerate(self._head_params):
            h = _rowwise_matmul(h, W) + b
            if k < last:
                h = _elu(h)
        return h

    def _decision(self, X):
        check_is_fitted(self)
        return self._output_values(self._head_output(check_predict_data(self, X)))

    def traversal(self, X):
        """Pruned traversal ``z`` of each sample, shape (n_samples, n_nodes).

        ``z_t = clip(q_t + 1/2, 0, a_t)`` with the fixed pruning vector ``a``
        (``pruning_values_``); heap order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        z : ndarray of shape (n_samples, n_nodes)
            The traversal the head sees; ``z_t > 0`` exactly on the nodes of
            the sample's root-to-leaf path that are not pruned.
        """
        check_is_fitted(self)
        q = self._rewards(check_predict_data(self, X))
        return np.minimum(np.maximum(q + 0.5, 0.0), self.pruning_values_)

    # ------------------------------------------------------------------ onnx
    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx`: the numpy forward pass of ``predict``."""
        latent_tree_graph(graph, self)


class LatentTreeClassifier(TreeClassifierMixin, _BaseLatentTree):
    __doc__ = (
        """Pruned binary tree learned by argmin differentiation, with a learned head.

    Every sample traverses a complete oblique tree; the traversal ``z`` and
    the pruning vector ``a`` solve a quadratic program (problem (3) of the
    paper) exactly, by a compiled tree-isotonic (PAV) kernel that is also
    differentiated in closed form, so splits, pruning and the head
    ``f_phi([x, z])`` are trained jointly by gradient descent on the
    cross-entropy. After training the pruning vector is fixed from the
    whole training set, so each prediction depends on its own row only, and
    prediction runs in numpy without torch.

    Read more in the :doc:`User Guide </latent_tree>`.
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
    LatentTreeRegressor : The regression counterpart.
    LatentTreeLayer : The torch layer, to use inside your own network.
"""
        + _REFERENCE
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_difftrees import LatentTreeClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = LatentTreeClassifier(max_depth=2, max_iter=10, random_state=0).fit(X, y)
    >>> clf.predict(X[:5]).shape
    (5,)
    >>> clf.pruning_values_.shape
    (7,)
"""
    )

    _parameter_constraints = {
        **_BaseLatentTree._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        pruning=1e-2,
        pruning_tol=1e-3,
        split="linear",
        head="linear",
        head_input="concat",
        head_layers=2,
        head_width=64,
        dropout=0.0,
        init="auto",
        max_iter=200,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=20,
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
            pruning=pruning,
            pruning_tol=pruning_tol,
            split=split,
            head=head,
            head_input=head_input,
            head_layers=head_layers,
            head_width=head_width,
            dropout=dropout,
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

    def _output_values(self, logits):
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def predict_proba(self, X):
        """Class probabilities: softmax of the head's output.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        return self._decision(X)

    def predict(self, X):
        """Predicted class (most probable class of :meth:`predict_proba`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The predicted classes.
        """
        proba = self._decision(X)  # checks fitted before classes_ is read
        return self.classes_.take(np.argmax(proba, axis=1))


class LatentTreeRegressor(TreeRegressorMixin, _BaseLatentTree):
    __doc__ = (
        """Pruned binary tree learned by argmin differentiation, regression.

    Same model and training as :class:`LatentTreeClassifier`, with a squared
    loss on standardized targets (multi-output supported); the head's output
    is mapped back to the target scale.

    Read more in the :doc:`User Guide </latent_tree>`.
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
    LatentTreeClassifier : The classification counterpart.
    LatentTreeLayer : The torch layer, to use inside your own network.
"""
        + _REFERENCE
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_difftrees import LatentTreeRegressor
    >>> X, y = make_regression(n_samples=200, n_features=5, random_state=0)
    >>> reg = LatentTreeRegressor(max_depth=2, max_iter=10, random_state=0).fit(X, y)
    >>> reg.predict(X[:2]).shape
    (2,)
"""
    )

    def _output_values(self, out):
        return self._leaf_values(out)

    def predict(self, X):
        """Predicted target: the head's output on ``[x, z]``, unscaled.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predicted values.
        """
        pred = self._decision(X)
        return pred[:, 0] if self.n_outputs_ == 1 else pred
