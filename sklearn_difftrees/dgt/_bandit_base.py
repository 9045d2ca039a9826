"""The online learner shared by the DGT bandits: parameters (and their shared
numpydoc sections), the live module kept as numpy state between calls, the
round loop behind ``update`` and the simulated protocol of ``fit``. Torch is
imported only when learning (:mod:`sklearn_difftrees.dgt._bandit_torch`)."""

from abc import abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from .._compat import Interval, StrOptions, validate_data
from .._core import topology
from .._core._progress import Progress
from .._core.atomic import keeps_state
from .._core.base import BaseObliqueTree
from .._core.categorical import encode_category_columns
from .._core.onnx_graph import hard_tree_outputs
from .._core.optional import require_torch
from .._core.tree import ObliqueTree
from .._core.validation import check_predict_data, constant_columns, fit_standardizer
from ._bandit_feedback import warn_if_created_from_one_context

__all__ = ["CANNOT_CHANGE", "CREATION_PARAMS", "_BaseDGTBandit", "keeps_state_on_failure"]

_DTYPES = [np.float64, np.float32]

#: Parameters that shape the live learner, read by the call that creates it:
#: ``set_params`` cannot change them mid-stream (``update`` and ``sample_*``
#: refuse; ``fit`` restarts). The others apply from the next call on
#: (``random_state`` only seeds the creation).
CREATION_PARAMS = ("max_depth", "n_layers", "hidden_width", "optimizer", "momentum",
                   "standardize", "split_init")

CANNOT_CHANGE = (
    "the online learner cannot change it. Set it back (set_params({name}={value!r})), or "
    "call fit, or clone the estimator, to start a new learner. Parameters that apply to "
    "the next call: {live}."
)


def keeps_state_on_failure(method):
    """Decorate ``update``: a call that raises (refused feedback, divergence)
    leaves the learner as it was, as ``fit_context`` does for ``fit``. A first
    call initializes the learner before it checks the feedback, which had left
    a fresh learner playing its random tree after a refused call. The live
    engine is dropped (rebuilt from ``_state`` on demand): a failed call may
    have stepped it."""
    return keeps_state(method, drop=("_engine",))


