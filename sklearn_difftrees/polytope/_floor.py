"""ConvexPolytopeTree's greedy floor: never return a tree that fits its
training rows worse than two greedy (CART) levels.

The reference is the core's
(:func:`~sklearn_difftrees._core.greedy.greedy_reference`: the better of the
information-gain and Gini CARTs of depth ``min(D, 2)``, squared error for
the regressor, with ``D = max(max_depth_, 2)``, at most an int
``max_depth``; grown on a seeded subsample of
:data:`~sklearn_difftrees._core.greedy.GREEDY_MAX_ROWS` rows when there
are more, as DGT's, scored on all). When the refined tree scores below it on every fit row (the
validation part included), the greedily grown tree before the joint
refinement is returned if it reaches the reference, else the CART of depth
``D`` with the reference's criterion, written as a :class:`PolytopeTree`
whose every split has one facet (:func:`cart_params`). A mixin of the
estimators (it reads their parameters); numpy and scikit-learn only.
"""

import math
import numbers

import numpy as np
from sklearn.base import is_classifier

from .._core.selection import (
    cross_check_applies,
    cross_checked_cart,
    paired_advantage,
    validation_check_applies,
)
from .._core.greedy import (
    FLOOR_DEPTH,
    GREEDY_MAX_ROWS,
    TUNED_MAX_DEPTH,
    fit_cart,
    fit_score,
    floor_fallback,
    greedy_reference,
    row_subsample,
    tuned_depth,
)
from .._core.embedding import cart_splits

__all__ = ["SELECTION_Z", "_GreedyFloorMixin", "cart_params"]

#: How clearly another candidate must beat the default on the validation rows
#: to be returned instead (:meth:`_GreedyFloorMixin._validation_choice`).
SELECTION_Z = 3.0

#: ``tau`` of a CART split written as a polytope split: ``softplus(0)``, so
#: that ``1 * softplus(z_f - t) > ln 2`` iff ``z_f > t`` (right; ties left,
#: as in CART).
CART_TAU = math.log(2.0)


def cart_params(cart, n_features):
    """A fitted CART as standardized polytope splits ``{node: (beta, bias, r, tau)}``.

    CART's split ``z[f] <= t`` (left) at heap node ``i`` becomes one facet
    ``beta = e_f``, ``b = -t``, ``r = 1`` with ``tau = ln 2``: the score
    ``softplus(z[f] - t)`` exceeds ``softplus(0) = ln 2`` exactly when
    ``z[f] > t`` (softplus is increasing), so the polytope tree routes like
    the CART. CART leaves are nodes that do not split, at their own depth.
    """
    out = {}
    for v, (f, t) in cart_splits(cart).items():
        beta = np.zeros((1, n_features))
        beta[0, f] = 1.0
        out[v] = (beta, np.array([-t]), np.ones(1), CART_TAU)
    return out


