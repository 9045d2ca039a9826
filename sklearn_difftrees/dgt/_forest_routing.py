"""What the DGT forests route: each member's trained tree and, below its
leaves, the greedy subtrees grown on the member's bootstrap rows
(``subtree_depth``; the core's :mod:`~sklearn_difftrees._core.subtrees`)."""

import numpy as np
from scipy import sparse
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from .._core import topology
from .._core._tree_view import graft_axis_subtrees
from .._core._memory import check_memory
from .._core.subtrees import grow_axis_subtrees
from .._core.validation import check_predict_data, fit_standardizer

__all__ = ["SUBTREE_DEPTHS", "ForestRoutingMixin", "check_subtree_memory",
           "choose_subtree_depth", "grow_member_subtrees", "set_member_subtrees"]

#: The depth caps ``subtree_depth="auto"`` tries between the members' own
#: leaves (0) and the subtrees grown until pure (None).
SUBTREE_DEPTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
#: Relative difference of two out-of-bag losses below which they tie.
_TIE_RTOL = 1e-12


def _leaf_positions(tree, X):
    """Position (0 .. 2**max_depth - 1) of the leaf each row of ``X`` reaches."""
    return tree.apply(X) - tree.n_internal


def check_subtree_memory(forest, n_rows, width, depth):
    """Refuse, before any training, subtrees that may not fit in memory: a
    member's subtrees have fewer nodes than twice its distinct bootstrap
    rows (``n_rows`` at most) plus one per leaf of its ``2**depth`` (a leaf
    no row reaches keeps a node), and fewer than ``2**(subtree_depth + 1)``
    per leaf; a node takes 5 int64 / float64 fields and ``width`` values."""
    if forest.subtree_depth == 0:
        return
    nodes = 2 * n_rows + 2 ** depth
    if forest.subtree_depth not in (None, "auto"):
        nodes = min(nodes, 2 ** (depth + forest.subtree_depth + 1))
    check_memory(type(forest).__name__, forest.n_estimators * nodes * 8 * (5 + width),
                 f"subtree_depth={forest.subtree_depth}, {n_rows} rows per bootstrap sample, "
                 f"{forest.n_estimators} members (a lower subtree_depth or a larger "
                 "min_weight_fraction_leaf grows smaller subtrees)")


def grow_member_subtrees(forest, X, y, weights, seeds):
    """The subtrees below every member's leaves (``forest.subtree_depth``).

    ``X`` are the forest's fit rows (categorical columns expanded), ``y``
    the encoded classes or the targets, ``weights[k]`` member ``k``'s
    bootstrap weights (draw counts times the forest's sample weights) and
    ``seeds[k]`` its seed. A member's leaf that no bootstrap row reaches (or
    whose rows weigh less than ``min_weight_fraction_leaf``) keeps the
    member's value.
    """
    classifier = is_classifier(forest)
    width = forest.n_classes_ if classifier else forest.n_outputs_
    mean, scale = fit_standardizer(X, np.sum(weights, axis=0))
    Y = y if classifier else np.asarray(y, dtype=np.float64).reshape(X.shape[0], width)
    out = []
    for member, w, seed in zip(forest.estimators_, weights, seeds):
        tree = member.tree_
        n_roots = topology.n_leaves(tree.max_depth)
        base = forest._leaf_table(member, tree.value)
        out.append(grow_axis_subtrees(
            X, _leaf_positions(tree, X), n_roots, Y, w, base, classification=classifier,
            n_outputs=width, max_depth=_grown_depth(forest), seed=int(seed), mean=mean,
            scale=scale, min_weight_leaf=forest.min_weight_fraction_leaf * float(w.sum())))
    return out


def _grown_depth(forest):
    """Depth the subtrees grow to (``"auto"`` cuts them afterwards)."""
    return None if forest.subtree_depth == "auto" else forest.subtree_depth


