"""Greedy (CART) starts and data-chosen depths for the complete-tree methods.

Methods that train a complete heap-order tree can start from scikit-learn's
greedy tree instead of random splits, and choose their depth by how well a
greedy tree of each depth cross-validates:

* :func:`fit_cart` grows them (the methods write them into their own
  fitted format with :mod:`.embedding`);
* :func:`cv_depth` picks the depth whose CART scores best in k-fold
  cross-validation, growing one tree per fold and scoring it cut at every
  depth;
* :func:`greedy_reference` is the *greedy floor* of the methods that offer
  ``greedy_floor=True``: the better-fitting of the information-gain and
  Gini CARTs of depth ``min(depth, FLOOR_DEPTH)`` (squared error for
  regression) and its training score (:func:`fit_score`). A method whose
  trained tree scores below it on its training rows returns a greedy tree
  instead, the first of its candidates that reaches the reference
  (:func:`floor_fallback`; each method builds them in its own fitted format,
  e.g. from :mod:`.embedding`'s ``cart_to_complete`` or ``cart_splits``).

Where these CARTs are grown on many rows, :class:`FeatureBins` makes them
cheaper, as HistGradientBoosting does: each column is mapped once to at
most :data:`MAX_BINS` ordered codes (every distinct value its own code when
there are that few, else quantile bins), scikit-learn grows the tree on the
codes (sorting a node's rows then costs far less), and
:func:`fit_cart` with ``bins`` maps the thresholds back, so that the CART
routes raw rows. On a column with at most :data:`MAX_BINS` distinct values
the binned CART splits the rows as the exact one does (same candidate
splits, in float64; a threshold falling in a gap between a node's values
may differ, and values closer than 1e-7 are never split, as in scikit-learn).

Nothing here imports torch or knows a method.
"""

import contextlib
from collections import namedtuple

import numpy as np
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils import check_random_state

from .._kernels._stump import _best_level_splits
from ._warn import ignore_sklearn

__all__ = [
    "BINNED_MIN_ROWS",
    "FLOOR_DEPTH",
    "greedy_loss",
    "FEATURE_THRESHOLD",
    "GREEDY_MAX_ROWS",
    "TUNED_MAX_DEPTH",
    "FeatureBins",
    "auto_bins",
    "GreedyReference",
    "MAX_BINS",
    "cv_depth",
    "fit_cart",
    "fit_score",
    "floor_fallback",
    "greedy_reference",
    "level_cart",
    "level_splits",
    "row_subsample",
]

#: Depth of the greedy floor's reference: a trained tree must fit its
#: training rows at least as well as two greedy levels.
FLOOR_DEPTH = 2

#: Most codes per column of :class:`FeatureBins` (HistGradientBoosting's 255
#: plus one: it keeps one for missing values, which are refused here).
MAX_BINS = 256

#: Fewest rows from which a CART grown with ``bins="auto"`` (:func:`fit_cart`,
#: :func:`greedy_reference`) grows on :class:`FeatureBins` codes. Each of
#: the :data:`MAX_BINS` quantile bins then holds at least 128 rows, a far
#: finer grid than the precision with which that many rows locate a split
#: (an empirical split point moves by about ``n ** (-1/3)`` quantiles), and
#: the exact CART's sorts cost seconds: on 90,000 x 50 rows a depth-8 CART
#: took 4.05 s exact against 0.45 s of binning and 1.67 s on the codes (a
#: depth-2 one 1.18 s against 0.40 s on the same codes). On fewer rows the
#: exact CART is grown, as before.
BINNED_MIN_ROWS = 32_768

#: Most rows on which a greedy choice (the depth's cross-validation, the
#: greedy floor's reference CARTs, a depth-tuned CART candidate, the depth-2
#: training loss) is made: a seeded subsample beyond, so that its cost stays
#: flat in ``n`` and it still ranks a few depths (3 CARTs of depth 8 on
#: 100,000 x 50 rows took 15 s, the whole DGT fit ~60 s).
GREEDY_MAX_ROWS = 16_384