class _GreedyFloorMixin:
    """``_greedy_floor``: the greedy floor of ``fit`` (after facet selection)."""

    def _floor_depth(self):
        """``D``: depth of the fallback CART (the reference has ``min(D, FLOOR_DEPTH)`` levels)."""
        depth = max(self.max_depth_, FLOOR_DEPTH)
        if isinstance(self.max_depth, numbers.Integral):
            depth = min(depth, self.max_depth)
        return depth

    def _tree_fit_score(self, tree, X, Y, w):
        """The floor's score (accuracy / R^2, :func:`fit_score`) of ``tree`` on ``(X, Y, w)``."""
        leaves = tree.apply(X)
        if is_classifier(self):
            return fit_score(tree.value.argmax(1)[leaves], Y, w, True)
        pred = (tree.value[leaves] - self._target_mean) / self._target_scale
        return fit_score(pred, Y, w, False)

    def _validation_choice(self, refined, grown, build, depth, Z, X, Y, w, crit, tr, va):
        """``(splits, refit, depth, selected)`` to freeze (``selected``: keep
        every facet), and ``refined_`` and ``threshold_`` set.

        The candidates: ``refined`` with ``threshold`` (the default),
        ``refined`` with its trained thresholds (``q = 1/2``, only when
        ``threshold="refit"``), the greedily ``grown`` splits (``Z``, ``X``:
        the fit rows standardized and raw), ``refined`` and ``grown`` with
        their trained thresholds (a float ``threshold``: that ``q``) and
        every facet (the trees as trained and
        grown, before the greedy post-processing: where no single facet or
        threshold gains, as on a parity of three features, the facet
        selection and a threshold re-chosen node by node undo the split's
        joint shape), the CART of depth ``depth`` and
        the CART of the depth (1 to the core's ``TUNED_MAX_DEPTH``) that
        cross-validates best on the training rows (the core's
        :func:`~sklearn_difftrees._core.greedy.tuned_depth`; where the classes follow
        interactions that no single greedy split reveals, as on a
        checkerboard, growth stops a few levels down and only a deep greedy
        tree finds them). Each tree is frozen by ``build`` with
        its facets (selected once per set of splits), thresholds and leaves
        set on the training rows ``tr`` only (at most the core's
        :data:`~sklearn_difftrees._core.greedy.GREEDY_MAX_ROWS` of them: a
        seeded subsample beyond, the rows the CARTs grow on) and scored row
        by row on the validation rows ``va`` (the per-row losses of the depth
        choice, leaves from ``tr``). Another candidate replaces the default only
        when the statistic ``z`` of the core's
        :func:`~sklearn_difftrees._core.selection.paired_advantage` exceeds
        :data:`SELECTION_Z` (for 0 / 1 errors, the sign test's
        ``(wins - losses) / sqrt(wins + losses)``), so that where the
        validation part is small and the trees are within noise, the
        default stays; of several, the one with the largest advantage wins.
        """
        # Every candidate is frozen on at most GREEDY_MAX_ROWS training rows:
        # the rows the CARTs grow on (tuned_depth's draw, seed 0).
        tr = tr[row_subsample(tr.size, GREEDY_MAX_ROWS, 0)]
        candidates = {("refined", self.threshold): refined}
        if self.threshold == "refit":
            candidates["refined", 0.5] = refined
        candidates["grown", self.threshold] = grown
        selected = {kind: self._drop_facets(params, Z[tr], Y[tr], w[tr], crit)
                    for kind, params in (("refined", refined), ("grown", grown))}
        # Every facet, at the trained thresholds (q = 1/2), or at the user's q.
        trained = 0.5 if self.threshold == "refit" else self.threshold
        for kind, params in (("refined_all", refined), ("grown_all", grown)):
            candidates[kind, trained] = selected[kind] = params
        losses = {}
        for kind, threshold in candidates:
            tree = build(selected[kind], depth, rows=tr, threshold=threshold, selected=True)
            ntr, nva = tree.apply(X[tr]), tree.apply(X[va])
            losses[kind, threshold] = self._leaf_losses(np.unique(ntr), ntr, nva,
                                                        Y[tr], w[tr], Y[va])
        # The CARTs (axis-aligned thresholds: where the classes follow a few of
        # them, the greedy tree generalizes better), of the same depth and tuned.
        classification = is_classifier(self)
        cart = dict(classification=classification, seed=0, bins="auto", **self._leaf_limits())
        deepest = TUNED_MAX_DEPTH
        if isinstance(self.max_depth, numbers.Integral):  # a depth the user set
            deepest = min(deepest, self.max_depth)
        tuned, sub = tuned_depth(Z[tr], Y[tr], w[tr], classification=classification,
                                 max_depth=deepest)
        sub = tr[sub]
        # (kind, depth, criterion): the tuned depth with both criteria of the
        # floor's reference (the first splits of a deep greedy tree can hinge on
        # noise, and the criteria then part ways).
        kinds = [("cart", depth, None)]
        if tuned != depth:
            kinds += [("tuned", tuned, None)] + (
                [("tuned_gini", tuned, "gini")] if classification else [])
        carts = {}
        for kind, d, criterion in kinds:
            # Grown on the tuned depth's rows, at most GREEDY_MAX_ROWS of the
            # training part, as a greedy choice looks at (the CART of the
            # tree's depth on all 80,000 of the 100k x 50 table's took 1.5 s,
            # a tenth of the validation choice); a winning "cart" is regrown
            # on every fit row below.
            cart_tr = carts[kind] = fit_cart(Z[sub], Y[sub], w[sub], depth=d,
                                             criterion=criterion, **cart)
            ntr, nva = cart_tr.apply(Z[tr]), cart_tr.apply(Z[va])
            losses[kind, self.threshold] = self._leaf_losses(np.unique(ntr), ntr, nva,
                                                             Y[tr], w[tr], Y[va])
        default = next(iter(candidates))
        best, best_gain = default, 0.0
        for key in list(losses)[1:]:
            gain, z = paired_advantage(losses[default], losses[key], w[va])
            if z > SELECTION_Z and gain > best_gain:
                best, best_gain = key, gain
        self.refined_, self.threshold_ = best[0].startswith("refined"), best[1]
        if best[0] == "cart":  # grown on every fit row, frozen as it is
            cart = fit_cart(Z, Y, w, depth=depth, **cart)
            return cart_params(cart, Z.shape[1]), False, depth, False
        if best[0] in carts:  # the tuned CART that validated (grown again on more
            # rows, a deep greedy tree may split elsewhere: on a checkerboard its
            # first splits are chosen by noise), its leaves set on every fit row
            return cart_params(carts[best[0]], Z.shape[1]), False, tuned, False
        return candidates[best], True, depth, best[0].endswith("_all")

    def _leaf_limits(self):
        return dict(min_samples_split=self.min_samples_split,
                    min_samples_leaf=self.min_samples_leaf,
                    min_weight_fraction_leaf=self.min_weight_fraction_leaf)

    def _greedy_floor(self, tree, grown, build, Z, X, Y, w, split, seed):
        """The tree to return and ``greedy_fallback_``.

        ``tree`` is the fitted (refined) tree, ``grown`` the greedily grown
        splits before refinement (``None`` when nothing was refined) and
        ``build(params, depth, refit=True)`` freezes standardized splits into
        a :class:`PolytopeTree`: trained splits the way ``fit`` does (facet
        selection, thresholds, leaf-size limits), or with ``refit=False``
        as they are (the CART's). ``(Z, X, Y, w)`` are all
        the fit rows (standardized and raw), ``split`` the positions ``(tr,
        va)`` of the training and validation rows among them (``va`` may be
        empty). Returns ``(tree, False)``,
        ``(unrefined tree, "unrefined")`` or ``(CART tree, "cart")``.
        """
        classification = is_classifier(self)
        depth = self._floor_depth()
        leaf_limits = self._leaf_limits()
        # Grown on at most GREEDY_MAX_ROWS rows, as DGT's floor (two
        # levels' splits are set well by that many; on all 100,000 rows of
        # the 100k x 50 table the two binned CARTs took 1.5 s), scored on all.
        grow = row_subsample(Z.shape[0], GREEDY_MAX_ROWS, seed)
        ref = greedy_reference(Z, Y, w, depth=depth, classification=classification,
                               seed=seed, grow=grow, bins="auto", **leaf_limits)

        def as_tree(cart, depth=depth):
            return build(cart_params(cart, Z.shape[1]), depth, refit=False)

        if self._tree_fit_score(tree, X, Y, w) >= ref.score:
            return self._cross_check(tree, False, as_tree, ref, Z, X, Y, w, split, seed)

        candidates = [("unrefined", lambda: build(grown, self.max_depth_))] if grown else []
        if depth > FLOOR_DEPTH:  # the reference's criterion, grown to depth D
            candidates.append(("cart", lambda: as_tree(fit_cart(
                Z, Y, w, depth=depth, classification=classification, seed=seed,
                criterion=ref.criterion, bins="auto", **leaf_limits))))
        label, tree = floor_fallback(ref, lambda t: self._tree_fit_score(t, X, Y, w),
                                     candidates + [("cart", lambda: as_tree(ref.cart))])
        # Neither fallback holds refined splits; the grown one has ``threshold``.
        self.refined_, self.threshold_ = False, self.threshold
        return self._cross_check(tree, label, as_tree, ref, Z, X, Y, w, split, seed)

    def _cross_check(self, tree, label, as_tree, ref, Z, X, Y, w, split, seed):
        """``(tree, label)``, or ``(depth-tuned CART, "cart")`` where that
        CART clearly predicts held-out rows better (not inside another
        check). On at most the core's ``CROSS_CHECK_MAX_ROWS`` fit rows, the
        core's out-of-fold
        :func:`~sklearn_difftrees._core.selection.cross_check` above
        ``CROSS_CHECK_Z``, with depth-tuned CARTs (2 to the core's
        ``TUNED_MAX_DEPTH`` levels, or to an int ``max_depth``; the
        leaf-size limits); should that CART fit the fit rows worse than the
        floor's reference ``ref`` (a depth-2 CART of the other criterion
        can), the reference is returned. ``as_tree(cart, depth)`` writes a
        CART as a polytope tree. On a small table the validation part is a
        few dozen rows, too few to tell a polytope tree that overfits many
        features from the CART. On more rows, ``tree`` itself on the
        validation rows of ``split`` (the core's
        :func:`~sklearn_difftrees._core.selection.validation_check`)."""
        kwargs = dict(classification=is_classifier(self), seed=seed,
                      max_depth=TUNED_MAX_DEPTH, cart_params=self._leaf_limits())
        if isinstance(self.max_depth, numbers.Integral):  # a depth the user set
            kwargs["max_depth"] = min(TUNED_MAX_DEPTH, self.max_depth)
        if cross_check_applies(Z.shape[0]):
            found = cross_checked_cart(self, X, Z, Y, w, decision=tree.predict, **kwargs)
        elif split[1].size and validation_check_applies(Z.shape[0]):
            found = cross_checked_cart(self, X, Z, Y, w, split=split, decision=tree.predict,
                                       **kwargs)
        else:
            return tree, label
        if found is None:
            return tree, label
        cart, depth = found
        _, tree = floor_fallback(ref, lambda t: self._tree_fit_score(t, X, Y, w), [
            ("tuned", lambda: as_tree(cart, depth)), ("reference", lambda: as_tree(ref.cart))])
        self.refined_, self.threshold_ = False, self.threshold
        return tree, "cart"