def choose_subtree_depth(forest, X, y, sample_weight, weights, subtrees, deepest):
    """``(depth, scores)``: the cap of ``subtree_depth="auto"``, chosen on
    the out-of-bag rows.

    The forest's out-of-bag predictions (each row averaged over the members
    that did not draw it: ``weights[k] == 0`` where ``sample_weight > 0``)
    are scored with the members' own leaves (depth 0), with their
    ``subtrees`` cut at each of :data:`SUBTREE_DEPTHS` below ``deepest``
    (the depth of the deepest, at least 1), and as grown (``deepest``):
    accuracy for a classifier (``y`` the encoded classes), R^2 for a
    regressor (averaged uniformly over the outputs, as ``r2_score``, so
    that no output's units outweigh another's), weighted by
    ``sample_weight`` (times the class weights). The best wins, the
    shallowest among equals (up to rounding). ``scores`` maps each depth
    tried to its score; ``(None, None)`` when no row is out of bag (no
    bootstrap).
    """
    classifier = is_classifier(forest)
    oob = [(w == 0) & (sample_weight > 0) for w in weights]
    if not any(mask.any() for mask in oob):
        return None, None
    depths = [0] + [d for d in SUBTREE_DEPTHS if d < deepest] + [deepest]
    width = forest.n_classes_ if classifier else forest.n_outputs_
    Y = y if classifier else np.asarray(y, dtype=np.float64).reshape(X.shape[0], width)
    loss, seen_weight = np.zeros((len(depths), 1 if classifier else width)), 0.0
    step = max(256, 2 ** 22 // (len(depths) * width))  # about 32 MB of sums per block
    for start in range(0, X.shape[0], step):
        block = slice(start, min(start + step, X.shape[0]))
        total = np.zeros((len(depths), block.stop - start, width))
        count = np.zeros(block.stop - start)
        for k, member in enumerate(forest.estimators_):
            rows = np.flatnonzero(oob[k][block])
            if not rows.size:
                continue
            Xk = X[start + rows]
            leaves = _leaf_positions(member.tree_, Xk)  # one routing: the leaf's value too
            total[0, rows] += forest._leaf_table(member, member.tree_.value[leaves])
            nodes = subtrees[k].nodes_at_depths(Xk, leaves, depths[1:])
            total[1:, rows] += np.moveaxis(subtrees[k].value[nodes], 1, 0)
            count[rows] += 1
        seen = count > 0
        pred = total[:, seen] / count[seen][None, :, None]
        w = sample_weight[block][seen]
        if classifier:
            loss[:, 0] += (w * (pred.argmax(axis=2) != Y[block][seen])).sum(axis=1)
        else:
            loss += np.einsum("r,drk->dk", w, (pred - Y[block][seen]) ** 2)
        seen_weight += w.sum()
    if classifier:
        loss = loss[:, 0] / seen_weight  # the error rate
    else:  # 1 - R^2 averaged over the outputs (r2_score's, constant outputs as it)
        scored = np.logical_or.reduce(oob)  # the rows some member left out
        Ys, ws = Y[scored], sample_weight[scored]
        total = ws @ (Ys - ws @ Ys / ws.sum()) ** 2  # per output, about the weighted mean
        # A constant output: its weighted mean rounds (0.1 three times is not
        # 0.3), so ``total`` is rounding, not 0; scored as r2_score's 0 / 0
        # (1 where predicted up to the rounding of the constant, else 0).
        spread = (Ys != Ys[:1]).any(axis=0) & (total > 0)
        exact = loss <= seen_weight * (1e-12 * (1.0 + np.abs(Ys[0]))) ** 2
        loss = np.where(spread, loss / np.where(spread, total, 1.0), (~exact) * 1.0)
        loss = loss.mean(axis=1)
    # The first, i.e. shallowest, of equal losses: equal up to the rounding of
    # their sums (the same weights summed in other orders differ in the last
    # bits; far below one row's weight).
    best = int(np.flatnonzero(loss <= loss.min() * (1 + _TIE_RTOL))[0])
    scores = {d: float(1 - v) for d, v in zip(depths, loss)}
    return depths[best], scores


def set_member_subtrees(forest, X, y, sample_weight, weights, seeds):
    """Set ``subtrees_``, ``subtree_depth_`` and ``subtree_scores_`` of a
    forest whose members are trained (``subtree_depth``: none, grown to a
    depth, or grown until pure and cut where the out-of-bag rows say; with
    ``"auto"``, subtrees that split no leaf are not kept)."""
    forest.subtrees_, forest.subtree_depth_, forest.subtree_scores_ = None, 0, None
    if forest.subtree_depth == 0:
        return
    subtrees = grow_member_subtrees(forest, X, y, weights, seeds)
    deepest = max(sub.max_depth for sub in subtrees)
    if forest.subtree_depth == "auto" and deepest == 0:
        return
    forest.subtrees_, forest.subtree_depth_ = subtrees, deepest
    if forest.subtree_depth != "auto":
        return
    depth, scores = choose_subtree_depth(forest, X, y, sample_weight, weights, subtrees,
                                         deepest)
    if depth is None:  # no out-of-bag rows: as grown
        return
    forest.subtree_depth_, forest.subtree_scores_ = depth, scores
    if depth == 0:
        forest.subtrees_ = None
    elif depth < deepest:
        for k, sub in enumerate(subtrees):  # one at a time: the grown ones go as cut
            subtrees[k] = sub.pruned(depth)


class ForestRoutingMixin:
    """Members' outputs, ``apply``, ``decision_path`` and importances of a
    fitted forest (``estimators_``, ``subtrees_``)."""

    def __setstate__(self, state):
        # A forest pickled before the subtrees grew none: its parameters say
        # so (get_params, repr and clone need them; a refit is that forest).
        state = dict(state)
        if "estimators_" in state and "subtrees_" not in state:
            state.setdefault("subtree_depth", 0)
        state.setdefault("subtree_depth", "auto")
        if "estimators_" in state:  # fitted before "auto" cut the subtrees
            grown = state.get("subtrees_")
            state.setdefault("subtree_depth_",
                             max(sub.max_depth for sub in grown) if grown else 0)
            state.setdefault("subtree_scores_", None)
        state.setdefault("min_weight_fraction_leaf", 0.0)
        super().__setstate__(state)

    def _subtrees(self):
        """``subtrees_``, or ``None`` (none grown, or a forest pickled before
        the forests had them)."""
        return getattr(self, "subtrees_", None)

    def _member_output(self, k, X):
        """Output of member ``k`` on validated ``X``, in the forest's columns:
        its tree's leaf values, or the values its subtrees reach below them."""
        member = self.estimators_[k]
        if self._subtrees() is None:
            return self._leaf_table(member, member.tree_.predict(X))
        return self.subtrees_[k].predict(X, _leaf_positions(member.tree_, X))

    def _mean_member_output(self, X):
        """Mean over the members of their outputs on validated ``X``."""
        total = self._member_output(0, X)
        for k in range(1, len(self.estimators_)):
            total += self._member_output(k, X)
        return total / len(self.estimators_)

    def _member_paths(self, X):
        """Each member's CSR decision path over its tree's nodes then (with
        subtrees) its subtrees' nodes."""
        paths = []
        for k, member in enumerate(self.estimators_):
            path = member.tree_.decision_path(X)
            if self._subtrees() is not None:
                below = self.subtrees_[k].decision_path(X, _leaf_positions(member.tree_, X))
                path = sparse.hstack([path, below], format="csr")
            paths.append(path)
        return paths

    def apply(self, X):
        """Leaf reached by each sample in every member.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        X_leaves : ndarray of shape (n_samples, n_estimators)
            Column ``k`` holds the node of member ``k`` where each sample
            ends: the heap index of its tree's leaf (see
            :meth:`DGTClassifier.apply`) or, with subtrees (``subtrees_``),
            ``2**(max_depth_ + 1) - 1 + j`` for node ``j`` of
            ``subtrees_[k]`` (the columns of :meth:`decision_path`).
        """
        check_is_fitted(self)
        X = check_predict_data(self, X)
        if self._subtrees() is None:
            return np.column_stack([member.tree_.apply(X) for member in self.estimators_])
        return np.column_stack([
            topology.n_nodes(member.tree_.max_depth)
            + self.subtrees_[k].apply(X, _leaf_positions(member.tree_, X))
            for k, member in enumerate(self.estimators_)])

    def decision_path(self, X):
        """Decision paths of every member, side by side.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The input samples.

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR indicator; nonzero ``(i, j)`` means sample ``i`` goes through
            node ``j``, the columns of member ``k`` being
            ``n_nodes_ptr[k]:n_nodes_ptr[k + 1]``: its tree's nodes in heap
            order, then (with ``subtrees_``) the nodes of ``subtrees_[k]``.
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
            Column offsets of the members in ``indicator``.
        """
        check_is_fitted(self)
        paths = self._member_paths(check_predict_data(self, X))
        n_nodes_ptr = np.cumsum([0] + [path.shape[1] for path in paths])
        return sparse.hstack(paths, format="csr"), n_nodes_ptr

    def _extend_member_view(self, k, view, names, class_names, decimals):
        """Hook of the exports: member ``k``'s view with its subtrees grafted
        below its leaves (axis-aligned splits, node ids as :meth:`apply`'s)."""
        if self._subtrees() is None:
            return view
        sub, tree = self.subtrees_[k], self.estimators_[k].tree_
        view = graft_axis_subtrees(view, sub, tree.n_internal, topology.n_nodes(tree.max_depth),
                                   names, class_names, decimals, is_classifier(self))
        view.notes.insert(0, f"member {k}: its trained oblique tree, then the greedy subtrees "
                             f"below its leaves (subtrees_[{k}]: {sub.n_nodes} nodes, "
                             "axis-aligned splits)")
        return view

    @property
    def feature_importances_(self):
        """Mean of the members' ``feature_importances_``, renormalized.

        The importances of the members' trained trees (see
        :attr:`DGTClassifier.feature_importances_`); the subtrees below their
        leaves are not counted.

        Returns
        -------
        feature_importances_ : ndarray of shape (n_features_in_,)
            Non-negative, summing to one (all zeros only if every member's
            importances are).
        """
        check_is_fitted(self)
        # The members' importances are already folded onto the input features.
        imp = np.mean([member.feature_importances_ for member in self.estimators_], axis=0)
        total = imp.sum()
        return imp / total if total > 0 else imp