#: Deepest depth-tuned CART (:func:`tuned_depth`): the range of the
#: depth-tuned CART that the defaults are compared with (GridSearchCV over
#: ``max_depth`` 2 to 12).
TUNED_MAX_DEPTH = 12

#: scikit-learn's trees compare features in float32 and never separate two
#: sorted values closer than this (its ``FEATURE_THRESHOLD``).
FEATURE_THRESHOLD = 1e-7


def _off_values(edges, values):
    """Quantile ``edges`` that fall on one of the sorted distinct ``values``
    (a value repeated across a quantile) moved to scikit-learn's threshold
    between it and the next value (``a/2 + b/2``): the rows' codes stay the
    same, and a threshold never sits on a training value, where rounding
    (another CPU, float32 input) would decide the side of the rows at it."""
    i = np.searchsorted(values, edges, side="right") - 1  # values[i] <= edge
    on = (i >= 0) & (i < values.size - 1)
    on[on] = values[i[on]] == edges[on]
    a, b = values[i[on]], values[i[on] + 1]
    mid = a / 2.0 + b / 2.0
    edges = edges.copy()
    edges[on] = np.where(mid == b, a, mid)
    # The next quantile may already lie between a and b (the midpoint of the
    # last a and the first b, which np.percentile rounds otherwise): the
    # moved edge can land an ulp above it. No value lies between them, so
    # the running maximum keeps every row's code and the edges sorted
    # (searchsorted's premise, and ``code <= k`` iff ``value <= edges[k]``).
    return np.maximum.accumulate(edges)


class FeatureBins:
    """Ordered integer codes of every column, for growing CARTs faster.

    Sorted distinct values closer than :data:`FEATURE_THRESHOLD` share a
    code (scikit-learn never splits between them, nor should a tree split
    on rounding noise); when a column has at most ``max_bins`` such groups,
    each gets its own code and the edge between two groups is
    scikit-learn's threshold between them (``a/2 + b/2``, or ``a`` where
    that rounds to ``b``), so that a CART grown on the codes splits the
    rows as the CART grown on the values does. A column with more groups
    gets the midpoints of ``max_bins`` quantile bins as edges, as
    HistGradientBoosting's binning (weights are ignored; quantiles that
    coincide merge, so a column dominated by a few values gets fewer
    codes; a quantile on a repeated value moves halfway to the next value,
    so that no threshold sits on a training value). A value's code is the number of edges below it: ``code <= k``
    iff ``value <= edges[k]`` in float64, as the package's oblique trees
    route (scikit-learn's own ``apply`` reads float32, which can differ for
    values within float32 rounding of an edge).

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_features)
        Finite rows whose columns define the bins.
    max_bins : int, default=MAX_BINS
        Most codes per column.
    """

    def __init__(self, Z, max_bins=MAX_BINS):
        self.edges = []
        for col in np.asarray(Z, dtype=np.float64).T:
            values = np.unique(col)
            start = np.concatenate([[True], np.diff(values) > FEATURE_THRESHOLD])
            if start.sum() <= max_bins:
                # Between a group ending at a and the next starting at b.
                a, b = values[np.roll(start, -1)][:-1], values[start][1:]
                edges = a / 2.0 + b / 2.0  # scikit-learn's threshold
                edges = np.where(edges == b, a, edges)
            else:
                edges = np.unique(np.percentile(col, np.linspace(0, 100, max_bins + 1)[1:-1],
                                                method="midpoint"))
                edges = _off_values(edges, values)
            self.edges.append(edges)

    def transform(self, Z):
        """Codes of the rows ``Z``: float32 array of its shape (what sklearn's
        trees work in, so that they do not copy it)."""
        Z = np.asarray(Z, dtype=np.float64)
        codes = np.empty(Z.shape, dtype=np.float32)
        for j, edges in enumerate(self.edges):
            codes[:, j] = np.searchsorted(edges, Z[:, j], side="left")
        return codes

    def threshold(self, feature, code_threshold):
        """Raw threshold of the split ``code <= code_threshold`` of ``feature``:
        the edge of the largest code on its left."""
        return self.edges[feature][int(np.floor(code_threshold))]

    def to_raw(self, cart):
        """Map the thresholds of ``cart``, grown on codes, to raw values (in
        place); returns ``cart``, whose thresholds then split raw rows (in
        float64) as it split their codes. Raises ``ValueError`` on a CART
        whose thresholds are not those of codes (e.g. one already mapped)."""
        t = cart.tree_
        split = np.flatnonzero(t.children_left != -1)
        coded = t.threshold[split]
        if np.any(coded < 0) or np.any(2 * coded != np.round(2 * coded)):
            raise ValueError("the CART's thresholds are not those of binned codes")
        raw = np.array([self.threshold(int(f), c) for f, c in zip(t.feature[split], coded)])
        thresholds = t.threshold  # a writable view of the tree's nodes
        thresholds[split] = raw
        if not np.array_equal(t.threshold[split], raw):  # a copy: nothing was written
            raise RuntimeError("scikit-learn's tree_.threshold is not writable here")
        return cart


