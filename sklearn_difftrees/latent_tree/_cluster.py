"""``LatentTreeClusterer``: self-supervised hierarchical clustering (Section 4.2).

A :class:`~sklearn_difftrees.latent_tree.LatentTreeRegressor` with a linear
head learns to regress chosen target features from the other features (or,
by default, to reconstruct every feature from the traversal ``z`` alone);
the pruned tree it learns is the hierarchy, its leaves are the clusters.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import ClusterMixin
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, _check_sample_weight, validate_data
from .._core._warn import held, reissue, warn, without_feature_names
from .._core.atomic import fit_context
from .._core.threads import single_thread
from .._core.base import TRAINING_PARAMETER_CONSTRAINTS, BaseObliqueTree
from .._core.categorical import numeric_frame_check
from .._core.optional import require_torch
from .._core.tree import ObliqueTree
from ._classes import LatentTreeRegressor
from ._cut import cut_tree, node_to_cluster
from ._pruned import _PrunedTreeMixin

__all__ = ["LatentTreeClusterer"]


class LatentTreeClusterer(ClusterMixin, _PrunedTreeMixin, BaseObliqueTree):
    """Hierarchical clustering by a pruned latent tree (self-supervised).

    The tree is trained, as in Section 4.2 of Zantedeschi et al. (2021), to
    regress ``target_features`` from the remaining features with a linear
    head on ``[x_rest, z]`` and a squared loss. Its splits use the remaining
    features only. With ``target_features=None`` every feature is a target
    and the head sees the traversal ``z`` only, so the tree must encode the
    data to reconstruct it. Pruning (``pruning``) removes the nodes the task
    does not need. A sample's cluster is the leaf of the pruned tree it
    reaches; the tree is the dendrogram (score it with
    :func:`sklearn_difftrees.metrics.dendrogram_purity`).

    Read more in the :doc:`User Guide </latent_tree>`.

    Parameters
    ----------
    n_clusters : int or None, default=None
        Number of clusters to cut the learned hierarchy into (at most
        ``2**max_depth``). The cut grows from the root as bisecting k-means
        does: the cluster node whose split lowers the within-cluster sum of
        squares of the standardized reconstructed features most is split
        next. ``None``: every leaf of the pruned tree is a cluster (the
        paper's clusters; with the default depth, up to 16 of them). The
        tree, ``apply`` and ``decision_path`` do not depend on it.
    target_features : array-like of int, array-like of bool or None, default=None
        The features to regress from the others: column indices, or a
        boolean mask of length ``n_features`` (as scikit-learn's column
        selectors take). ``None``: reconstruct all features from the
        traversal.
    max_depth : int, default=4
        Depth of the complete tree before pruning (1 to 10).
    init : {"bisect", "random"}, default="bisect"
        Start of training. ``"bisect"``: the splits of a top-down 2-means
        hierarchy of the standardized input rows (each split the hyperplane
        halfway between its node's two centroids, crisp: ten times the
        standardized distance), the head fitted to it by ridge; the start is
        a candidate of early stopping. ``"random"``: random splits with
        balanced biases and a random head (before 0.1.0: the only start,
        which trains into a linear code of the rows whose hard routing
        does not follow the clusters; see the User Guide).
    pruning : float, default=1e-2
        Pruning strength per sample (see :class:`LatentTreeRegressor`).
    pruning_tol : float, default=1e-3
        Pruning values at most this are set to 0 after training.
    split : {"linear", "elu"}, default="linear"
        Split function.
    max_iter : int, default=200
        Maximum number of epochs of the self-supervised regressor.
    batch_size : int or "auto", default="auto"
        Mini-batch size. ``"auto"`` adapts it to the training rows ``n``:
        128 rows while an epoch has at most 128 steps, then
        ``ceil(n / 128)`` rows up to 1024; an epoch (one iteration of
        ``max_iter`` and ``n_iter_no_change``) then visits at most 131,072
        rows, larger tables being visited over successive epochs, so that
        the fit time stops growing with ``n`` beyond that. An int: that
        batch, every epoch one full pass over the rows.
    learning_rate : float, default=1e-2
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
    random_state : int, RandomState instance or None, default=None
        Seeds initialization, validation split and shuffling through private
        generators (global RNGs untouched).
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where to train. ``"auto"`` is the CPU: at the default depth one CPU
        thread trains faster than a GPU, whose steps are too small (on
        ``"cuda"`` the training batches go to the compiled PAV kernel on the
        host and back). Prediction is always numpy, without torch.
    verbose : int, default=0
        Verbosity of the regressor's training, as in
        :class:`LatentTreeRegressor`: ``0`` is silent; ``1`` shows a progress
        bar over the epochs; ``>= 2`` adds the losses and the validation
        score of every epoch.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training sample (``0 .. n_clusters_ - 1``).
    n_clusters_ : int
        Number of clusters: the nodes training samples end in.
    cluster_nodes_ : ndarray of shape (n_clusters_,)
        Heap index of the tree node of each cluster.
    regressor_ : LatentTreeRegressor
        The fitted self-supervised regressor (inputs: the non-target
        features).
    tree_ : ObliqueTree
        Its routing over all ``n_features_in_`` features (target columns get
        zero weight), with pruned nodes inactive.
    pruning_values_ : ndarray of shape (2**(max_depth + 1) - 1,)
        Pruning vector fixed on the training data.
    node_values_ : ndarray of shape (2**(max_depth + 1) - 1, n_targets)
        Mean reconstruction of the targets per node.
    active_fraction_ : float
        Fraction of the nodes with ``a_t > 0``.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Importances of the routing splits (target columns get zero).
    n_iter_ : int
        Epochs the regressor ran.
    loss_curve_ : list of float
        Mean training loss of the regressor per epoch.
    validation_scores_ : list of float or None
        Validation score (R²) of the regressor per epoch, ``None`` without
        early stopping.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only when X has string column
        names).

    See Also
    --------
    LatentTreeRegressor : The supervised model it trains.
    sklearn_difftrees.metrics.dendrogram_purity : Quality of the hierarchy.

    References
    ----------
    V. Zantedeschi, M. J. Kusner, V. Niculae. "Learning Binary Decision Trees
    by Argmin Differentiation". ICML, 2021.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from sklearn_difftrees import LatentTreeClusterer
    >>> X, _ = make_blobs(n_samples=200, centers=3, random_state=0)
    >>> km = LatentTreeClusterer(max_depth=2, max_iter=20, random_state=0).fit(X)
    >>> km.labels_.shape
    (200,)
    >>> int(km.n_clusters_) <= 4
    True
    >>> flat = LatentTreeClusterer(n_clusters=3, max_iter=20, random_state=0).fit(X)
    >>> flat.n_clusters_, sorted(set(flat.labels_.tolist()))
    (3, [0, 1, 2])
    """

    _parameter_constraints = {
        **{
            k: v
            for k, v in TRAINING_PARAMETER_CONSTRAINTS.items()
            if k != "warm_start"
        },
        "n_clusters": [Interval(Integral, 1, None, closed="left"), None],
        "target_features": ["array-like", None],
        "max_depth": [Interval(Integral, 1, 10, closed="both")],
        "init": [StrOptions({"bisect", "random"})],
        "pruning": [Interval(Real, 0, None, closed="left")],
        "pruning_tol": [Interval(Real, 0, 1, closed="both")],
        "split": [StrOptions({"linear", "elu"})],
    }

    def __init__(
        self,
        *,
        n_clusters=None,
        target_features=None,
        max_depth=4,
        init="bisect",
        pruning=1e-2,
        pruning_tol=1e-3,
        split="linear",
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
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.n_clusters = n_clusters
        self.target_features = target_features
        self.max_depth = max_depth
        self.init = init
        self.pruning = pruning
        self.pruning_tol = pruning_tol
        self.split = split
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
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _columns(self, n_features):
        """(input columns, target columns) of X."""
        if self.target_features is None:
            return np.arange(n_features), np.arange(n_features)
        selector = np.asarray(self.target_features)
        if selector.dtype == bool:
            # A boolean mask over the columns, as scikit-learn's column selectors take.
            if selector.shape != (n_features,):
                raise ValueError(
                    f"A boolean target_features mask must have shape ({n_features},); "
                    f"got shape {selector.shape}."
                )
            selector = np.flatnonzero(selector)
        elif selector.size and selector.dtype.kind not in "iu":
            raise ValueError(
                "target_features must hold integer column indices or be a boolean "
                f"mask of length {n_features}; got {self.target_features!r}."
            )
        targets = np.unique(selector.astype(np.int64).ravel())
        if targets.size == 0 or targets.min() < 0 or targets.max() >= n_features:
            raise ValueError(
                f"target_features must hold column indices in [0, {n_features}); "
                f"got {self.target_features!r}."
            )
        inputs = np.setdiff1d(np.arange(n_features), targets)
        if inputs.size == 0:
            raise ValueError(
                "target_features leaves no input feature; use target_features=None "
                "to reconstruct every feature from the traversal."
            )
        return inputs, targets

    @fit_context(prefer_skip_nested_validation=True)
    @single_thread
    def fit(self, X, y=None, sample_weight=None):
        """Learn the hierarchy from ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (standardized internally).
        y : Ignored
            Not used, present for API consistency.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the samples' reconstruction losses.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        # a column of text or dates named (numpy's "could not convert string to float")
        numeric_frame_check(X, "LatentTreeClusterer reconstructs numeric features")
        X = validate_data(
            self, X, dtype=[np.float64, np.float32], order="C", ensure_min_samples=2
        )
        inputs, targets = self._columns(X.shape[1])
        if self.target_features is not None and X.shape[1] < 2:
            raise ValueError(
                f"target_features needs at least 2 features, got {X.shape[1]} feature(s)."
            )
        if self.n_clusters is not None and self.n_clusters > 2**self.max_depth:
            raise ValueError(
                f"n_clusters={self.n_clusters} needs a tree of more than "
                f"2**max_depth = {2**self.max_depth} leaves; set max_depth >= "
                f"{int(np.ceil(np.log2(self.n_clusters)))}."
            )
        if self.n_clusters is not None and self.n_clusters > X.shape[0]:
            raise ValueError(
                f"n_clusters={self.n_clusters} must be at most n_samples={X.shape[0]}."
            )
        params = {k: getattr(self, k) for k in (
            "max_depth", "pruning", "pruning_tol", "split", "max_iter", "batch_size",
            "learning_rate", "optimizer", "momentum", "lr_schedule", "grad_clip",
            "early_stopping", "validation_fraction", "n_iter_no_change", "tol",
            "random_state", "device", "verbose",
        )}
        require_torch(f"{type(self).__name__}.fit")
        head_input = "z" if self.target_features is None else "concat"
        reg = LatentTreeRegressor(head="linear", head_input=head_input, categorical_features=None,
                                  **params)
        name = reg._owner_name = type(self).__name__  # its progress bar and monitor
        reg._linear_start = False  # the clusters are the trained tree's leaves
        reg._bisect_start = self.init == "bisect"
        try:  # the inner regressor's warnings and errors name this estimator
            with held() as caught:
                reg.fit(X[:, inputs], X[:, targets], sample_weight=sample_weight)
        except FloatingPointError as exc:
            raise FloatingPointError(str(exc).replace(type(reg).__name__, name)) from exc
        # stacklevel: fit, single_thread, its two fit_context wrappers, the caller
        reissue(caught, rename=(type(reg).__name__, name), stacklevel=5)
        self.regressor_ = reg
        self._inputs, self._targets = inputs, targets

        # The routing over all features (target columns get zero weight).
        sub = reg.tree_
        W = np.zeros((sub.weights.shape[0], X.shape[1]))
        W[:, inputs] = sub.weights
        tree = ObliqueTree(W, sub.bias, sub.value)
        tree.active = sub.active.copy()
        tree.n_node_samples = sub.n_node_samples.copy()
        self.tree_ = tree
        scale = np.ones(X.shape[1])
        scale[inputs] = reg._feature_scale
        self._feature_scale = scale
        self.pruning_values_ = reg.pruning_values_
        self.active_fraction_ = reg.active_fraction_
        self.node_values_ = reg.node_values_
        self.n_iter_ = reg.n_iter_
        self.loss_curve_ = reg.loss_curve_
        self.validation_scores_ = reg.validation_scores_

        with without_feature_names(self):
            # X is fit's validated array: it has no feature names by design.
            nodes = _PrunedTreeMixin.apply(self, X)
        # The regressor has validated the weights (sign, finiteness); a scalar
        # or None becomes one weight per row here.
        w = _check_sample_weight(sample_weight, X, dtype=np.float64)
        Y = X[:, targets].astype(np.float64)
        peak = np.abs(Y).max(axis=0)  # first to O(1): the spread of 1e300s overflows
        Y = Y / np.where(peak > 0, peak, 1.0)
        mean = np.average(Y, axis=0, weights=w)
        spread = np.sqrt(np.average((Y - mean) ** 2, axis=0, weights=w))
        Y = (Y - mean) / np.where(spread > 0, spread, 1.0)
        n_nodes = tree.active.size
        self.cluster_nodes_ = cut_tree(nodes, Y, w, self.n_clusters, n_nodes)
        self.n_clusters_ = int(self.cluster_nodes_.size)
        self._cluster_of_node = node_to_cluster(self.cluster_nodes_, tree.active, n_nodes)
        self.labels_ = self._cluster_of_node[nodes]
        if self.n_clusters is not None and self.n_clusters_ < self.n_clusters:
            warn(
                f"{type(self).__name__} found {self.n_clusters_} clusters, fewer than "
                f"n_clusters={self.n_clusters}: the pruned tree has no more nodes "
                "that split the training rows (lower pruning or raise max_depth).",
                UserWarning, stacklevel=5)  # fit, its three wrappers, the caller
        return self

    def apply(self, X):
        """Node each sample ends in: its leaf of the pruned tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        X_leaves : ndarray of shape (n_samples,)
            Heap index of the node each sample ends in.
        """
        return _PrunedTreeMixin.apply(self, X)

    def predict(self, X):
        """Cluster of each sample (``0 .. n_clusters_ - 1``).

        A sample's cluster is the cluster node on its path (with
        ``n_clusters``, the nodes of the cut). A sample that ends above the
        cluster nodes (its next node was reached by no training sample)
        continues into that node's active child until it reaches one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Cluster index of each sample.
        """
        check_is_fitted(self)
        return self._cluster_of_node[self.apply(X)]

    def _export_note(self):
        return (
            "LatentTreeClusterer: clusters are the leaves of the pruned tree; values shown "
            "are the mean reconstructions of the target features. A pruned child (a_t = 0) "
            "is a leaf: samples going there end at its parent."
        )

