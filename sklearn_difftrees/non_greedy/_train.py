"""Training of non-greedy oblique trees (numpy + the compiled ``_lai`` kernel).

Norouzi et al., "Efficient Non-greedy Optimization of Decision Trees",
NeurIPS 2015. Everything here works in the standardized input space: node
score ``s = W z + b``, ``s > 0`` goes right (the paper's ``sgn(w^T x)`` with
``sgn(0) = -1``; the bias is the paper's appended constant input, so it is
part of the row norm constrained by ``nu``).

* The CART start and the cross-validated depth come from the core
  (:mod:`sklearn_difftrees._core.greedy`).
* :func:`co2_tree` is the greedy CO2 tree: every node starts from the best
  axis-aligned split of the data reaching it and optimizes the surrogate
  bound of a depth-1 tree, one level at a time, top-down.
* :func:`sgd` is Algorithm 1 with momentum and mini-batches (SGD, or stable
  SGD with frozen leaf assignments) plus early stopping; its epochs run
  compiled (:class:`~._lai.SGDEpochs`).

Nothing here imports torch.
"""

import math
import time

import numpy as np

from .._core._monitor import EpochMonitor
from .._core.batching import RowStream
from .._core.greedy import level_splits
from .._core.embedding import set_axis_rows
from .._kernels._routing import _apply_oblique
from ._lai import CO2LevelEpochs, SGDEpochs, leaf_losses

#: A CO2 node's oblique split (discriminant or least-squares direction)
#: replaces its axis-aligned one when it raises the node's training
#: log-likelihood (stump leaves at their closed form: the log loss, or a
#: Gaussian of the squared error) by more than this many nats per extra
#: parameter of its direction (``p - 1``): Akaike's criterion, so that on few
#: rows a direction fitted to noise does not win.
DISCRIMINANT_NATS = 1.0
#: Rows a node needs, per feature, for an oblique direction (and at least
#: 20): the shrunk scatter of fewer is mostly noise.
DISCRIMINANT_MIN_ROWS_PER_FEATURE = 3
#: Most features for which CO2 tries oblique starts: a direction costs
#: ``O(p**3)`` per node (2.6 s at 2,000 features), and one fitted over that
#: many features is mostly noise on the rows of a node.
DISCRIMINANT_MAX_FEATURES = 256
#: Most rows of a node its direction is estimated on (every k-th row of the
#: node, in their order; the threshold is then chosen on all of them).
DISCRIMINANT_MAX_ROWS = 20_000

__all__ = [
    "apply_leaves",
    "co2_tree",
    "leaf_targets",
    "level_stumps",
    "project_rows",
    "sgd",
]


def project_rows(W, b, nu):
    """Scale every row ``[w_i, b_i]`` to norm at most ``nu`` (in place)."""
    norms = np.sqrt(np.einsum("ij,ij->i", W, W) + b * b)
    big = norms > nu
    if np.any(big):
        f = nu / norms[big]
        W[big] *= f[:, None]
        b[big] *= f


def leaf_targets(leaves, Y, w, n_leaves, loss, n_outputs, prior=None):
    """Closed-form leaf parameters from the samples of each leaf.

    Log loss: log of the class proportions smoothed by one pseudo-sample
    distributed as ``prior``. Squared loss: weighted mean target. Returns the
    parameters and a mask of the leaves that hold samples.
    """
    wsum = np.bincount(leaves, weights=w, minlength=n_leaves)
    reached = wsum > 0
    if loss == "log":
        counts = np.zeros((n_leaves, n_outputs))
        np.add.at(counts, (leaves, Y), w)
        if prior is None:
            prior = (np.bincount(Y, weights=w, minlength=n_outputs) + 1.0) / (
                w.sum() + n_outputs
            )
        theta = np.log((counts + prior) / (wsum[:, None] + 1.0))
    else:
        theta = np.zeros((n_leaves, n_outputs))
        for k in range(n_outputs):
            sums = np.bincount(leaves, weights=w * Y[:, k], minlength=n_leaves)
            theta[reached, k] = sums[reached] / wsum[reached]
    return theta, reached