#: The greedy floor's reference (:func:`greedy_reference`): its training
#: ``score``, the ``criterion`` it was grown with and the fitted ``cart``.
GreedyReference = namedtuple("GreedyReference", ["score", "criterion", "cart"])


def level_splits(codes, Y, w, local, n_nodes, skip, n_codes, classification):
    """Best axis-aligned split of every node of a tree level, on binned codes.

    Node ``j``'s rows are those with ``local == j``; its split maximizes
    the information gain (classifier, ``Y`` class codes) or the decrease of
    the squared error (``Y`` of shape (n,) or (n, n_outputs)) among the
    boundaries between the ``codes`` (``n_codes`` per column, e.g.
    :meth:`FeatureBins.transform`) present in the node, as scikit-learn's
    CART does (the compiled ``cython_src/_stump.pyx``; weights ``w > 0``;
    ties between equally good splits keep the first feature, where
    scikit-learn draws a random feature order). Returns ``(feature, code)``:
    node ``j`` sends ``code <= code[j]`` of column ``feature[j]`` left, and
    has ``feature[j] = -1`` (no split) where ``skip[j]``, where it holds
    fewer than two rows, where its rows are pure (one class / equal
    targets) or where no column separates them.
    """
    n = codes.shape[0]
    if classification:
        y_cls, y_reg = np.ascontiguousarray(Y, dtype=np.int64), np.zeros((0, 0))
        S = int(y_cls.max()) + 1 if n else 1
        per = np.bincount(local * S + y_cls, weights=w, minlength=n_nodes * S)
        pure = (per.reshape(n_nodes, S) > 0).sum(axis=1) <= 1
        criterion = 0
    else:
        y_cls = np.zeros(0, dtype=np.int64)
        y_reg = np.ascontiguousarray(Y, dtype=np.float64).reshape(n, -1)
        S = 1 + y_reg.shape[1]
        safe = np.maximum(np.bincount(local, weights=w, minlength=n_nodes), 1e-300)[:, None]
        mean = np.stack([np.bincount(local, weights=w * y, minlength=n_nodes)
                         for y in y_reg.T], 1)
        sq = np.stack([np.bincount(local, weights=w * y * y, minlength=n_nodes)
                       for y in y_reg.T], 1)
        pure = ((sq / safe - (mean / safe) ** 2).mean(axis=1)
                <= np.finfo(np.float64).eps)  # scikit-learn's impurity <= EPSILON
        criterion = 1
    order = np.argsort(local, kind="stable").astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(np.bincount(local, minlength=n_nodes))])
    feature = np.empty(n_nodes, dtype=np.int64)
    code = np.empty(n_nodes, dtype=np.int64)
    _best_level_splits(
        np.ascontiguousarray(codes, dtype=np.float32), y_cls, y_reg,
        np.ascontiguousarray(w, dtype=np.float64), order, starts.astype(np.int64),
        (np.asarray(skip, dtype=bool) | pure).astype(np.uint8), criterion, feature, code,
        np.zeros((n_codes, S)), np.zeros(n_codes, dtype=np.int64), np.zeros(S), np.zeros(S),
    )
    return feature, code


