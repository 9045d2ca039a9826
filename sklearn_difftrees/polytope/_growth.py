"""ConvexPolytopeTree's greedy top-down growth (Section 3.3.2): one stump per
node, thresholded by the criterion, level by level, the stumps of a level
trained together in torch (``_training.train_stumps``: one batched model per
level and epoch budget, not one training per node); ``max_depth="auto"`` keeps the depth that scores best
on the validation rows. A mixin of the estimators (it reads their parameters)."""

import copy
import math

import numpy as np

from .._core._progress import Progress
from .._core.selection import paired_advantage
from ._criterion import _std_scores
from ._floor import SELECTION_Z

__all__ = ["_GreedyGrowthMixin"]

#: Deepest tree ``max_depth="auto"`` grows before choosing a depth: the
#: deepest an integer ``max_depth`` may be, and of the depth-tuned CART's grid
#: (was 8, which cut growth short where polytope splits peel off one class per
#: level: letter, segmentation; docs/polytope.md, "Depth selection").
AUTO_MAX_DEPTH = 12
#: ``max_depth="auto"`` stops growing after this many levels without a
#: better validation score.
AUTO_PATIENCE = 2
#: Trainings of a stump (first try included) before a node becomes a leaf.
STUMP_TRIES = 3
#: Fewest optimizer steps a stump gets, however small its node.
STUMP_MIN_STEPS = 50
#: Fewest optimizer steps of a stump per epoch of ``growth_max_iter`` when
#: growth starts again because its first tree scored no better than a
#: constant on the validation rows (:meth:`_GreedyGrowthMixin._grow`): an
#: epoch of the largest stump of a table of more than ``STUMP_MAX_EPOCH_ROWS``
#: rows at the base batch of 256 (64 steps; 1,280 in all by default). A node
#: of a few hundred rows is one mini-batch, so STUMP_MIN_STEPS gives its stump
#: 50 steps, far from converged where no single direction separates the
#: classes (docs/polytope.md, "How it trains").
LONG_STUMP_STEPS_PER_EPOCH = 64
#: The grown tree counts as no better than a constant up to this paired
#: statistic of the Brier scores of its leaves and of the training class
#: proportions on the validation rows (0: its leaves predict them no better).
CONSTANT_Z = 0.0
#: The tree of the longer-trained stumps replaces the first one above this
#: paired statistic (the validation choice's bar, ``_floor.SELECTION_Z``).
LONG_Z = SELECTION_Z
#: Most rows one epoch of a stump visits under ``batch_size="auto"``: a
#: larger node's epochs continue through one shuffled pass of its rows, so
#: that a stump gets at most ``growth_max_iter * 16,384`` rows (a few hundred
#: optimizer steps). On the 100k x 50 table (80,000 training rows, batches
#: of 625) the root's stump took 2,560 steps and the whole growth 11-12 s
#: CPU; with the cap the root's takes 540 and the growth 7.0 s (side by
#: side). Nodes of at most 16,384 rows (every node of every table of
#: ``benchmarks/bench_defaults.py``) are unchanged.
STUMP_MAX_EPOCH_ROWS = 16_384