class _BaseDGTBandit(BaseObliqueTree):
    """Online state, ``update`` loop and ``fit`` simulation of the DGT bandits."""

    _parameter_constraints = {
        "max_depth": [Interval(Integral, 1, 12, closed="both")],
        "n_layers": [Interval(Integral, 1, None, closed="left")],
        "hidden_width": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "optimizer": [StrOptions({"adam", "rmsprop", "sgd"})],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "accumulation_steps": [Interval(Integral, 1, None, closed="left")],
        "n_passes": [Interval(Integral, 1, None, closed="left")],
        "standardize": ["boolean"],
        "split_init": [StrOptions({"median", "pca", "random"})],
        "random_state": ["random_state"],
        "device": [StrOptions({"auto", "cpu", "cuda"})],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        max_depth=6,
        n_layers=1,
        hidden_width=64,
        learning_rate=1e-3,
        optimizer="rmsprop",
        momentum=0.0,
        accumulation_steps=4,
        n_passes=1,
        standardize=True,
        split_init="median",
        random_state=None,
        device="cpu",
        verbose=0,
    ):
        self.max_depth = max_depth
        self.n_layers = n_layers
        self.hidden_width = hidden_width
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.momentum = momentum
        self.accumulation_steps = accumulation_steps
        self.n_passes = n_passes
        self.standardize = standardize
        self.split_init = split_init
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # ------------------------------------------------------------ hooks
    @abstractmethod
    def _n_outputs(self):
        """Values per leaf of the module (classes, or 1)."""

    @abstractmethod
    def _leaf_values(self, leaf_params):
        """``tree_.value`` from the module's leaf parameters."""

    @abstractmethod
    def _simulate_rounds(self, engine, Z, y, rows):
        """Play, observe the simulated loss and update on ``rows`` (fit)."""

    def _hidden_sizes(self):
        return (self.hidden_width,) * (self.n_layers - 1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags

    # ------------------------------------------------------------ state
    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_engine", None)  # live torch objects: rebuilt from _state
        return state

    def _is_initialized(self):
        return hasattr(self, "_state")

    def _initialize(self, X):
        """Fresh learner on contexts ``X`` (validated; sets ``n_features_in_``)."""
        self._created_with = {k: self.get_params()[k] for k in self._creation_params()}
        if self.standardize:
            warn_if_created_from_one_context(self, X.shape[0])
            self._feature_mean, self._feature_scale = fit_standardizer(X, np.ones(X.shape[0]))
        else:
            self._feature_mean = np.zeros(X.shape[1])
            self._feature_scale = np.ones(X.shape[1])
        self._rng = check_random_state(self.random_state)
        self._seed = int(self._rng.randint(np.iinfo(np.int32).max))
        self._leaf_counts = np.zeros(topology.n_leaves(self.max_depth))
        self.n_rounds_ = 0
        self.__dict__.pop("_engine", None)
        self.__dict__.pop("_state", None)
        engine = self._get_engine()
        if self.standardize:
            engine.drop_features(constant_columns(X, np.ones(X.shape[0])))
        if self.split_init in ("median", "pca"):
            engine.init_thresholds(self._standardized(X), principal=self.split_init == "pca")
        self._sync(engine)

    def _creation_params(self):
        return CREATION_PARAMS

    def _created(self, name):
        """The value of parameter ``name`` the live learner was created with."""
        return getattr(self, "_created_with", {}).get(name, getattr(self, name))

    def _check_created_with(self):
        """Refuse a learner whose shaping parameters were changed (set_params)
        after its creation: the torch state of one shape cannot take another."""
        params = self.get_params()
        for name, value in getattr(self, "_created_with", {}).items():
            if params[name] != value:
                raise ValueError(
                    f"{name} was changed from {value!r} to {params[name]!r} after this "
                    f"{type(self).__name__} was created; " + CANNOT_CHANGE.format(
                        name=name, value=value, live=", ".join(self._live_params()))
                )

    def _live_params(self):
        """The parameters set_params may change between calls (named by the error)."""
        fixed = {*self._creation_params(), "classes", "random_state", "n_passes",
                 "simulated_loss", "verbose"}
        return sorted(set(self.get_params()) - fixed)

    def _get_engine(self):
        engine = self.__dict__.get("_engine")
        if engine is not None and engine.device_param != self.device:
            engine = None  # moved: rebuilt from _state on the new device
        if engine is None:
            # A fitted learner predicts and samples (sample_actions, sample_predictions)
            # from its numpy tree_; only learning needs the live torch state.
            require_torch(f"{type(self).__name__} learning (fit, update)")
            from ._bandit_torch import OnlineDGT  # torch is imported here only

            engine = OnlineDGT(self, getattr(self, "_state", None))
            self.device_ = str(engine.device)
            self._engine = engine
        engine.configure(self)  # the rates of set_params between calls
        return engine

    def _sync(self, engine):
        """Copy the live state to numpy and rebuild ``tree_`` from it."""
        self._state = engine.dump()
        W, b, leaf_params = engine.splits()
        self._sync_linear(engine, leaf_params)
        tree = ObliqueTree.from_standardized(
            W, b, self._leaf_values(leaf_params), self._feature_mean, self._feature_scale
        )
        tree.n_node_samples = topology.subtree_sums(self._leaf_counts)
        self.tree_ = tree

    def _sync_linear(self, engine, leaf_params):
        """Hook: read a linear part of the leaves from the live engine."""

    def _contexts(self, X):
        """Validate contexts, initializing the learner on the first call."""
        if not self._is_initialized():
            self._check_can_initialize()
            self._validate_params()
            # text category columns coded as fit codes them (numpy's "could
            # not convert string to float" named no column)
            X = validate_data(self, encode_category_columns(self, X, fit=True),
                              dtype=_DTYPES, order="C")
            self._initialize(X)
            return X
        self._check_created_with()
        return check_predict_data(self, X)

    def _check_can_initialize(self):
        pass

    def _standardized(self, X):
        return ((X - self._feature_mean) / self._feature_scale).astype(np.float32)

    def _learn(self, X, round_loss):
        engine = self._get_engine()
        try:
            leaves = engine.run(self._standardized(X), round_loss, type(self).__name__)
        except FloatingPointError:
            # Forget the diverged live state: the learner stays as it was
            # after its last successful update (rebuilt from _state).
            self.__dict__.pop("_engine", None)
            raise
        # Not in place: the counts of a model loaded read-only (mmap) stay as they were.
        self._leaf_counts = self._leaf_counts + np.bincount(leaves, minlength=self._leaf_counts.size)
        self.n_rounds_ += X.shape[0]
        self._sync(engine)

    # ------------------------------------------------------------ fit
    def _fit(self, X, y):
        """Simulate ``n_passes`` of the bandit protocol over shuffled ``(X, y)``."""
        self._initialize(X)
        engine = self._get_engine()
        Z = self._standardized(X)
        self.loss_curve_ = []
        progress = Progress(
            self.n_passes * X.shape[0], desc=type(self).__name__, unit="round",
            verbose=self.verbose,
        )
        for epoch in range(self.n_passes):
            order = self._rng.permutation(X.shape[0])
            self._played_losses = []
            leaves = engine.run(
                Z[order],
                lambda out, leaf, rows: self._simulate_rounds(out, y, order[rows]),
                type(self).__name__,
                on_rounds=lambda k: progress.update(k, line=False) if progress.enabled else None,
            )
            self._leaf_counts = self._leaf_counts + np.bincount(leaves,
                                                                minlength=self._leaf_counts.size)
            self.n_rounds_ += X.shape[0]
            self.loss_curve_.append(float(np.mean(np.concatenate(self._played_losses))))
            del self._played_losses
            progress.update(0, info={
                "pass": f"{epoch + 1}/{self.n_passes}",
                "mean_played_loss": self.loss_curve_[-1],
            })
        progress.close()
        self.n_iter_ = self.n_passes
        self._sync(engine)
        return self

    def _rng_for(self, random_state):
        return self._rng if random_state is None else check_random_state(random_state)

    # ------------------------------------------------------------------ onnx
    def _onnx_graph(self, graph):
        """Hook of :func:`sklearn_difftrees.to_onnx`: the learned hard oblique ``tree_`` (the greedy policy)."""
        hard_tree_outputs(graph, self, self.tree_)


_DOC_COMMON_PARAMS = """    max_depth : int, default={depth}
        Height of the complete tree (``2**max_depth`` leaves); 1 to 12{depth_note}.
    n_layers : int, default=1
        Number ``L`` of linear layers of the over-parameterization (the paper's
        bandit experiments use ``L = 1``: the node weights are trained
        directly).
    hidden_width : int, default=64
        Width of the hidden layers when ``n_layers > 1``.
    learning_rate : float, default={lr}
        Step size of the optimizer ({lr_note}).
    optimizer : {{"rmsprop", "adam", "sgd"}}, default="rmsprop"
        Optimizer of the online updates (RMSprop with ``eps=1e-5`` as in the
        authors' code). No learning-rate schedule and no gradient clipping.
    momentum : float, default=0.0
        Momentum of RMSprop / SGD.
    accumulation_steps : int, default=4
        Rounds are mini-batches of one sample; their gradients are accumulated
        (averaged) over this many rounds before each optimizer step (Appendix
        C.3.2). The accumulated gradient carries over ``update`` calls, so
        ``update`` on n rounds at once equals n calls with one round each.
    n_passes : int, default=1
        Passes of :meth:`fit`'s simulated protocol over the (reshuffled) data.
    standardize : bool, default=True
        Standardize the contexts with the mean and standard deviation of the
        ``X`` given to the call that creates the learner (the first of
        ``fit``, ``update`` or ``{sample}``; contexts are observed, only labels
        are not). The scaling is folded into ``tree_``. Give that first call a
        representative batch of contexts (e.g. a burn-in of logged ``X``), or
        scale the features yourself and pass ``False``. A learner created from
        one context warns (nothing varies in it to scale by).
    split_init : {{"pca", "median", "random"}}, default="{split_init}"
        Initial tree. ``"median"``: the (random) split directions stay, and
        node by node from the root each threshold is moved to the median of
        the contexts reaching it in that first call, so that every leaf
        starts with a comparable share of the contexts (a random projection
        tree; contexts are observed, labels are not). A node reached by
        fewer than 2 of them keeps threshold 0. ``"pca"``: the same, with
        each node's direction replaced by the leading principal direction of
        the contexts reaching it (a principal-direction tree: the splits cut
        the contexts across their widest spread). ``"random"``:
        zero biases, as in the paper: every split passes through the mean
        context, and the leaves are cones around it, many nearly empty.
        {split_init_note}
    random_state : int, RandomState instance or None, default=None
        Seeds the initialization and the learner's own generator (exploration
        / perturbations and the shuffling of ``fit``), when the learner is
        created. Global RNGs are left untouched.
    device : {{"cpu", "auto", "cuda"}}, default="cpu"
        Where to learn. Updates run a few samples at a time, which is faster
        on a CPU (so ``"auto"`` is the CPU too: a stream counts as few rows);
        prediction is always on the CPU, without torch.
    verbose : int, default=0
        ``0`` is silent; ``1`` shows a progress bar over the rounds of
        ``fit`` with the time left (one line per pass without tqdm, see the
        ``progress`` extra); ``>= 2`` adds the mean played loss of every pass.
        ``update`` and ``{sample}`` print nothing.
"""

_DOC_COMMON_ATTRS = """    n_features_in_ : int
        Number of features of the contexts.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features (only when X has string column names).
    tree_ : ObliqueTree
        The current tree (rebuilt after every ``fit`` / ``update``).
    n_rounds_ : int
        Rounds learned from so far (simulated and real).
    n_iter_ : int
        Passes of the last :meth:`fit`.
    loss_curve_ : list of float
        Mean loss of the played predictions in every pass of :meth:`fit`.
    device_ : str
        Device of the online updates.
    feature_importances_ : ndarray of shape (n_features_in_,)
        See :attr:`BaseObliqueTree.feature_importances_` (node weights are the
        rounds routed through each node).
"""

_DOC_REFERENCES = """
    References
    ----------
    A. Karthikeyan, N. Jain, N. Natarajan, P. Jain. "Learning Accurate
    Decision Trees with Bandit Feedback via Quantized Gradient Descent".
    TMLR, 2022 (Algorithm 1, eqs. 7-10, Appendix C.3.2).
"""