def level_cart(codes, Y, w, *, depth, classification, bins):
    """The CART of ``depth`` grown on binned ``codes`` level by level
    (:func:`level_splits`), as heap-order splits ``(feature, threshold)``
    (``2**depth - 1`` of each; ``feature`` -1 below a node that does not
    split, as ``embedding.cart_to_complete`` makes a shallower CART leaf; raw
    ``threshold`` of ``bins``, a :class:`FeatureBins`).

    The tree :func:`fit_cart` grows on the same codes (information gain /
    squared error) up to ties between equally good splits, which keep the
    first feature here: the same code thresholds (scikit-learn's midpoints)
    mapped to the same raw values (``tests/test_binned_greedy.py``). Faster
    on many rows: at depth 8 on the codes of 90,000 x 50 rows, 0.36 s
    against scikit-learn's 1.70 s (one thread; binning them took 0.45 s).
    """
    n_nodes = 2**depth - 1
    feature = np.full(n_nodes, -1, dtype=np.int64)
    threshold = np.zeros(n_nodes)
    n_codes = max((e.size for e in bins.edges), default=0) + 1
    node, live = np.zeros(codes.shape[0], dtype=np.int64), np.ones(codes.shape[0], dtype=bool)
    for level in range(depth):
        rows = np.flatnonzero(live)
        if rows.size == 0:
            break
        f, c = level_splits(codes[rows], Y[rows], w[rows], node[rows], 2**level,
                            np.zeros(2**level, dtype=bool), n_codes, classification)
        split = np.flatnonzero(f >= 0)
        feature[2**level - 1 + split] = f[split]
        threshold[2**level - 1 + split] = [bins.threshold(int(f[j]), c[j]) for j in split]
        fr = f[node[rows]]
        live[rows[fr < 0]] = False
        rows, fr = rows[fr >= 0], fr[fr >= 0]
        node[rows] = 2 * node[rows] + (codes[rows, fr] > c[node[rows]])
    return feature, threshold


def _node_values(node, Y, w, n_nodes, classification):
    """Prediction of every node from its rows: the weighted majority class
    (ties: the lowest code, as scikit-learn) or the weighted mean target."""
    if classification:
        K = int(Y.max()) + 1
        counts = np.bincount(node * K + Y, weights=w, minlength=n_nodes * K)
        return counts.reshape(n_nodes, K).argmax(axis=1)
    wsum = np.maximum(np.bincount(node, weights=w, minlength=n_nodes), 1e-300)
    return np.stack([np.bincount(node, weights=w * y, minlength=n_nodes) / wsum
                     for y in Y.reshape(Y.shape[0], -1).T], 1)