def level_stumps(codes, Y, w, local, n_lvl, skip, bins, loss, nu):
    """Best axis-aligned split of every node of a level, as rows of ``[W, b]``.

    The core's :func:`~sklearn_difftrees._core.greedy.level_splits` on the
    rows' ``codes`` of ``bins`` (a
    :class:`~sklearn_difftrees._core.greedy.FeatureBins`): information gain
    (``loss="log"``) or squared error, as scikit-learn's CART stump. Returns
    ``(W, b, found)``: node ``j``'s row of norm ``nu`` with ``w z + b > 0``
    iff the raw value exceeds the threshold (right, ties left, as in CART),
    or a zero row and ``found[j]`` False where it gets no split.
    """
    p = codes.shape[1]
    feature, code = level_splits(codes, Y, w, local, n_lvl, skip,
                                 max(e.size for e in bins.edges) + 1, loss == "log")
    found = np.flatnonzero(feature >= 0)
    W = np.zeros((n_lvl, p))
    b = np.zeros(n_lvl)
    set_axis_rows(W, b, found, feature[found],
                  [bins.edges[f][c] for f, c in zip(feature[found], code[found])], nu)
    return W, b, feature >= 0


def _stump_losses(Z, Y, w, local, rows, Wl, bl, n_lvl, loss, K):
    """Weighted empirical loss of every node's stump, leaves at their closed form."""
    s = np.einsum("ij,ij->i", Z[rows], Wl[local[rows]]) + bl[local[rows]]
    side = local[rows] * 2 + (s > 0)
    th, _ = leaf_targets(side, Y[rows], w[rows], 2 * n_lvl, loss, K)
    per = leaf_losses(th, side, Y[rows], loss) * w[rows]
    return np.bincount(local[rows], weights=per, minlength=n_lvl)


def _xlogx(c):
    return c * np.log(np.where(c > 0, c, 1.0))


def _prefix_class_entropy_sums(y, w):
    """``sum_k c_k log c_k`` of the class weights ``c_k`` of every prefix
    ``y[:i + 1]`` (rows in their order), in O(n) memory: each row changes
    only its own class's term."""
    by = np.argsort(y, kind="stable")
    ys, ws = y[by], w[by]
    cw = np.cumsum(ws)
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    offset = np.repeat(cw[starts] - ws[starts], np.diff(np.r_[starts, ys.size]))
    after = np.empty_like(cw)
    after[by] = cw - offset  # the row's class weight up to and including it
    return np.cumsum(_xlogx(after) - _xlogx(after - w))


def _split_threshold(t, i):
    """The threshold between the sorted values ``t[i] < t[i + 1]``: their
    midpoint, or ``t[i]`` where the midpoint rounds to ``t[i + 1]``."""
    tau = 0.5 * (t[i] + t[i + 1])
    return t[i] if tau >= t[i + 1] else tau


def _distinct(t):
    """Where a threshold may fall between the sorted ``t``: between values
    apart by more than rounding (a projection's identical rows may differ by
    an ulp)."""
    return t[1:] - t[:-1] > 1e-12 * (1.0 + np.abs(t[1:]))


def _best_projection_split(t, y, w, K):
    """Threshold of the best information-gain split of the projected values
    ``t`` (classes ``y`` of ``K``, weights ``w``), or None. Each side's
    weighted entropy is ``n log n - sum_k c_k log c_k``, swept in O(n)
    memory whatever ``K``."""
    if t.size < 2:
        return None
    order = np.argsort(t, kind="stable")
    t, y, w = t[order], y[order], w[order]
    nl = np.cumsum(w)[:-1]
    nr = w.sum() - nl
    left = _prefix_class_entropy_sums(y, w)[:-1]
    right = _prefix_class_entropy_sums(y[::-1], w[::-1])[::-1][1:]
    valid = _distinct(t) & (nl > 0) & (nr > 0)
    if not valid.any():
        return None
    cost = np.where(valid, _xlogx(nl) - left + _xlogx(nr) - right, np.inf)
    return _split_threshold(t, int(np.argmin(cost)))


def _best_projection_sse_split(t, Y, w):
    """Threshold of the least-squared-error split of the projected values
    ``t`` (targets ``Y`` of shape (n, k), weights ``w``), or None."""
    if t.size < 2:
        return None
    order = np.argsort(t, kind="stable")
    t, Y, w = t[order], Y[order], w[order]
    Wc = np.cumsum(w)[:-1]
    Sc = np.cumsum(w[:, None] * Y, axis=0)[:-1]
    Qc = np.cumsum(w * (Y**2).sum(axis=1))[:-1]
    Wt, St, Qt = w.sum(), (w[:, None] * Y).sum(axis=0), (w * (Y**2).sum(axis=1)).sum()
    Wr, Sr, Qr = Wt - Wc, St - Sc, Qt - Qc
    valid = _distinct(t) & (Wc > 0) & (Wr > 0)
    if not valid.any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = (Qc - (Sc**2).sum(axis=1) / Wc) + (Qr - (Sr**2).sum(axis=1) / Wr)
    cost = np.where(valid, cost, np.inf)
    return _split_threshold(t, int(np.argmin(cost)))


