"""DGT forests: bagged DGT trees (DGT-Forest, Section 5.2 / Appendix C of the paper).

Every member is a :class:`DGTClassifier` / :class:`DGTRegressor` fitted on a
bootstrap sample given as integer sample weights (draw counts times the
user's ``sample_weight``): a member sees only its sample; its out-of-bag rows
are those drawn zero times. With ``early_stopping=True`` it holds out
``validation_fraction`` of its sample's distinct rows to choose when to stop
and which weights to keep, and steps on the rest (else on all of it). Members
train together as one batched model (``_batched.py``), each with its own rows,
split, batch order, optimizer state and early stopping (a member is the tree
its own ``fit`` gives); ``n_jobs`` chunks them over ``joblib``. The forest adds
the indicator columns of categorical features; members train on them, then
take the forest's input as it is (their ``predict(X)``)."""

from abc import ABCMeta
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_classifier
from sklearn.utils import check_random_state
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, RealNotInt, StrOptions
from .._core.atomic import fit_context
from .._core.categorical import CATEGORICAL_CONSTRAINT
from .._core.optional import require_torch
from .._core.persistence import VersionedStateMixin
from .._core.validation import check_fit_data, check_predict_data, encode_classification_target
from ._bag_rows import MEMBER_VALIDATION_FRACTION, oob_score, resolve_max_features
from ._bagging import (_bootstrap_counts, _bootstrap_size, _fit_chunk,
                       _fit_members_with_progress, _keep_torch_threads, _member_depth)
from ._classes import DGTClassifier, DGTRegressor, _BaseDGT
from ._forest_routing import ForestRoutingMixin, check_subtree_memory, set_member_subtrees
from ._forest_docstrings import (
    _DOC_FOREST_ATTRS,
    _MEMBER_PARAMS_NOTE,
    _REFERENCES,
    _forest_params_doc,
)
from ._onnx import forest_graph

__all__ = ["DGTForest", "DGTForestClassifier", "DGTForestRegressor"]

_MAX_INT = np.iinfo(np.int32).max

#: Member parameters the forest does not pass through: it draws one seed per
#: member, applies ``class_weight`` itself (to the original labels, before the
#: bootstrap) and has no ``warm_start``.
#: greedy_floor: members keep their default, True; categorical_features: None (the forest's).
_NOT_PASSED_TO_MEMBERS = frozenset({"random_state", "class_weight", "warm_start",
                                    "greedy_floor", "categorical_features"})


