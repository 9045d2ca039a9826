"""DGT-Bandit: decision trees learned from bandit feedback (Algorithm 1).

``DGTBanditClassifier`` (contextual multi-armed bandit, eqs. 7-8) and
``DGTBanditRegressor`` (one- or two-point loss feedback, eqs. 9-10). Both keep
the DGT model of :mod:`sklearn_difftrees.dgt._module` and update *all* its
parameters from the one loss value of each round through the quantized
BackProp (Algorithm 2). Prediction uses the torch-free ``tree_``; the live
module and optimizer are kept as numpy arrays between calls (see
:mod:`sklearn_difftrees.dgt._bandit_torch`, imported only when learning).
"""

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions
from .._core.atomic import fit_context
from .._core.threads import single_thread, single_torch_thread
from .._core.base import TreeClassifierMixin
from .._core.validation import check_fit_data, check_predict_data, encode_classification_target
from ._bandit_base import (_DOC_COMMON_ATTRS, _DOC_COMMON_PARAMS, _DOC_REFERENCES, _BaseDGTBandit,
                           keeps_state_on_failure)
from ._bandit_feedback import (
    CLASSIFICATION_LOSSES,
    action_set,
    REGRESSION_LOSSES,
    check_classification_feedback,
    check_feedback,
    check_regression_feedback,
    derivative_estimate,
    policy_probabilities,
    warn_if_targets_dwarf_delta,
)
from ._bandit_policy import _BanditPolicyMixin

__all__ = ["DGTBanditClassifier", "DGTBanditRegressor"]


