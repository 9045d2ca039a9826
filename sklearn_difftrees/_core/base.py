"""Base classes every estimator of the package stands on.

* :class:`BaseObliqueTree` — what any estimator whose fitted model is a hard
  :class:`~sklearn_difftrees._core.tree.ObliqueTree` (``tree_``) offers:
  ``apply``, ``decision_path``, ``get_depth``, ``get_n_leaves`` and
  ``feature_importances_``.
* :class:`BaseGradientModel` — the ``fit`` of every gradient-trained model:
  input validation, weights, internal standardization, the validation split,
  the shared torch training loop (imported lazily) and the training record. A
  method supplies its module (``_build_module``), its regularizer
  (``_penalty``) and how the trained module becomes torch-free numpy state
  (``_freeze``).
* :class:`BaseGradientTree` — a ``BaseGradientModel`` whose fitted model is a
  hard oblique ``tree_``: ``_freeze`` folds the standardization into the node
  weights given by ``_module_to_splits`` (standardized space) and sets the
  leaf values.
* :class:`TreeClassifierMixin` / :class:`TreeRegressorMixin` — the task half:
  target encoding and scaling, the loss, the leaf values and the
  ``predict*`` methods. Public estimators put them on the left:
  ``class DGTClassifier(TreeClassifierMixin, _BaseDGT)``.
"""

from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_classifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, RealNotInt, StrOptions
from .atomic import fit_context
from .threads import single_thread
from .optional import require_torch
from .persistence import VersionedStateMixin
from .batching import resolve_batching
from ._guard import check_finite_model
from ._plan import _FitPlan
from .categorical import split_importances, term_spread
from .greedy import weighted_r2
from .tree import ObliqueTree
from .validation import (check_fit_data, check_predict_data, check_warm_state, constant_columns,
                         encode_classification_target, fit_standardizer, normalize_weights,
                         validation_split)

__all__ = ["BaseObliqueTree", "BaseGradientModel", "BaseGradientTree", "TreeClassifierMixin",
           "TreeRegressorMixin", "TRAINING_PARAMETER_CONSTRAINTS", "set_training_record"]

def set_training_record(estimator, history):
    """MLP's names for a fit's training record: ``n_iter_``, ``loss_curve_``,
    ``best_loss_``, and with ``early_stopping`` ``validation_scores_`` and
    ``best_validation_score_`` (else None), from ``history``."""
    estimator.n_iter_ = history.n_iter
    estimator.loss_curve_ = history.loss_curve
    estimator.best_loss_ = history.best_loss
    stopped = estimator.early_stopping
    estimator.validation_scores_ = history.validation_scores if stopped else None
    estimator.best_validation_score_ = history.best_validation_score if stopped else None


