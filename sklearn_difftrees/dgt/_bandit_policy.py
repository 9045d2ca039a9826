"""What the bandit classifier plays (torch-free): the policy of eq. 7 over its
estimated rewards, the greedy prediction, the sampling of actions and the ONNX
graph. With ``leaf_estimator="linear"`` the estimated rewards are per-action
logistic models on the context plus the counted correction of the leaf the
context reaches; otherwise the leaf values of ``tree_``. The learning side is
in :mod:`sklearn_difftrees.dgt._bandit_torch` (``OnlineDGT``)."""

import copy

import numpy as np
from scipy.special import expit
from sklearn.utils.validation import check_is_fitted

from .._core.onnx_graph import classifier_outputs, hard_tree_outputs, leaf_outputs, oblique_leaves
from .._core.validation import check_predict_data
from ._bandit_base import CANNOT_CHANGE
from ._bandit_feedback import policy_probabilities

__all__ = ["_BanditPolicyMixin"]


def _sigmoid(t):
    # scipy's expit: no overflow warning for contexts far outside the training range.
    return expit(t)


class _BanditPolicyMixin:
    """Policy, prediction, action sampling and ONNX graph of the bandit classifier."""

    def _creation_params(self):
        return super()._creation_params() + ("leaf_estimator",)

    def _linear_leaves(self):
        """Whether the learner was created with ``leaf_estimator="linear"``
        (what its state holds, whatever set_params did since)."""
        return self._created("leaf_estimator") == "linear"

    def _check_created_with(self):
        super()._check_created_with()
        if self.classes is not None:
            classes = np.unique(np.asarray(self.classes))
            if not np.array_equal(classes, self.classes_):
                raise ValueError(
                    f"classes was changed to {classes} after this {type(self).__name__} was "
                    f"created with the actions {self.classes_}; " + CANNOT_CHANGE.format(
                        name="classes", value=self.classes_.tolist(),
                        live=", ".join(self._live_params()))
                )

    def _initialize(self, X):
        for attr in ("_linear", "_leaf_offsets", "linear_coef_", "linear_intercept_"):
            self.__dict__.pop(attr, None)  # of an earlier fit with other leaves
        super()._initialize(X)

    def _leaf_values(self, leaf_params):
        if self._linear_leaves():
            # the policy at the mean context (z = 0); predict adds the linear part
            leaf_params = leaf_params + _sigmoid(self._linear[:, -1])
        return policy_probabilities(leaf_params, self.exploration)

    def _sync_linear(self, engine, leaf_params):
        # the raw leaf values: the policy follows a later set_params(exploration=...)
        self._leaf_offsets = np.asarray(leaf_params, dtype=np.float64)
        self._tree_exploration = self.exploration
        if not self._linear_leaves():
            return
        self._linear = engine.linear.copy()
        coef = self._linear[:, :-1] / self._feature_scale
        self.linear_coef_ = coef
        self.linear_intercept_ = self._linear[:, -1] - coef @ self._feature_mean

    def _policy_tree(self):
        """``tree_`` with the policy of the current ``exploration``, which
        set_params may have changed since the last update built ``tree_``."""
        offsets = getattr(self, "_leaf_offsets", None)
        if offsets is None or getattr(self, "_tree_exploration", None) == self.exploration:
            return self.tree_
        tree = copy.copy(self.tree_)
        tree.value = self._leaf_values(offsets)
        return tree

    def _export_note(self):
        if not self._linear_leaves():
            return None
        return (
            f"{type(self).__name__} (leaf_estimator='linear'): the prediction is the action "
            "of largest estimated reward, sigmoid(linear_coef_ @ x + linear_intercept_) plus "
            "the correction of the leaf x reaches, not a leaf constant; the leaf values "
            "shown are the policy at the mean context."
        )

    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx`: the greedy policy of ``tree_``
        (and, with ``leaf_estimator="linear"``, of the linear reward models)."""
        if not self._linear_leaves():
            return hard_tree_outputs(graph, self, self._policy_tree())
        tree, g, K = self.tree_, graph, self.n_classes_
        leaves = oblique_leaves(g, tree.weights, tree.bias, tree.max_depth)
        linear = g.op("Sigmoid", [g.linear(self.linear_coef_, self.linear_intercept_)])
        reward = g.op("Add", [linear, leaf_outputs(g, leaves, self._leaf_offsets)])
        index = g.op("ArgMax", [reward], axis=1, keepdims=0, select_last_index=0)
        low = self.exploration / K
        greedy = g.op("Equal", [g.const(np.arange(K, dtype=np.int64)[None]),
                                g.op("Unsqueeze", [index, g.const(np.array([1], dtype=np.int64))])])
        greedy = g.op("Cast", [greedy], to=g.onnx.TensorProto.DOUBLE)
        proba = g.op("Add", [g.op("Mul", [greedy, g.const(np.array(1.0 - self.exploration))]),
                             g.const(np.array(low))])
        classifier_outputs(g, self, proba, index)

    def _reward_estimates(self, X):
        """Estimated reward of every action (``leaf_estimator="linear"``), validated ``X``."""
        leaves = self.tree_.apply(X) - self.tree_.n_internal
        lin = _sigmoid(X @ self.linear_coef_.T + self.linear_intercept_)
        return lin + self._leaf_offsets[leaves]

    def _policy_of(self, X):
        if not self._linear_leaves():
            return self._policy_tree().predict(X)
        return policy_probabilities(self._reward_estimates(X), self.exploration)

    def predict_proba(self, X):
        """The policy's action probabilities (eq. 7) for each context.

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
        return self._policy_of(check_predict_data(self, X))

    def predict(self, X):
        """The greedy action (class) for each context.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The action of largest estimated reward.
        """
        if not self._linear_leaves():
            return super().predict(X)
        check_is_fitted(self)
        X = check_predict_data(self, X)
        return self.classes_.take(np.argmax(self._reward_estimates(X), axis=1))

    @staticmethod
    def _draw(p, rng):
        u = rng.random_sample(p.shape[0])[:, None]
        idx = (np.cumsum(p, axis=1) < u).sum(axis=1)
        return np.minimum(idx, p.shape[1] - 1)

    def sample_actions(self, X, random_state=None):
        """Play one action per context, drawn from the policy of eq. 7.

        Creates the learner on the first call (see ``classes`` and
        ``standardize``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        random_state : int, RandomState instance or None, default=None
            Generator of the draws; None uses (and advances) the learner's own.

        Returns
        -------
        actions : ndarray of shape (n_samples,)
            Played actions (values of ``classes_``).
        propensities : ndarray of shape (n_samples,)
            Probability with which each action was played (pass it back to
            :meth:`update`).
        """
        X = self._contexts(X)
        self.tree_ = self._policy_tree()
        self._tree_exploration = self.exploration
        p = self._policy_of(X)
        idx = self._draw(p, self._rng_for(random_state))
        return self.classes_.take(idx), p[np.arange(X.shape[0]), idx]