class DGTBanditClassifier(_BanditPolicyMixin, TreeClassifierMixin, _BaseDGTBandit):
    __doc__ = (
        """DGT-Bandit classifier: a hard oblique tree learned from bandit feedback.

    Contextual multi-armed bandit (Algorithm 1 of the DGT paper). In every
    round the learner sees a context ``x``, plays an action (a class) drawn
    from the exploration policy of eq. 7,
    ``p(k) = (1 - exploration) * 1[k = argmax theta_l(x)] + exploration / K``,
    and observes only the loss of that action, a number in ``[0, 1]`` (0 is
    best; reward ``r = 1 - loss``). By default (``leaf_estimator="linear"``)
    the estimated reward of action k at ``x`` is a per-action logistic model
    ``sigmoid(w_k . z + c_k)`` on the standardized context plus the counted
    correction of the leaf ``x`` reaches: the mean residual reward of the
    rounds that reached it and played k, shrunk towards its parent's. The
    splits learn from ``(theta_l(x)[a] - r)**2`` through the quantized
    BackProp, where ``theta_l(x)`` is that estimate. With
    ``leaf_estimator="gradient"`` (the paper's Algorithm 1) the leaves are
    logits trained with the splits on ``(sigmoid(theta_l(x)[a]) - r)**2 /
    p(a)`` (gradient: eq. 8).

    Online use::

        clf = DGTBanditClassifier(classes=[0, 1, 2], random_state=0)
        actions, propensities = clf.sample_actions(X_batch)  # play
        losses = ...  # observed loss of each played action, in [0, 1]
        clf.update(X_batch, actions, losses, propensities)   # learn

    ``fit(X, y)`` simulates that protocol from labels (the learner receives
    only the loss ``simulated_loss(y, action)`` of the actions it plays), so
    the estimator works in scikit-learn tooling. ``predict`` returns the
    greedy action and ``predict_proba`` the policy's action probabilities.

    Read more in the :doc:`User Guide </bandit>`.

    Parameters
    ----------
"""
        + _DOC_COMMON_PARAMS.format(
            depth=8, depth_note=" (the paper: 6; deeper leaves fall back on their ancestors until they have rounds, see ``prior_strength``)",
            lr="1e-3", lr_note="the paper's value", sample="sample_actions",
            split_init="pca", split_init_note="(Measured: docs/bandit.md.)",
        )
        + """    exploration : float, default=0.3
        Exploration probability ``delta`` of eq. 7, in ``[0, 1)``.
    classes : array-like of shape (n_classes,) or None, default=None
        The action set (class labels). Required for online use (the learner
        must know its actions before it plays); :meth:`fit` takes the classes
        from ``y`` when None, and checks ``y`` against them otherwise.
    simulated_loss : "zero_one" or callable, default="zero_one"
        Loss of a played action in :meth:`fit`'s simulation:
        ``loss(y_true, actions) -> losses`` in ``[0, 1]`` (vectorized; the
        labels are seen by this function only, never by the learner).
    leaf_estimator : {"linear", "counts", "gradient"}, default="linear"
        How the leaves learn the actions' rewards. ``"counts"``: a leaf's
        value for action k is ``(R + m * parent) / (N + m)`` over the ``N``
        rounds that reached it and played k (reward sum ``R``),
        ``m = prior_strength``, pooled up the tree to a prior ``1 / K``
        above the root; an action never tried at a leaf takes its nearest
        ancestor's value. ``"linear"``: one logistic reward model per action
        on the standardized context, learned by SGD on the log-loss of the
        played action (step ``linear_learning_rate``, summed over the rounds
        of an optimizer step), plus counted leaves as above over the
        residual rewards ``r - sigmoid(w_a . z + c_a)`` with prior 0 above
        the root: where the leaves have seen nothing the policy is the
        linear one, and each leaf corrects it where it has evidence. Counts
        and linear models are updated at each optimizer step.
        ``"gradient"``: leaf logits trained by eq. 8 from ``logit(1 / K)``,
        which needs many rounds per (leaf, action) pair.
    linear_learning_rate : float, default=0.05
        SGD step of the per-action logistic models
        (``leaf_estimator="linear"``).
    prior_strength : float, default=16.0
        Pseudo-count ``m`` of the counted leaves (``"counts"``,
        ``"linear"``): a node weighs its parent's estimate as ``m`` rounds
        of its own, so a leaf's estimate follows its own rounds only once it
        has several; sparsely visited leaves fall back on their ancestors
        (the effective depth grows with the stream).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (the actions).
    n_classes_ : int
        Number of classes.
    n_outputs_ : int
        Always 1.
    linear_coef_ : ndarray of shape (n_classes, n_features_in_)
        Weights of the per-action logistic reward models on the raw features
        (only with ``leaf_estimator="linear"``).
    linear_intercept_ : ndarray of shape (n_classes,)
        Their intercepts (only with ``leaf_estimator="linear"``). The
        estimated reward is ``sigmoid(X @ linear_coef_.T + linear_intercept_)``
        plus the correction of the leaf; ``tree_.value`` holds the policy at
        the mean context, and ``predict`` / ``predict_proba`` add the linear
        part.
"""
        + _DOC_COMMON_ATTRS
        + """
    See Also
    --------
    DGTBanditRegressor : Regression from one- or two-point loss feedback.
    DGTClassifier : The supervised DGT tree.
    sklearn_difftrees.bandit.simulate : Learning curves over a stream.
"""
        + _DOC_REFERENCES
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_blobs
    >>> from sklearn_difftrees import DGTBanditClassifier
    >>> X, y = make_blobs(n_samples=200, centers=3, random_state=0)
    >>> clf = DGTBanditClassifier(max_depth=2, learning_rate=1e-2, n_passes=5,
    ...                           random_state=0).fit(X, y)
    >>> proba = clf.predict_proba(X[:1])  # the policy: 0.7 + 0.3 / 3 on the greedy action
    >>> np.sort(proba[0]).round(2).tolist()
    [0.1, 0.1, 0.8]
    >>> actions, propensities = clf.sample_actions(X[:4], random_state=0)
    >>> clf = clf.update(X[:4], actions, (actions != y[:4]).astype(float), propensities)
"""
    )

    _parameter_constraints = {
        **_BaseDGTBandit._parameter_constraints,
        "exploration": [Interval(Real, 0, 1, closed="left")],
        "classes": ["array-like", None],
        "simulated_loss": [StrOptions(set(CLASSIFICATION_LOSSES)), callable],
        "leaf_estimator": [StrOptions({"counts", "gradient", "linear"})],
        "linear_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "prior_strength": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        max_depth=8,
        n_layers=1,
        hidden_width=64,
        learning_rate=1e-3,
        optimizer="rmsprop",
        momentum=0.0,
        accumulation_steps=4,
        n_passes=1,
        standardize=True,
        split_init="pca",
        random_state=None,
        device="cpu",
        verbose=0,
        exploration=0.3,
        classes=None,
        simulated_loss="zero_one",
        leaf_estimator="linear",
        linear_learning_rate=0.05,
        prior_strength=16.0,
    ):
        super().__init__(
            max_depth=max_depth,
            n_layers=n_layers,
            hidden_width=hidden_width,
            learning_rate=learning_rate,
            optimizer=optimizer,
            momentum=momentum,
            accumulation_steps=accumulation_steps,
            n_passes=n_passes,
            standardize=standardize,
            split_init=split_init,
            random_state=random_state,
            device=device,
            verbose=verbose,
        )
        self.exploration = exploration
        self.classes = classes
        self.simulated_loss = simulated_loss
        self.leaf_estimator = leaf_estimator
        self.linear_learning_rate = linear_learning_rate
        self.prior_strength = prior_strength

    def _n_outputs(self):
        return self.n_classes_

    def _check_can_initialize(self):
        if self.classes is None:
            raise ValueError(
                f"{type(self).__name__} needs its action set before it can play: pass "
                "classes=[...] to the constructor, or call fit(X, y)."
            )
        classes = action_set(self.classes)
        self.classes_ = classes
        self.n_classes_ = int(classes.size)
        self.n_outputs_ = 1

    @fit_context(prefer_skip_nested_validation=True)
    @single_thread
    def fit(self, X, y):
        """Learn from a simulated bandit protocol over ``(X, y)``.

        For ``n_passes`` passes over the shuffled rows, the learner plays an
        action per row (eq. 7), receives ``simulated_loss(y_row, action)``
        only, and updates (eq. 8). Learning restarts from scratch.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Labels; only the simulated loss function sees them.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, y, _ = check_fit_data(self, X, y, None, multi_output=False)
        for attr in ("_state", "classes_"):
            self.__dict__.pop(attr, None)
        encode_classification_target(self, y, np.ones(X.shape[0]))
        if self.classes is not None:
            self._check_can_initialize()
            unknown = np.setdiff1d(np.unique(y), self.classes_)
            if unknown.size:
                raise ValueError(f"y contains labels {unknown} not in classes={self.classes_}.")
        self.n_outputs_ = 1
        self._loss = (
            CLASSIFICATION_LOSSES[self.simulated_loss]
            if isinstance(self.simulated_loss, str)
            else self.simulated_loss
        )
        try:
            return self._fit(X, y)
        finally:
            del self._loss

    def _simulate_rounds(self, out, y, rows):
        logits = out.detach().cpu().numpy()
        p = policy_probabilities(logits, self.exploration)
        actions = self._draw(p, self._rng)
        losses = check_feedback(
            self._loss(y[rows], self.classes_[actions]), (rows.size,), 0.0, 1.0,
            name="simulated_loss values",
        )
        self._played_losses.append(losses)
        return self._surrogate(out, actions, losses, p[np.arange(rows.size), actions])

    def _surrogate(self, out, actions, losses, propensities):
        return self._get_engine().played_surrogate(out, actions, losses, propensities)

    @keeps_state_on_failure
    @single_torch_thread
    def update(self, X, actions, losses, propensities):
        """Learn from logged bandit feedback, one round per row, in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        actions : array-like of shape (n_samples,)
            Played actions (values of ``classes_``).
        losses : array-like of shape (n_samples,)
            Observed loss of each played action, in ``[0, 1]`` (0 = best;
            the reward is ``1 - loss``). Rescale other costs to this range.
        propensities : array-like of shape (n_samples,)
            Probability, in ``(0, 1]``, with which the logging policy played
            each action (e.g. from :meth:`sample_actions`).

        Returns
        -------
        self : object
            The updated estimator.
        """
        X = self._contexts(X)
        n = X.shape[0]
        idx, losses, propensities = check_classification_feedback(
            self.classes_, n, actions, losses, propensities, 0.0, 1.0)
        self._learn(
            X,
            lambda out, leaf, rows: self._surrogate(
                out, idx[rows], losses[rows], propensities[rows]
            ),
        )
        return self


class DGTBanditRegressor(RegressorMixin, _BaseDGTBandit):
    __doc__ = (
        """DGT-Bandit regressor: a hard oblique tree learned from loss feedback.

    Online regression with point-wise loss feedback (Algorithm 1 of the DGT
    paper). The tree predicts ``y_hat = theta_l(x)``; the learner never sees
    ``y``, only the loss of the values it plays. One-point feedback (eq. 9):
    it plays ``y_hat + delta * u`` with a Rademacher ``u`` and estimates
    ``loss'(y_hat) ~ loss(y_hat + delta u) u / delta``. Two-point feedback
    (eq. 10, ``feedback="two_point"``): it plays ``y_hat + delta u`` and
    ``y_hat - delta u`` and estimates the central difference
    ``(loss(y_hat + delta) - loss(y_hat - delta)) / (2 delta)``. The estimate
    multiplies the exact gradient of the tree's output (eq. 6), a dense update
    of all parameters.

    ``delta`` is in **target units**: a learner that never sees ``y`` cannot
    scale it. The default 0.5 is the paper's, whose targets were scaled to
    ``[0, 1]``; rescale your targets (or ``delta``) accordingly (``fit``
    warns when their root mean square exceeds 10 ``delta``, or their
    standard deviation is below ``delta / 10``).

    Online use::

        reg = DGTBanditRegressor(feedback="two_point", random_state=0)
        played, u = reg.sample_predictions(X_batch)  # shape (n, 2) and (n,)
        losses = ...                                 # loss of each played value
        reg.update(X_batch, played, losses, u)

    Read more in the :doc:`User Guide </bandit>`.

    Parameters
    ----------
"""
        + _DOC_COMMON_PARAMS.format(
            depth=6, depth_note="",
            lr="1e-2", lr_note="the paper tunes 1e-2 / 1e-3 for regression",
            sample="sample_predictions", split_init="random",
            split_init_note="(Not measured for regression yet; hence the paper's default.)",
        )
        + """    delta : float, default=0.5
        Perturbation size of eqs. 9-10, in target units.
    feedback : {"one_point", "two_point"}, default="one_point"
        Loss values observed per round: one (eq. 9) or two (eq. 10).
    simulated_loss : {"squared", "huber"} or callable, default="squared"
        Loss of a played value in :meth:`fit`'s simulation:
        ``loss(y_true, y_played) -> losses`` (vectorized). ``"huber"`` uses
        threshold 1 (target units).

    Attributes
    ----------
    n_outputs_ : int
        Always 1.
"""
        + _DOC_COMMON_ATTRS
        + """
    See Also
    --------
    DGTBanditClassifier : The contextual-bandit classifier.
    DGTRegressor : The supervised DGT tree.
"""
        + _DOC_REFERENCES
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_difftrees import DGTBanditRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(300, 3))
    >>> y = np.where(X[:, 0] > 0, 1.0, 0.0)
    >>> reg = DGTBanditRegressor(max_depth=2, feedback="two_point", n_passes=5,
    ...                          random_state=0).fit(X, y)
    >>> played, u = reg.sample_predictions(X[:3])
    >>> played.shape
    (3, 2)
    >>> reg = reg.update(X[:3], played, (played - y[:3, None]) ** 2, u)
"""
    )

    _parameter_constraints = {
        **_BaseDGTBandit._parameter_constraints,
        "delta": [Interval(Real, 0, None, closed="neither")],
        "feedback": [StrOptions({"one_point", "two_point"})],
        "simulated_loss": [StrOptions(set(REGRESSION_LOSSES)), callable],
    }

    def __init__(
        self,
        *,
        max_depth=6,
        n_layers=1,
        hidden_width=64,
        learning_rate=1e-2,
        optimizer="rmsprop",
        momentum=0.0,
        accumulation_steps=4,
        n_passes=1,
        standardize=True,
        split_init="random",
        random_state=None,
        device="cpu",
        verbose=0,
        delta=0.5,
        feedback="one_point",
        simulated_loss="squared",
    ):
        super().__init__(
            max_depth=max_depth,
            n_layers=n_layers,
            hidden_width=hidden_width,
            learning_rate=learning_rate,
            optimizer=optimizer,
            momentum=momentum,
            accumulation_steps=accumulation_steps,
            n_passes=n_passes,
            standardize=standardize,
            split_init=split_init,
            random_state=random_state,
            device=device,
            verbose=verbose,
        )
        self.delta = delta
        self.feedback = feedback
        self.simulated_loss = simulated_loss

    def _n_outputs(self):
        return 1

    def _leaf_values(self, leaf_params):
        return leaf_params

    def _check_can_initialize(self):
        self.n_outputs_ = 1

    @fit_context(prefer_skip_nested_validation=True)
    @single_thread
    def fit(self, X, y):
        """Learn from a simulated bandit protocol over ``(X, y)``.

        For ``n_passes`` passes over the shuffled rows, the learner plays
        perturbed predictions, receives their ``simulated_loss(y_row, played)``
        only, and updates (eqs. 9-10). Learning restarts from scratch.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Targets; only the simulated loss function sees them.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, y, _ = check_fit_data(self, X, y, None, multi_output=False)
        y = np.asarray(y, dtype=np.float64)
        warn_if_targets_dwarf_delta(self, y)
        self.n_outputs_ = 1
        self._loss = (
            REGRESSION_LOSSES[self.simulated_loss]
            if isinstance(self.simulated_loss, str)
            else self.simulated_loss
        )
        try:
            return self._fit(X, y)
        finally:
            del self._loss

    def _perturb(self, y_hat, rng):
        u = 2.0 * rng.randint(2, size=y_hat.shape[0]) - 1.0
        played = y_hat + self.delta * u
        if self.feedback == "two_point":
            played = np.column_stack([played, y_hat - self.delta * u])
        return played, u

    def _simulate_rounds(self, out, y, rows):
        y_hat = out.detach().cpu().double().numpy()[:, 0]
        played, u = self._perturb(y_hat, self._rng)
        y_rows = y[rows] if played.ndim == 1 else np.repeat(y[rows][:, None], 2, axis=1)
        losses = check_feedback(
            np.reshape(self._loss(y_rows.ravel(), played.ravel()), played.shape),
            played.shape, name="simulated_loss values",
        )
        self._played_losses.append(losses.ravel())
        return self._surrogate(out, derivative_estimate(losses, u, self.delta))

    @staticmethod
    def _surrogate(out, derivative):
        import torch

        from ._bandit_torch import regression_surrogate

        return regression_surrogate(out, torch.as_tensor(derivative, dtype=out.dtype, device=out.device))

    def sample_predictions(self, X, random_state=None):
        """Play perturbed predictions ``y_hat + delta u`` (and ``y_hat - delta u``).

        Creates the learner on the first call (see ``standardize``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        random_state : int, RandomState instance or None, default=None
            Generator of ``u``; None uses (and advances) the learner's own.

        Returns
        -------
        played : ndarray of shape (n_samples,) or (n_samples, 2)
            Values to play: ``y_hat + delta u``, and with two-point feedback a
            second column ``y_hat - delta u``.
        perturbations : ndarray of shape (n_samples,)
            The Rademacher signs ``u`` (pass them back to :meth:`update`).
        """
        X = self._contexts(X)
        return self._perturb(self.tree_.predict(X)[:, 0], self._rng_for(random_state))

    @keeps_state_on_failure
    @single_torch_thread
    def update(self, X, played, losses, perturbations):
        """Learn from loss feedback on played values, one round per row, in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        played : array-like of shape (n_samples,) or (n_samples, 2)
            The values played (from :meth:`sample_predictions`); only their
            shape is checked: the estimate needs ``u`` and ``delta``.
        losses : array-like of shape (n_samples,) or (n_samples, 2)
            Observed loss of each played value (any real scale; column 0 for
            ``y_hat + delta u``, column 1 for ``y_hat - delta u``).
        perturbations : array-like of shape (n_samples,)
            The signs ``u`` in ``{-1, +1}`` used to play.

        Returns
        -------
        self : object
            The updated estimator.
        """
        X = self._contexts(X)
        n = X.shape[0]
        losses, u = check_regression_feedback(n, self.feedback, played, losses, perturbations)
        g = derivative_estimate(losses, u, self.delta)
        self._learn(X, lambda out, leaf, rows: self._surrogate(out, g[rows]))
        return self

    def predict(self, X):
        """Greedy prediction ``theta_l(x)`` of the leaf each sample reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The value of the leaf each sample reaches, in target units.
        """
        check_is_fitted(self)
        return self.tree_.predict(check_predict_data(self, X))[:, 0]
