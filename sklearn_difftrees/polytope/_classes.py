"""ConvexPolytopeTree estimators: the classifier and the regressor."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin, is_classifier
from sklearn.metrics import r2_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, RealNotInt, StrOptions, _fit_context
from .._core.base import TRAINING_PARAMETER_CONSTRAINTS, BaseObliqueTree
from ._tree import PolytopeTree
from .._core.validation import (
    check_fit_data,
    check_predict_data,
    encode_classification_target,
    fit_standardizer,
    validation_split,
)

__all__ = ["ConvexPolytopeTreeClassifier", "ConvexPolytopeTreeRegressor"]

#: ``ln(r + PRIOR_EPS)`` replaces ``ln r`` in the gamma-process prior (training
#: penalty and facet selection), so that the objective stays bounded when
#: ``gamma0 / K < 1`` and ``r -> 0``.
PRIOR_EPS = 1e-6

#: Deepest tree ``max_depth="auto"`` grows before choosing a depth.
AUTO_MAX_DEPTH = 8
#: ``max_depth="auto"`` stops growing after this many levels without a
#: better validation score.
AUTO_PATIENCE = 2
#: Trainings of a stump (first try included) before a node becomes a leaf.
STUMP_TRIES = 3
#: Fewest optimizer steps a stump gets, however small its node.
STUMP_MIN_STEPS = 50
#: A facet whose contribution to its node's score stays below this fraction
#: of the node's threshold on every training row reaching the node is
#: dropped from the fitted split before the MAP selection (``_drop_facets``).
FACET_DROP_TOL = 1e-2


def _softplus(z):
    return np.logaddexp(0.0, z)


def _std_scores(Z, beta, bias, r):
    """Polytope score of the standardized rows ``Z`` (float64 numpy)."""
    return _softplus(Z @ beta.T + bias) @ r


class _Criterion:
    """Impurity of a node and the best threshold on sorted scores.

    Classification: entropy (nats) of the weighted class distribution.
    Regression: mean over outputs of the weighted variance (standardized
    targets). Gains follow scikit-learn's ``min_impurity_decrease``:
    ``W_t / W * (I_t - W_L / W_t * I_L - W_R / W_t * I_R)``.
    """

    def __init__(self, classification, n_classes=None):
        self.classification = classification
        self.n_classes = n_classes

    def stats(self, Y, w):
        if self.classification:
            S = np.zeros((Y.shape[0], self.n_classes))
            S[np.arange(Y.shape[0]), Y] = w
            return S
        return np.column_stack([w[:, None] * Y, w[:, None] * Y**2])

    def impurity(self, S, W):
        """Impurity from summed stats ``S`` (..., m) and total weights ``W`` (...)."""
        W = np.maximum(W, 1e-300)
        if self.classification:
            p = S / W[..., None]
            with np.errstate(divide="ignore", invalid="ignore"):
                return -np.where(p > 0, p * np.log(p), 0.0).sum(-1)
        k = S.shape[-1] // 2
        mean = S[..., :k] / W[..., None]
        var = S[..., k:] / W[..., None] - mean**2
        return np.maximum(var, 0.0).mean(-1)

    def node_impurity(self, Y, w):
        return float(self.impurity(self.stats(Y, w).sum(0), np.asarray(w.sum())))

    def best_threshold(self, s, Y, w, W_total, min_samples_leaf, min_weight_leaf=0.0):
        """``(tau, gain)`` of the best split ``s <= tau`` of one node, or ``None``."""
        n = s.shape[0]
        if n < 2 * min_samples_leaf:
            return None
        order = np.argsort(s, kind="stable")
        s_sorted = s[order]
        cum = np.cumsum(self.stats(Y[order], w[order]), axis=0)
        cw = np.cumsum(w[order])
        i = np.arange(1, n)  # left = first i rows
        ok = (s_sorted[i] > s_sorted[i - 1]) & (i >= min_samples_leaf) & (n - i >= min_samples_leaf)
        ok &= (cw[i - 1] > 0) & (cw[-1] - cw[i - 1] > 0)
        ok &= (cw[i - 1] >= min_weight_leaf) & (cw[-1] - cw[i - 1] >= min_weight_leaf)
        if not ok.any():
            return None
        i = i[ok]
        SL, WL = cum[i - 1], cw[i - 1]
        SR, WR = cum[-1] - SL, cw[-1] - WL
        Wt = cw[-1]
        child = (WL * self.impurity(SL, WL) + WR * self.impurity(SR, WR)) / Wt
        parent = float(self.impurity(cum[-1], np.asarray(Wt)))
        best = int(np.argmin(child))
        gain = Wt / W_total * (parent - child[best])
        k = i[best]
        tau = 0.5 * (s_sorted[k - 1] + s_sorted[k])
        if not s_sorted[k - 1] < tau < s_sorted[k]:  # adjacent floats
            tau = s_sorted[k - 1]
        return float(tau), float(gain)


class _BaseConvexPolytopeTree(BaseObliqueTree):
    """Parameters, greedy growth, refinement and routing shared by both tasks."""

    _parameter_constraints = {
        **{k: v for k, v in TRAINING_PARAMETER_CONSTRAINTS.items() if k != "warm_start"},
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "max_depth": [Interval(Integral, 1, 12, closed="both"), StrOptions({"auto"})],
        "max_facets": [Interval(Integral, 1, None, closed="left")],
        "gamma0": [Interval(Real, 0, None, closed="neither")],
        "c0": [Interval(Real, 0, None, closed="left")],
        "a_beta": [Interval(Real, -0.5, None, closed="left")],
        "b_beta": [Interval(Real, 0, None, closed="neither")],
        "min_samples_split": [Interval(Integral, 2, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_weight_fraction_leaf": [Interval(Real, 0.0, 0.5, closed="both")],
        "min_impurity_decrease": [Interval(Real, 0, None, closed="left")],
        "threshold": [StrOptions({"refit"}), Interval(RealNotInt, 0, 1, closed="neither")],
        "growth_max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        max_facets=10,
        gamma0=9.0,
        c0=0.01,
        a_beta=0.5,
        b_beta=1.0,
        min_samples_split=10,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        min_impurity_decrease=0.0,
        threshold="refit",
        growth_max_iter=20,
        max_iter=100,
        batch_size=256,
        learning_rate=5e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.2,
        n_iter_no_change=10,
        tol=1e-4,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.max_depth = max_depth
        self.max_facets = max_facets
        self.gamma0 = gamma0
        self.c0 = c0
        self.a_beta = a_beta
        self.b_beta = b_beta
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.threshold = threshold
        self.growth_max_iter = growth_max_iter
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

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the tree greedily, refine it jointly, and freeze it into ``tree_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; standardized internally (the fitted tree works on
            raw features).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels (classifier) or targets (regressor).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; rows of zero weight are dropped.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        classification = is_classifier(self)
        X, y, sample_weight = check_fit_data(
            self, X, y, sample_weight, multi_output=not classification
        )
        Y, sample_weight = self._prepare_target(y, sample_weight)
        mean, scale = fit_standardizer(X, sample_weight)
        constant = np.ptp(X[sample_weight > 0], axis=0) == 0
        keep = np.flatnonzero(sample_weight > 0)
        X_fit, Y_fit = X[keep], Y[keep]
        w_fit = sample_weight[keep] / sample_weight[keep].mean()
        Z = ((X_fit - mean) / scale).astype(np.float32)
        Z[:, constant] = 0.0
        self._feature_scale = scale

        rng = check_random_state(self.random_state)
        auto = self.max_depth == "auto"
        n = Z.shape[0]
        use_val = (auto or self.early_stopping) and n >= 4
        if use_val:
            tr, va = validation_split(
                n, self.validation_fraction, rng, stratify=Y_fit if classification else None
            )
        else:
            tr, va = np.arange(n), np.arange(0)

        # The only place a fit imports torch (through the training modules).
        from .._core._trainer import resolve_device
        from . import _training

        device = resolve_device(self.device)
        crit = _Criterion(classification, getattr(self, "n_classes_", None))
        prior = dict(gamma0=self.gamma0, c0=self.c0, a_beta=self.a_beta, b_beta=self.b_beta)
        settings = dict(
            batch_size=self.batch_size,
            learning_rate=self.learning_rate,
            optimizer=self.optimizer,
            momentum=self.momentum,
            lr_schedule=self.lr_schedule,
            grad_clip=self.grad_clip,
            n_iter_no_change=self.n_iter_no_change,
            tol=self.tol,
            verbose=max(0, self.verbose - 1),
        )
        ctx = dict(crit=crit, prior=prior, settings=settings, device=device, rng=rng,
                   training=_training, classification=classification)
        params, depth = self._grow(Z, Y_fit, w_fit, tr, va, ctx, auto)
        self.max_depth_ = depth

        # Joint refinement (Algorithm 1) of every split, started from the
        # grown tree with each node's scores rescaled so that its greedy
        # threshold sits at q = 1/2: the probabilistic tree then starts out
        # routing like the hard one.
        self.n_iter_, self.loss_curve_ = 0, []
        self.best_loss_ = None
        self.validation_scores_ = self.best_validation_score_ = None
        if params and self.max_iter > 0:
            scaled = {v: (b, c, r * math.log(2.0) / tau) for v, (b, c, r, tau) in params.items()}
            val = (Z[va], Y_fit[va], w_fit[va]) if self.early_stopping and va.size else None
            refined, history = _training.refine(
                sorted(params), scaled, Z[tr], Y_fit[tr], w_fit[tr], val,
                classification=classification, prior=prior, settings=settings,
                max_iter=self.max_iter, early_stopping=val is not None,
                seed=int(rng.randint(np.iinfo(np.int32).max)), device=device,
                name=type(self).__name__,
            )
            params = {v: (*refined[v], math.log(2.0)) for v in refined}
            self.n_iter_ = history.n_iter
            self.loss_curve_ = history.loss_curve
            self.best_loss_ = history.best_loss
            if val is not None:
                # The trainer's score without score_fn: minus the validation objective.
                self.validation_scores_ = history.validation_scores
                self.best_validation_score_ = history.best_validation_score
        self.device_ = str(device)

        params = self._drop_facets(params, Z, Y_fit, w_fit, crit)
        self.tree_ = self._build_tree(
            params, depth, mean, scale, constant, X_fit, Y_fit, w_fit, crit
        )
        self.n_facets_ = self.tree_.n_facets
        return self

    def _grow(self, Z, Y, w, tr, va, ctx, auto):
        """Greedy top-down growth (Section 3.3.2), level by level.

        Returns ``({node: (beta, bias, r, tau)}, depth)`` in the standardized
        space. With ``max_depth="auto"`` the depth whose hard tree scores best
        on the validation rows is kept (growth stops after
        ``AUTO_PATIENCE`` levels without improvement).
        """
        cap = AUTO_MAX_DEPTH if auto else self.max_depth
        W_total = w[tr].sum()
        params = {}
        frontier = {0: tr}
        best_score, best_depth, since = self._val_score(params, Z, Y, w, tr, va), 0, 0
        depth = 0
        for level in range(cap):
            new_frontier = {}
            for node, idx in frontier.items():
                split = self._try_split(node, idx, Z, Y, w, W_total, ctx)
                if split is None:
                    continue
                params[node] = split[0]
                new_frontier[2 * node + 1], new_frontier[2 * node + 2] = split[1], split[2]
            if not new_frontier:
                break
            frontier = new_frontier
            depth = level + 1
            if auto and va.size:
                score = self._val_score(params, Z, Y, w, tr, va)
                if score > best_score + 1e-12:
                    best_score, best_depth, since = score, depth, 0
                else:
                    since += 1
                    if since >= AUTO_PATIENCE:
                        break
        if auto and va.size:
            depth = best_depth
            params = {v: p for v, p in params.items() if int(np.log2(v + 1)) < depth}
        return params, depth

    def _try_split(self, node, idx, Z, Y, w, W_total, ctx):
        crit = ctx["crit"]
        if idx.size < self.min_samples_split or idx.size < 2 * self.min_samples_leaf:
            return None
        Yn, wn = Y[idx], w[idx]
        if wn.sum() < 2 * self.min_weight_fraction_leaf * W_total:
            return None
        if crit.node_impurity(Yn, wn) <= 1e-12:  # pure node
            return None
        steps = math.ceil(idx.size / self.batch_size)
        epochs = max(self.growth_max_iter, math.ceil(STUMP_MIN_STEPS / steps))
        for _ in range(STUMP_TRIES):
            seed = int(ctx["rng"].randint(np.iinfo(np.int32).max))
            beta, bias, r = ctx["training"].train_stump(
                Z[idx], Yn, wn, n_facets=self.max_facets,
                classification=ctx["classification"], prior=ctx["prior"],
                settings=ctx["settings"], max_iter=epochs, seed=seed, device=ctx["device"],
            )
            s = _std_scores(Z[idx].astype(np.float64), beta, bias, r)
            found = crit.best_threshold(
                s, Yn, wn, W_total, self.min_samples_leaf,
                self.min_weight_fraction_leaf * W_total,
            )
            if found is None or found[1] <= 1e-12 or found[0] <= 0:
                continue  # the stump failed (all one side / no gain): new seed
            tau, gain = found
            if gain < self.min_impurity_decrease:
                return None
            left = s <= tau
            return (beta, bias, r, tau), idx[left], idx[~left]
        return None

    def _route_std(self, params, Z):
        node = np.zeros(Z.shape[0], dtype=np.int64)
        for v in sorted(params):
            at = np.flatnonzero(node == v)
            if at.size:
                beta, bias, r, tau = params[v]
                right = _std_scores(Z[at].astype(np.float64), beta, bias, r) > tau
                node[at] = np.where(right, 2 * v + 2, 2 * v + 1)
        return node

    def _val_score(self, params, Z, Y, w, tr, va):
        """Validation score of the hard tree whose leaves are fitted on ``tr``."""
        if not va.size:
            return -np.inf
        ntr, nva = self._route_std(params, Z[tr]), self._route_std(params, Z[va])
        leaves = np.unique(ntr)
        return self._leaf_score(leaves, ntr, nva, Y[tr], w[tr], Y[va], w[va])

    def _facet_prior(self, r):
        """What setting ``r_k = 0`` saves in the negative log prior (eq. 15).

        The gamma-process term of the facet against ``r = 0``:
        ``-(gamma0 / K - 1) (ln(r_k + eps) - ln eps) + c0 r_k``. The atoms
        ``beta_k`` keep their prior whatever their weight, so the Student-t
        term does not enter the comparison.
        """
        return -(self.gamma0 / self.max_facets - 1.0) * (
            np.log(r + PRIOR_EPS) - np.log(PRIOR_EPS)
        ) + self.c0 * r

    def _drop_facets(self, params, Z, Y, w, crit):
        """Remove the facets that the prior does not pay for (MAP facet selection).

        On the training rows reaching a node, the cost of a split is the
        weighted impurity of its best hard threshold (``sum_n w_n`` times the
        children's impurity; nats for classification) plus the negative log
        prior of its facets (eq. 15, unscaled: the data term is a sum over
        rows). Facets are removed one at a time, the one whose removal lowers
        the cost most first, while the cost decreases; the heaviest facet is
        always kept. Facets that contribute less than ``FACET_DROP_TOL`` times
        the threshold on every row go first (they cannot move the split).
        Stronger priors (smaller ``gamma0``, larger ``c0``) save more per
        facet and so drop more facets.
        """
        node = np.zeros(Z.shape[0], dtype=np.int64)
        out = {}
        for v in sorted(params):
            beta, bias, r, tau = params[v]
            at = np.flatnonzero(node == v)
            Zv = Z[at].astype(np.float64)
            if at.size:
                C = _softplus(Zv @ beta.T + bias) * r  # (n_v, K) contributions
                keep = C.max(axis=0) >= FACET_DROP_TOL * tau
                keep[np.argmax(r)] = True
                keep = self._select_facets(C, keep, Y[at], w[at], crit,
                                           self._facet_prior(r), np.argmax(r))
            else:
                keep = r >= FACET_DROP_TOL * r.max()
            out[v] = (beta[keep], bias[keep], r[keep], tau)
            if at.size:
                right = _std_scores(Zv, *out[v][:3]) > tau
                node[at] = np.where(right, 2 * v + 2, 2 * v + 1)
        return out

    def _select_facets(self, C, keep, Y, w, crit, saving, heaviest):
        Wt = w.sum()

        def cost(mask):
            found = crit.best_threshold(C[:, mask].sum(1), Y, w, Wt, self.min_samples_leaf)
            parent = crit.node_impurity(Y, w)
            data = Wt * (parent - (found[1] if found is not None else 0.0))
            return data + saving[mask].sum()

        keep = keep.copy()
        current = cost(keep)
        while keep.sum() > 1:
            best, best_k = current, None
            for k in np.flatnonzero(keep):
                if k == heaviest:
                    continue
                keep[k] = False
                c = cost(keep)
                keep[k] = True
                if c < best - 1e-9:
                    best, best_k = c, k
            if best_k is None:
                break
            keep[best_k] = False
            current = best
        return keep

    def _build_tree(self, params, depth, mean, scale, constant, X, Y, w, crit):
        """The torch-free :class:`PolytopeTree` (raw input space), thresholds, leaves."""
        n_int = 2**depth - 1
        is_split = np.zeros(n_int, dtype=bool)
        ptr = [0]
        coefs, inters, weights = [], [], []
        thr = np.full(n_int, np.inf)
        for v in range(n_int):
            if v in params:
                beta, bias, r, tau = params[v]
                coefs.append(np.where(constant, 0.0, beta))
                inters.append(bias)
                weights.append(r)
                is_split[v] = True
                thr[v] = tau
                ptr.append(ptr[-1] + r.size)
            else:
                ptr.append(ptr[-1])
        p = X.shape[1]
        coef = np.concatenate(coefs) if coefs else np.zeros((0, p))
        inter = np.concatenate(inters) if inters else np.zeros(0)
        weight = np.concatenate(weights) if weights else np.zeros(0)
        targets = self._leaf_targets(Y)
        tree = PolytopeTree.from_standardized(
            is_split, ptr, coef, inter, weight, thr,
            np.zeros((2 ** (depth + 1) - 1, targets.shape[1])), mean, scale,
        )
        if isinstance(self.threshold, str):
            self._refit_thresholds(tree, X, Y, w, crit)
        else:
            tree.threshold[is_split] = -math.log1p(-self.threshold)
        return tree.finalize(X, targets, w)

    def _refit_thresholds(self, tree, X, Y, w, crit):
        """Re-choose each split's threshold on the training rows reaching it, top-down."""
        members = {0: np.arange(X.shape[0])}
        W_total = w.sum()
        for v in np.flatnonzero(tree.is_split):
            idx = members.pop(v, np.arange(0))
            if idx.size:
                s = tree.scores(X[idx], v)
                found = crit.best_threshold(
                    s, Y[idx], w[idx], W_total, self.min_samples_leaf,
                    self.min_weight_fraction_leaf * W_total,
                )
                if found is not None:
                    tree.threshold[v] = found[0]
                left = s <= tree.threshold[v]
                members[2 * v + 1], members[2 * v + 2] = idx[left], idx[~left]

    # apply, decision_path, get_depth, get_n_leaves: BaseObliqueTree's, which
    # only ask ``tree_`` (here a PolytopeTree, whose leaves sit at any depth).

    @property
    def feature_importances_(self):
        """Normalized polytope-split importances, shape (n_features,).

        For every split, each facet's absolute coefficients on the
        standardized scale (``|beta_kj| * std_j``) weighted by its ``r_k``,
        times the fraction of the training weight reaching the node; the
        sums over nodes are normalized to add up to one.
        """
        check_is_fitted(self)
        tree = self.tree_
        imp = np.zeros(tree.n_features)
        frac = tree.n_node_samples / max(tree.n_node_samples[0], 1e-300)
        for v in np.flatnonzero(tree.is_split):
            lo, hi = tree.facet_ptr[v], tree.facet_ptr[v + 1]
            contrib = tree.facet_weight[lo:hi] @ np.abs(tree.facet_coef[lo:hi])
            imp += frac[v] * contrib * self._feature_scale
        total = imp.sum()
        return imp / total if total > 0 else imp


# ---------------------------------------------------------------- docstrings
_DOC_PARAMS = """
    Parameters
    ----------
    max_depth : int or "auto", default="auto"
        Maximum depth of the greedily grown tree (1 to 12). ``"auto"`` grows
        up to depth 8 on the training part and keeps the depth whose hard tree
        scores best on the held-out ``validation_fraction`` ({score}); growth
        stops after 2 levels without improvement. The depth is never chosen
        on training accuracy.
    max_facets : int, default=10
        ``K``, the number of linear experts (polytope facets) per split before
        shrinkage (the paper uses up to 50). After training, each split keeps
        only the facets its prior pays for: facets are removed one by one
        while that lowers the node's MAP cost (the weighted impurity of its
        best hard threshold on the training rows reaching it, plus the
        gamma-process term of eq. 15). ``n_facets_`` counts the survivors.
    gamma0, c0 : float, default=9.0 and 0.01
        Gamma-process prior ``r_k ~ Gamma(gamma0 / K, 1 / c0)`` (eq. 15),
        negative log density ``-(gamma0 / K - 1) ln(r_k + 1e-6) + c0 r_k``
        (the ``1e-6`` keeps the objective bounded below when
        ``gamma0 / K < 1``). A smaller ``gamma0`` or a larger ``c0`` keeps
        fewer facets. The defaults are a weak prior: on the bundled sets
        (docs/polytope.md) the paper-style ``gamma0=1, c0=1`` kept about one
        facet per split and lost accuracy (e.g. segmentation 93.7% vs
        97.7%, vehicle 69.3% vs 79.5%).
    a_beta, b_beta : float, default=0.5 and 1.0
        Heavy-tailed (Student-t) shrinkage on every facet coefficient and
        intercept: ``(a_beta + 1/2) ln(1 + beta^2 / (2 b_beta))``. During
        training the whole prior is divided by the number of training rows
        (so that, added to the per-sample batch entropy or variance, the
        objective is the per-sample negative log posterior whatever ``n`` and
        the batch size) and switched on linearly over the first half of each
        training run.
    min_samples_split : int, default=10
        A node with fewer training samples is not split.
    min_samples_leaf : int, default=1
        Fewest training samples a threshold may leave on either side.
    min_weight_fraction_leaf : float, default=0.0
        Smallest fraction of the total training weight a threshold may leave
        on either side (as in scikit-learn's trees).
    min_impurity_decrease : float, default=0.0
        A node is split only if the weighted impurity decrease
        ``N_t / N * (I - N_L / N_t * I_L - N_R / N_t * I_R)`` reaches this
        value ({impurity}).
    threshold : "refit" or float in (0, 1), default="refit"
        After the joint refinement, ``"refit"`` re-chooses each node's
        threshold ``q_thr`` on the training rows reaching it (best {gain});
        a float ``q`` thresholds every node at ``P(yes | x) = q`` (``0.5`` is
        the paper's Algorithm 1).
    growth_max_iter : int, default=20
        Epochs of each stump during growth (at least 50 optimizer steps for
        small nodes; stops early when the stump's loss stops improving).
    max_iter : int, default=100
        Epochs of the joint refinement of all splits (``0`` skips it). It is
        a budget: the prior is switched on over its first half, so the
        objective keeps moving and the refinement often uses all of it (with
        early stopping, the best validation epoch is kept). Reaching it is
        therefore not reported as a ``ConvergenceWarning``; ``n_iter_`` and
        ``loss_curve_`` show what happened.
    batch_size : int, default=256
        Mini-batch size of both the stumps and the refinement (the entropy is
        estimated per batch, so very small batches make it noisy).
    learning_rate : float, default=5e-2
        Learning rate of both the stumps and the refinement.
    optimizer : {{"adam", "rmsprop", "sgd"}}, default="adam"
        Optimizer (the paper uses Adam).
    momentum : float, default=0.0
        Momentum of RMSprop / SGD (ignored by Adam).
    lr_schedule : {{"constant", "cosine"}}, default="constant"
        Learning-rate schedule (``"cosine"``: warm restarts, four cycles).
    grad_clip : float or None, default=None
        Maximum gradient norm (``None`` disables clipping).
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the data (stratified for
        classifiers) during the refinement, stop when the validation objective
        has not improved by ``tol`` for ``n_iter_no_change`` epochs, and keep
        the best epoch's weights. The thresholds and leaves are then set on
        all training rows.
    validation_fraction : float, default=0.2
        Fraction held out for ``max_depth="auto"`` and early stopping.
    n_iter_no_change : int, default=10
        Patience (epochs) of the stopping rule, for stumps (training loss) and
        refinement.
    tol : float, default=1e-4
        Minimum improvement of the monitored objective.
    random_state : int, RandomState instance or None, default=None
        Seeds the initializations, the validation split and the shuffling
        through private generators (global numpy / torch RNGs untouched).
    device : {{"auto", "cpu", "cuda"}}, default="auto"
        Where to train; prediction is always on the CPU, without torch.
    verbose : int, default=0
        ``>= 2`` prints one line per training epoch.
"""

_DOC_ATTRS = """
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only for string column names).
    tree_ : PolytopeTree
        The fitted hard tree (numpy arrays): per split node its facets
        ``beta_k, b_k, r_k`` in the raw input space and its threshold
        ``tau = -ln(1 - q_thr)`` (left iff
        ``sum_k r_k softplus(beta_k . x + b_k) <= tau``), per node its value.
    max_depth_ : int
        Depth of the grown tree (chosen on validation data for ``"auto"``).
    n_facets_ : ndarray of shape (2**max_depth_ - 1,)
        Effective number of facets of every heap node (0 where the node does
        not split).
    n_iter_ : int
        Number of refinement epochs run.
    loss_curve_ : list of float
        Refinement objective (batch {objective} plus prior) per epoch.
    best_loss_ : float or None
        Smallest refinement objective seen.
    validation_scores_ : list of float or None
        Minus the validation {objective} per refinement epoch (``None``
        without early stopping).
    best_validation_score_ : float or None
        The score of the epoch whose weights were kept.
    device_ : str
        Device the model was trained on.
    feature_importances_ : ndarray of shape (n_features_in_,)
        See :attr:`feature_importances_`.
"""

_DOC_REF = """
    References
    ----------
    M. Armandpour, A. Sadeghian, M. Zhou. "Convex Polytope Trees".
    NeurIPS 2021.
"""


class ConvexPolytopeTreeClassifier(ClassifierMixin, _BaseConvexPolytopeTree):
    __doc__ = (
        """Convex polytope tree classifier (CPT, Armandpour et al., NeurIPS 2021).

    Every split is the noisy-OR of ``K`` linear experts,
    ``P(yes | x) = 1 - exp(-sum_k r_k softplus(beta_k . x + b_k))``, so its
    left region is a smooth convex set confined by a polytope with one facet
    per expert. A gamma-process prior on the expert weights ``r_k`` shrinks
    the number of facets per node. The tree is grown greedily (a stump
    trained by maximizing the mutual information between labels and leaves
    on each node's data, thresholded where the information gain is largest),
    then all splits are refined jointly on the probabilistic tree, the
    thresholds are re-chosen and the leaves set to the class proportions of
    the training rows reaching them. Prediction is a hard tree walk in
    compiled code, without torch.

    Inputs are standardized internally (folded into the fitted splits).

    Read more in the :doc:`User Guide </polytope>`.
"""
        + _DOC_PARAMS.format(score="accuracy", impurity="entropy, in nats",
                             gain="information gain")
        + """    class_weight : dict, "balanced" or None, default=None
        Weights associated with classes, multiplied into ``sample_weight``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_classes_ : int
        Number of classes."""
        + _DOC_ATTRS.format(objective="conditional entropy")
        + """
    See Also
    --------
    ConvexPolytopeTreeRegressor : The regression counterpart.
    sklearn_difftrees.polytope.plot_polytope_regions : Decision regions of 2-D models.
"""
        + _DOC_REF
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_difftrees import ConvexPolytopeTreeClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = (np.hypot(X[:, 0], X[:, 1]) < 0.6).astype(int)
    >>> clf = ConvexPolytopeTreeClassifier(max_depth=1, max_iter=10, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    >>> clf.get_n_leaves()
    2
    """
    )

    _parameter_constraints = {
        **_BaseConvexPolytopeTree._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        *,
        max_depth="auto",
        max_facets=10,
        gamma0=9.0,
        c0=0.01,
        a_beta=0.5,
        b_beta=1.0,
        min_samples_split=10,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        min_impurity_decrease=0.0,
        threshold="refit",
        growth_max_iter=20,
        max_iter=100,
        batch_size=256,
        learning_rate=5e-2,
        optimizer="adam",
        momentum=0.0,
        lr_schedule="constant",
        grad_clip=None,
        early_stopping=True,
        validation_fraction=0.2,
        n_iter_no_change=10,
        tol=1e-4,
        random_state=None,
        device="auto",
        verbose=0,
        class_weight=None,
    ):
        super().__init__(
            max_depth=max_depth, max_facets=max_facets, gamma0=gamma0, c0=c0, a_beta=a_beta,
            b_beta=b_beta, min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            min_impurity_decrease=min_impurity_decrease,
            threshold=threshold, growth_max_iter=growth_max_iter, max_iter=max_iter,
            batch_size=batch_size, learning_rate=learning_rate, optimizer=optimizer,
            momentum=momentum, lr_schedule=lr_schedule, grad_clip=grad_clip,
            early_stopping=early_stopping, validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, tol=tol, random_state=random_state,
            device=device, verbose=verbose,
        )
        self.class_weight = class_weight

    def _prepare_target(self, y, sample_weight):
        y_enc, sample_weight = encode_classification_target(self, y, sample_weight)
        self.n_outputs_ = 1
        return y_enc, sample_weight

    def _leaf_targets(self, Y):
        T = np.zeros((Y.shape[0], self.n_classes_))
        T[np.arange(Y.shape[0]), Y] = 1.0
        return T

    def _leaf_score(self, leaves, ntr, nva, Ytr, wtr, Yva, wva):
        counts = np.zeros((leaves.size, self.n_classes_))
        pos = np.searchsorted(leaves, ntr)
        np.add.at(counts, (pos, Ytr), wtr)
        prior = np.bincount(Ytr, weights=wtr, minlength=self.n_classes_)
        pred_leaf = counts.argmax(1)
        pos_va = np.searchsorted(leaves, nva)
        found = (pos_va < leaves.size) & (leaves[np.minimum(pos_va, leaves.size - 1)] == nva)
        pred = np.where(found, pred_leaf[np.minimum(pos_va, leaves.size - 1)], prior.argmax())
        return float(((pred == Yva) * wva).sum() / wva.sum())

    def predict_proba(self, X):
        """Class proportions of the training rows in the leaf each sample reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        check_is_fitted(self)
        return self.tree_.predict(check_predict_data(self, X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Predicted class (the most frequent training class of the reached leaf)."""
        check_is_fitted(self)
        leaves = self.tree_.apply(check_predict_data(self, X))
        return self.classes_.take(np.argmax(self.tree_.value, axis=1)[leaves])


class ConvexPolytopeTreeRegressor(RegressorMixin, _BaseConvexPolytopeTree):
    __doc__ = (
        """Convex polytope tree regressor (CPT, Armandpour et al., NeurIPS 2021).

    Same model and training as :class:`ConvexPolytopeTreeClassifier`, with the
    weighted variance criterion of eqs. (16)–(17) instead of the conditional
    entropy (on internally standardized targets; several outputs are averaged)
    and leaves set to the mean target of the training rows reaching them.

    Read more in the :doc:`User Guide </polytope>`.
"""
        + _DOC_PARAMS.format(score="R^2", impurity="variance of the standardized targets",
                             gain="variance reduction")
        + """
    Attributes
    ----------
    n_outputs_ : int
        Number of targets."""
        + _DOC_ATTRS.format(objective="weighted variance")
        + """
    See Also
    --------
    ConvexPolytopeTreeClassifier : The classification counterpart.
"""
        + _DOC_REF
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_difftrees import ConvexPolytopeTreeRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = np.where(np.hypot(X[:, 0], X[:, 1]) < 0.6, 2.0, 0.0)
    >>> reg = ConvexPolytopeTreeRegressor(max_depth=1, max_iter=10, random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.8
    True
    """
    )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _prepare_target(self, y, sample_weight):
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            y = y[:, None]
        self.n_outputs_ = y.shape[1]
        self._target_mean, self._target_scale = fit_standardizer(y, sample_weight)
        return (y - self._target_mean) / self._target_scale, sample_weight

    def _leaf_targets(self, Y):
        return Y * self._target_scale + self._target_mean

    def _leaf_score(self, leaves, ntr, nva, Ytr, wtr, Yva, wva):
        k = Ytr.shape[1]
        sums = np.zeros((leaves.size, k))
        pos = np.searchsorted(leaves, ntr)
        np.add.at(sums, pos, wtr[:, None] * Ytr)
        wsum = np.bincount(pos, weights=wtr, minlength=leaves.size)
        means = sums / np.maximum(wsum, 1e-300)[:, None]
        pos_va = np.minimum(np.searchsorted(leaves, nva), leaves.size - 1)
        found = leaves[pos_va] == nva
        glob = (wtr[:, None] * Ytr).sum(0) / wtr.sum()
        pred = np.where(found[:, None], means[pos_va], glob)
        return float(r2_score(Yva, pred, sample_weight=wva))

    def predict(self, X):
        """Predicted target: the training mean of the leaf each sample reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        check_is_fitted(self)
        pred = self.tree_.predict(check_predict_data(self, X))
        return pred[:, 0] if self.n_outputs_ == 1 else pred
