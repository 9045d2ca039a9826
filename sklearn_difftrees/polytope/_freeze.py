"""From trained polytope splits to the fitted :class:`PolytopeTree`: MAP facet
selection under the gamma-process prior (eq. 15), the split thresholds (refit
on the training rows or fixed), the leaf-size limits and the leaf values. A mixin of the estimators
(it reads their parameters); numpy only."""

import math

import numpy as np

from .._core.greedy import row_subsample
from ._criterion import _softplus, _std_scores
from ._tree import PolytopeTree

__all__ = ["PRIOR_EPS", "SELECT_MAX_ROWS", "_FreezeMixin"]

#: ``ln(r + PRIOR_EPS)`` replaces ``ln r`` in the gamma-process prior (training
#: penalty and facet selection), so that the objective stays bounded when
#: ``gamma0 / K < 1`` and ``r -> 0``.
PRIOR_EPS = 1e-6
#: A facet whose contribution to its node's score stays below this fraction
#: of the node's threshold on every training row reaching the node is
#: dropped from the fitted split before the MAP selection (``_drop_facets``).
FACET_DROP_TOL = 1e-2
#: Most rows of a node on which the MAP facet selection compares facet
#: sets under ``batch_size="auto"`` (a seeded subsample beyond; before
#: 2026-11-26, the core's ``MAX_EPOCH_ROWS``, 131,072). Each comparison
#: sorts the node's scores, a few dozen per node: on the 100k x 50 table the
#: three selections of a fit (the refined and the grown splits on the
#: training part, the refined ones on every fit row) took 3.9 s CPU on all
#: rows and 2.4 s with this cap, keeping 400 / 219 / 219 facets against 402
#: / 218 / 219. Nodes of at most 16,384 rows (every node of every table of
#: ``benchmarks/bench_defaults.py``) are unchanged.
SELECT_MAX_ROWS = 16_384


class _FreezeMixin:
    """Facet selection and the build of the torch-free ``tree_``."""

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
        facet and so drop more facets. With ``batch_size="auto"``, a node
        reached by more than :data:`SELECT_MAX_ROWS` rows selects on a
        subsample of that many (seeded by the node), its weights scaled to
        the node's total.
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
                # Under batch_size="auto" a node of more than SELECT_MAX_ROWS
                # rows selects on a seeded subsample of that many, reweighted
                # to the node's weight (the data term keeps its scale against
                # the prior's).
                cap = SELECT_MAX_ROWS if self.batch_size == "auto" else at.size
                sub = row_subsample(at.size, cap, v)
                ws = w[at][sub]
                ws = ws * (w[at].sum() / ws.sum()) if isinstance(sub, np.ndarray) else ws
                keep = self._select_facets(C[sub], keep, Y[at][sub], ws, crit,
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
        parent = crit.node_impurity(Y, w)  # the node's, whatever the facets

        def cost(mask):
            found = crit.best_threshold(C[:, mask].sum(1), Y, w, Wt, self.min_samples_leaf)
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

    def _build_tree(self, params, depth, mean, scale, constant, X, Y, w, crit, threshold=None):
        """The torch-free :class:`PolytopeTree` (raw input space), thresholds, leaves.

        The thresholds are set (``threshold``, default the parameter's:
        re-chosen on the training rows with ``"refit"``, or ``-ln(1 - q)``
        for a float ``q``), then every split
        that leaves a child below ``min_samples_leaf`` rows or
        ``min_weight_fraction_leaf`` of the training weight becomes a leaf
        (:meth:`_undersized_splits`): one rule for both threshold modes.
        """
        targets = self._leaf_targets(Y)
        shape = (X.shape[1], targets.shape[1])
        tree = self._assemble(params, depth, mean, scale, constant, *shape)
        threshold = self.threshold if threshold is None else threshold
        if isinstance(threshold, str):
            self._refit_thresholds(tree, X, Y, w, crit)
        else:
            tree.threshold[tree.is_split.astype(bool)] = -math.log1p(-threshold)
        removed = self._undersized_splits(tree, X, w)
        if removed:
            keep = {}
            for v in sorted(params):  # heap order: a removed node drops its subtree
                if v in removed or (v > 0 and (v - 1) // 2 not in keep):
                    continue
                keep[v] = (*params[v][:3], tree.threshold[v])
            thresholds = {v: p[3] for v, p in keep.items()}
            tree = self._assemble(keep, depth, mean, scale, constant, *shape)
            for v, t in thresholds.items():
                tree.threshold[v] = t
        return tree.finalize(X, targets, w)

    def _assemble(self, params, depth, mean, scale, constant, p, n_out):
        """:class:`PolytopeTree` of the standardized ``params`` (values unset)."""
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
        coef = np.concatenate(coefs) if coefs else np.zeros((0, p))
        inter = np.concatenate(inters) if inters else np.zeros(0)
        weight = np.concatenate(weights) if weights else np.zeros(0)
        return PolytopeTree.from_standardized(
            is_split, ptr, coef, inter, weight, thr,
            np.zeros((2 ** (depth + 1) - 1, n_out)), mean, scale,
        )

    def _undersized_splits(self, tree, X, w):
        """Split nodes whose hard split leaves a child too small, top-down.

        A child is too small below ``min_samples_leaf`` training rows or
        ``min_weight_fraction_leaf`` of the total training weight (rows of
        positive weight only, as in growth). Nodes below a removed node are
        not examined (their rows stop at the new leaf).
        """
        min_weight = self.min_weight_fraction_leaf * w.sum()
        members = {0: np.arange(X.shape[0])}
        removed = set()
        for v in np.flatnonzero(tree.is_split):
            idx = members.pop(int(v), None)
            if idx is None:
                continue  # below a removed node
            right = tree.scores(X[idx], v) > tree.threshold[v]
            sides = (idx[~right], idx[right])
            if any(s.size < self.min_samples_leaf or w[s].sum() < min_weight for s in sides):
                removed.add(int(v))
                continue
            members[2 * int(v) + 1], members[2 * int(v) + 2] = sides
        return removed

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