class _BaseDGTForest(ForestRoutingMixin, VersionedStateMixin, BaseEstimator,
                     metaclass=ABCMeta):
    """Bagging of DGT trees: parameters, fit, OOB, routing and importances.

    Subclasses set ``_member_class`` and put the task mixin on the left. The
    parameters passed to the members are those of ``_member_class`` (read
    from its ``get_params``) other than :data:`_NOT_PASSED_TO_MEMBERS`.
    """

    _member_class = DGTRegressor

    _parameter_constraints = {
        "categorical_features": CATEGORICAL_CONSTRAINT,
        **{k: v for k, v in _BaseDGT._parameter_constraints.items()
           if k not in ("warm_start", "greedy_floor")},
        # One start per member (init="auto" trains two single trees).
        "init": [StrOptions({"cart", "random"})],
        # One depth for every member: the batched trainer stacks their modules.
        "max_depth": [Interval(Integral, 1, 12, closed="both"), StrOptions({"auto"})],
        "subtree_depth": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"}),
                          None],
        "min_weight_fraction_leaf": [Interval(Real, 0.0, 0.5, closed="both")],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "max_features": [Interval(Integral, 1, None, closed="left"),
                         Interval(RealNotInt, 0, 1, closed="right"),
                         StrOptions({"sqrt", "log2"}), None],
        # "oob": every member stops on its out-of-bag rows (_bag_rows.py).
        "validation_fraction": [Interval(RealNotInt, 0, 1, closed="neither"),
                                StrOptions({"oob"})],
        "max_samples": [Interval(RealNotInt, 0, 1, closed="right"),
                        Interval(Integral, 1, None, closed="left")],
        "bootstrap": ["boolean"],
        "oob_score": ["boolean", callable],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        *,
        n_estimators=30,
        max_samples=1.0,
        max_features=None,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        max_depth=8,
        subtree_depth="auto",
        min_weight_fraction_leaf=0.0,
        n_layers=1,
        hidden_width="auto",
        alpha_l1=0.0,
        alpha_l2=0.0,
        refit_leaves=True,
        init="cart",
        max_iter=200,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="rmsprop",
        momentum=0.0,
        lr_schedule="cosine",
        grad_clip=1e-2,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=20,
        tol=1e-4,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.max_depth = max_depth
        self.subtree_depth = subtree_depth
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
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

    @classmethod
    def _member_param_names(cls):
        """Names of the parameters passed unchanged to every member."""
        names = cls._member_class().get_params(deep=False)
        return sorted(set(names) - _NOT_PASSED_TO_MEMBERS)

    def _make_member(self, seed):
        params = {name: getattr(self, name) for name in self._member_param_names()}
        params["max_depth"] = getattr(self, "max_depth_", self.max_depth)  # "auto" resolved
        if self.validation_fraction == "oob":  # the split of a member without OOB rows
            params["validation_fraction"] = MEMBER_VALIDATION_FRACTION
        # The forest shows progress over trees; members speak only at verbose >= 3.
        params["verbose"] = max(0, self.verbose - 2)
        member = self._member_class(**params, categorical_features=None, random_state=seed)
        if hasattr(member, "_leaf_prior_rows"):  # regression: plain leaf means
            member._leaf_prior_rows = 0.0  # (the average reduces their variance)
        return member

    # --------------------------------------------------------------------- fit
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit ``n_estimators`` DGT trees, each on a bootstrap sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (standardized internally by every member).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Target values (class labels for the classifier).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights. They multiply the bootstrap counts, and
            rows of zero weight are not drawn at all (a zero weight equals
            removing the row).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        if self.oob_score and not self.bootstrap:
            raise ValueError("Out of bag estimation only available if bootstrap=True.")
        classifier = is_classifier(self)
        X, y, sample_weight = check_fit_data(self, X, y, sample_weight, multi_output=not classifier)
        max_features = resolve_max_features(self.max_features, X.shape[1])  # may raise
        # max_samples against the rows that can be drawn, before any attribute
        # is set (class_weight can only remove rows: checked again below).
        _bootstrap_size(self.max_samples, self.bootstrap, int(np.count_nonzero(sample_weight > 0)))
        # Weights count relative to each other: divided by the largest (one
        # correctly rounded division each), the members, their subtrees and the
        # out-of-bag choices see the same weights for w and c * w (bit for bit
        # where c * w is exact: integer weights times an integer); without
        # weights, the ones stay ones (a member's weights are its draw counts).
        sample_weight = sample_weight / sample_weight.max()
        user_weight = sample_weight  # the OOB score ignores class_weight, as score() does
        if classifier:
            # Members see the codes 0 .. K-1, so that all of them share the
            # forest's classes_ whatever their bootstrap sample contains.
            y, sample_weight = encode_classification_target(self, y, sample_weight)
            self.n_outputs_ = 1
        else:
            self.n_outputs_ = 1 if y.ndim == 1 else y.shape[1]

        n_samples = X.shape[0]
        candidates = np.flatnonzero(sample_weight > 0)
        n_draws = _bootstrap_size(self.max_samples, self.bootstrap, candidates.size)
        rng = check_random_state(self.random_state)
        member_seeds = rng.randint(_MAX_INT, size=self.n_estimators)
        sample_seeds = rng.randint(_MAX_INT, size=self.n_estimators)
        bag = {"forest_weight": sample_weight, "max_features": max_features,
               "oob": self.bootstrap and self.validation_fraction == "oob"}
        self.max_depth_, self.depth_scores_ = _member_depth(
            self.max_depth, X, y, sample_weight, self.n_classes_ if classifier else None,
            int(rng.randint(_MAX_INT)) if self.max_depth == "auto" else 0)
        check_subtree_memory(self, min(n_draws, candidates.size),
                             self.n_classes_ if classifier else self.n_outputs_, self.max_depth_)

        def member_weights(i):
            if not self.bootstrap:
                return sample_weight
            counts = _bootstrap_counts(sample_seeds[i], candidates, n_samples, n_draws)
            return sample_weight * counts

        require_torch(f"{type(self).__name__}.fit")  # before any worker starts
        # The members are split into one chunk per job; the members of a chunk
        # train together as one batched model (see _bagging._fit_chunk).
        n_chunks = min(effective_n_jobs(self.n_jobs), self.n_estimators)
        single_thread = effective_n_jobs(self.n_jobs) != 1
        chunks = [(idx.tolist(), ([self._make_member(int(member_seeds[i])) for i in idx], X, y,
                                  [member_weights(i) for i in idx], single_thread, bag))
                  for idx in np.array_split(np.arange(self.n_estimators), n_chunks)]
        with _keep_torch_threads():
            if self.verbose:  # a bar over trees, advanced as members finish
                self.estimators_ = _fit_members_with_progress(
                    chunks, self.n_estimators, self.n_jobs, type(self).__name__, self.verbose
                )
            else:
                fitted = Parallel(n_jobs=self.n_jobs)(
                    delayed(_fit_chunk)(*args) for _, args in chunks
                )
                self.estimators_ = [member for chunk in fitted for member in chunk]
        for member in self.estimators_:
            self._hand_input_to(member)
        self.n_iter_ = np.array([member.n_iter_ for member in self.estimators_])
        self.max_features_ = max_features
        set_member_subtrees(self, X, y, sample_weight,
                            [member_weights(i) for i in range(self.n_estimators)], member_seeds)

        if self.oob_score:
            counts = [
                _bootstrap_counts(seed, candidates, n_samples, n_draws) for seed in sample_seeds
            ]
            oob_score(self, X, y, user_weight, sample_weight > 0, counts)
        return self

    def _hand_input_to(self, member):
        """Let ``member`` (fitted on the forest's expanded rows) take the
        forest's ``X`` as a tree fitted on it would; the forest calls the
        members' ``tree_`` on the input it expanded once."""
        member.categorical_features = self.categorical_features
        for name in ("n_features_in_", "feature_names_in_", "is_categorical_", "categories_",
                     "_category_levels"):
            if hasattr(self, name):
                setattr(member, name, getattr(self, name))
            elif name in member.__dict__:
                delattr(member, name)

    # ------------------------------------------------------------- predicting
    # ------------------------------------------------------------------ onnx
    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx`: the members' mean output."""
        forest_graph(graph, self)


class DGTForestClassifier(ClassifierMixin, _BaseDGTForest):
    __doc__ = (
        """Bagged Dense Gradient Tree classifier (DGT-Forest).

    Fits ``n_estimators`` :class:`DGTClassifier` trees, each on its own
    bootstrap sample and with its own seed, in parallel with joblib;
    ``predict_proba`` averages the members' class probabilities (soft
    voting) and ``predict`` returns the most probable class.

    The labels are encoded once for the whole forest, so every member shares
    its ``classes_``, including members whose bootstrap sample misses a
    class. The bootstrap is implemented as integer sample weights: the
    out-of-bag rows of a member are those it drew zero times.
"""
        + _MEMBER_PARAMS_NOTE.format(member="DGTClassifier")
        + _forest_params_doc("oob_decision_function_")
        + """    class_weight : dict, "balanced" or None, default=None
        Weights associated with the classes (original labels), multiplied into
        ``sample_weight`` once for the whole forest, before the bootstrap
        (``"balanced"`` uses the class frequencies of the full ``y``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_classes_ : int
        Number of classes.
    n_outputs_ : int
        Always 1."""
        + _DOC_FOREST_ATTRS.format(member="DGTClassifier", score="accuracy")
        + """    oob_decision_function_ : ndarray of shape (n_samples, n_classes)
        Mean out-of-bag class probabilities of every training row (NaN for
        rows no member left out). Only with ``oob_score=True``.

    See Also
    --------
    DGTClassifier : A single DGT tree.
    DGTForestRegressor : The regression counterpart.
    sklearn.ensemble.RandomForestClassifier : Bagged greedy axis-aligned trees.
"""
        + _REFERENCES
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_difftrees import DGTForestClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> forest = DGTForestClassifier(n_estimators=3, max_depth=2, max_iter=5,
    ...                              random_state=0).fit(X, y)
    >>> forest.predict_proba(X[:4]).shape
    (4, 2)
    >>> forest.apply(X[:4]).shape
    (4, 3)
    >>> list(forest.subtree_scores_)[:3]  # depths whose out-of-bag scores were compared
    [0, 1, 2]
    >>> forest.subtree_depth_ in forest.subtree_scores_
    True
"""
    )

    _member_class = DGTClassifier

    _parameter_constraints = {
        **_BaseDGTForest._parameter_constraints,
        "class_weight": DGTClassifier._parameter_constraints["class_weight"],
    }

    def __init__(
        self,
        *,
        n_estimators=30,
        max_samples=1.0,
        max_features=None,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        max_depth="auto",
        subtree_depth="auto",
        min_weight_fraction_leaf=0.0,
        n_layers=1,
        hidden_width="auto",
        alpha_l1=0.0,
        alpha_l2=0.0,
        refit_leaves=False,
        init="cart",
        max_iter=200,
        batch_size="auto",
        learning_rate=1e-2,
        optimizer="rmsprop",
        momentum=0.0,
        lr_schedule="cosine",
        grad_clip=1e-2,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=20,
        tol=1e-4,
        categorical_features="auto",
        random_state=None,
        device="auto",
        verbose=0,
        class_weight=None,
    ):
        super().__init__(
            n_estimators=n_estimators,
            max_samples=max_samples,
            max_features=max_features,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            max_depth=max_depth,
            subtree_depth=subtree_depth,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
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
        )
        self.class_weight = class_weight

    def _leaf_table(self, member, value):
        """Member probabilities (rows of ``value``) in the forest's columns."""
        proba = np.zeros((value.shape[0], self.n_classes_))
        proba[:, member.classes_] = value
        return proba

    def _set_oob_attribute(self, oob_pred):
        self.oob_decision_function_ = oob_pred

    def predict_proba(self, X):
        """Mean class probabilities of the members.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``; rows sum to one.
        """
        check_is_fitted(self)
        return self._mean_member_output(check_predict_data(self, X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log of the mean member probabilities, columns in the order of
            ``classes_`` (``-inf`` where a probability is zero).
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Most probable class under :meth:`predict_proba`.

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
        return self.classes_.take(np.argmax(self.predict_proba(X), axis=1))


class DGTForestRegressor(RegressorMixin, _BaseDGTForest):
    __doc__ = (
        """Bagged Dense Gradient Tree regressor (DGT-Forest).

    Fits ``n_estimators`` :class:`DGTRegressor` trees, each on its own
    bootstrap sample and with its own seed, in parallel with joblib, and
    predicts the mean of their predictions (multi-output supported). This is
    the paper's DGT-Forest, which it evaluates on regression (Table 4: 30
    trees); ``DGTForest`` is an alias of this class.
"""
        + _MEMBER_PARAMS_NOTE.format(member="DGTRegressor")
        + _forest_params_doc("oob_prediction_")
        + """
    Attributes
    ----------
    n_outputs_ : int
        Number of targets."""
        + _DOC_FOREST_ATTRS.format(member="DGTRegressor", score="R^2")
        + """    oob_prediction_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Mean out-of-bag prediction of every training row (NaN for rows no
        member left out). Only with ``oob_score=True``.

    See Also
    --------
    DGTRegressor : A single DGT tree.
    DGTForestClassifier : The classification counterpart.
    sklearn.ensemble.RandomForestRegressor : Bagged greedy axis-aligned trees.
"""
        + _REFERENCES
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_difftrees import DGTForestRegressor
    >>> X, y = make_regression(n_samples=200, n_features=5, random_state=0)
    >>> forest = DGTForestRegressor(n_estimators=3, max_depth=2, max_iter=5,
    ...                             random_state=0).fit(X, y)
    >>> forest.predict(X[:4]).shape
    (4,)
    >>> len(forest.estimators_)
    3
"""
    )

    _member_class = DGTRegressor

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # as the members
        return tags

    def _leaf_table(self, member, value):
        """Member predictions (rows of ``value``) as (n_rows, n_outputs_)."""
        return value.reshape(value.shape[0], self.n_outputs_)

    def _set_oob_attribute(self, oob_pred):
        self.oob_prediction_ = oob_pred[:, 0] if self.n_outputs_ == 1 else oob_pred

    def predict(self, X):
        """Mean prediction of the members.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The mean of the members' predictions.
        """
        check_is_fitted(self)
        pred = self._mean_member_output(check_predict_data(self, X))
        return pred[:, 0] if self.n_outputs_ == 1 else pred


#: The paper's DGT-Forest is a regression forest.
DGTForest = DGTForestRegressor