#: Constraints of the training-loop parameters, identical for every
#: gradient-trained estimator (merged into each ``_parameter_constraints``).
TRAINING_PARAMETER_CONSTRAINTS = {
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "optimizer": [StrOptions({"adam", "rmsprop", "sgd"})],
    "momentum": [Interval(Real, 0, 1, closed="left")],
    "lr_schedule": [StrOptions({"constant", "cosine"})],
    "grad_clip": [Interval(Real, 0, None, closed="neither"), None],
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(RealNotInt, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
    "random_state": ["random_state"],
    "device": [StrOptions({"auto", "cpu", "cuda"})],
    "verbose": ["verbose"],
    "warm_start": ["boolean"],
}


class BaseObliqueTree(VersionedStateMixin, BaseEstimator, metaclass=ABCMeta):
    """Routing methods of every estimator holding a hard ``tree_``.

    ``tree_`` is an :class:`ObliqueTree` or any tree following the
    :class:`~sklearn_difftrees._core.tree.FittedTree` protocol (``apply``,
    ``decision_path``, ``depth``, ``n_leaves``), whose leaves may sit at
    different depths. Subclasses with other split kinds override
    ``feature_importances_``.
    """

    def apply(self, X):
        """Return the index of the leaf that each sample is predicted as.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        X_leaves : ndarray of shape (n_samples,)
            Heap index (children of node ``i`` are ``2i+1`` and ``2i+2``) of
            the leaf each sample reaches; for a complete tree of depth
            ``max_depth``, ``2**max_depth - 1`` ... ``2**(max_depth + 1) - 2``.
        """
        check_is_fitted(self)
        return self.tree_.apply(check_predict_data(self, X))

    def decision_path(self, X):
        """Return the decision path in the tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR indicator; nonzero ``(i, j)`` means sample ``i`` goes through
            node ``j`` (heap order, ``n_nodes = 2**(max_depth + 1) - 1``).
        """
        check_is_fitted(self)
        return self.tree_.decision_path(check_predict_data(self, X))

    def get_depth(self):
        """Return the depth of the fitted tree.

        Returns
        -------
        depth : int
            Most splits on a path to a leaf that training data reach; a node
            sending every training row one way does not count (one leaf: 0).
        """
        check_is_fitted(self)
        return self.tree_.depth

    def get_n_leaves(self):
        """Return the number of leaves of the fitted tree.

        Returns
        -------
        n_leaves : int
            Number of leaves that training samples reach.
        """
        check_is_fitted(self)
        return self.tree_.n_leaves

    @property
    def feature_importances_(self):
        """Normalized oblique-split importances, shape (n_features,).

        Every split divides its use of the features among them in
        proportion to their weights *on the standardized scale* (``|w_j| *
        std_j``, so that importances do not depend on feature units; for a
        feature with indicator columns, see ``categorical_features``, the
        standard deviation over the training rows of its whole term), so
        that the split's scale, which routes nothing differently, does not
        count; the shares are weighted by how much the split moves the
        predictions, ``p * p_left * p_right * ||v_left - v_right||^2`` (the
        training weight reaching the node and going each way, the sides'
        mean predictions: scikit-learn's impurity decrease where leaves hold
        class proportions or mean targets; ``tree_.split_gains()``), summed
        and normalized to add up to one (all zeros if one value is predicted).
        """
        check_is_fitted(self)
        tree = self.tree_
        weight = tree.split_gains() * tree.active[: tree.n_internal]
        return split_importances(self, term_spread(self, tree.weights), weight)


class BaseGradientModel(VersionedStateMixin, BaseEstimator, metaclass=ABCMeta):
    """``fit`` of every model trained by gradient descent in torch.

    Input validation, sample weights, internal standardization, the
    validation split, seeding, the shared training loop (torch imported
    here, lazily) and the training record (``n_iter_``, ``loss_curve_``,
    ``validation_scores_``, ...). A subclass supplies its module
    (``_build_module``), its regularizer (``_penalty``) and how the trained
    module becomes torch-free numpy state (``_freeze``); the task half
    (``_prepare_target``, ``_loss_fn``, ``_score_fn``) comes from a mixin.
    """

    _parameter_constraints = dict(TRAINING_PARAMETER_CONSTRAINTS)
    #: The batch ``batch_size="auto"`` uses on small data
    #: (:func:`~sklearn_difftrees._core.batching.resolve_batching`).
    _base_batch_size = 128
    #: Whether ``device="auto"`` may train on a GPU (on large data, see
    #: :func:`~sklearn_difftrees._core._trainer.resolve_device`).
    _auto_cuda = True

    @abstractmethod
    def _build_module(self, n_features, n_outputs, device):
        """Return a fresh ``nn.Module`` mapping standardized X to raw outputs
        (on the CPU; ``device`` is where it will train)."""

    @abstractmethod
    def _freeze(self, module, X, Y, sample_weight, keep):
        """Store the trained ``module`` as torch-free fitted attributes: ``X``
        the validated raw input, ``Y`` the encoded target, ``keep`` the indices
        of the rows of nonzero ``sample_weight`` (training and validation)."""

    def _penalty(self, module):
        """Regularization added to every batch loss (``None``: none)."""
        return None

    def _choose_structure(self, Z, Y, w, seed):
        """Set data-chosen architecture attributes before :meth:`_build_module`
        (not on a ``warm_start`` continuation): ``Z, Y, w`` are all fit rows
        (validation included); draw only from ``seed``. Default: nothing."""

    def _init_module(self, module, Z, Y, w, seed):
        """Data-dependent start of a freshly built ``module`` (in place).

        Called by :meth:`_fit_setup` (not when ``warm_start`` continues a
        fit) with the standardized training rows ``Z`` (validation rows
        excluded), the encoded target ``Y``, the normalized weights ``w`` and
        the fit's ``seed``. Return True to make the start a candidate of
        early stopping (``keep_start`` of the training loop). The default
        keeps the module's own initialization.
        """
        return False

    def _train(self, plan):
        """Train ``plan.module`` with the shared loop; return its history. A
        family may train other starts too and put the one to keep in
        ``plan.module`` (what :meth:`_fit_complete` freezes)."""
        from ._trainer import train

        return train(plan.module, self._loss_fn, plan.train_data, **plan.train_kwargs)

    def _discard_warm_start_state(self):
        """Drop the trained module's weights (kept only for ``warm_start``), so
        that a fitted model pickles only what prediction needs."""
        self.__dict__.pop("_module_state", None)
        return self

    @fit_context(prefer_skip_nested_validation=True)
    @single_thread
    def fit(self, X, y, sample_weight=None):
        """Train the model by gradient descent, then freeze it into numpy arrays.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; standardized internally (the fitted model works on
            raw features).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Target values (class labels for classifiers).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each sample's loss. Samples of
            zero weight are dropped before training.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        plan = self._fit_setup(X, y, sample_weight)
        self._fit_complete(plan, self._train(plan))
        if plan.start_rows is not None:  # not a warm_start continuation (a first fit is)
            self._check_fitted_model(plan)
        return self

    def _check_fitted_model(self, plan):
        """Hook: a method may replace the frozen model (e.g. the cross-check)."""

    def _fit_setup(self, X, y, sample_weight):
        """Everything of ``fit`` before the training loop, as a :class:`_FitPlan`.

        Validates the data, prepares the target, standardizes, drops
        zero-weight rows, draws the seed and the validation split, builds the
        module (seeded) and moves the tensors to the device. :meth:`fit` runs
        the shared loop on the plan; a bagging estimator may instead train
        the modules of several plans together (one batched loop) before
        :meth:`_fit_complete`.
        """
        warm = self.warm_start and hasattr(self, "_module_state")
        X, y, sample_weight = check_fit_data(
            self, X, y, sample_weight, multi_output=not is_classifier(self), warm=warm
        )
        Y, sample_weight, n_outputs = self._prepare_target(y, sample_weight, warm)
        if not warm:
            self._feature_mean, self._feature_scale = fit_standardizer(X, sample_weight)
        Z = ((X - self._feature_mean) / self._feature_scale).astype(np.float32)
        if not np.isfinite(Z).all():
            raise ValueError(
                "X holds values too large to standardize (differences between values "
                "overflow float64); rescale X to moderate magnitudes."
            )

        keep = np.flatnonzero(sample_weight > 0)  # zero weight == not in the data
        Z_fit, Y_fit, w_fit = Z[keep], Y[keep], normalize_weights(sample_weight[keep])
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        if not warm:
            self._choose_structure(Z_fit, Y_fit, w_fit, seed)

        val = split = None
        if self.early_stopping:
            tr, va = validation_split(
                Z_fit.shape[0],
                self.validation_fraction,
                rng,
                stratify=Y_fit if is_classifier(self) else None,
            )
            val, split = (Z_fit[va], Y_fit[va], w_fit[va]), (tr, va)
            Z_fit, Y_fit, w_fit = Z_fit[tr], Y_fit[tr], w_fit[tr]

        torch = require_torch(f"{type(self).__name__}.fit")  # the only place a fit imports torch

        from ._trainer import resolve_device, seeded, to_tensor

        device = resolve_device(self.device, Z_fit.shape[0], self._auto_cuda)
        with seeded(seed):
            module = self._build_module(X.shape[1], n_outputs, device)
        keep_start = False
        if warm:
            check_warm_state(self, module.state_dict(), self._module_state)
            # np.array: a writable copy (a model loaded read-only, e.g. joblib mmap_mode="r").
            module.load_state_dict({k: torch.from_numpy(np.array(v))
                                    for k, v in self._module_state.items()})
        else:
            keep_start = self._init_module(module, Z_fit, Y_fit, w_fit, seed)
        module.to(device)
        ydtype = torch.long if is_classifier(self) else torch.float32

        def pack(Zp, Yp, wp):
            return to_tensor(Zp, device), to_tensor(Yp, device, ydtype), to_tensor(wp, device)

        batch, epoch_rows = resolve_batching(self.batch_size, Z_fit.shape[0],
                                             self._base_batch_size)
        train_kwargs = dict(
            validation_data=None if val is None else pack(*val),
            score_fn=self._score_fn,
            penalty_fn=self._penalty,
            max_iter=self.max_iter,
            batch_size=batch,
            epoch_rows=epoch_rows,
            learning_rate=self.learning_rate,
            optimizer=self.optimizer,
            momentum=self.momentum,
            lr_schedule=self.lr_schedule,
            grad_clip=self.grad_clip,
            early_stopping=self.early_stopping,
            n_iter_no_change=self.n_iter_no_change,
            tol=self.tol,
            seed=seed,
            verbose=self.verbose,
            keep_start=bool(keep_start),
            name=getattr(self, "_owner_name", type(self).__name__),  # set by a wrapper
        )
        return _FitPlan(module, pack(Z_fit, Y_fit, w_fit), train_kwargs, device,
                        X, Y, sample_weight, keep, None if warm else (Z_fit, Y_fit, w_fit),
                        split)

    def _fit_complete(self, plan, history):
        """Everything of ``fit`` after the training loop: the training record
        and the frozen, torch-free model (``plan.module`` holds the trained
        weights)."""
        module = plan.module
        module.cpu()
        self.device_ = str(plan.device)
        self._module_state = {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}
        set_training_record(self, history)
        self._freeze(module, plan.X, plan.Y, plan.sample_weight, plan.keep)
        check_finite_model(self, plan.X)
        if not self.warm_start:  # prediction never reads the module's weights
            self._discard_warm_start_state()
        return self


class BaseGradientTree(BaseObliqueTree, BaseGradientModel):
    """A :class:`BaseGradientModel` whose fitted model is a hard oblique tree.

    The trained module is turned into ``tree_``: node weights from
    ``_module_to_splits`` (standardized space, folded back to raw features),
    leaf values from ``_module_to_leaf_params`` (optionally refit in closed
    form when the estimator has ``refit_leaves=True``).
    """

    _parameter_constraints = dict(TRAINING_PARAMETER_CONSTRAINTS)

    @abstractmethod
    def _module_to_splits(self, module):
        """Node weights and biases (float64) in the standardized input space."""

    def _module_to_leaf_params(self, module):
        """Leaf parameters (n_leaves, n_outputs) in the training output space."""
        return module.leaf.detach().cpu().double().numpy()

    def _freeze(self, module, X, Y, sample_weight, keep):
        W_std, b_std = self._module_to_splits(module)
        # A feature constant over the training rows carries no information and
        # its weights were never trained (its standardized column is ~0): drop
        # them, so that neither routing nor importances depend on their init.
        W_std = np.where(constant_columns(X, sample_weight), 0.0, W_std)
        self.tree_ = self._tree_from_splits(W_std, b_std, self._module_to_leaf_params(module),
                                            X, Y, sample_weight, keep,
                                            getattr(self, "refit_leaves", False))

    def _tree_from_splits(self, W_std, b_std, leaf_params, X, Y, sample_weight, keep, refit):
        """Fitted ``ObliqueTree`` of standardized splits, finalized on ``X``; ``refit``:
        closed-form leaves on the fit rows ``keep`` with weights of mean 1 (as in
        training, so the classifier's pseudo-sample does not depend on their scale)."""
        tree = ObliqueTree.from_standardized(
            W_std, b_std, leaf_params, self._feature_mean, self._feature_scale
        )
        if refit:
            leaves = tree.apply(X[keep]) - tree.n_internal
            w = normalize_weights(sample_weight[keep])
            leaf_params = self._refit_leaf_params(leaves, Y[keep], w, leaf_params)
        tree.value = np.ascontiguousarray(self._leaf_values(leaf_params), dtype=np.float64)
        return tree.finalize(X, sample_weight)


class TreeClassifierMixin(ClassifierMixin):
    """Classification half of a tree estimator (softmax leaves)."""

    def _prepare_target(self, y, sample_weight, warm):
        old = (getattr(self, "classes_", None), getattr(self, "n_classes_", None))
        try:
            y_enc, sample_weight = encode_classification_target(self, y, sample_weight)
            if warm and old[0] is not None and not np.array_equal(old[0], self.classes_):
                raise ValueError(f"warm_start=True requires the classes seen in the first "
                                 f"fit {old[0]}; got {self.classes_}.")
        except ValueError:  # a refused warm fit keeps the fitted model, classes_ too
            if warm:
                self.classes_, self.n_classes_ = old
            raise
        self.n_outputs_ = 1
        return y_enc, sample_weight, self.n_classes_

    def _refit_leaf_params(self, leaves, y_enc, w, logits):
        """Leaf logits = log of the smoothed weighted class proportions.

        One pseudo-sample distributed as the (Laplace-smoothed) class prior is
        added to each leaf so that no probability is exactly zero. Leaves without
        training samples keep their trained logits.
        """
        K = self.n_classes_
        counts = np.zeros((logits.shape[0], K))
        np.add.at(counts, (leaves, y_enc), w)
        # Laplace-smoothed prior: strictly positive even for a class whose
        # samples all have zero weight.
        prior = (np.bincount(y_enc, weights=w, minlength=K) + 1.0) / (w.sum() + K)
        reached = counts.sum(axis=1) > 0
        out = logits.copy()
        proba = (counts + prior) / (counts.sum(axis=1, keepdims=True) + 1.0)
        out[reached] = np.log(proba[reached])
        return out

    @staticmethod
    def _loss_fn(logits, y):
        import torch.nn.functional as F

        return F.cross_entropy(logits, y, reduction="none")

    @staticmethod
    def _score_fn(logits, y, w):
        return float(((logits.argmax(1) == y).float() * w).sum() / w.sum())

    def _leaf_values(self, logits):
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    def predict_proba(self, X):
        """Class probabilities of the leaf each sample reaches.

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
            Log class probabilities, columns in the order of ``classes_``
            (``-inf`` where a probability is zero).
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
            The most probable class of the leaf each sample reaches.
        """
        check_is_fitted(self)
        leaves = self.tree_.apply(check_predict_data(self, X))
        # argmax once per leaf, not once per sample over gathered rows.
        leaf_class = np.argmax(self.tree_.value, axis=1)
        return self.classes_.take(leaf_class[leaves - self.tree_.n_internal])


class TreeRegressorMixin(RegressorMixin):
    """Regression half of a tree estimator (standardized targets, squared loss)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # one value per leaf and output
        return tags

    def _prepare_target(self, y, sample_weight, warm):
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            y = y[:, None]
        if warm and y.shape[1] != self.n_outputs_:
            raise ValueError(
                f"warm_start=True requires {self.n_outputs_} target columns; got {y.shape[1]}."
            )
        self.n_outputs_ = y.shape[1]
        if not warm:  # a constant target column's outputs are its mean exactly
            self._target_mean, self._target_scale = fit_standardizer(y, sample_weight, "targets")
            const = constant_columns(y, sample_weight)
            self._output_scale = np.where(const, 0.0, self._target_scale)
        Y = ((y - self._target_mean) / self._target_scale).astype(np.float32)
        return Y, sample_weight, self.n_outputs_

    #: Pseudo-rows of the weighted training mean in every closed-form leaf
    #: (:meth:`_refit_leaf_params`); a bagged ensemble sets 0 on its members,
    #: whose variance the averaging reduces (the shrinkage only adds bias).
    _leaf_prior_rows = 1.0

    def _refit_leaf_params(self, leaves, Y, w, theta):
        """Leaf values = weighted means of the (scaled) targets reaching them,
        each with ``_leaf_prior_rows`` pseudo-rows of the weighted training mean.

        As the classifier's leaves get one pseudo-sample of the class prior:
        a leaf of one row predicts halfway between that row and the mean, a
        leaf of many rows its mean (``w`` has mean 1). Leaves without
        training samples keep their trained values.
        """
        m = float(self._leaf_prior_rows)
        wsum = np.bincount(leaves, weights=w, minlength=theta.shape[0])
        out = theta.copy()
        reached = wsum > 0
        prior = (w @ np.asarray(Y, dtype=np.float64)) / w.sum()
        for k in range(Y.shape[1]):
            sums = np.bincount(leaves, weights=w * Y[:, k], minlength=theta.shape[0])
            out[reached, k] = (sums[reached] + m * prior[k]) / (wsum[reached] + m)
        return out

    @staticmethod
    def _loss_fn(pred, y):
        return ((pred - y) ** 2).mean(dim=1)

    @staticmethod
    def _score_fn(pred, y, w):
        return weighted_r2(y.cpu().numpy(), pred.cpu().numpy(), w.cpu().numpy())

    def _leaf_values(self, theta):
        return theta * self._output_scale + self._target_mean

    def predict(self, X):
        """Predicted target: the value of the leaf each sample reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predicted values (one column per output for multi-output
            targets).
        """
        check_is_fitted(self)
        pred = self.tree_.predict(check_predict_data(self, X))
        return pred[:, 0] if self.n_outputs_ == 1 else pred