def _binned_truncated_scores(codes, Y, w, fit, val, max_depth, n_codes, classification):
    """Scores on the rows ``val`` of the CART grown on the rows ``fit`` of
    ``codes``, cut at every depth ``1..max_depth``.

    The CART is grown level by level (:func:`level_splits`); the prediction
    at depth ``d`` is the value of the deepest node of depth ``<= d`` on each
    row's path. Weighted accuracy for the classifier, minus the weighted mean
    squared error (over the outputs) for the regressor.
    """
    cf, Yf, wf = codes[fit], Y[fit], w[fit]
    cv, Yv, wv = codes[val], Y[val], w[val]
    # Every row's node, numbered within its level, and whether it may still
    # split (a node that does not split keeps its rows for every deeper cut).
    node_f, live_f = np.zeros(cf.shape[0], dtype=np.int64), np.ones(cf.shape[0], dtype=bool)
    node_v, live_v = np.zeros(cv.shape[0], dtype=np.int64), np.ones(cv.shape[0], dtype=bool)
    root = _node_values(np.zeros(cf.shape[0], dtype=np.int64), Yf, wf, 1, classification)
    pred = np.repeat(root, cv.shape[0], axis=0)
    scores = np.empty(max_depth)
    for depth in range(max_depth):
        rows = np.flatnonzero(live_f)
        feature, code = level_splits(cf[rows], Yf[rows], wf[rows], node_f[rows], 2**depth,
                                     np.zeros(2**depth, dtype=bool), n_codes, classification)
        for c, node, live in ((cf, node_f, live_f), (cv, node_v, live_v)):
            r = np.flatnonzero(live)
            f = feature[node[r]]
            live[r[f < 0]] = False
            r, f = r[f >= 0], f[f >= 0]
            node[r] = 2 * node[r] + (c[r, f] > code[node[r]])
        if live_f.any():
            rows = np.flatnonzero(live_f)
            values = _node_values(node_f[rows], Yf[rows], wf[rows], 2 ** (depth + 1),
                                  classification)
            moved = np.flatnonzero(live_v)
            pred[moved] = values[node_v[moved]]
        if classification:
            scores[depth] = ((pred == Yv) * wv).sum() / wv.sum()
        else:
            sq = ((pred - Yv.reshape(cv.shape[0], -1)) ** 2).mean(axis=1)
            scores[depth] = -(sq * wv).sum() / wv.sum()
        if not live_f.any():
            scores[depth:] = scores[depth]
            break
    return scores


def cv_depth(Z, Y, w, *, max_depth, classification, n_folds, seed, min_depth=1, bins=None):
    """Depth ``min_depth..max_depth`` whose CART scores best in ``n_folds``-fold CV.

    One CART (information gain / squared error) is grown to ``max_depth``
    per fold, on binned features (:class:`FeatureBins` of ``Z``, or
    ``bins`` when given: ``Z`` then holds its codes), level by level with
    the compiled split search (:func:`level_splits`), and scored cut at
    every depth (:func:`_binned_truncated_scores`); the depth with the best
    mean validation score among depths ``>= min_depth`` wins (ties: the
    shallower). Folds are stratified when every class has ``n_folds`` rows.
    Returns ``(depth, mean scores of every depth 1..max_depth)``.
    """
    from sklearn.model_selection import KFold, StratifiedKFold

    n = Z.shape[0]
    n_folds = min(n_folds, n)
    if n_folds < 2:
        return min_depth, np.zeros(max_depth)
    counts = np.bincount(Y) if classification else np.zeros(0)
    # Classes absent from the rows (e.g. only zero-weight rows) do not count.
    stratify = classification and counts[counts > 0].min(initial=n) >= n_folds
    cv = (StratifiedKFold if stratify else KFold)(n_folds, shuffle=True, random_state=seed)
    if bins is None:
        bins = FeatureBins(Z)
        Z = bins.transform(Z)
    n_codes = max((e.size for e in bins.edges), default=0) + 1
    scores = np.zeros(max_depth)
    for fit_idx, val_idx in cv.split(Z, Y if stratify else None):
        scores += _binned_truncated_scores(Z, Y, w, fit_idx, val_idx, max_depth, n_codes,
                                           classification)
    scores /= n_folds
    top = scores[min_depth - 1 :]
    best = int(np.argmax(top >= top.max() - 1e-12)) + min_depth
    return best, scores


