"""Bandit-feedback simulation, baselines and learning curves.

* :func:`simulate` runs any bandit learner of the package (or a baseline)
  over a labelled stream: in every round the learner plays, the simulator
  computes the loss of what it played from the hidden label, and the learner
  is updated from that loss only. Held-out accuracy (classification) or RMSE
  (regression) of the greedy predictions is recorded every ``eval_every``
  rounds (the paper's Figures 2-3).
* :class:`EpsilonGreedyLinearBandit`: epsilon-greedy linear contextual bandit
  (per-action linear cost regression), the paper's "epsilon-Greedy (Linear)".
* :class:`OnlineLinearRegressionBandit`: online linear regression learned
  with the same one- / two-point loss estimators as
  :class:`~sklearn_difftrees.DGTBanditRegressor` (the paper's Table 6
  baseline).
* :func:`plot_learning_curves`: matplotlib drawing of :func:`simulate`'s records.

A *bandit learner* is any object with ``predict(X)`` and either
``sample_actions(X, random_state) -> (actions, propensities)`` plus
``update(X, actions, losses, propensities)`` (classification), or
``sample_predictions(X, random_state) -> (played, perturbations)`` plus
``update(X, played, losses, perturbations)`` (regression).
"""

from dataclasses import dataclass, field
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model import SGDRegressor
from sklearn.utils import check_random_state
from sklearn.exceptions import NotFittedError

from ._compat import Interval, StrOptions, validate_data
from ._core.persistence import VersionedStateMixin
from ._core.validation import fit_standardizer
from .dgt._bandit_feedback import (CLASSIFICATION_LOSSES, REGRESSION_LOSSES, action_set,
                                   check_classification_feedback, check_regression_feedback,
                                   derivative_estimate, linear_rmsprop, policy_probabilities,
                                   warn_if_created_from_one_context)

__all__ = [
    "EpsilonGreedyLinearBandit",
    "LearningCurve",
    "OnlineLinearRegressionBandit",
    "plot_learning_curves",
    "simulate",
]


@dataclass
class LearningCurve:
    """What :func:`simulate` recorded.

    A dataclass: :func:`simulate` creates it, and its fields are both the
    constructor parameters and the attributes.

    Parameters
    ----------
    name : str
        Label of the learner (its class name unless given).
    task : {"classification", "regression"}
        The learner's task.
    metric : {"accuracy", "rmse"}
        Held-out metric of the greedy predictions.
    rounds : list of int
        Rounds played at every evaluation.
    queries : list of int
        Loss values observed at every evaluation (2 per round with two-point
        feedback).
    scores : list of float
        Held-out metric at every evaluation.
    mean_loss : list of float
        Mean observed loss of the played actions / values so far (the
        progressive loss) at every evaluation.
    """

    name: str
    task: str
    metric: str
    rounds: list = field(default_factory=list)
    queries: list = field(default_factory=list)
    scores: list = field(default_factory=list)
    mean_loss: list = field(default_factory=list)

    @property
    def final_score(self):
        """Held-out metric at the last evaluation (``nan`` before any)."""
        return self.scores[-1] if self.scores else float("nan")


def _task_of(learner):
    if hasattr(learner, "sample_actions"):
        return "classification"
    if hasattr(learner, "sample_predictions"):
        return "regression"
    raise TypeError(
        f"{type(learner).__name__} is not a bandit learner: it has neither "
        "sample_actions nor sample_predictions."
    )