def _node_rows(local, n_lvl, live, w, min_rows):
    """``(j, rows)`` of every live node of a level with at least ``min_rows``
    rows of positive weight."""
    order = np.argsort(local, kind="stable")
    bounds = np.searchsorted(local[order], np.arange(n_lvl + 1))
    for j in np.flatnonzero(live):
        rows = order[bounds[j]:bounds[j + 1]]
        rows = rows[w[rows] > 0]
        if rows.size >= min_rows:
            yield j, rows


def _oblique_level_splits(Z, Y, w, local, n_lvl, live, nu, direction, threshold):
    """Rows ``(W, b, ok)`` as :func:`level_stumps`'s: at every live node of
    at least ``max(20, DISCRIMINANT_MIN_ROWS_PER_FEATURE * p)`` rows (none
    beyond :data:`DISCRIMINANT_MAX_FEATURES` features), the split ``v z >
    tau`` of ``direction(Z_rows, Y_rows, w_rows) -> v`` (norm 1, on at most
    :data:`DISCRIMINANT_MAX_ROWS` of them; None: no split) and
    ``threshold(z v, Y_rows, w_rows) -> tau`` (on all of them; None: no
    split), scaled to norm ``nu``."""
    n, p = Z.shape
    W = np.zeros((n_lvl, p))
    b = np.zeros(n_lvl)
    ok = np.zeros(n_lvl, dtype=bool)
    if p > DISCRIMINANT_MAX_FEATURES:
        return W, b, ok
    for j, rows in _node_rows(local, n_lvl, live, w,
                              max(20, DISCRIMINANT_MIN_ROWS_PER_FEATURE * p)):
        some = rows[::-(-rows.size // DISCRIMINANT_MAX_ROWS)]
        v = direction(Z[some], Y[some], w[some])
        tau = None if v is None else threshold(Z[rows] @ v, Y[rows], w[rows])
        if tau is not None:
            c = nu / np.sqrt(1.0 + tau**2)
            W[j], b[j], ok[j] = c * v, -c * tau, True
    return W, b, ok


def _shrunk(S, p):
    """``S + lambda I`` with ``lambda = 0.1 trace(S) / p``: a ridge that shrinks
    the scatter towards the identity at its mean variance (shrinkage of
    weight 1/11; the directions do not depend on the overall scale)."""
    return S + (0.1 * np.trace(S) / p + 1e-9) * np.eye(p)


def _least_squares_direction(Zr, Yr, wr):
    p = Zr.shape[1]
    Yr = Yr.reshape(Zr.shape[0], -1)
    total = wr.sum()
    Zc = Zr - wr @ Zr / total
    Yc = Yr - wr @ Yr / total
    try:
        B = np.linalg.solve(_shrunk((Zc * wr[:, None]).T @ Zc / total, p),
                            (Zc * wr[:, None]).T @ Yc / total)
    except np.linalg.LinAlgError:
        return None
    v = np.linalg.svd(B, full_matrices=False)[0][:, 0] if B.shape[1] > 1 else B[:, 0]
    norm = np.linalg.norm(v)
    if not norm > 0:
        return None
    return v / norm


def ridge_level_splits(Z, Y, w, local, n_lvl, live, nu):
    """The split of every live node of a level along the direction of the
    (shrunk) least-squares fit of its targets (several targets: the leading
    left singular vector of the coefficients), at the least-squared-error
    threshold: rows ``(W, b, ok)`` as :func:`level_stumps`'s."""
    return _oblique_level_splits(
        Z, Y, w, local, n_lvl, live, nu, _least_squares_direction,
        lambda t, Yr, wr: _best_projection_sse_split(t, Yr.reshape(t.size, -1), wr))


def _discriminant_direction(Zr, yr, wr):
    from scipy.linalg import eigh

    p = Zr.shape[1]
    present = np.unique(yr)
    if present.size < 2:
        return None
    total = wr.sum()
    mean = wr @ Zr / total
    Sw = np.zeros((p, p))
    Sb = np.zeros((p, p))
    for k in present:
        m = yr == k
        wk = wr[m]
        mk = wk @ Zr[m] / wk.sum()
        D = Zr[m] - mk
        Sw += (D * wk[:, None]).T @ D
        d = mk - mean
        Sb += wk.sum() * np.outer(d, d)
    try:
        _, vecs = eigh(Sb / total, _shrunk(Sw / total, p))
    except np.linalg.LinAlgError:
        return None
    v = vecs[:, -1]
    return v / np.linalg.norm(v)


def discriminant_level_splits(Z, Y, w, local, n_lvl, live, nu, K):
    """The split of every live node of a level along the top discriminant
    direction of its rows (shrunk LDA: the leading generalized eigenvector
    of the between- and the shrunk within-class scatter), at the best
    information-gain threshold: rows ``(W, b, ok)`` as :func:`level_stumps`'s."""
    return _oblique_level_splits(Z, Y, w, local, n_lvl, live, nu, _discriminant_direction,
                                 lambda t, yr, wr: _best_projection_split(t, yr, wr, K))


def co2_tree(Z, Y, w, *, depth, loss, n_outputs, nu, learning_rate, momentum, n_epochs,
             batch_size, rng, bins, oblique=False):
    """Greedy CO2 tree (Norouzi et al., 2015b), grown top-down: ``(W, b, theta)``.

    Level by level, every node receives the samples routed to it by the
    splits already refined above it; its split starts from the best
    axis-aligned split of those samples (information gain, as CART; a node
    CART would not split gets zero weights and sends everything left), and is
    then optimized on the surrogate bound of a depth-1 tree (eq. 7 with
    ``m = 1``: the loss-augmented code flips the decision iff ``loss(other
    side) - 2|s| > loss(own side)``), with the two leaves of the stump starting
    from the class proportions (mean targets) of its two sides, by SGD with
    momentum and the row-norm projection. The nodes of a level are
    independent problems and share the mini-batches (each node's gradient is
    the mean over its samples in the batch). Leaves get the smoothed class
    proportions (mean targets) of their samples; a leaf without samples gets
    those of its deepest ancestor with samples. A refined split is kept only
    if it lowers the node's empirical loss (its stump with closed-form
    leaves) below that of the axis-aligned start. The axis-aligned splits are
    searched on the rows' codes of ``bins`` (a
    :class:`~sklearn_difftrees._core.greedy.FeatureBins`).

    With ``oblique``, a node of enough rows also tries the split along the
    top discriminant direction of its rows (:func:`discriminant_level_splits`,
    classification) or the direction of the least-squares fit of its targets
    (:func:`ridge_level_splits`, regression); it starts the node instead of
    the axis-aligned split where it raises the node's log-likelihood by more
    than :data:`DISCRIMINANT_NATS` per extra parameter.
    """
    n, p = Z.shape
    codes = bins.transform(Z)
    m = 2**depth - 1
    W = np.zeros((m, p))
    b = np.zeros(m)
    K = n_outputs
    node = np.zeros(n, dtype=np.int64)
    path = np.zeros((n, depth + 1), dtype=np.int64)
    dead = np.zeros(m, dtype=bool)  # CART would not split: zero weights, go left
    for level in range(depth):
        off = 2**level - 1
        n_lvl = 2**level
        local = node - off
        parent_dead = (dead[(np.arange(off, off + n_lvl) - 1) // 2] if level
                       else np.zeros(1, dtype=bool))
        W[off : off + n_lvl], b[off : off + n_lvl], found = level_stumps(
            codes, Y, w, local, n_lvl, parent_dead, bins, loss, nu)
        dead[off : off + n_lvl] = ~found
        live_nodes = ~dead[off : off + n_lvl]
        idx_live = np.flatnonzero(live_nodes[local])
        if oblique and idx_live.size:
            if loss == "log":
                Wo, bo, ok = discriminant_level_splits(Z, Y, w, local, n_lvl, live_nodes, nu, K)
            else:
                Wo, bo, ok = ridge_level_splits(Z, Y, w, local, n_lvl, live_nodes, nu)
            if ok.any():
                axis_loss = _stump_losses(Z, Y, w, local, idx_live, W[off : off + n_lvl],
                                          b[off : off + n_lvl], n_lvl, loss, K)
                obl_loss = _stump_losses(Z, Y, w, local, idx_live, Wo, bo, n_lvl, loss, K)
                if loss == "log":
                    gain = axis_loss - obl_loss
                else:  # Gaussian log-likelihood of the K standardized outputs:
                    # (weight K / 2) ln(SSE ratio); both perfect: the axis split
                    node_w = np.bincount(local[idx_live], weights=w[idx_live], minlength=n_lvl)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        gain = np.where(obl_loss > 0,
                                        0.5 * node_w * K * np.log(axis_loss / obl_loss),
                                        np.where(axis_loss > 0, np.inf, -np.inf))
                take = ok & (gain > DISCRIMINANT_NATS * (p - 1))
                W[off : off + n_lvl][take] = Wo[take]
                b[off : off + n_lvl][take] = bo[take]
        if idx_live.size and n_epochs > 0:
            Wl = W[off : off + n_lvl].copy()
            bl = b[off : off + n_lvl].copy()
            s = np.einsum("ij,ij->i", Z[idx_live], Wl[local[idx_live]]) + bl[local[idx_live]]
            side = local[idx_live] * 2 + (s > 0)
            th, reached = leaf_targets(side, Y[idx_live], w[idx_live], 2 * n_lvl, loss, K)
            th = th.reshape(n_lvl, 2, K)
            epochs = CO2LevelEpochs(Z, Y, w, local, Wl, bl, th, loss=loss,
                                    batch_size=batch_size, learning_rate=learning_rate,
                                    momentum=momentum, nu=nu)
            for _ in range(n_epochs):
                epochs.run(idx_live[rng.permutation(idx_live.size)])
            # Keep a refined split only where it lowers the node's empirical
            # loss (stump leaves at their closed form) below the axis-aligned
            # start: the greedy step never makes a node worse on its data.
            better = _stump_losses(Z, Y, w, local, idx_live, Wl, bl, n_lvl, loss, K) < (
                _stump_losses(Z, Y, w, local, idx_live, W[off : off + n_lvl],
                              b[off : off + n_lvl], n_lvl, loss, K) - 1e-12
            )
            better &= live_nodes
            W[off : off + n_lvl][better] = Wl[better]
            b[off : off + n_lvl][better] = bl[better]
        s = np.einsum("ij,ij->i", Z, W[node]) + b[node]
        node = 2 * node + 1 + (s > 0)
        path[:, level + 1] = node
    n_nodes = 2 * m + 1
    th_node, reached = leaf_targets(
        path.ravel(), np.repeat(Y, depth + 1, axis=0), np.repeat(w, depth + 1), n_nodes, loss, K
    )
    theta = np.empty((m + 1, K))
    for leaf in range(m + 1):
        heap = m + leaf
        while heap > 0 and not reached[heap]:
            heap = (heap - 1) // 2
        theta[leaf] = th_node[heap]
    return W, b, theta


def apply_leaves(Z, W, b):
    """Leaf number (0 .. 2**depth - 1) of each row under hard routing."""
    depth = int(round(np.log2(W.shape[0] + 1)))
    out = np.empty(Z.shape[0], dtype=np.int64)
    _apply_oblique(np.ascontiguousarray(Z), W, b, depth, out)
    return out - W.shape[0]


def _evaluate(Z, Y, w, W, b, theta, loss, score_fn):
    leaves = apply_leaves(Z, W, b)
    losses = leaf_losses(theta, leaves, Y, loss)
    val_loss = float(losses @ w / w.sum())
    return val_loss, float(score_fn(leaves, theta, Y, w))


def _uninformed_loss(Z, Y, w, theta, loss):
    """Weighted mean loss on ``(Z, Y, w)`` of all-zero leaf parameters (every
    row's loss is the same whatever its leaf)."""
    losses = leaf_losses(np.zeros((1, theta.shape[1])), np.zeros(Z.shape[0], dtype=np.int64),
                         Y, loss)
    return float(losses @ w / w.sum())


def refit_leaf_params(Z, Y, w, W, b, theta, loss):
    """Closed-form leaves for the current splits; unreached leaves keep ``theta``."""
    th, reached = leaf_targets(apply_leaves(Z, W, b), Y, w, theta.shape[0], loss,
                               theta.shape[1])
    out = theta.copy()
    out[reached] = th[reached]
    return out


def sgd(Z, Y, w, W, b, theta, *, loss, nu, inference, stable, learning_rate, momentum,
        max_iter, batch_size, n_iter_no_change, tol, rng, epoch_rows=None, validation=None,
        score_fn=None,
        refit_leaves=False, verbose=0, name="model"):
    """Algorithm 1 with momentum and mini-batches; returns the training ``History``.

    Every step: loss-augmented inference (compiled), the split gradient
    ``(g - h) [z, 1]^T`` on the rows where g and h differ, the leaf gradient of
    ``loss(theta_f(g), y)``, a momentum step of size ``learning_rate`` and the
    projection ``||[w_i, b_i]|| <= nu``. With ``stable``, the leaf assignments
    ``a(x)`` of eq. 14 are frozen and refreshed after any epoch whose mean
    bound improved by less than ``tol * max(1, previous bound)``.

    Early stopping as everywhere in the package: with ``validation`` the
    validation loss (of the hard tree) is monitored, the starting tree
    included, and the best parameters are restored; otherwise the training
    bound is monitored and the last parameters kept. With ``refit_leaves``,
    the tree that is evaluated and returned has closed-form leaves for its
    splits (smoothed class proportions / mean targets of the training samples
    each leaf receives; SGD itself keeps its own leaf parameters). ``W``,
    ``b``, ``theta`` are updated in place.
    """
    n = Z.shape[0]
    # The epochs run compiled (every mini-batch's inference, gradients,
    # momentum step and projection); W, b, theta are updated in place.
    epochs = SGDEpochs(Z, Y, w, W, b, theta, loss=loss, inference=inference,
                       batch_size=batch_size, learning_rate=learning_rate, momentum=momentum,
                       nu=nu)
    monitor = EpochMonitor(
        name=name, max_iter=max_iter, n_iter_no_change=n_iter_no_change, tol=tol,
        learning_rate=learning_rate, has_validation=validation is not None,
        verbose=verbose, loss_name="bound",
    )
    best_state = None
    if validation is not None:
        th_out = refit_leaf_params(Z, Y, w, W, b, theta, loss) if refit_leaves else theta
        # The start is a fitted tree (the CART), whose validation loss can be
        # near zero: the divergence reference is the loss of all-zero leaf
        # parameters (uniform logits, the standardized target's mean) on the
        # validation or the training rows, whichever is larger, as the shared
        # loop's _trainer.start_reference (rare extreme targets missing from
        # the validation rows leave theirs far below 1).
        monitor.start(*_evaluate(*validation, W, b, th_out, loss, score_fn),
                      reference=max(_uninformed_loss(*validation, th_out, loss),
                                    _uninformed_loss(Z, Y, w, th_out, loss)))
        best_state = (W.copy(), b.copy(), th_out.copy())
    assign = apply_leaves(Z, W, b) if stable else None
    prev_bound = math.inf
    n_epoch = n if epoch_rows is None else min(int(epoch_rows), n)
    stream = RowStream(n, n_epoch, lambda: rng.permutation(n), np.concatenate)
    for epoch in range(1, max_iter + 1):
        tic = time.perf_counter()
        perm = stream.next()
        try:
            total = epochs.run(perm, assign)
        except FloatingPointError as exc:
            monitor.progress.close("diverged")  # end the bar before the error
            raise FloatingPointError(
                f"{name} diverged: the surrogate bound became {exc.args[0]} at epoch "
                f"{epoch}. Try a smaller learning_rate (currently {learning_rate})."
            ) from None
        epoch_bound = total / n_epoch
        validation_result = None
        if validation is not None:
            th_out = refit_leaf_params(Z, Y, w, W, b, theta, loss) if refit_leaves else theta
            validation_result = _evaluate(*validation, W, b, th_out, loss, score_fn)
        note = ""
        if stable and prev_bound - epoch_bound < tol * max(1.0, abs(prev_bound)):
            assign = apply_leaves(Z, W, b)  # the bound stalled: refresh a(x)
            prev_bound = math.inf
            note = "  (assignments refreshed)"
        else:
            prev_bound = epoch_bound
        if monitor.end_epoch(epoch, epoch_bound, tic, validation_result, note):
            if validation is not None:
                best_state = (W.copy(), b.copy(), th_out.copy())
        if monitor.should_stop:
            break
    if best_state is not None:
        W[...], b[...], theta[...] = best_state
    elif refit_leaves:
        theta[...] = refit_leaf_params(Z, Y, w, W, b, theta, loss)
    return monitor.finish()