def tuned_depth(Z, Y, w, *, classification, max_depth=TUNED_MAX_DEPTH, seed=0, min_depth=1):
    """``(depth, rows)`` of a depth-tuned CART: the depth (``min_depth`` to
    ``max_depth``) at which a CART cross-validates best in 3 folds (:func:`cv_depth`) on
    ``rows``, at most :data:`GREEDY_MAX_ROWS` of ``Z, Y, w`` (a subsample
    drawn from ``seed`` beyond; ``slice(None)`` otherwise). A method that
    compares its model with the greedy tree a user would tune grows it at
    that depth on the same rows (:func:`fit_cart`)."""
    rows = row_subsample(Z.shape[0], GREEDY_MAX_ROWS, seed)
    depth = cv_depth(Z[rows], Y[rows], w[rows], max_depth=max_depth, min_depth=min_depth,
                     classification=classification, n_folds=3, seed=seed)[0]
    return depth, rows


def row_subsample(n, max_rows, rng):
    """Rows a greedy fit uses: all (``slice(None)``) when ``n <= max_rows``,
    else ``max_rows`` sorted indices drawn without replacement from ``rng``
    (an int seed or a ``RandomState``, drawn from only then)."""
    if n <= max_rows:
        return slice(None)
    return np.sort(check_random_state(rng).choice(n, max_rows, replace=False))


def auto_bins(Z):
    """:class:`FeatureBins` of ``Z`` when it has at least
    :data:`BINNED_MIN_ROWS` rows, else None (grow the exact CART)."""
    return FeatureBins(Z) if Z.shape[0] >= BINNED_MIN_ROWS else None


def quiet_internal_fit(Y, classification=True):
    """Context of one CART's ``fit`` on the targets ``Y`` inside a fit:
    silences scikit-learn's "The number of unique classes is greater than
    50% of the number of samples", which a subset of the rows (a fold, the
    training part, a leaf's rows) of many classes with few rows each trips
    where the user's own data did not (200 classes of 2 rows printed it up to
    98 times in a forest's fit). A filter only where scikit-learn's condition
    holds (more than 20 rows, more distinct values than half of them), and
    then under :func:`~._warn.ignore_sklearn`'s lock: a filter set per fit
    leaked into the process when two threads fitted at once."""
    Y = np.asarray(Y)
    n = Y.shape[0]
    if classification and n > 20 and np.unique(Y).size > round(0.5 * n):
        return ignore_sklearn(message="The number of unique classes is greater",
                              category=UserWarning)
    return contextlib.nullcontext()


def fit_cart(Z, Y, w, *, depth, classification, seed, criterion=None, bins=None, **params):
    """scikit-learn's CART of ``max_depth=depth`` fitted on ``(Z, Y, w)``.

    ``criterion`` defaults to ``"entropy"`` (information gain) for the
    classifier and ``"squared_error"`` for the regressor; ``params`` go to
    the tree (e.g. ``min_samples_leaf``). With ``bins`` (a
    :class:`FeatureBins`), ``Z`` holds the rows' codes
    (``bins.transform``) and the returned CART's thresholds are raw values.
    ``bins="auto"``: ``Z`` holds raw values, binned here when it has at least
    :data:`BINNED_MIN_ROWS` rows (:func:`auto_bins`).
    """
    if isinstance(bins, str):
        bins = auto_bins(Z)
        if bins is not None:
            Z = bins.transform(Z)
    if classification:
        cart = DecisionTreeClassifier(criterion=criterion or "entropy", max_depth=depth,
                                      random_state=seed, **params)
    else:
        cart = DecisionTreeRegressor(criterion=criterion or "squared_error", max_depth=depth,
                                     random_state=seed, **params)
    with quiet_internal_fit(Y, classification):
        cart.fit(Z, Y, sample_weight=w)
    return cart if bins is None else bins.to_raw(cart)


def weighted_r2(Y, pred, w):
    """scikit-learn's weighted ``r2_score`` (averaged uniformly over the
    outputs), or NaN on fewer than two rows, where it is undefined: without
    scikit-learn's warning, which a training loop scoring a one-row
    validation part printed at every epoch."""
    if np.shape(Y)[0] < 2:
        return float("nan")
    return float(r2_score(Y, pred, sample_weight=w))