class _GreedyGrowthMixin:
    """Greedy growth and validation scoring of the hard tree (standardized space)."""

    def _grow(self, Z, Y, w, tr, va, ctx, auto):
        """Greedy top-down growth (Section 3.3.2), level by level.

        Returns ``({node: (beta, bias, r, tau)}, depth)`` in the standardized
        space. With ``max_depth="auto"`` the depth whose hard tree scores best
        on the validation rows is kept (growth stops after
        ``AUTO_PATIENCE`` levels without improvement), among the depths of at
        least ``_auto_min_depth()`` levels when growth reaches them.

        Where that tree's leaves predict the validation rows no better than
        the root alone (a constant: the paired statistic of their Brier
        scores, or squared errors, at most ``CONSTANT_Z``), the stumps did not
        find the data's structure: growth starts again with stumps trained for at
        least ``growth_max_iter * LONG_STUMP_STEPS_PER_EPOCH`` optimizer steps each
        (:meth:`_split_level`), and that tree replaces the first where it
        predicts the validation rows clearly better (statistic above
        ``LONG_Z``).
        """
        params, depth = self._grow_levels(Z, Y, w, tr, va, ctx, auto)
        if not (auto and va.size) or ctx.get("long_stumps"):
            return params, depth

        def routes(params):
            """``(leaves, training rows' nodes, validation rows' nodes)`` of the
            hard tree of ``params``."""
            ntr, nva = self._route_std(params, Z, tr), self._route_std(params, Z, va)
            return np.unique(ntr), ntr, nva

        def losses(routed, proper=False):
            """Per validation row, the loss of :meth:`_val_score` (leaves fitted on
            ``tr``); ``proper``: the Brier score of the leaves' class proportions
            (a regressor's squared error either way)."""
            return self._leaf_losses(*routed, Y[tr], w[tr], Y[va], proper=proper)

        first = routes(params)  # routed once for both of its comparisons
        if paired_advantage(losses(routes({}), proper=True), losses(first, proper=True),
                            w[va])[1] > CONSTANT_Z:
            return params, depth
        # Its own copy of the random stream: where the first tree stays, the
        # rest of the fit draws what it would have drawn without this growth.
        again, depth_again = self._grow_levels(
            Z, Y, w, tr, va, {**ctx, "long_stumps": True, "rng": copy.deepcopy(ctx["rng"])},
            auto)
        better = paired_advantage(losses(first), losses(routes(again)), w[va])[1]
        return (again, depth_again) if better > LONG_Z else (params, depth)

    def _grow_levels(self, Z, Y, w, tr, va, ctx, auto):
        """:meth:`_grow`'s one growth: ``(params, depth)``."""
        cap = AUTO_MAX_DEPTH if auto else self.max_depth
        floor = min(self._auto_min_depth(), cap)
        W_total = w[tr].sum()
        params = {}
        frontier = {0: tr}
        best_score, best_depth, since = -np.inf, 0, 0
        routed = {}  # the rows' nodes under the splits scored so far
        if floor == 0:
            best_score = self._val_score(params, Z, Y, w, tr, va, routed)
        depth = 0
        progress = Progress(cap, desc=f"{type(self).__name__} growth", unit="level",
                            verbose=self.verbose)
        for level in range(cap):
            new_frontier = {}
            for node, split in self._split_level(frontier, Z, Y, w, W_total, ctx).items():
                params[node] = split[0]
                new_frontier[2 * node + 1], new_frontier[2 * node + 2] = split[1], split[2]
            info = {"splits": len(new_frontier) // 2, "tried": len(frontier)}
            if not new_frontier:
                progress.update(info=info)
                break
            frontier = new_frontier
            depth = level + 1
            if auto and va.size and depth >= floor:
                score = self._val_score(params, Z, Y, w, tr, va, routed)
                info["val_score"] = score
                if score > best_score + 1e-12:
                    best_score, best_depth, since = score, depth, 0
                else:
                    since += 1
                    if since >= AUTO_PATIENCE:
                        progress.update(info=info)
                        break
            progress.update(info=info)
        progress.close(None if progress.n == cap else f"grown to depth {depth}")
        if auto and va.size and depth >= floor:
            depth = best_depth
            params = {v: p for v, p in params.items() if int(np.log2(v + 1)) < depth}
        return params, depth

    def _auto_min_depth(self):
        """Fewest levels ``max_depth="auto"`` keeps: enough leaves for every class.

        A classifier tree of depth ``d`` has at most ``2**d`` leaves, so below
        ``ceil(log2(n_classes))`` levels some class can never be predicted.
        On small many-class sets the validation part is tiny (30 rows on
        glass) and may prefer such a tree by chance. Regressors: 0.
        """
        n_classes = getattr(self, "n_classes_", 0)
        return math.ceil(math.log2(n_classes)) if n_classes > 1 else 0

    def _splittable(self, idx, Y, w, W_total, crit):
        """Whether a node's rows may be split (size, weight, purity)."""
        if idx.size < self.min_samples_split or idx.size < 2 * self.min_samples_leaf:
            return False
        if w[idx].sum() < 2 * self.min_weight_fraction_leaf * W_total:
            return False
        return crit.node_impurity(Y[idx], w[idx]) > 1e-12  # not pure

    def _split_level(self, frontier, Z, Y, w, W_total, ctx):
        """Split the nodes of one level: ``{node: ((beta, bias, r, tau), left, right)}``.

        The stumps of every splittable node are trained together
        (``_training.train_stumps``), one batched training per distinct epoch
        budget (a node gets ``max(growth_max_iter, STUMP_MIN_STEPS / its
        steps per epoch)`` epochs, ``growth_max_iter *
        LONG_STUMP_STEPS_PER_EPOCH`` instead of ``STUMP_MIN_STEPS`` steps when
        ``ctx["long_stumps"]``; so at most a few
        budgets per level). A stump that
        puts every row on one side or gains nothing is trained again with a
        new seed, with the level's other failures (``STUMP_TRIES`` trainings
        in all); a node whose best gain is below ``min_impurity_decrease``
        becomes a leaf.
        """
        crit = ctx["crit"]
        pending = {v: idx for v, idx in sorted(frontier.items())
                   if self._splittable(idx, Y, w, W_total, crit)}
        splits = {}
        for _ in range(STUMP_TRIES):
            if not pending:
                break
            seeds = {v: int(ctx["rng"].randint(np.iinfo(np.int32).max)) for v in pending}
            groups, rows = {}, {}
            settings = ctx["settings"]
            for v, idx in pending.items():
                # A level's epoch visits at most epoch_rows rows, every node
                # its share (all of its rows unless batch_size="auto" caps
                # the epochs of a large table or of a node of more than
                # STUMP_MAX_EPOCH_ROWS rows).
                rows[v] = min(idx.size, math.ceil(idx.size * settings["epoch_rows"]
                                                  / ctx["n_train"]))
                if self.batch_size == "auto":  # at most STUMP_MAX_EPOCH_ROWS
                    rows[v] = min(rows[v], STUMP_MAX_EPOCH_ROWS)
                steps = math.ceil(rows[v] / settings["batch_size"])
                fewest = (self.growth_max_iter * LONG_STUMP_STEPS_PER_EPOCH
                          if ctx.get("long_stumps") else STUMP_MIN_STEPS)
                epochs = max(self.growth_max_iter, math.ceil(fewest / steps))
                groups.setdefault(epochs, []).append(v)
            stumps = {}
            for epochs, nodes in sorted(groups.items()):
                trained = ctx["training"].train_stumps(
                    [(Z[pending[v]], Y[pending[v]], w[pending[v]], seeds[v]) for v in nodes],
                    n_facets=self.max_facets, classification=ctx["classification"],
                    prior=ctx["prior"], settings=ctx["settings"], max_iter=epochs,
                    epoch_rows=[rows[v] for v in nodes],
                    device=ctx["device"], name=ctx["name"],
                )
                stumps.update(zip(nodes, trained))
            failed = {}
            for v, idx in pending.items():
                beta, bias, r = stumps[v]
                s = _std_scores(Z[idx].astype(np.float64), beta, bias, r)
                found = crit.best_threshold(
                    s, Y[idx], w[idx], W_total, self.min_samples_leaf,
                    self.min_weight_fraction_leaf * W_total,
                )
                if found is None or found[1] <= 1e-12 or found[0] <= 0:
                    failed[v] = idx  # all one side / no gain: a new seed
                    continue
                tau, gain = found
                if gain < self.min_impurity_decrease:
                    continue  # a leaf
                left = s <= tau
                splits[v] = ((beta, bias, r, tau), idx[left], idx[~left])
            pending = failed
        return splits

    def _route_std(self, params, Z, rows, node=None):
        """Heap node that each of the rows ``rows`` of ``Z`` reaches under ``params``.

        ``node`` (optional): where the rows stood before these splits (a
        routing under their ancestors); routing continues from there.
        """
        node = np.zeros(rows.size, dtype=np.int64) if node is None else node.copy()
        for v in sorted(params):
            at = np.flatnonzero(node == v)
            if at.size:
                beta, bias, r, tau = params[v]
                right = _std_scores(Z[rows[at]].astype(np.float64), beta, bias, r) > tau
                node[at] = np.where(right, 2 * v + 2, 2 * v + 1)
        return node

    def _val_score(self, params, Z, Y, w, tr, va, routed):
        """Validation score of the hard tree whose leaves are fitted on ``tr``.

        ``routed`` (a dict, updated in place) keeps the rows' nodes under the
        splits scored before, so that only the splits added since route: a
        level of growth costs one pass over the rows, not one per level above.
        """
        if not va.size:
            return -np.inf
        done = routed.setdefault("splits", set())
        new = {v: p for v, p in params.items() if v not in done}
        routed["tr"] = self._route_std(new, Z, tr, routed.get("tr"))
        routed["va"] = self._route_std(new, Z, va, routed.get("va"))
        done.update(new)
        ntr, nva = routed["tr"], routed["va"]
        leaves = np.unique(ntr)
        return self._leaf_score(leaves, ntr, nva, Y[tr], w[tr], Y[va], w[va])