def simulate(
    learner,
    X_stream,
    y_stream,
    *,
    loss=None,
    n_rounds=None,
    eval_every=100,
    X_eval=None,
    y_eval=None,
    batch_size=1,
    random_state=None,
    name=None,
    init_contexts=None,
):
    """Run the bandit protocol over a labelled stream and record learning curves.

    Every round: the learner sees a context and plays (``sample_actions`` or
    ``sample_predictions``); the simulator computes ``loss(y, played)`` from
    the hidden label; the learner is updated from the loss (and the
    propensity / perturbation it returned). **The labels are never passed to
    the learner.** The learner is updated in place.

    Parameters
    ----------
    learner : bandit learner
        E.g. :class:`~sklearn_difftrees.DGTBanditClassifier` (constructed with
        ``classes``), :class:`~sklearn_difftrees.DGTBanditRegressor`,
        :class:`EpsilonGreedyLinearBandit`, :class:`OnlineLinearRegressionBandit`.
    X_stream : array-like of shape (n_samples, n_features)
        Contexts, served in order (a DataFrame keeps its feature names).
    y_stream : array-like of shape (n_samples,)
        Hidden labels / targets (seen by ``loss`` only).
    loss : callable or str, default=None
        ``loss(y_true, played) -> losses`` (vectorized). Default: 0-1 loss
        (classification, losses in [0, 1]) or squared loss (regression); the
        names of ``simulated_loss`` are accepted.
    n_rounds : int, default=None
        Rounds to play (default: one pass over the stream). Further passes
        reshuffle the stream with ``random_state``.
    eval_every : int, default=100
        Evaluate on ``(X_eval, y_eval)`` every this many rounds (and at the end).
    X_eval, y_eval : array-like, default=None
        Held-out data; without it, only the progressive loss is recorded.
    batch_size : int, default=1
        Rounds served at once (played with the same parameters, then
        updated in order). With ``accumulation_steps`` a multiple of it, a
        DGT bandit learner created by ``init_contexts`` gives the same result
        as with ``batch_size=1`` (otherwise its standardization and split
        start come from its first batch, which differs).
    random_state : int, RandomState instance or None, default=None
        Generator of the learner's draws and of the reshuffles.
    name : str, default=None
        Label of the record (default: the learner's class name).
    init_contexts : array-like of shape (n, n_features), default=None
        Unlabelled contexts shown once to the learner before the first round
        (through ``sample_*`` with a fixed seed; nothing is played or
        learned). A learner created by that call fits its input
        standardization on them instead of on the first round's batch.

    Returns
    -------
    record : LearningCurve
        The held-out metric and the progressive loss at every evaluation.
    """
    task = _task_of(learner)
    X_stream = X_stream if hasattr(X_stream, "iloc") else np.asarray(X_stream)  # names kept
    y_stream = np.asarray(y_stream)
    n = X_stream.shape[0]
    if y_stream.shape[0] != n:
        raise ValueError(f"X_stream has {n} rows but y_stream has {y_stream.shape[0]}.")
    rng = check_random_state(random_state)
    n_rounds = n if n_rounds is None else int(n_rounds)
    if n_rounds < 1 or eval_every < 1 or batch_size < 1:
        raise ValueError("n_rounds, eval_every and batch_size must be positive.")
    if (X_eval is None) != (y_eval is None):
        raise ValueError("X_eval and y_eval go together: pass both, or neither.")
    if X_eval is not None and len(X_eval) != len(y_eval):
        raise ValueError(f"X_eval has {len(X_eval)} rows but y_eval has {len(y_eval)}.")
    classes = getattr(learner, "classes_", getattr(learner, "classes", None))
    if task == "classification" and not callable(loss) and classes is not None:
        unknown = np.setdiff1d(y_stream, np.asarray(classes))
        if unknown.size:  # the 0-1 loss of every action would be 1: a flat, silent curve
            raise ValueError(f"y_stream contains labels {unknown} not in the learner's "
                             f"classes {np.asarray(classes)}.")
    if loss is None:
        loss = "zero_one" if task == "classification" else "squared"
    if isinstance(loss, str):
        loss = {**CLASSIFICATION_LOSSES, **REGRESSION_LOSSES}[loss]
    metric = "accuracy" if task == "classification" else "rmse"
    record = LearningCurve(name or type(learner).__name__, task, metric)

    def evaluate(rounds, queries, loss_sum):
        record.rounds.append(rounds)
        record.queries.append(queries)
        record.mean_loss.append(loss_sum / max(queries, 1))
        if X_eval is not None:
            pred = learner.predict(X_eval)
            if task == "classification":
                record.scores.append(float(np.mean(pred == np.asarray(y_eval))))
            else:
                err = np.asarray(pred, dtype=float) - np.asarray(y_eval, dtype=float)
                record.scores.append(float(np.sqrt(np.mean(err**2))))

    if init_contexts is not None:
        sample = learner.sample_actions if task == "classification" else learner.sample_predictions
        sample(init_contexts if hasattr(init_contexts, "iloc") else np.asarray(init_contexts),
               random_state=0)
    order = np.arange(n)
    played_rounds = queries = 0
    loss_sum = 0.0
    pos = 0
    next_eval = eval_every
    while played_rounds < n_rounds:
        if pos == n:
            order, pos = rng.permutation(n), 0
        stop = min(pos + batch_size, n, pos + n_rounds - played_rounds)
        rows = order[pos:stop]
        X_b = X_stream.iloc[rows] if hasattr(X_stream, "iloc") else X_stream[rows]
        if task == "classification":
            actions, prop = learner.sample_actions(X_b, random_state=rng)
            losses = np.asarray(loss(y_stream[rows], actions), dtype=float)
            learner.update(X_b, actions, losses, prop)
        else:
            played, u = learner.sample_predictions(X_b, random_state=rng)
            played = np.asarray(played)
            y_b = y_stream[rows] if played.ndim == 1 else np.repeat(y_stream[rows][:, None], 2, 1)
            losses = np.reshape(loss(y_b.ravel(), played.ravel()), played.shape).astype(float)
            learner.update(X_b, played, losses, u)
        loss_sum += float(losses.sum())
        queries += losses.size
        played_rounds += rows.size
        pos = stop
        if played_rounds >= next_eval or played_rounds == n_rounds:
            evaluate(played_rounds, queries, loss_sum)
            next_eval = (played_rounds // eval_every + 1) * eval_every
    return record


def plot_learning_curves(records, *, ax=None, x="queries", title=None):
    """Draw held-out metric vs queries for :func:`simulate` records.

    Parameters
    ----------
    records : list of LearningCurve
        What :func:`simulate` returned, one curve per learner.
    ax : matplotlib Axes, default=None
        Axes to draw on (default: a new figure).
    x : {"queries", "rounds"}, default="queries"
        Horizontal axis: loss values observed, or rounds played.
    title : str, default=None
        Title of the axes (none when ``None``).

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn into.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ImportError("plot_learning_curves requires matplotlib.") from exc
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    for rec in records:
        ax.plot(getattr(rec, x), rec.scores, label=rec.name)
    metrics = {rec.metric for rec in records}
    ax.set_xlabel(f"bandit {x}")
    ax.set_ylabel("held-out " + "/".join(sorted(metrics)))
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


class _OnlineScaler:
    """Standardizer fitted on the first batch of contexts (as the DGT bandits)."""

    def _check_fitted(self):
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(
                f"This {type(self).__name__} has not played yet; call sample_* or update first."
            )

    def _scale_contexts(self, X, first):
        if first:
            if self.standardize:
                warn_if_created_from_one_context(self, X.shape[0])
            self._mean, self._scale = (
                fit_standardizer(X, np.ones(X.shape[0]))
                if self.standardize
                else (np.zeros(X.shape[1]), np.ones(X.shape[1]))
            )
        return (X - self._mean) / self._scale

    def _contexts(self, X):
        first = not hasattr(self, "n_features_in_")
        if first:
            self._validate_params()
        X = validate_data(self, X, dtype=np.float64, reset=first)
        Z = self._scale_contexts(X, first)
        if first:
            try:
                self._initialize(Z)
            except ValueError:
                del self.n_features_in_  # not created: the next call starts afresh
                raise
        return Z


class EpsilonGreedyLinearBandit(_OnlineScaler, VersionedStateMixin, BaseEstimator):
    """Epsilon-greedy linear contextual bandit (baseline).

    One linear model per action (scikit-learn's :class:`~sklearn.linear_model.SGDRegressor`,
    constant step) predicts the loss of that action from the context; the
    learner plays the action of least predicted loss with probability
    ``1 - epsilon`` and a uniformly random one otherwise (Bietti et al., 2018,
    with direct-method cost regression: each model is updated on the rounds
    where its action was played; importance weights ``1 / p`` are omitted
    because they make constant-step SGD unstable with many actions). The
    contexts are standardized as in the DGT bandits (first batch).

    Parameters
    ----------
    classes : array-like of shape (n_classes,)
        The action set.
    epsilon : float, default=0.5
        Exploration probability (the value the DGT paper found best across
        datasets for Vowpal Wabbit's ``--cb_explore --epsilon``).
    learning_rate : float, default=0.01
        Constant SGD step (the paper's VW learning rate).
    alpha : float, default=1e-6
        L2 penalty of the SGD models.
    standardize : bool, default=True
        Standardize the contexts with the mean and scale of the first batch
        (or of ``simulate``'s ``init_contexts``).
    random_state : int, RandomState instance or None, default=None
        Seed of the exploration draws.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The sorted action set.
    models_ : list of SGDRegressor
        One loss model per action.
    n_features_in_ : int
        Number of features of the contexts.
    """

    _parameter_constraints = {
        "classes": ["array-like"],
        "epsilon": [Interval(Real, 0, 1, closed="both")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "standardize": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, classes, *, epsilon=0.5, learning_rate=0.01, alpha=1e-6,
                 standardize=True, random_state=None):
        self.classes = classes
        self.epsilon = epsilon
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.standardize = standardize
        self.random_state = random_state

    def _initialize(self, Z):
        self.classes_ = action_set(self.classes)
        self._rng = check_random_state(self.random_state)
        self.models_ = [
            SGDRegressor(learning_rate="constant", eta0=self.learning_rate, alpha=self.alpha,
                         random_state=0)
            for _ in self.classes_
        ]

    def _costs(self, Z):
        cost = np.zeros((Z.shape[0], self.classes_.size))
        for k, model in enumerate(self.models_):
            if hasattr(model, "coef_"):  # never-played actions: optimistic cost 0
                cost[:, k] = model.predict(Z)
        return cost

    def predict_proba(self, X):
        """The policy's action probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of playing each action (columns follow ``classes_``):
            ``1 - epsilon + epsilon / n_classes`` for the greedy action,
            ``epsilon / n_classes`` for the others.
        """
        self._check_fitted()
        return policy_probabilities(-self._costs(self._contexts(X)), self.epsilon)

    def predict(self, X):
        """Greedy action (least predicted loss).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.

        Returns
        -------
        actions : ndarray of shape (n_samples,)
            The action of least predicted loss for each context.
        """
        self._check_fitted()
        return self.classes_.take(np.argmin(self._costs(self._contexts(X)), axis=1))

    def sample_actions(self, X, random_state=None):
        """Play one action per context, drawn from the epsilon-greedy policy.

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
            Probability with which each action was played.
        """
        Z = self._contexts(X)
        p = policy_probabilities(-self._costs(Z), self.epsilon)
        rng = self._rng if random_state is None else check_random_state(random_state)
        u = rng.random_sample(p.shape[0])[:, None]
        idx = np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), p.shape[1] - 1)
        return self.classes_.take(idx), p[np.arange(p.shape[0]), idx]

    def update(self, X, actions, losses, propensities):
        """Update the loss model of each played action.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        actions : array-like of shape (n_samples,)
            Played actions (values of ``classes_``).
        losses : array-like of shape (n_samples,)
            Observed loss of each played action (finite).
        propensities : array-like of shape (n_samples,)
            Probability, in ``(0, 1]``, of each played action; checked but
            unused (direct-method cost regression): the common bandit interface.

        Returns
        -------
        self : object
            The updated learner.
        """
        Z = self._contexts(X)
        idx, losses, _ = check_classification_feedback(self.classes_, Z.shape[0], actions, losses,
                                                       propensities)
        for k in np.unique(idx):
            rows = np.flatnonzero(idx == k)
            self.models_[k].partial_fit(Z[rows], losses[rows])
        return self


class OnlineLinearRegressionBandit(_OnlineScaler, VersionedStateMixin, BaseEstimator):
    """Online linear regression from one- / two-point loss feedback (baseline).

    ``y_hat = w @ z + b`` on standardized contexts ``z``; the derivative of the
    loss at ``y_hat`` is estimated exactly as in
    :class:`~sklearn_difftrees.DGTBanditRegressor` (eqs. 9-10) and multiplies
    the gradient ``[z, 1]``; RMSprop steps (``eps=1e-5``) after every round,
    as in the DGT paper's PyTorch baseline.

    Parameters
    ----------
    delta : float, default=0.5
        Perturbation size, in target units.
    feedback : {"one_point", "two_point"}, default="one_point"
        One loss query per round, or two (at ``y_hat + delta u`` and
        ``y_hat - delta u``).
    learning_rate : float, default=1e-2
        RMSprop step size.
    alpha : float, default=0.0
        L2 penalty on ``w``.
    standardize : bool, default=True
        Standardize the contexts with the mean and scale of the first batch
        (or of ``simulate``'s ``init_contexts``).
    random_state : int, RandomState instance or None, default=None
        Seed of the perturbation signs.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Weights ``w`` on the standardized contexts.
    intercept_ : float
        The bias ``b``.
    n_features_in_ : int
        Number of features of the contexts.
    """

    _parameter_constraints = {
        "delta": [Interval(Real, 0, None, closed="neither")],
        "feedback": [StrOptions({"one_point", "two_point"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "standardize": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, *, delta=0.5, feedback="one_point", learning_rate=1e-2, alpha=0.0,
                 standardize=True, random_state=None):
        self.delta = delta
        self.feedback = feedback
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.standardize = standardize
        self.random_state = random_state

    def _initialize(self, Z):
        self._rng = check_random_state(self.random_state)
        self.coef_ = np.zeros(Z.shape[1])
        self.intercept_ = 0.0
        self._sq = np.zeros(Z.shape[1] + 1)

    def predict(self, X):
        """Predict ``w @ z + b`` for standardized contexts ``z``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The predicted targets.
        """
        self._check_fitted()
        return self._contexts(X) @ self.coef_ + self.intercept_

    def sample_predictions(self, X, random_state=None):
        """Play perturbed predictions ``y_hat + delta u`` (and ``y_hat - delta u``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        random_state : int, RandomState instance or None, default=None
            Generator of ``u``; None uses (and advances) the learner's own.

        Returns
        -------
        played : ndarray of shape (n_samples,) or (n_samples, 2)
            Values to play (two columns with two-point feedback).
        perturbations : ndarray of shape (n_samples,)
            The Rademacher signs ``u`` (pass them back to :meth:`update`).
        """
        Z = self._contexts(X)
        rng = self._rng if random_state is None else check_random_state(random_state)
        y_hat = Z @ self.coef_ + self.intercept_
        u = 2.0 * rng.randint(2, size=Z.shape[0]) - 1.0
        played = y_hat + self.delta * u
        if self.feedback == "two_point":
            played = np.column_stack([played, y_hat - self.delta * u])
        return played, u

    def update(self, X, played, losses, perturbations):
        """RMSprop steps on the estimated loss derivative, one round per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        played : array-like of shape (n_samples,) or (n_samples, 2)
            The values played (from :meth:`sample_predictions`; (n_samples, 2)
            with ``feedback="two_point"``); only their shape is checked.
        losses : array-like of the shape of ``played``
            Observed (finite) losses of the played values.
        perturbations : array-like of shape (n_samples,)
            The signs ``u`` (-1 or +1) returned by :meth:`sample_predictions`.

        Returns
        -------
        self : object
            The updated learner.
        """
        Z = self._contexts(X)
        g = derivative_estimate(*check_regression_feedback(
            Z.shape[0], self.feedback, played, losses, perturbations), self.delta)
        self.coef_, self.intercept_, self._sq = linear_rmsprop(
            self.coef_, self.intercept_, self._sq, Z, g, self.learning_rate, self.alpha)
        return self