def fit_score(pred, Y, w, classification):
    """The greedy floor's score of predictions ``pred`` of ``Y``, weights ``w``.

    Weighted accuracy of the predicted class codes for the classifier,
    weighted ``R^2`` (averaged uniformly over the outputs) for the
    regressor; higher is better.
    """
    if classification:
        return float(((pred == Y) * w).sum() / w.sum())
    return weighted_r2(Y, np.reshape(pred, np.shape(Y)), w)


def greedy_reference(Z, Y, w, *, depth, classification, seed, grow=slice(None), score=None,
                     bins=None, codes=None, **params):
    """The greedy floor: the better-fitting shallow CART and its training score.

    CARTs of depth ``min(depth, FLOOR_DEPTH)`` are grown on the rows
    ``grow`` of ``(Z, Y, w)`` (all by default) with ``"entropy"`` and
    ``"gini"`` (the regressor: ``"squared_error"`` only) and scored on all
    of ``(Z, Y, w)``: by ``score(cart)`` when given (a method scoring the
    tree as it would represent it), else by :func:`fit_score` of the CART's
    own predictions. With ``bins`` (a :class:`FeatureBins`) they are grown
    on the codes of those rows (``codes`` when the caller has them);
    ``bins="auto"``: on codes when those rows are many (:func:`auto_bins`).
    Returns the best :data:`GreedyReference` (ties: the first criterion).
    """
    Zg, Yg, wg = Z[grow], Y[grow], w[grow]
    if isinstance(bins, str):
        bins = auto_bins(Zg)
    if bins is not None:
        Zg = bins.transform(Zg) if codes is None else codes
    best = None
    for criterion in ("entropy", "gini") if classification else ("squared_error",):
        cart = fit_cart(Zg, Yg, wg, depth=min(depth, FLOOR_DEPTH),
                        classification=classification, seed=seed, criterion=criterion,
                        bins=bins, **params)
        s = (score(cart) if score is not None
             else fit_score(cart.predict(Z), Y, w, classification))
        if best is None or s > best.score:
            best = GreedyReference(s, criterion, cart)
    return best


def greedy_loss(Z, Y, w, *, classification, seed, max_rows=GREEDY_MAX_ROWS):
    """Training loss of the depth-2 CART on ``(Z, Y, w)``, in the gradient
    models' terms: the weighted mean cross-entropy of its leaves' class
    proportions (clipped at 1e-3), or the mean squared error per output.

    Grown (with ``"entropy"`` / ``"squared_error"``) and scored on a seeded
    subsample of at most ``max_rows`` rows; ``w`` has mean one, as in the
    training loop. The reference of ``loss_ceiling`` in the training loop.
    """
    rows = row_subsample(Z.shape[0], max_rows, np.random.RandomState(seed))
    Z, Y, w = Z[rows], Y[rows], w[rows]
    cart = fit_cart(Z, Y, w, depth=FLOOR_DEPTH, classification=classification, seed=seed)
    if classification:
        proba = np.zeros((Z.shape[0], int(Y.max()) + 1))
        proba[:, cart.classes_.astype(int)] = cart.predict_proba(Z)
        per_row = -np.log(np.clip(proba[np.arange(Y.shape[0]), Y], 1e-3, 1.0))
    else:
        err = np.reshape(cart.predict(Z), Y.shape) - Y
        per_row = (err.reshape(Y.shape[0], -1) ** 2).mean(axis=1)
    return float(np.average(per_row, weights=w))


def floor_fallback(ref, score, candidates):
    """What a greedy floor returns once the trained tree scored below ``ref``.

    ``candidates``: ``(label, build)`` pairs in order of preference (e.g. the
    tree before a refinement, the CART of the fitted depth with
    ``ref.criterion``, then ``ref.cart`` itself), each ``build()`` making a
    tree in the method's fitted format. Returns ``(label, tree)`` of the first
    whose ``score(tree)`` reaches ``ref.score``, else of the last.
    """
    for label, build in candidates:
        tree = build()
        if score(tree) >= ref.score:
            break
    return label, tree
