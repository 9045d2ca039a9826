"""What the bandit classifier plays (torch-free): the policy of eq. 7 over its
estimated rewards, the greedy prediction, the sampling of actions and the ONNX
graph. With ``leaf_estimator="linear"`` the estimated rewards are per-action
logistic models on the context plus the counted correction of the leaf the
context reaches; otherwise the leaf values of ``tree_``. The learning side is
in :mod:`sklearn_difftrees.dgt._bandit_torch` (``OnlineDGT``)."""

import numpy as np
from scipy.special import expit
from sklearn.utils.validation import check_is_fitted

from .._core.onnx_graph import classifier_outputs, leaf_outputs, oblique_leaves
from .._core.validation import check_predict_data
from ._bandit_feedback import policy_probabilities

__all__ = ["_BanditPolicyMixin"]


def _sigmoid(t):
    # scipy's expit: no overflow warning for contexts far outside the training range.
    return expit(t)


class _BanditPolicyMixin:
    """Policy, prediction, action sampling and ONNX graph of the bandit classifier."""

    def _leaf_values(self, leaf_params):
        if self.leaf_estimator == "linear":
            # the policy at the mean context (z = 0); predict adds the linear part
            leaf_params = leaf_params + _sigmoid(self._linear[:, -1])
        return policy_probabilities(leaf_params, self.exploration)

    def _sync_linear(self, engine, leaf_params):
        if self.leaf_estimator != "linear":
            return
        self._linear = engine.linear.copy()
        self._leaf_offsets = np.asarray(leaf_params, dtype=np.float64)
        coef = self._linear[:, :-1] / self._feature_scale
        self.linear_coef_ = coef
        self.linear_intercept_ = self._linear[:, -1] - coef @ self._feature_mean

    def _export_note(self):
        if self.leaf_estimator != "linear":
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
        if self.leaf_estimator != "linear":
            return super()._onnx_graph(graph)
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
        if self.leaf_estimator != "linear":
            return self.tree_.predict(X)
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
        if self.leaf_estimator != "linear":
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
        p = self._policy_of(X)
        idx = self._draw(p, self._rng_for(random_state))
        return self.classes_.take(idx), p[np.arange(X.shape[0]), idx]
